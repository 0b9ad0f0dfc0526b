#include "support/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ccsim::support {

int worker_threads(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
}

void parallel_for(std::size_t count, const ParallelOptions& options, const std::function<void(std::size_t)>& body) {
  const auto threads = std::min<std::size_t>(static_cast<std::size_t>(worker_threads(options.threads)), count);
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) body(i);
    if (options.progress) options.progress(count, count);
    return;
  }
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  std::size_t failed_index = count;  // the lowest index that failed (count: none)
  const auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (i < failed_index) {
          failed_index = i;
          failure = std::current_exception();
        }
        next = count;
      }
      ++done;
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  // The calling thread reports progress while the workers run.
  while (options.progress && done.load() < count && next.load() < count) {
    options.progress(done.load(), count);
    std::this_thread::sleep_for(options.progress_period);
  }
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  if (options.progress) options.progress(count, count);
}

}  // namespace ccsim::support
