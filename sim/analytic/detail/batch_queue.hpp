#pragma once
// The analytic engine's event queues.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace ccsim::sim::detail {

/// A priority queue (smallest first, by T's operator>) for entries that arrive in large
/// batches: a batch becomes a sorted run (one sort instead of a heap operation per entry — a
/// 1,024-rank AlltoAll starts a million flows at once, and popping them one by one from a heap
/// cost a third of its run time), single entries go to a heap; top() is the smaller of the two.
/// Under a total order the entries come out in the same order however they were pushed.
template <typename T>
class BatchQueue {
 public:
  void push(const T& e) { heap_.push(e); }
  /// Adds many entries at once (merged with what is left of the sorted run).
  void push_batch(std::vector<T> batch) {
    batch.insert(batch.end(), run_.begin() + static_cast<std::ptrdiff_t>(next_), run_.end());
    std::sort(batch.begin(), batch.end(), [](const T& a, const T& b) { return b > a; });
    run_ = std::move(batch);
    next_ = 0;
  }
  /// Replaces everything with `live`.
  void rebuild(std::vector<T> live) {
    run_.clear();
    next_ = 0;
    heap_ = {};
    push_batch(std::move(live));
  }
  bool empty() const { return next_ == run_.size() && heap_.empty(); }
  std::size_t size() const { return run_.size() - next_ + heap_.size(); }
  const T& top() const { return from_run() ? run_[next_] : heap_.top(); }
  void pop() {
    if (from_run()) {
      ++next_;
    } else {
      heap_.pop();
    }
  }

 private:
  bool from_run() const { return next_ < run_.size() && (heap_.empty() || heap_.top() > run_[next_]); }
  std::vector<T> run_;
  std::size_t next_ = 0;
  std::priority_queue<T, std::vector<T>, std::greater<>> heap_;
};

}  // namespace ccsim::sim::detail
