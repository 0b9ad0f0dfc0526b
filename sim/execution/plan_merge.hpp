#pragma once
// Several collectives in one engine run: each part a Schedule (with its concurrent copies) on
// its GPUs with its own cost parameters, starting at its own time. Cross-dimension contention
// (planner/workload/contention.hpp) runs the communication ops that overlap in a step this way,
// so that they share the links they have in common under the engine's max-min fair sharing.

#include <memory>
#include <span>
#include <vector>

#include "models/collective/schedule.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::sim {

/// One collective as its own run would execute it: `copies` disjoint copies of `schedule`
/// (models::replicate), rank r of copy j on rank_gpu[j·n + r], costed by `cost`.
struct PlanPart {
  std::shared_ptr<const models::Schedule> schedule;
  int copies = 1;
  std::vector<models::DeviceId> rank_gpu;  ///< copies × schedule->nranks entries
  CostParams cost;
};

/// A Plan and the Schedule it points at (not copyable or movable: plan.schedule points into it).
struct MergedPlan {
  MergedPlan() = default;
  MergedPlan(const MergedPlan&) = delete;
  MergedPlan& operator=(const MergedPlan&) = delete;
  models::Schedule schedule;
  Plan plan;
};

/// The parts as one Plan (Plan::part_cost): part k's ranks follow part k−1's, peers, in-switch
/// groups and latency pools renumbered so that parts never match or pool with each other; part
/// k's ranks are ready ready[k] + parts[k].cost.base_latency seconds after the start (its own
/// run pays its base latency before anything starts). Link efficiencies are part 0's. Throws
/// std::invalid_argument when the parts are empty, `ready` has not one entry per part, an entry
/// is negative or not finite, a part's rank_gpu has not copies × nranks entries, or the ranks
/// would exceed 2^31.
std::unique_ptr<MergedPlan> merge_plans(std::span<const PlanPart* const> parts, std::span<const double> ready);

/// Per part of `plan` (a merged plan, or one part): the latest end of its ranks' ops in `tl`, in
/// seconds from the run's start (0 for a part without ops).
std::vector<double> part_ends(const Plan& plan, const Timeline& tl);

}  // namespace ccsim::sim
