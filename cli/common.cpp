#include "cli/common.hpp"

#include <cctype>
#include <sstream>

#include <fmt/format.h>

#include "models/catalog.hpp"
#include "models/input_error.hpp"
#include "models/units.hpp"
#include "validate/nccl_tests_log.hpp"

namespace ccsim::cli {

using models::InputError;

models::Scenario load_scenario_file(const std::string& path, const std::string& catalog_dir) {
  const models::Catalog catalog = models::Catalog::load(catalog_dir.empty() ? models::Catalog::default_dir() : catalog_dir);
  return models::load_scenario(path, catalog);
}

std::uint64_t parse_size(const std::string& text, const std::string& option) {
  const std::string expected = "a size such as 8, 64K, 1M or 8G (powers of 1024, as nccl-tests reads them) or 1GB";
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) {
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(text, &used);
    } catch (const std::exception&) {
      throw InputError({"<command line>", 0, 0}, option, expected, "'" + text + "'");
    }
    const std::string suffix = text.substr(used);
    const std::string lower = [&] {
      std::string s;
      for (char c : suffix) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    }();
    if (suffix.empty()) return value;
    if (lower == "k") return value << 10;
    if (lower == "m") return value << 20;
    if (lower == "g") return value << 30;
    if (lower == "t") return value << 40;
  }
  try {
    const double bytes = models::parse_quantity(text, models::Quantity::Bytes);
    if (bytes >= 0 && bytes == static_cast<double>(static_cast<std::uint64_t>(bytes))) return static_cast<std::uint64_t>(bytes);
  } catch (const models::UnitError&) {
  }
  throw InputError({"<command line>", 0, 0}, option, expected, "'" + text + "'");
}

std::vector<models::DeviceId> select_gpus(const models::Cluster& cluster, int ranks, const std::string& group) {
  const auto& all = cluster.topology.gpus();
  if (!group.empty()) {
    std::vector<models::DeviceId> out;
    std::stringstream in(group);
    for (std::string item; std::getline(in, item, ',');) {
      int a = 0, b = 0;
      char dash = 0;
      std::istringstream one(item);
      if (!(one >> a)) throw InputError({"<command line>", 0, 0}, "--group", "GPU ranks and ranges such as 0-7,16-23", "'" + item + "'");
      b = a;
      if (one >> dash && (dash != '-' || !(one >> b))) {
        throw InputError({"<command line>", 0, 0}, "--group", "GPU ranks and ranges such as 0-7,16-23", "'" + item + "'");
      }
      if (a < 0 || b < a || static_cast<std::size_t>(b) >= all.size()) {
        throw InputError({"<command line>", 0, 0}, "--group", fmt::format("GPU ranks from 0 to {}", all.size() - 1), "'" + item + "'");
      }
      for (int r = a; r <= b; ++r) out.push_back(all[static_cast<std::size_t>(r)]);
    }
    return out;
  }
  if (ranks > 0) {
    if (static_cast<std::size_t>(ranks) > all.size()) {
      throw InputError({"<command line>", 0, 0}, "--ranks", fmt::format("at most the cluster's {} GPUs", all.size()), std::to_string(ranks));
    }
    return {all.begin(), all.begin() + ranks};
  }
  return all;
}

std::uint32_t element_size(const std::string& type) {
  if (const auto s = validate::type_size(type)) return *s;
  throw InputError({"<command line>", 0, 0}, "--datatype", "float, half, bfloat16, double, int8, ...", "'" + type + "'");
}

}  // namespace ccsim::cli
