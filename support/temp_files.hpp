#pragma once
// Temporary files that must not outlive the process: write_file_atomic registers each one
// while it exists, and a SIGINT / SIGTERM / SIGHUP handler (installed by the command-line
// front end) unlinks every registered file before the process dies of the signal.
//
// The handler is async-signal-safe: the registry is a fixed array of fixed-size path slots,
// each with a lock-free "in use" flag; the handler calls only unlink(2), sigaction(2) and
// raise(3).

#include <string>

namespace ccsim::support {

/// Paths registered at once at most; registering more throws std::length_error (a bug: every
/// writer holds one temporary file at a time).
inline constexpr int kMaxTempFiles = 16;
/// Longest registrable path, bytes, without the terminating NUL.
inline constexpr int kMaxTempPathBytes = 4095;

/// Registers `path` for removal on a signal until the returned guard is destroyed or released.
/// Register before creating the file, so that no moment exists in which the file is there
/// unregistered. Throws std::length_error when the path is longer than kMaxTempPathBytes or
/// every slot is taken.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::string& path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  int slot_;
};

/// Installs the handler for SIGINT, SIGTERM and SIGHUP: it unlinks every registered temporary
/// file, restores the default action and re-raises the signal, so that the process ends as the
/// signal would have ended it (the shell sees 128 + signal number). A signal whose disposition
/// is SIG_IGN (e.g. SIGHUP under nohup, SIGINT for a background job) stays ignored. Idempotent.
void install_temp_file_cleanup();

/// Number of paths registered now (for tests).
int registered_temp_files();

}  // namespace ccsim::support
