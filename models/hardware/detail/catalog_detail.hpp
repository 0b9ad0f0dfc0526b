#pragma once
// Helpers shared by the hardware catalog's files (catalog.cpp, catalog_base_chains.cpp,
// catalog_entries.cpp, node_template.cpp); not part of the catalog's interface.

#include <string>
#include <vector>

namespace ccsim::models::detail {

/// Upper bound of physical links of one kind between two devices, and of a GPU's scale-up
/// links: far above any built system, it catches typos and overflow.
inline constexpr int kMaxLinks = 1024;

/// "a, b, c".
inline std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// The keys of a map, in its order.
template <typename Map>
std::vector<std::string> keys_of(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace ccsim::models::detail
