#include "planner/workload/step_executor.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <utility>

namespace ccsim::planner {

namespace {

/// The Program's DAG: each op's dependencies, then its stream predecessor.
sim::Dag step_dag(const models::Program& p) {
  const std::size_t n = p.ops.size();
  constexpr std::uint32_t kNone = ~0U;
  std::vector<std::uint32_t> stream_pred(n, kNone);
  for (const auto& rank : p.ranks) {
    std::array<std::uint32_t, models::kStreams> last;
    last.fill(kNone);
    for (std::uint32_t id : rank.ops) {
      auto& l = last[static_cast<std::size_t>(p.ops[id].stream)];
      stream_pred[id] = l;
      l = id;
    }
  }
  // Each op's predecessors: its dependencies in the order it names them, then its stream
  // predecessor.
  std::vector<std::uint32_t> pred_begin(n + 1, 0), preds;
  std::size_t edges = n;
  for (const auto& op : p.ops) edges += op.deps.size();
  preds.reserve(edges);
  for (std::size_t i = 0; i < n; ++i) {
    preds.insert(preds.end(), p.ops[i].deps.begin(), p.ops[i].deps.end());
    if (stream_pred[i] != kNone) preds.push_back(stream_pred[i]);
    pred_begin[i + 1] = static_cast<std::uint32_t>(preds.size());
  }
  return sim::Dag(pred_begin, preds);
}

std::vector<OpTiming> checked(sim::DagSchedule s, std::size_t n) {
  if (s.scheduled != n) throw std::logic_error("the workload program deadlocks (a cycle between streams and dependencies)");
  return std::move(s.timing);
}

}  // namespace

std::vector<OpTiming> execute_step(const models::Program& p, std::span<const double> duration) {
  return checked(sim::earliest_start(step_dag(p), duration), p.ops.size());
}

std::vector<OpTiming> execute_step(const models::Program& p, const std::function<double(std::uint32_t, double)>& duration) {
  return checked(sim::earliest_start(step_dag(p), duration), p.ops.size());
}

}  // namespace ccsim::planner
