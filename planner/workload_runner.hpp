#pragma once
// Runs an LLM workload (`ccsim run`): places Megatron's rank grid on the cluster's GPUs,
// builds the Program, lowers every communication op to Schedules simulated on the engine
// (with the other groups that run the same op at the same time on shared nodes), times
// compute ops with a roofline, and executes the Program's DAG on its streams.

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/cluster.hpp"
#include "models/scenario.hpp"
#include "models/workload/builder.hpp"
#include "models/workload/program.hpp"
#include "planner/collective_runner.hpp"
#include "planner/cost_model.hpp"
#include "planner/serving.hpp"

namespace ccsim::planner {

/// Megatron-LM's rank grid. Ranks are numbered with the strategy's `order` (innermost first;
/// default tp-cp-ep-pp-dp); EP does not add ranks: an EP group is `ep` consecutive ranks of
/// the combined (cp, dp) index with the same tp and pp coordinates, as in Megatron-Core.
/// Rank r runs on the cluster's r-th GPU (nodes in order, GPUs in node order), so TP, the
/// innermost dimension, stays inside a node and local GPU index = NIC rail.
class Placement {
 public:
  struct Coords {
    int tp = 0, cp = 0, dp = 0, pp = 0;
  };
  /// Throws std::invalid_argument when tp·cp·dp·pp differs from `world`.
  Placement(const models::StrategySpec& s, int world);
  int world() const { return world_; }
  Coords coords(int rank) const;
  int rank(const Coords& c) const;
  /// Ranks of the `dim` group that contains `rank`, in group order (PP: all stages).
  std::vector<int> group(models::ParallelDim dim, int rank) const;
  /// The expert-data-parallel group of `rank`: ranks holding the same experts (same tp, pp
  /// and position in their EP group), dp·cp/ep of them.
  std::vector<int> expert_dp_group(int rank) const;

 private:
  const models::StrategySpec& s_;
  int world_;
  std::vector<char> order_;           // 't', 'c', 'd', 'p' innermost first
  std::array<int, 4> stride_{};       // by t, c, d, p
};

/// Compute efficiencies (fraction of peak) for the roofline, from
/// scenarios/calibration/compute.yaml: defaults, overridden per GPU catalog name.
struct ComputeCalibration {
  double gemm_efficiency = 0.7;
  double attention_efficiency = 0.5;
  double memory_efficiency = 0.8;
  double kernel_overhead = 0.0;  ///< seconds added to every compute op that does work
  std::string source;
  /// Throws models::InputError on a bad table.
  static ComputeCalibration load(const std::string& path, const std::string& gpu);
  static std::string default_path();
};

/// Timing of one Program op.
struct OpTiming {
  double start = 0;
  double end = 0;
};

/// What one lowered communication op cost (memoized per stage, dim, collective and size).
struct CommCost {
  double time = 0;                      ///< seconds
  std::string algorithm;                ///< "ring", "direct", ... ("p2p" for PP sends)
  std::string protocol;
  int group_size = 0;
  int concurrent_groups = 0;            ///< other groups simulated alongside
  std::vector<sim::LinkRecord> links;   ///< all simulated groups
};

/// Per pipeline stage figures (one GPU of the stage), seconds.
struct StageBreakdown {
  double compute = 0;                   ///< busy time of the compute stream
  std::array<double, models::kParallelDims> comm{};     ///< communication time per dim (sum of op durations)
  std::array<double, models::kParallelDims> exposed{};  ///< part of it not overlapped by compute
  double exposed_total = 0;             ///< time with communication in flight and no compute (each instant once)
  double idle = 0;                      ///< neither computing nor communicating (pipeline bubble); compute + exposed_total + idle = step
  double end = 0;                       ///< when the stage's last op ends
};

struct LinkLoad {
  models::LinkId link = 0;
  double bytes = 0;        ///< wire bytes per step
  double busy = 0;         ///< seconds per step with data on the link (summed over ops)
  double peak = 0;         ///< highest instantaneous utilisation seen in any op
  double utilisation = 0;  ///< bytes / (capacity × step time)
};

struct WorkloadResult {
  bool feasible = true;
  std::vector<models::MemoryFootprint> memory;   ///< per stage
  double hbm_capacity = 0;                       ///< bytes, smallest GPU of the placement
  models::Program program;
  std::vector<OpTiming> timing;                  ///< per program op
  std::vector<int> op_comm;                      ///< per op: index into comm_costs, or -1
  std::vector<CommCost> comm_costs;
  std::vector<models::DeviceId> stage_gpu;       ///< GPU of each stage's representative rank (compute is timed on the stage's slowest GPU)
  std::vector<StageBreakdown> stages;
  double step_time = 0;                          ///< seconds (TTFT for prefill, TPOT for decode)
  double mfu = 0;                                ///< model FLOPs / (step time × GPUs × dense peak)
  double peak_flops = 0;                         ///< dense peak of the dtype, mean over the cluster's GPUs
  std::vector<LinkLoad> links;                   ///< by utilisation, descending
  int world = 0;
  int micro_batches = 1;
  ComputeCalibration compute;
  ServingCalibration serving_calibration;        ///< inference phases: engine overhead, custom all-reduce constants
  double engine_overhead = 0;                    ///< seconds of host time per step (inference), in step_time and in each stage's idle
  std::optional<ServingResult> serving;          ///< phase serving: the request-level result (the rest describes its middle decode step)
};

class WorkloadRunner {
 public:
  /// `scenario` must have a workload, a strategy and a model (load_scenario guarantees it).
  WorkloadRunner(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                 ComputeCalibration compute, std::string engine);
  /// Runs the step. `progress(done, total)` is called while lowering communication ops.
  WorkloadResult run(const std::function<void(std::size_t, std::size_t)>& progress = {});
  /// The serving-engine figures for inference phases (default: ServingCalibration{}).
  void set_serving(ServingCalibration serving) { serving_ = std::move(serving); }

 private:
  CommCost lower(const models::ProgramOp& op, int stage);
  /// vLLM's custom all-reduce for an inference TP AllReduce when vLLM would pick it, else nullopt.
  std::optional<CommCost> lower_vllm_allreduce(const models::ProgramOp& op, const std::vector<int>& group,
                                               const std::vector<std::vector<int>>& others);
  /// phase serving: one prefill step and decode steps at three contexts, each a run of its own.
  WorkloadResult run_serving(const std::function<void(std::size_t, std::size_t)>& progress);
  double compute_time(const models::ProgramOp& op, const models::GpuSpec& gpu) const;

  const models::Scenario& scenario_;
  const models::Cluster& cluster_;
  const CostModel& costs_;
  ComputeCalibration compute_;
  ServingCalibration serving_;
  std::string engine_;
  Placement placement_;
  std::map<std::tuple<int, int, int, int, bool, double>, int> memo_;  // (dim, stage, collective, peer, expert, bytes) -> cost index
  std::vector<CommCost> costs_list_;
  std::vector<int> stage_rep_;             ///< representative rank of each stage (set by run)
  std::unique_ptr<sim::Engine> analytic_;  ///< shared by every lowering (its route cache too)
  std::unique_ptr<sim::Engine> chosen_;    ///< the scenario's engine when it is not analytic
};

}  // namespace ccsim::planner
