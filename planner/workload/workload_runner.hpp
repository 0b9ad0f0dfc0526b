#pragma once
// Runs an LLM workload (`ccsim run`): places Megatron's rank grid on the cluster's GPUs
// (placement.hpp), builds the Program, lowers every communication op to Schedules simulated on
// the engine with the other groups that run the same op at the same time on shared nodes
// (lowering.hpp), times compute ops with a shape-aware model (compute_model.hpp), executes the
// Program's DAG on its streams (step_executor.hpp), and breaks the step down per stage
// (breakdown.hpp) and per link (link_loads.hpp).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"
#include "models/workload/program_builder.hpp"
#include "planner/workload/breakdown.hpp"
#include "planner/workload/compute_model.hpp"
#include "planner/workload/contention.hpp"
#include "planner/workload/link_events.hpp"
#include "planner/workload/link_loads.hpp"
#include "planner/workload/lowering.hpp"
#include "planner/workload/placement.hpp"
#include "planner/workload/serving.hpp"
#include "planner/workload/step_executor.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::planner {

struct WorkloadResult {
  bool feasible = true;
  std::vector<models::MemoryFootprint> memory;   ///< per stage
  double hbm_capacity = 0;                       ///< bytes, smallest GPU of the placement
  models::Program program;
  std::vector<OpTiming> timing;                  ///< per program op
  std::vector<int> op_comm;                      ///< per op: index into comm_costs, or -1
  std::vector<CommCost> comm_costs;
  /// Per Program rank (stage s of replica class c is rank c·pp + s): the GPU of its
  /// representative rank (compute is timed on the class's slowest GPU of the stage, ReplicaClass).
  std::vector<models::DeviceId> stage_gpu;
  /// The DP replicas grouped into classes that run alike (one when the cluster is symmetric).
  std::vector<ReplicaClass> classes;
  /// Per Program rank: seconds its DP collectives waited for other replica classes (start minus
  /// when the rank itself was ready); 0 with one class.
  std::vector<double> sync_wait;
  /// Program ops on the critical path, first to last (each starts when the previous ends); filled
  /// when the replicas differ (several classes, or what-if perturbations), else empty.
  std::vector<std::uint32_t> critical_path;
  std::vector<StageBreakdown> stages;
  double step_time = 0;                          ///< seconds (TTFT for prefill, TPOT for decode)
  double mfu = 0;                                ///< model FLOPs / (step time × GPUs × dense peak)
  double peak_flops = 0;                         ///< dense peak of the dtype, mean over the cluster's GPUs
  std::vector<LinkLoad> links;                   ///< by utilisation, descending
  int world = 0;
  int micro_batches = 1;
  ComputeCalibration compute;
  std::vector<ComputeEstimate> op_compute;       ///< per program op (compute ops; default for communication ops)
  ServingCalibration serving_calibration;        ///< inference phases: engine overhead, custom all-reduce constants
  double engine_overhead = 0;                    ///< seconds of host time per step (inference), in step_time and in each stage's idle
  std::optional<ServingResult> serving;          ///< phase serving: the request-level result (the rest describes its middle decode step)
  /// simulation.contention: what the dimensions lost to each other (timing holds the contended step).
  std::optional<ContentionResult> contention;
  /// what_if timed link events: what the ops that ran during them lost (timing holds the step with them).
  std::optional<LinkEventsResult> link_events;
};

/// The mean of `f` over the GPUs `r` stands for: over its Program ranks, each weighted by the
/// replicas of its class (with one class, the plain mean over pipeline stages). 0 without stages.
double per_gpu_mean(const WorkloadResult& r, const std::function<double(const StageBreakdown&)>& f);

/// Micro-batches of each DP replica when they are uneven (ReplicaClass::micro_batches, by DP
/// index); empty for the even split.
std::vector<int> replica_micro_batch_counts(const WorkloadResult& r);

