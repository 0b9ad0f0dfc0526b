// parallel_for: every index once, results in index order for any thread count, the calling
// thread alone when one thread is asked for, the lowest failing index's exception, progress.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/parallel_for.hpp"

using namespace ccsim;

namespace {

support::ParallelOptions with_threads(int threads) {
  support::ParallelOptions o;
  o.threads = threads;
  return o;
}

/// The message of what parallel_for threw, or "no error".
std::string failure(std::size_t count, int threads, const std::function<void(std::size_t)>& body) {
  try {
    support::parallel_for(count, with_threads(threads), body);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("worker_threads: the request when above 0, else the machine's, at least 1") {
  CHECK(support::worker_threads(3) == 3);
  CHECK(support::worker_threads(1) == 1);
  const int machine = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  CHECK(support::worker_threads(0) == machine);
  CHECK(support::worker_threads(-2) == machine);
}

TEST_CASE("parallel_for runs every index once and the results are in index order") {
  // results[i] = i² + 1 for i < 1000, whatever the thread count.
  for (const int threads : {1, 2, 3, 8, 64}) {
    std::vector<long long> results(1000, -1);
    std::vector<std::atomic<int>> calls(1000);
    support::parallel_for(results.size(), with_threads(threads), [&](std::size_t i) {
      results[i] = static_cast<long long>(i) * static_cast<long long>(i) + 1;
      ++calls[i];
    });
    for (std::size_t i = 0; i < results.size(); ++i) {
      INFO("threads " << threads << ", index " << i);
      REQUIRE(results[i] == static_cast<long long>(i * i + 1));
      REQUIRE(calls[i].load() == 1);
    }
  }
}

TEST_CASE("parallel_for uses at most min(threads, count) threads; with one, the calling thread in order") {
  std::mutex m;
  std::set<std::thread::id> seen;
  std::vector<std::size_t> order;
  const auto record = [&](std::size_t i) {
    const std::lock_guard<std::mutex> lock(m);
    seen.insert(std::this_thread::get_id());
    order.push_back(i);
  };
  SECTION("one thread") {
    support::parallel_for(5, with_threads(1), record);
    CHECK(seen == std::set<std::thread::id>{std::this_thread::get_id()});
    CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4});
  }
  SECTION("more threads than indices: one index, the calling thread") {
    support::parallel_for(1, with_threads(16), record);
    CHECK(seen == std::set<std::thread::id>{std::this_thread::get_id()});
  }
  SECTION("four threads, not the calling one") {
    support::parallel_for(200, with_threads(4), [&](std::size_t i) {
      record(i);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
    CHECK(seen.size() <= 4);
    CHECK(seen.count(std::this_thread::get_id()) == 0);
    CHECK(order.size() == 200);
  }
  SECTION("no index: no call") {
    support::parallel_for(0, with_threads(4), record);
    CHECK(order.empty());
  }
}

TEST_CASE("parallel_for rethrows the lowest failing index's exception, serial or not") {
  // Indices 3 and 7 fail (their own message); 7 fails at once, 3 only after a pause, so with
  // threads the failure of 7 usually comes first in time: the rethrown one is still 3's.
  const auto body = [](std::size_t i) {
    if (i == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      throw std::runtime_error("index 3");
    }
    if (i == 7) throw std::runtime_error("index 7");
  };
  CHECK(failure(10, 1, body) == "index 3");
  CHECK(failure(10, 4, body) == "index 3");
  CHECK(failure(10, 16, body) == "index 3");
  CHECK(failure(10, 4, [](std::size_t) {}) == "no error");
}

TEST_CASE("parallel_for stops handing out indices after a failure") {
  // One thread: index 2 fails, 3 and later never run. Two threads: at most the index the other
  // thread holds runs after the failure, so most of the 10000 never run. Indices after 2 take
  // 200 us each, so the other thread cannot run them all (2 s) while the failing one waits for
  // a core on a loaded machine.
  std::atomic<int> ran{0};
  const auto body = [&](std::size_t i) {
    ++ran;
    if (i == 2) throw std::runtime_error("stop");
    if (i > 2) std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  CHECK(failure(10000, 1, body) == "stop");
  CHECK(ran.load() == 3);
  ran = 0;
  CHECK(failure(10000, 2, body) == "stop");
  CHECK(ran.load() < 10000);
}

TEST_CASE("parallel_for reports progress on the calling thread and ends with (count, count)") {
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  std::set<std::thread::id> callers;
  support::ParallelOptions o;
  o.threads = 2;
  o.progress_period = std::chrono::milliseconds(1);
  o.progress = [&](std::size_t done, std::size_t total) {
    calls.emplace_back(done, total);
    callers.insert(std::this_thread::get_id());
  };
  support::parallel_for(40, o, [](std::size_t) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  REQUIRE_FALSE(calls.empty());
  CHECK(calls.back() == std::pair<std::size_t, std::size_t>{40, 40});
  CHECK(callers == std::set<std::thread::id>{std::this_thread::get_id()});
  for (std::size_t k = 1; k < calls.size(); ++k) CHECK(calls[k].first >= calls[k - 1].first);

  SECTION("serial: only the final call") {
    calls.clear();
    o.threads = 1;
    support::parallel_for(3, o, [](std::size_t) {});
    CHECK(calls == std::vector<std::pair<std::size_t, std::size_t>>{{3, 3}});
  }
  SECTION("a failure: no final call") {
    calls.clear();
    CHECK_THROWS_AS(support::parallel_for(40, o, [](std::size_t i) {
                      if (i == 0) throw std::runtime_error("first");
                    }),
                    std::runtime_error);
    for (const auto& c : calls) CHECK(c.first < 40);
  }
}
