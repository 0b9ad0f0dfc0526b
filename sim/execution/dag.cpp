#include "sim/execution/dag.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::sim {

Dag::Dag(std::span<const std::uint32_t> pred_begin, std::span<const std::uint32_t> preds) {
  if (pred_begin.empty() || pred_begin.front() != 0 || pred_begin.back() != preds.size()) {
    throw std::invalid_argument(fmt::format("DAG: predecessor rows must start at 0 and end at {} (the predecessors)", preds.size()));
  }
  const auto n = static_cast<std::uint32_t>(pred_begin.size() - 1);
  dep_count_.assign(n, 0);
  // Successors in compressed rows, counted first, then filled node by node in ascending order:
  // no allocation per node.
  succ_begin_.assign(static_cast<std::size_t>(n) + 1, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (pred_begin[i + 1] < pred_begin[i]) throw std::invalid_argument(fmt::format("DAG: the predecessor row of node {} ends before it starts", i));
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    dep_count_[i] = pred_begin[i + 1] - pred_begin[i];
    for (std::uint32_t e = pred_begin[i]; e < pred_begin[i + 1]; ++e) {
      if (preds[e] >= n) throw std::invalid_argument(fmt::format("DAG: node {} depends on {}, which is not one of the {} nodes", i, preds[e], n));
      ++succ_begin_[preds[e] + 1];
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.resize(succ_begin_[n]);
  std::vector<std::uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t e = pred_begin[i]; e < pred_begin[i + 1]; ++e) succ_[fill[preds[e]]++] = i;
}

namespace {

/// Kahn's order from the nodes without predecessors: each node starts at the latest end of its
/// predecessors and lasts duration(node, start).
template <class Duration>
DagSchedule schedule(const Dag& dag, const Duration& duration) {
  const std::uint32_t n = dag.size();
  DagSchedule out;
  out.timing.assign(n, {});
  std::vector<std::uint32_t> pending = dag.dependency_counts();
  std::vector<double> ready(n, 0.0);
  std::vector<std::uint32_t> stack;
  for (std::uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) stack.push_back(i);
  while (!stack.empty()) {
    const std::uint32_t i = stack.back();
    stack.pop_back();
    ++out.scheduled;
    out.timing[i].start = ready[i];
    out.timing[i].end = ready[i] + duration(i, ready[i]);
    for (std::uint32_t j : dag.successors(i)) {
      ready[j] = std::max(ready[j], out.timing[i].end);
      if (--pending[j] == 0) stack.push_back(j);
    }
  }
  return out;
}

}  // namespace

DagSchedule earliest_start(const Dag& dag, std::span<const double> duration) {
  if (duration.size() != dag.size()) {
    throw std::invalid_argument(fmt::format("DAG schedule: {} durations for {} nodes", duration.size(), dag.size()));
  }
  return schedule(dag, [&](std::uint32_t i, double) { return duration[i]; });
}

DagSchedule earliest_start(const Dag& dag, const std::function<double(std::uint32_t, double)>& duration) {
  return schedule(dag, duration);
}

}  // namespace ccsim::sim
