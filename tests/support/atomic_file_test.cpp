// write_file_atomic: what happens by the kind of file the output path names,
// and temporary files removed when a signal ends the process while one exists.

#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/atomic_file.hpp"
#include "support/temp_files.hpp"
#include "test_support.hpp"

using namespace ccsim;
namespace fs = std::filesystem;

namespace {

using test::entries;
using test::read_text;

mode_t file_type(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & S_IFMT;
}

std::string output_error(const std::string& path) {
  try {
    support::write_file_atomic(path, "x");
  } catch (const support::OutputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("write_file_atomic creates and replaces regular files, leaving no temporary file") {
  test::TempDir dir;
  const std::string path = (dir.path / "a.dot").string();
  support::write_file_atomic(path, "first\n");
  CHECK(read_text(path) == "first\n");
  ::chmod(path.c_str(), 0600);
  support::write_file_atomic(path, "second\n");
  CHECK(read_text(path) == "second\n");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);  // permission bits of the replaced file kept
  CHECK(entries(dir.path) == std::vector<std::string>{"a.dot"});
  CHECK(support::registered_temp_files() == 0);
}

TEST_CASE("write_file_atomic follows a symbolic link: the file it points to is replaced, the link stays") {
  test::TempDir dir;
  fs::create_directory(dir.path / "real");
  dir.write("real/graph.dot", "old\n");
  fs::create_symlink("real/graph.dot", dir.path / "link.dot");
  support::write_file_atomic((dir.path / "link.dot").string(), "new\n");
  CHECK(fs::is_symlink(fs::symlink_status(dir.path / "link.dot")));
  CHECK(read_text(dir.path / "real/graph.dot") == "new\n");
  CHECK(entries(dir.path / "real") == std::vector<std::string>{"graph.dot"});

  SECTION("a dangling link creates the file it names") {
    fs::create_symlink("real/missing.dot", dir.path / "dangling.dot");
    support::write_file_atomic((dir.path / "dangling.dot").string(), "made\n");
    CHECK(fs::is_symlink(fs::symlink_status(dir.path / "dangling.dot")));
    CHECK(read_text(dir.path / "real/missing.dot") == "made\n");
  }
}

TEST_CASE("write_file_atomic writes through a character device and never replaces it") {
  // /dev/null must not be replaced by a regular file when the process can rename in /dev
  // (root), nor fail as another user: it is written through, as a shell would.
  REQUIRE(file_type("/dev/null") == S_IFCHR);
  CHECK_NOTHROW(support::write_file_atomic("/dev/null", "digraph {}\n"));
  CHECK(file_type("/dev/null") == S_IFCHR);
}

TEST_CASE("write_file_atomic writes through a FIFO to its reader") {
  test::TempDir dir;
  const std::string fifo = (dir.path / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] { received = read_text(fifo); });
  try {
    support::write_file_atomic(fifo, "through the pipe\n");
  } catch (...) {
    ::close(::open(fifo.c_str(), O_WRONLY));  // releases the reader before failing
    reader.join();
    throw;
  }
  reader.join();
  CHECK(received == "through the pipe\n");
  CHECK(file_type(fifo) == S_IFIFO);
  CHECK(entries(dir.path) == std::vector<std::string>{"pipe"});
}

TEST_CASE("write_file_atomic refuses a directory, a socket and a missing directory, naming the path") {
  test::TempDir dir;
  fs::create_directory(dir.path / "sub");
  const std::string sub = (dir.path / "sub").string();
  CHECK(output_error(sub) == "cannot write " + sub + ": it is a directory");
  CHECK(fs::is_directory(sub));

  const std::string sock = (dir.path / "s").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(sock.size() < sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
  CHECK(output_error(sock) == "cannot write " + sock +
                                  ": it is a socket (expected a regular file, a character device such as /dev/null, or a FIFO)");
  CHECK(file_type(sock) == S_IFSOCK);
  ::close(fd);

  const std::string missing = (dir.path / "no-such-dir" / "x.dot").string();
  CHECK(output_error(missing) == "cannot write " + missing + ": No such file or directory");
  CHECK(entries(dir.path) == std::vector<std::string>{"s", "sub"});
}

namespace {

/// Forks a child that writes `dir/out.csv` and receives `sig` while the temporary file exists
/// (the test hook raises it after the content is written, before the rename). Returns the
/// child's wait status.
int write_interrupted_in_child(const fs::path& dir, int sig, bool install_cleanup) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    static int signal_to_raise = 0;
    signal_to_raise = sig;
    ::signal(sig, SIG_DFL);  // not Catch's fatal-signal handler, inherited from the parent
    if (install_cleanup) support::install_temp_file_cleanup();
    support::detail::after_temp_file_written = [](const std::string&) { ::raise(signal_to_raise); };
    try {
      support::write_file_atomic((dir / "out.csv").string(), "a,b\n1,2\n");
    } catch (...) {
      ::_exit(10);
    }
    ::_exit(11);  // the signal should have ended the process before this
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("a signal while a temporary file exists removes it, and the process ends of the signal") {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    test::TempDir dir;
    const int status = write_interrupted_in_child(dir.path, sig, true);
    INFO("signal " << sig);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(entries(dir.path).empty());
  }
}

TEST_CASE("without the cleanup handler the same signal leaves the temporary file (the test above can fail)") {
  test::TempDir dir;
  const int status = write_interrupted_in_child(dir.path, SIGTERM, false);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  const auto left = entries(dir.path);
  REQUIRE(left.size() == 1);
  CHECK(left.front().rfind(".out.csv.tmp.", 0) == 0);
}

TEST_CASE("an ignored signal stays ignored when the cleanup handler is installed") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGHUP, SIG_IGN);
    support::install_temp_file_cleanup();
    ::raise(SIGHUP);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("TempFileGuard registers a path while it lives") {
  const int before = support::registered_temp_files();
  {
    const support::TempFileGuard a("/tmp/a");
    const support::TempFileGuard b("/tmp/b");
    CHECK(support::registered_temp_files() == before + 2);
  }
  CHECK(support::registered_temp_files() == before);
  CHECK_THROWS_AS(support::TempFileGuard(std::string(5000, 'x')), support::OutputError);
}

TEST_CASE("an output path too long for a temporary file beside it is an output error, not an internal one") {
  // a --dot path of ~4,090 bytes in an existing directory must not throw
  // std::length_error from the temporary-file registry (exit 1). Components of 200 bytes (under
  // NAME_MAX) nested to ~3,900 bytes, then a file name that takes the path past 4,095.
  test::TempDir dir;
  fs::path deep = dir.path;
  while (deep.string().size() < 3800) deep /= std::string(200, 'd');
  fs::create_directories(deep);
  const std::string path = (deep / std::string(4089 - deep.string().size(), 'f')).string();
  REQUIRE(path.size() == 4090);
  const std::string message = output_error(path);
  INFO(message);
  CHECK(message.rfind("cannot write ", 0) == 0);
  CHECK(message.find("the path is longer than 4095 bytes") != std::string::npos);
}
