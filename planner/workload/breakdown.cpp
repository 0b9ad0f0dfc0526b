#include "planner/workload/breakdown.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ccsim::planner {

using models::ProgramOpKind;

namespace {

using Intervals = std::vector<std::pair<double, double>>;

/// The union of `busy` as disjoint intervals, sorted.
Intervals merged_intervals(Intervals busy) {
  std::sort(busy.begin(), busy.end());
  Intervals merged;
  for (const auto& iv : busy) {
    if (!merged.empty() && iv.first <= merged.back().second) merged.back().second = std::max(merged.back().second, iv.second);
    else merged.push_back(iv);
  }
  return merged;
}

/// Length of [a, z] inside the disjoint sorted intervals `merged`: start at the first one
/// ending after a (binary search) and stop at the first starting after z.
double covered(const Intervals& merged, double a, double z) {
  double c = 0;
  auto it = std::upper_bound(merged.begin(), merged.end(), a, [](double v, const std::pair<double, double>& iv) { return v < iv.second; });
  for (; it != merged.end() && it->first < z; ++it) c += std::max(0.0, std::min(it->second, z) - std::max(it->first, a));
  return c;
}

StageBreakdown breakdown_of(const models::Program& p, const models::ProgramRank& rank, std::span<const OpTiming> timing,
                            double step_time) {
  StageBreakdown b;
  Intervals busy;  // compute intervals
  for (std::uint32_t id : rank.ops) {
    const auto& op = p.ops[id];
    const auto& t = timing[id];
    b.end = std::max(b.end, t.end);
    if (op.stream == models::Stream::Compute && t.end > t.start) {
      b.compute += t.end - t.start;
      busy.emplace_back(t.start, t.end);
    }
  }
  const Intervals merged = merged_intervals(std::move(busy));
  Intervals exposed_iv;
  for (std::uint32_t id : rank.ops) {
    const auto& op = p.ops[id];
    if (op.kind != ProgramOpKind::Collective && op.kind != ProgramOpKind::SendRecv) continue;
    const auto& t = timing[id];
    const auto d = static_cast<std::size_t>(op.dim);
    b.comm[d] += t.end - t.start;
    b.exposed[d] += (t.end - t.start) - covered(merged, t.start, t.end);
    exposed_iv.emplace_back(t.start, t.end);
  }
  // Idle: the step's length not covered by compute or any communication.
  Intervals all = merged;
  all.insert(all.end(), exposed_iv.begin(), exposed_iv.end());
  std::sort(all.begin(), all.end());
  double covered_all = 0, reach = 0;
  for (const auto& [x, y] : all) {
    const double from = std::max(x, reach);
    if (y > from) covered_all += y - from;
    reach = std::max(reach, y);
  }
  b.exposed_total = std::max(0.0, covered_all - b.compute);
  b.idle = std::max(0.0, step_time - covered_all);
  return b;
}

}  // namespace

std::vector<StageBreakdown> stage_breakdown(const models::Program& program, std::span<const OpTiming> timing, double step_time) {
  std::vector<StageBreakdown> out;
  for (const auto& rank : program.ranks) out.push_back(breakdown_of(program, rank, timing, step_time));
  return out;
}

}  // namespace ccsim::planner
