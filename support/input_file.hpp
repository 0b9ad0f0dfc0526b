#pragma once
// The one reader for every file ccsim takes as input: scenarios and their includes, hardware
// catalogs, model config.json files, calibration tables, nccl-tests logs.
//
// Rules, the same for every file: the path must name a regular file (symbolic links are
// followed; a link loop, a directory, a FIFO, a device or a socket is refused before it is
// opened, so nothing blocks and no device is read), at most `max_bytes` long (checked on the
// open descriptor and again while reading, so a file that grows is cut off, not read forever).
// Every refusal is an InputError (exit code 2) naming the file and what it is.

#include <cstdint>
#include <string>
#include <utility>

#include "support/input_error.hpp"

namespace ccsim::support {

/// The default size cap: 64 MiB, far above any real scenario, catalog, config.json, calibration
/// table or nccl-tests log (the largest shipped file is under 100 kB; a 4,096-rank nccl-tests log
/// with one "# Rank" line per rank is about 0.5 MB).
inline constexpr std::uint64_t kMaxInputFileBytes = 64ull << 20;

/// What a caller expects, for messages: "a scenario file", "an nccl-tests log", ...
struct InputFileRequest {
  std::string expected;                          ///< phrase for "expected ..."
  std::uint64_t max_bytes = kMaxInputFileBytes;  ///< size cap, bytes
  SourceLocation referenced_from;                ///< where the path was written (an include:), if anywhere
  std::string key;                               ///< the key that named the path ("include"), if any

  InputFileRequest(std::string expected_, std::uint64_t max_bytes_ = kMaxInputFileBytes, SourceLocation from = {},
                   std::string key_ = {})
      : expected(std::move(expected_)), max_bytes(max_bytes_), referenced_from(std::move(from)), key(std::move(key_)) {}
  InputFileRequest(const char* expected_) : InputFileRequest(std::string(expected_)) {}
};

/// Reads all of `path`. Throws InputError at `request.referenced_from` (or at the file itself
/// when that is empty) when the path does not exist, is a symbolic-link loop, a directory or
/// another non-regular file, cannot be read (permissions), or is larger than the cap.
std::string read_input_file(const std::string& path, const InputFileRequest& request);

/// Why `path` cannot be read as an input file ("no such file", "a directory", "a named pipe
/// (FIFO)", "a symbolic link loop", ...), or an empty string when it is a readable regular
/// file. Does not open the file.
std::string input_file_problem(const std::string& path);

}  // namespace ccsim::support
