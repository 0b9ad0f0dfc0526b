#include "planner/algorithms/protocol.hpp"

#include <algorithm>
#include <cctype>

namespace ccsim::planner {

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  // Case-insensitive, as NCCL_PROTO is.
  const auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
    if (same(to_string(p), s)) return p;
  return std::nullopt;
}

}  // namespace ccsim::planner
