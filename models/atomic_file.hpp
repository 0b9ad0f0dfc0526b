#pragma once
// Writing outputs so that an interrupted or failed run never leaves a partial file
// (DESIGN.md, decision 5): write to a temporary file in the same directory, then rename.

#include <string>
#include <string_view>

namespace ccsim::models {

/// Writes `content` to `path` atomically (temporary file in the same directory + rename).
/// Throws std::runtime_error naming the path when the directory is not writable.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace ccsim::models
