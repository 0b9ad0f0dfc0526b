#include "support/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/temp_files.hpp"

namespace ccsim::support {

namespace detail {
void (*after_temp_file_written)(const std::string& temp_path) = nullptr;
}  // namespace detail

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw OutputError("cannot write " + path + ": " + why);
}

/// What a file that is not a regular file, a directory, a character device or a FIFO is.
const char* special_kind(mode_t mode) {
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

/// write(2) until everything is written. Returns false (errno set) on failure.
bool write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

/// The standard descriptor (1 or 2) whose file is `st`, if any.
std::optional<int> standard_stream_of(const struct stat& st) {
  for (const int fd : {1, 2}) {
    struct stat s {};
    if (::fstat(fd, &s) == 0 && s.st_dev == st.st_dev && s.st_ino == st.st_ino) return fd;
  }
  return std::nullopt;
}

/// A character device or a FIFO: opened for writing as it is (no O_CREAT, no O_TRUNC).
void write_through(const std::string& path, std::string_view content) {
  std::cout.flush();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::strerror(errno));
  const bool ok = write_all(fd, content);
  const int write_errno = errno;
  if (::close(fd) != 0 && ok) fail(path, std::strerror(errno));
  if (!ok) fail(path, std::strerror(write_errno));
}

/// Follows a chain of symbolic links by their text, for a path that does not resolve (a
/// dangling link names the file to create). Returns `path` itself when it is not a link.
fs::path dangling_target(const std::string& path) {
  fs::path p(path);
  for (int depth = 0; depth < 40; ++depth) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) fail(path, ec.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  fail(path, "too many levels of symbolic links");
}

/// Temporary file beside `target`, then rename over it. `mode`: permission bits to keep.
void replace_regular(const std::string& path, const fs::path& target, std::string_view content, std::optional<mode_t> mode) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path temp = dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  const TempFileGuard guard(temp.string());  // registered before it exists
  // O_EXCL: never write through something already there (a stale temporary file of an
  // earlier process with the same id is removed once).
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST && ::unlink(temp.c_str()) == 0) {
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  if (fd < 0) fail(path, std::strerror(errno));
  bool ok = write_all(fd, content) && (!mode || ::fchmod(fd, *mode) == 0);
  int error = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok && detail::after_temp_file_written != nullptr) detail::after_temp_file_written(temp.string());
  // Never rename over a non-regular file, even one that appeared while we wrote.
  struct stat now {};
  if (ok && ::lstat(target.c_str(), &now) == 0 && !S_ISREG(now.st_mode)) {
    ::unlink(temp.c_str());
    fail(path, std::string("it is ") + (S_ISDIR(now.st_mode) ? "a directory" : special_kind(now.st_mode)) +
                   " (it appeared while the file was written)");
  }
  if (ok && ::rename(temp.c_str(), target.c_str()) != 0) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    fail(path, std::strerror(error));
  }
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view content) {
  if (path.empty()) fail("''", "an empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail(path, std::strerror(errno));
    replace_regular(path, dangling_target(path), content, std::nullopt);  // a new file
    return;
  }
  if (S_ISDIR(st.st_mode)) fail(path, "it is a directory");
  if (const auto fd = standard_stream_of(st)) {
    std::cout.flush();
    std::cerr.flush();
    if (!write_all(*fd, content)) fail(path, std::strerror(errno));
    return;
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    write_through(path, content);
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    fail(path, std::string("it is ") + special_kind(st.st_mode) +
                   " (expected a regular file, a character device such as /dev/null, or a FIFO)");
  }
  // A regular file, possibly behind symbolic links: replace the file itself, keep the links.
  std::error_code ec;
  const fs::path target = fs::canonical(path, ec);
  if (ec) fail(path, ec.message());
  replace_regular(path, target, content, st.st_mode & 07777);
}

}  // namespace ccsim::support