class WorkloadRunner {
 public:
  /// `scenario` must have a workload, a strategy and a model (load_scenario guarantees it);
  /// `scenario`, `cluster` and `costs` must outlive the runner. Throws std::invalid_argument
  /// when the strategy's tp·cp·dp·pp differs from the cluster's GPUs, and what sim::make_engine
  /// throws for `engine`.
  WorkloadRunner(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                 ComputeCalibration compute, models::EngineKind engine);
  /// Runs the step. `progress(done, total)` is called while lowering communication ops.
  WorkloadResult run(const std::function<void(std::size_t, std::size_t)>& progress = {});
  /// The serving-engine figures for inference phases (default: ServingCalibration{}).
  void set_serving(ServingCalibration serving) {
    lowering_.set_serving(serving);
    serving_ = std::move(serving);
  }
  /// Replaces the compute constants for the next run() (ComputeCalibration::for_gpu picks each
  /// GPU model's); lowered communication ops stay memoized (they do not depend on them), so a
  /// calibration fit reruns a step cheaply.
  void set_compute(ComputeCalibration compute) { compute_ = std::move(compute); }
  /// Looks lowered communication ops up in (and adds them to) `cache`, shared with other
  /// runners on the same cluster and cost table; results are identical to a run without it.
  void set_shared_costs(std::shared_ptr<CommCostCache> cache) { lowering_.set_shared(std::move(cache)); }
  /// What run() computes beyond the timing of every op: Full (default) the per-stage breakdown
  /// and the per-link loads; NoLinks leaves WorkloadResult::links empty; StepOnly also leaves
  /// ::stages empty (step time and MFU only). A layout search screens candidates by their step
  /// time, and the link loads summed over every op instance are a large part of a big run.
  enum class Detail : std::uint8_t { Full, NoLinks, StepOnly };
  void set_detail(Detail d) { detail_ = d; }
  /// Keep every lowered op's simulated run (CommCost::plan in WorkloadResult::comm_costs), as
  /// simulation.contention does, so that the ops can be run again beside another job's
  /// (planner/cluster/jobs.hpp). Default false.
  void set_keep_plans(bool keep) { keep_plans_ = keep; }

 private:
  /// phase serving: one prefill step and decode steps at three contexts, each a run of its own.
  WorkloadResult run_serving(const std::function<void(std::size_t, std::size_t)>& progress);
  /// The result's figures known before the Program: placement, stage representatives, memory
  /// and feasibility, the dense peak.
  WorkloadResult prepare(std::vector<ReplicaClass> classes) const;
  /// Seconds of every op of out.program: communication lowered (memoized) on the groups of the
  /// op's class representative, compute estimated on the class's compute GPU of the stage at its
  /// speed. Fills out.op_comm, out.op_compute and out.comm_costs.
  std::vector<double> op_durations(WorkloadResult& out, const std::function<void(std::size_t, std::size_t)>& progress);
  /// Cross-dimension contention (simulation.contention) and timed link events: op durations
  /// recomputed from the step's timing and the step re-executed, until no duration moves by
  /// more than 1e-9 relative (at most 8 passes). Fills out.contention and out.link_events.
  void adapt_to_fixed_point(WorkloadResult& out, std::vector<double>& duration, LinkEventModel& events);

  const models::Scenario& scenario_;
  const models::Cluster& cluster_;
  const CostModel& costs_;
  ComputeCalibration compute_;
  ServingCalibration serving_;
  models::EngineKind engine_;
  CommLowering lowering_;
  Detail detail_ = Detail::Full;
  bool keep_plans_ = false;
};

/// The chain of Program ops that ends last, first to last, walked back through the dependency
/// or stream predecessor that ended last (an op starts when that one ends); among equal ends
/// (the copies of a DP collective) the rank that waited least (`sync_wait`, per Program rank).
/// WorkloadResult::critical_path where the replicas differ; callable on any run's timing.
std::vector<std::uint32_t> critical_path_of(const models::Program& p, const std::vector<OpTiming>& timing,
                                            const std::vector<double>& sync_wait);

}  // namespace ccsim::planner
