#pragma once
// Writing outputs so that an interrupted or failed run never leaves a partial file
// (DESIGN.md, decision 5): write to a temporary file in the same directory, then rename.

#include <stdexcept>
#include <string>
#include <string_view>

namespace ccsim::support {

/// An output that cannot be written (a missing directory, no permission, a full disk, a
/// directory or a socket where a file should go).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `content` to `path`, by what `path` is now:
///  * missing or a regular file: atomically — a temporary file `.NAME.tmp.PID` in the same
///    directory (registered for removal on SIGINT / SIGTERM / SIGHUP, see temp_files.hpp),
///    then rename(2) over `path`; an existing file's permission bits are kept;
///  * a symbolic link (or a chain of them) is followed: the regular file it points to is
///    replaced as above and the link stays a link; a dangling link creates the file it names;
///  * this process's standard output or standard error (`/dev/stdout`, `/dev/stderr`, or the
///    file or pipe they are redirected to): written through that descriptor, after the C++
///    streams are flushed, so the output lands in order;
///  * a character device or a FIFO (`/dev/null`, a terminal, a named pipe): written through,
///    opened without truncation and never replaced (opening a FIFO waits for its reader);
///  * a directory, socket, block device or other special file: refused.
/// A non-regular file is never renamed over. Throws OutputError naming the path (and, when
/// refused, what it is) when it cannot be written.
void write_file_atomic(const std::string& path, std::string_view content);

namespace detail {
/// Test hook: when set, called with the temporary file's path after its content is written and
/// before it is renamed into place. Null in normal use.
extern void (*after_temp_file_written)(const std::string& temp_path);
}  // namespace detail

}  // namespace ccsim::support
