#include "support/input_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace ccsim::support {
namespace {

/// A phrase for a stat() failure.
std::string errno_problem(int err) {
  switch (err) {
    case ENOENT: return "no such file";
    case ENOTDIR: return "no such file (a part of the path is not a directory)";
    case ELOOP: return "a symbolic link loop";
    case EACCES: return "a file that cannot be read (permission denied)";
    case ENAMETOOLONG: return "a path that is too long";
    default: return std::string("a file that cannot be read (") + std::strerror(err) + ")";
  }
}

/// A phrase for a file that is not a regular file; empty for a regular one.
std::string type_problem(mode_t mode) {
  if (S_ISREG(mode)) return {};
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_problem(std::uint64_t size, std::uint64_t max_bytes) {
  return fmt::format("a file of {} bytes or more (the limit for an input file is {} bytes)", size, max_bytes);
}

/// Closes a descriptor on every path out of read_input_file.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string input_file_problem(const std::string& path) {
  if (path.empty()) return "an empty path";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno_problem(errno);
  return type_problem(st.st_mode);
}

std::string read_input_file(const std::string& path, const InputFileRequest& request) {
  const bool referenced = !request.referenced_from.file.empty();
  const auto fail = [&](const std::string& problem) {
    if (referenced) {
      return InputError(request.referenced_from, request.key, request.expected, "'" + path + "' (" + problem + ")");
    }
    return InputError({path, 0, 0}, request.key, request.expected, problem);
  };
  // stat() before open(): a FIFO would block open() and a device must not be read at all.
  const std::string problem = input_file_problem(path);
  if (!problem.empty()) throw fail(problem);
  Descriptor d;
  d.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (d.fd < 0) throw fail(errno_problem(errno));
  // The path may have been replaced between stat() and open(): check what was opened.
  struct stat st {};
  if (::fstat(d.fd, &st) != 0) throw fail(errno_problem(errno));
  if (const std::string p = type_problem(st.st_mode); !p.empty()) throw fail(p);
  if (static_cast<std::uint64_t>(st.st_size) > request.max_bytes) {
    throw fail(size_problem(static_cast<std::uint64_t>(st.st_size), request.max_bytes));
  }
  std::string content;
  content.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(d.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fail(errno_problem(errno));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
    if (content.size() > request.max_bytes) throw fail(size_problem(content.size(), request.max_bytes));
  }
  return content;
}

}  // namespace ccsim::support
