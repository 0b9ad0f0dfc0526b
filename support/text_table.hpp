#pragma once
// Plain-text tables with columns sized to their content, for terminal reports.

#include <string>
#include <vector>

namespace ccsim::support {

class TextTable {
 public:
  /// `right_aligned[i]` says whether column i is right-aligned (numbers) or left-aligned (names).
  TextTable(std::vector<std::string> headers, std::vector<bool> right_aligned);
  /// Adds a row; it must have as many cells as there are headers (std::invalid_argument otherwise).
  void add_row(std::vector<std::string> cells);
  /// Renders with `indent` spaces before each line and two spaces between columns.
  std::string render(int indent = 2) const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ccsim::support
