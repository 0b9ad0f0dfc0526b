#pragma once
// Writing outputs so that an interrupted or failed run never leaves a partial file
// (DESIGN.md, decision 5): write to a temporary file in the same directory, then rename.

#include <stdexcept>
#include <string>
#include <string_view>

namespace ccsim::models {

/// An output that cannot be written (a missing directory, no permission, a full disk).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `content` to `path` atomically (temporary file in the same directory + rename).
/// Throws OutputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace ccsim::models
