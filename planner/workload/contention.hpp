#pragma once
// Cross-dimension contention in a workload step. Each communication op is first costed alone
// (with the other groups of its own op that run beside it, lowering.hpp); here the ops of
// different parallel dimensions that overlap in time on shared links are run again together,
// in one engine run each, so that they share those links under the engine's max-min fair
// sharing (two flows through one NIC each get half of it). The step is re-executed with the
// longer durations, which moves the overlaps, and the pass repeats to a fixed point.
//
// For op instance i (a Program op at its start time), the run holds i's own simulated run and,
// for every other dimension, the instances that overlap i in time and use a link i uses, each
// ready at its start relative to the earliest of them; instances of one dimension whose GPUs
// meet are one physical op seen from two replica classes and count once. i's duration is its
// end in that run minus its start, and never less than its time alone (the fluid model's
// max-min sharing is not monotone in general; an op is not made faster than alone by others).
// Start offsets are rounded to 1e-4 of i's time alone so that the repeated instances of a step
// (layers, micro-batches) share one run.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/workload/program.hpp"
#include "planner/workload/lowering.hpp"
#include "planner/workload/step_executor.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::planner {

/// What one parallel dimension lost to the others in a step.
struct DimensionContention {
  std::string dim;            ///< "TP", "CP", "DP", "EP", "PP", "EDP" (expert data parallel)
  std::size_t ops = 0;        ///< op instances of the dimension's representative ranks
  std::size_t slowed = 0;     ///< of them, those that ran longer beside other dimensions
  double alone = 0;           ///< seconds: Σ their durations costed alone
  double contended = 0;       ///< seconds: Σ their durations beside the others
};

struct ContentionResult {
  int passes = 0;             ///< step executions with contended durations
  bool converged = false;     ///< the last pass changed no duration by more than 1e-9 relative
  double step_alone = 0;      ///< seconds: the step with every op costed alone
  std::size_t runs = 0;       ///< merged engine runs (after sharing between repeated instances)
  std::vector<DimensionContention> dims;  ///< dimensions with communication ops, in ParallelDim order
};

/// Applies cross-dimension contention to the step of `p`: `duration` (per op, costed alone) and
/// `timing` (execute_step of it) are replaced by the contended durations and their timing.
/// `op_comm` and `costs` as WorkloadResult's; costs must hold their plans (CommCost::plan;
/// ops whose cost has none are left alone). Runs merged plans on `analytic` (an analytic
/// engine on the cluster). Throws what the engine throws. At most `max_passes` passes.
ContentionResult apply_contention(const models::Program& p, const std::vector<int>& op_comm, const std::vector<CommCost>& costs,
                                  sim::Engine& analytic, std::vector<double>& duration, std::vector<OpTiming>& timing,
                                  int max_passes = 4);

}  // namespace ccsim::planner
