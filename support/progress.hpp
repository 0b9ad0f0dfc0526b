#pragma once
// A one-line status on standard error for work that takes seconds: what is being done,
// done/total where known, the elapsed time and, once enough is done to say, an estimate of the
// time left. The line is rewritten in place ("\r" and the terminal's erase-to-end-of-line) and
// erased when the work ends, so a terminal keeps only the command's own output. It is written
// only to its stream (standard error), never to standard output or to files, and only when
// progress_enabled() says so: by default when standard error is a terminal.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace ccsim::support {

/// Whether progress lines are shown, in this order:
///  * after set_progress_quiet(true) (a command's --quiet): never;
///  * the environment variable CCSIM_PROGRESS: "1" always (also to a file or a pipe: for tests
///    and logs), "0" never;
///  * otherwise when standard error is a terminal (isatty(2)).
bool progress_enabled();

/// --quiet: no progress line for the rest of the process (false: the rule above again).
void set_progress_quiet(bool quiet);

/// How a Progress shows itself.
struct ProgressOptions {
  /// Shown at all; default progress_enabled() at construction.
  bool enabled = progress_enabled();
  /// Where the line goes; null: std::cerr.
  std::ostream* out = nullptr;
  /// Nothing is shown before this much time has passed, so that a command that ends quickly
  /// prints nothing (default 0.5 s; 0 when CCSIM_PROGRESS=1 forces progress, so that short test
  /// inputs show it too).
  std::chrono::milliseconds delay = default_delay();
  /// Between two rewrites of the line (a change of `what` rewrites it at once): 100 ms, ten
  /// updates a second, more than a reader follows and negligible next to the work.
  std::chrono::milliseconds period{100};

  static std::chrono::milliseconds default_delay();
};

/// One command's status line. Thread-safe: update() may be called from worker threads at
/// once (a mutex orders the writes; calls within `period` of the last rewrite only record the
/// counts). When enabled, a thread of its own rewrites the line once a second with the last
/// state, so that the elapsed time moves during one long step that reports nothing (and a
/// state reported before `delay` appears after it). Destroying it (or finish()) erases the line
/// when one was shown.
class Progress {
 public:
  /// `label`: the command, the line's first word ("ccsim run").
  explicit Progress(std::string label, ProgressOptions options = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// The work is now `what` ("communication ops", "writing trace.json"), `done` of `total`
  /// pieces; total 0: unknown (the count alone when above 0, no estimate). Elapsed time counts from construction.
  /// The estimate of the time left, elapsed × (total − done) / done, is shown once at least 5 %
  /// of the pieces and 2 s have passed (pieces of equal cost assumed; before that it would be
  /// noise).
  void update(std::string_view what, std::size_t done = 0, std::size_t total = 0);

  /// A callback (done, total) that calls update(what, done, total): for loops that report
  /// counts (parallel_for, the runners). The Progress must outlive it.
  std::function<void(std::size_t, std::size_t)> counter(std::string what);

  /// Erases the line (when one was shown); later updates show it again.
  void finish();

  /// Whether a line was ever shown (for tests).
  bool shown() const;

 private:
  using Clock = std::chrono::steady_clock;
  /// Writes the line for the last state; the mutex is held.
  void render(Clock::time_point now);
  void tick();
  std::string label_;
  ProgressOptions options_;
  Clock::time_point start_;
  Clock::time_point last_write_{};
  std::string last_what_;
  std::size_t last_done_ = 0;
  std::size_t last_total_ = 0;
  bool has_state_ = false;  ///< update() was called since construction or finish()
  bool visible_ = false;
  bool ever_shown_ = false;
  bool stopping_ = false;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;  ///< runs tick() while enabled
};

/// The text of one progress line (without "\r" and the erase sequence): "LABEL: WHAT
/// DONE/TOTAL (P %), E s[, about R s left]" ("LABEL: WHAT DONE, E s" without a total). Seconds are whole below 100 s, then minutes ("3 min
/// 20 s"). Exposed for tests.
std::string progress_line(std::string_view label, std::string_view what, std::size_t done, std::size_t total, double elapsed_s);

}  // namespace ccsim::support
