#include "models/collective/nccl_settings.hpp"

#include <charconv>

#include <fmt/format.h>

namespace ccsim::models {
namespace {

/// Reads the decimal number at the front of `text` and drops it; nullopt when there is none.
std::optional<int> take_number(std::string_view& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return value;
}

}  // namespace

std::optional<NcclVersion> parse_nccl_version(std::string_view text) {
  const std::optional<int> major = take_number(text);
  if (!major || text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  const std::optional<int> minor = take_number(text);
  if (!minor || *major < 2 || *minor < 0) return std::nullopt;
  if (!text.empty()) {  // ".patch", then optionally "-package"
    if (text.front() != '.') return std::nullopt;
    text.remove_prefix(1);
    if (!take_number(text)) return std::nullopt;
    if (!text.empty()) {
      if (text.front() != '-') return std::nullopt;
      text.remove_prefix(1);
      if (!take_number(text) || !text.empty()) return std::nullopt;
    }
  }
  return NcclVersion{*major, *minor};
}

std::string to_string(NcclVersion v) { return fmt::format("{}.{}", v.major, v.minor); }

}  // namespace ccsim::models
