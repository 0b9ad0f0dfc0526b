#include "planner/collective/schedule_limits.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "planner/algorithms/registry.hpp"

namespace ccsim::planner {

namespace {

std::string with_commas(double v) {
  std::string digits = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

/// The refusal of `request` (max_ops set) for `groups` groups, having found `found`.
ScheduleTooLarge too_large(Algorithm a, const AlgorithmRequest& req, std::uint64_t groups, bool step_only,
                           const std::string& found) {
  const int n = req.nranks;
  // The most ranks that fit, where the size has a closed form (it grows with the ranks).
  std::string fewer = "fewer ranks (--ranks)";
  if (estimated_ops(a, req) > 0) {
    int lo = 1, hi = n;  // estimate(lo) fits, estimate(hi) does not
    AlgorithmRequest probe = req;
    while (hi - lo > 1) {
      probe.nranks = lo + (hi - lo) / 2;
      (estimated_ops(a, probe) * static_cast<double>(groups) <= static_cast<double>(kMaxScheduleOps) ? lo : hi) = probe.nranks;
    }
    fewer = fmt::format("fewer ranks (--ranks; {} fits up to {})", to_string(a), lo);
  }
  const std::string alternatives = step_only ? "--granularity phase, or " + fewer : fewer;
  return ScheduleTooLarge({"<command line>", 0, 0}, "--ranks",
                          fmt::format("a schedule of at most {} ops (sends, receives and local steps; about {} GiB to simulate)",
                                      with_commas(static_cast<double>(kMaxScheduleOps)), kMaxScheduleGiB),
                          fmt::format("{} {} on {} ranks{}{}: {}", to_string(a), models::to_string(req.collective), n,
                                      groups > 1 ? fmt::format(" × {} concurrent groups", groups) : "",
                                      step_only ? " at step granularity" : "", found),
                          "use " + alternatives);
}

}  // namespace

int pipeline_chunks(Algorithm a, const AlgorithmRequest& r, double chunk_bytes) {
  const AlgorithmEntry& entry = algorithm_entry(a);
  const double per_channel = static_cast<double>(r.bytes) / r.channels;
  const int wanted = static_cast<int>(std::ceil(per_channel / chunk_bytes));
  const int weight = entry.chunk_ops * (entry.chunk_ops_per_node_rank ? std::max(1, r.ranks_per_node) : 1);
  const int budget = std::max(1, kChunkBudget / (weight * r.nranks * r.channels));
  return std::clamp(wanted, 1, std::min(kMaxChunks, budget));
}

models::Schedule generate_within_limit(Algorithm a, AlgorithmRequest req, std::uint64_t groups,
                                       const std::function<bool()>& has_phase_form) {
  req.max_ops = std::max<std::uint64_t>(1, kMaxScheduleOps / groups);
  const auto refuse = [&](const std::string& found) {
    const bool step_only = req.granularity == models::Granularity::Step && has_phase_form();
    return too_large(a, req, groups, step_only, found);
  };
  const double estimate = estimated_ops(a, req) * static_cast<double>(groups);
  if (estimate > static_cast<double>(kMaxScheduleOps)) throw refuse(with_commas(estimate) + " ops");
  models::Schedule schedule;
  try {
    schedule = generate(a, req);
  } catch (const ScheduleTooLarge&) {
    throw refuse("more ops than that");
  }
  return schedule;
}

}  // namespace ccsim::planner
