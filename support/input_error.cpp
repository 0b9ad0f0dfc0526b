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

namespace {

/// Lower case, '-' and '_' dropped.
std::string fold(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '-' || ch == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

/// Lower-case words of `s`, split at '_', '-', '.', ' ' and ':'.
std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char ch : s) {
    if (ch == '_' || ch == '-' || ch == '.' || ch == ' ' || ch == ':') {
      if (!w.empty()) out.push_back(w);
      w.clear();
    } else {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

}  // namespace

std::pair<int, std::size_t> suggestion_rank(const std::string& word, const std::string& candidate) {
  const std::string w = fold(word);
  const std::string c = fold(candidate);
  const std::size_t distance = edit_distance(word, candidate);
  if (w.empty() || c.empty()) return {-1, 0};
  if (w == c) return {0, distance};
  const std::size_t shorter = std::min(w.size(), c.size());
  if (shorter >= 3 && (c.compare(0, w.size(), w) == 0 || w.compare(0, c.size(), c) == 0)) return {1, distance};
  if (shorter >= 4 && (c.find(w) != std::string::npos || w.find(c) != std::string::npos)) return {2, distance};
  const std::vector<std::string> ww = words_of(word);
  const std::vector<std::string> cw = words_of(candidate);
  if (ww.size() >= 2 || cw.size() >= 2) {
    std::size_t shared = 0;
    for (const auto& x : ww)
      if (x.size() >= 2 && std::find(cw.begin(), cw.end(), x) != cw.end()) ++shared;
    if (shared >= 2 && 2 * shared >= ww.size()) {
      const std::size_t unshared = ww.size() + cw.size() - 2 * shared;
      return {3, unshared * 1000 + distance};
    }
  }
  if (distance <= std::max<std::size_t>(2, word.size() / 3)) return {4, distance};
  return {-1, 0};
}

}  // namespace ccsim::support
