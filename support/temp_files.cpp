#include "support/temp_files.hpp"

#include "support/atomic_file.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

namespace ccsim::support {
namespace {

// A slot is free (0), being filled or emptied by the owning code (1), or registered (2). The
// handler unlinks only registered slots; the path bytes of a registered slot do not change.
constexpr int kFree = 0;
constexpr int kBusy = 1;
constexpr int kRegistered = 2;

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxTempPathBytes + 1] = {};
};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free flags");

Slot g_slots[kMaxTempFiles];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temp_files_and_reraise(int sig) {
  const int saved_errno = errno;
  for (Slot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) == kRegistered) ::unlink(slot.path);
  }
  // Default action, then the same signal again: it is delivered when this handler returns
  // (the signal is blocked while its handler runs), and the process ends of it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
  errno = saved_errno;
}

}  // namespace

TempFileGuard::TempFileGuard(const std::string& path) : slot_(-1) {
  if (path.size() > static_cast<std::size_t>(kMaxTempPathBytes)) {
    // An output path the system cannot hold: a user error (exit 2), not a bug.
    throw OutputError("cannot write " + path.substr(0, 200) + (path.size() > 200 ? "..." : "") +
                      ": the path is longer than " + std::to_string(kMaxTempPathBytes) + " bytes");
  }
  for (int i = 0; i < kMaxTempFiles; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(kRegistered, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
  throw std::length_error("more than " + std::to_string(kMaxTempFiles) + " temporary files registered at once");
}

TempFileGuard::~TempFileGuard() {
  if (slot_ < 0) return;
  g_slots[slot_].state.store(kBusy, std::memory_order_release);
  g_slots[slot_].path[0] = '\0';
  g_slots[slot_].state.store(kFree, std::memory_order_release);
}

void install_temp_file_cleanup() {
  for (const int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler == SIG_IGN || old.sa_handler == remove_temp_files_and_reraise) continue;
    struct sigaction act {};
    act.sa_handler = remove_temp_files_and_reraise;
    sigemptyset(&act.sa_mask);
    // The other cleanup signals wait while the handler runs: one cleanup at a time.
    for (const int other : kSignals) sigaddset(&act.sa_mask, other);
    act.sa_flags = 0;
    ::sigaction(sig, &act, nullptr);
  }
}

int registered_temp_files() {
  int n = 0;
  for (const Slot& slot : g_slots) n += slot.state.load(std::memory_order_acquire) == kRegistered ? 1 : 0;
  return n;
}

}  // namespace ccsim::support
