#pragma once
// One parallel loop for independent pieces of work (candidate layouts of a search, columns of a
// Jacobian): body(i) for every index i, on worker threads, with results in index order whatever
// the threads' timing, and a failure reported as a serial loop would report it.

#include <chrono>
#include <cstddef>
#include <functional>

namespace ccsim::support {

/// How parallel_for runs.
struct ParallelOptions {
  /// Worker threads at most; 0 (or less): the machine's (worker_threads).
  int threads = 0;
  /// Called on the calling thread with (indices done, count): while worker threads run, at once
  /// and then every `progress_period` for as long as indices remain to be handed out; and once
  /// with (count, count) when every index is done without a failure (also without worker
  /// threads). Empty: no progress.
  std::function<void(std::size_t done, std::size_t total)> progress;
  /// Between two progress calls: 200 ms, five updates a second, enough for a terminal's
  /// progress line (`ccsim plan`'s) and negligible next to the work.
  std::chrono::milliseconds progress_period{200};
};

/// The worker threads `requested` asks for: `requested` when above 0, else the machine's hardware
/// threads (std::thread::hardware_concurrency, at least 1).
int worker_threads(int requested);

/// Calls body(i) once for every i in [0, count).
///
/// Threads: min(worker_threads(options.threads), count). With one (or none) the calling thread
/// runs the bodies in index order. With more, each thread takes the next index not yet handed
/// out (one shared counter, so that bodies of uneven cost balance) while the calling thread
/// waits and reports progress. A body must write only what its index owns (results[i]): the
/// results are then in index order and the same for every thread count.
///
/// Failures: an exception from a body stops the handing out of further indices; the bodies
/// already running finish; then the exception of the lowest failing index is rethrown. Indices
/// are handed out in increasing order, so for bodies whose failure depends only on their index
/// that is the exception a serial loop would have thrown.
void parallel_for(std::size_t count, const ParallelOptions& options, const std::function<void(std::size_t)>& body);

}  // namespace ccsim::support
