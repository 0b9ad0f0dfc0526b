#include "support/input_error.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace ccsim::support {
namespace {

/// `text` made safe for a one-line terminal message: control bytes (escape sequences, NUL,
/// newlines) become '?', and a part longer than `max` bytes is cut with its length given.
std::string printable(const std::string& text, std::size_t max) {
  std::string out;
  const std::size_t n = std::min(text.size(), max);
  out.reserve(n + 32);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  if (text.size() > max) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

std::string format_message(const SourceLocation& where, const std::string& key_in,
                           const std::string& expected_in, const std::string& found_in,
                           const std::string& hint_in) {
  // Every part may hold user text: no part may break the one-line format or flood the terminal.
  const std::string key = printable(key_in, 300);
  const std::string expected = printable(expected_in, 2000);
  const std::string found = printable(found_in, 300);
  const std::string hint = printable(hint_in, 2000);
  std::string msg;
  msg += where.file.empty() ? std::string("<input>") : printable(where.file, 4096);
  if (where.line > 0) {
    msg += ":" + std::to_string(where.line);
    if (where.column > 0) msg += ":" + std::to_string(where.column);
  }
  msg += ": error: ";
  if (!key.empty()) msg += key + ": ";
  msg += "expected " + expected + ", found " + found;
  if (!hint.empty()) msg += "; " + hint;
  return msg;
}

}  // namespace

InputError::InputError(SourceLocation where, std::string key, std::string expected,
                       std::string found, std::string hint)
    : std::runtime_error(format_message(where, key, expected, found, hint)),
      where_(std::move(where)),
      key_(std::move(key)),
      expected_(std::move(expected)),
      found_(std::move(found)),
      hint_(std::move(hint)) {}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace ccsim::support
