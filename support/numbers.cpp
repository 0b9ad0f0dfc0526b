#include "support/numbers.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace ccsim::support {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// True when `s` has the shape sign? (digits [. digits?] | . digits) ([eE] sign? digits)?.
bool plain_decimal_shape(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

}  // namespace

Parsed<double> parse_decimal(std::string_view text) {
  Parsed<double> out;
  if (!plain_decimal_shape(text)) return out;
  // from_chars takes no leading '+'.
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    out.problem = NumberProblem::OutOfRange;
    return out;
  }
  if (ec != std::errc() || end != s.data() + s.size()) return out;
  if (!std::isfinite(value) || (value != 0.0 && std::fabs(value) < std::numeric_limits<double>::min())) {
    out.problem = NumberProblem::OutOfRange;
    return out;
  }
  out.value = value;
  out.problem = NumberProblem::None;
  return out;
}

Parsed<std::int64_t> parse_integer(std::string_view text) {
  Parsed<std::int64_t> out;
  std::string_view s = text;
  if (s.size() > 1 && s.front() == '+' && is_digit(s[1])) s.remove_prefix(1);
  const std::size_t first_digit = !s.empty() && s.front() == '-' ? 1 : 0;
  if (s.size() <= first_digit) return out;
  for (std::size_t i = first_digit; i < s.size(); ++i) {
    if (!is_digit(s[i])) return out;
  }
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    out.problem = NumberProblem::OutOfRange;
    return out;
  }
  if (ec != std::errc() || end != s.data() + s.size()) return out;
  out.value = value;
  out.problem = NumberProblem::None;
  return out;
}

std::string quote_token(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string shown;
  for (char c : text.substr(0, kMax)) {
    const auto u = static_cast<unsigned char>(c);
    shown += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (text.size() <= kMax) return "'" + shown + "'";
  return "'" + shown + "...' (" + std::to_string(text.size()) + " characters)";
}

std::string describe_number_problem(std::string_view text, NumberProblem problem) {
  switch (problem) {
    case NumberProblem::None: return quote_token(text);
    case NumberProblem::Malformed: return quote_token(text) + " (not a number)";
    case NumberProblem::OutOfRange: return quote_token(text) + " (out of range)";
  }
  return quote_token(text);
}

}  // namespace ccsim::support
