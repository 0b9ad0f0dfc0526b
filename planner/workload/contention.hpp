#pragma once
// Cross-dimension contention in a workload step. Each communication op is first costed alone
// (with the other groups of its own op that run beside it, lowering.hpp); here the ops of
// different parallel dimensions that overlap in time on shared links are run again together,
// in one engine run each, so that they share those links under the engine's max-min fair
// sharing (two flows through one NIC each get half of it), on the engine the ops were costed on. The step is re-executed with the
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
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/workload/program.hpp"
#include "planner/workload/lowering.hpp"
#include "planner/workload/step_executor.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::planner {

/// Parallel dimensions as contention reports them: ParallelDim's five (TP, PP, DP, EP, CP), then
/// expert data parallel (EDP: an expert's DP op).
inline constexpr int kContentionDims = 6;
/// The dimension index of a communication op (0 .. kContentionDims−1).
int contention_dimension(const models::ProgramOp& op);
/// "TP", "PP", "DP", "EP", "CP", "EDP".
const char* contention_dimension_name(int d);
/// Whether two ascending lists share an element (link or GPU ids of two runs).
bool sorted_intersect(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b);

/// What one parallel dimension lost to the others in a step.
struct DimensionContention {
  std::string dim;            ///< "TP", "CP", "DP", "EP", "PP", "EDP" (expert data parallel)
  std::size_t ops = 0;        ///< op instances of the dimension's representative ranks
  std::size_t slowed = 0;     ///< of them, those that ran longer beside other dimensions
  double alone = 0;           ///< seconds: Σ their durations costed alone
  double contended = 0;       ///< seconds: Σ their durations beside the others
  /// What was lost, by the dimension it was lost to (an op beside several splits its loss
  /// evenly between them), seconds; dimensions with a loss only, in the order of `dim` names.
  std::vector<std::pair<std::string, double>> to;
  std::vector<double> lost_to;  ///< (working storage)
};

struct ContentionResult {
  int passes = 0;             ///< step executions with contended durations (with timed link events, passes of both)
  bool converged = false;     ///< the last pass changed no duration by more than 1e-9 relative
  double step_alone = 0;      ///< seconds: the step with every op costed alone
  std::size_t runs = 0;       ///< merged engine runs (after sharing between repeated instances)
  std::vector<DimensionContention> dims;  ///< dimensions with communication ops, in ParallelDim order
};

/// The contended durations of a step's communication ops (the fixed-point loop around it is
/// the workload runner's: it re-executes the step with these durations and asks again).
class CrossDimensionContention {
 public:
  /// `op_comm` and `costs` as WorkloadResult's, `alone` per op its duration costed alone; costs
  /// must hold their plans (CommCost::plan; ops whose cost has none are left alone). Merged plans
  /// run on `engine` (the lowering's: analytic or flow). Keeps references to all but `alone`.
  CrossDimensionContention(const models::Program& p, const std::vector<int>& op_comm, const std::vector<CommCost>& costs,
                           sim::Engine& engine, std::vector<double> alone);
  ~CrossDimensionContention();
  CrossDimensionContention(const CrossDimensionContention&) = delete;
  CrossDimensionContention& operator=(const CrossDimensionContention&) = delete;
  /// Per op: its duration beside the overlapping ops of other dimensions when the step runs as
  /// `timing` says (its time alone where nothing overlaps). Throws what the engine throws.
  std::vector<double> durations(const std::vector<OpTiming>& timing);
  /// Per dimension, what the last durations() call found.
  std::vector<DimensionContention> dims() const;
  /// Merged engine runs so far.
  std::size_t runs() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ccsim::planner
