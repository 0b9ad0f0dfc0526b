#include "models/input_error.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace ccsim::models {
namespace {

std::string format_message(const SourceLocation& where, const std::string& key,
                           const std::string& expected, const std::string& found,
                           const std::string& hint) {
  std::string msg;
  msg += where.file.empty() ? std::string("<input>") : where.file;
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

}  // namespace ccsim::models
