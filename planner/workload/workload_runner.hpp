#pragma once
// Runs an LLM workload (`ccsim run`): places Megatron's rank grid on the cluster's GPUs,
// builds the Program, lowers every communication op to Schedules simulated on the engine
// (with the other groups that run the same op at the same time on shared nodes), times
// compute ops with a shape-aware model (estimate_compute), and executes the Program's DAG on its streams.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program_builder.hpp"
#include "models/workload/program.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/serving.hpp"

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

/// Constants of the compute model (planner::estimate_compute), from
/// scenarios/calibration/compute.yaml: `defaults`, overridden per GPU catalog name under `gpus`.
/// Every field is a named, overridable number so that a later calibration can fit it; the
/// table's comments give the public source of each default.
struct ComputeCalibration {
  /// Fraction of the dense peak that one SM reaches inside a full tile of a large GEMM
  /// (the "maximum achievable matmul FLOPS" of the GPU over its peak), in [0.01, 1].
  double gemm_efficiency = 0.7;
  /// Output tile of one GEMM thread block (CTA), elements: the GEMM is cut into
  /// ceil(m/tile_m)·ceil(n/tile_n) tiles (or the transposed tile, whichever is faster), in [8, 1024].
  int gemm_tile_m = 128;
  int gemm_tile_n = 128;
  /// k-loop overhead, elements of k: a tile's main loop runs at k / (k + gemm_k_overhead) of
  /// its full rate (pipeline prologue and epilogue), in [0, 65536].
  double gemm_k_overhead = 0.0;
  /// Smallest k slice of a split-K GEMM, elements, in [0, 65536]: a GEMM with fewer tiles than
  /// SMs splits its k loop into 1 to floor(k / gemm_split_k_min) slices (at most 256), the fastest.
  double gemm_split_k_min = 256.0;
  /// FlashAttention forward (also Recompute) and backward: fraction of the dense peak for long
  /// sequences, in [0.01, 1]; falls as n / (n + seq_half) with n key tokens per sequence.
  double attention_efficiency = 0.5;
  double attention_backward_efficiency = 0.5;
  double attention_seq_half = 0.0;           ///< tokens, in [0, 1e6]
  double attention_backward_seq_half = 0.0;  ///< tokens, in [0, 1e6]
  /// Query rows per attention thread block: ceil(m / tile)·batch blocks fill waves of SMs, in [8, 1024].
  int attention_tile_m = 128;
  /// Fraction of the HBM bandwidth that streaming kernels reach, in [0.01, 1].
  double memory_efficiency = 0.8;
  /// Seconds added to every compute op that does work (launch gap + prologue), in [0, 1 ms].
  double kernel_overhead = 0.0;
  std::string source;
  /// Throws support::InputError (file:line:col, key, expected, found) on a bad table: unknown
  /// keys, values outside the ranges above, a missing `defaults` map. An optional `provenance`
  /// map (written by validate::calibrate_compute) is accepted with the keys tool, date, gpu,
  /// inputs, holdout, fit_rows, holdout_rows, gemm_rows, fitted, not_fitted, mape.
  static ComputeCalibration load(const std::string& path, const std::string& gpu);
  static std::string default_path();
};

/// What limited a compute op: math (tensor-core time), memory (HBM traffic), overhead (the
/// per-kernel term exceeded both), none (an op with no work).
enum class ComputeBound : std::uint8_t { None, Math, Memory, Overhead };
std::string_view to_string(ComputeBound b);

/// The compute model's result for one op. time = max(math, memory) + overhead, seconds.
struct ComputeEstimate {
  double time = 0;        ///< seconds
  double math = 0;        ///< seconds of tensor-core work, with tile, wave and k-loop losses
  double memory = 0;      ///< seconds of HBM traffic at memory_efficiency
  double overhead = 0;    ///< seconds, kernel_overhead
  double bytes = 0;       ///< HBM bytes the model charged
  double waves = 0;       ///< thread-block waves (GEMM, attention with a shape); 0 otherwise
  int split_k = 1;        ///< GEMM: k-loop splits (1 = none)
  double efficiency = 0;  ///< op FLOPs / (time × dense peak); 0 for ops without FLOPs
  ComputeBound bound = ComputeBound::None;
};

/// Time of one compute op (Gemm, Attention, Memory) on `gpu`:
/// * Gemm with a shape (m, n, k, batch): tiles = ceil(m/tile_m)·ceil(n/tile_n)·batch (the
///   tile's transpose too; the faster is taken, as cuBLAS's heuristic picks a kernel), waves =
///   ceil(tiles·split / (sms − comm_sms)); math = waves · 2·tile_m·tile_n·(k/split +
///   gemm_k_overhead) / (peak/sms · gemm_efficiency), i.e. k/(k + gemm_k_overhead) is the k-loop
///   efficiency; split = 1, or when tiles < SMs the fastest of 1 .. floor(k/gemm_split_k_min)
///   (at most 256) with k/split rounded up (split-K); bytes = (m·k + k·n + m·n)·e·batch with e the dtype's
///   bytes (fp8 1, bf16/fp16 2, fp32 4), plus the fp32 partials m·n·4·2·(split − 1)·batch. This is the tile and wave quantization of
///   NVIDIA's "Matrix Multiplication Background User's Guide". Without sms (0) tiles are not
///   grouped into waves.
/// * Attention with a shape (m queries, n keys, k head dim, batch = sequences × heads):
///   efficiency = a · n/(n + seq_half) · wave fill of ceil(m/attention_tile_m)·batch blocks,
///   with (a, seq_half) the forward or backward constants (Pass::Backward); math = flops /
///   (peak · efficiency); memory = op.bytes (Q, K, V, O and the KV-cache read).
/// * Gemm / Attention without a shape: flops / (peak · a) and op.bytes.
/// * Memory: op.bytes at memory_efficiency.
/// memory = bytes / (hbm_bandwidth · memory_efficiency); time = max(math, memory) + kernel_overhead;
/// an op with neither FLOPs nor bytes takes 0. `dtype` is the workload's ("fp8" uses the FP8
/// peak where the GPU has one). Throws std::invalid_argument for a communication op.
ComputeEstimate estimate_compute(const models::ProgramOp& op, const models::GpuSpec& gpu, const ComputeCalibration& c,
                                 const std::string& dtype);

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
  std::vector<ComputeEstimate> op_compute;       ///< per program op (compute ops; default for communication ops)
  ServingCalibration serving_calibration;        ///< inference phases: engine overhead, custom all-reduce constants
  double engine_overhead = 0;                    ///< seconds of host time per step (inference), in step_time and in each stage's idle
  std::optional<ServingResult> serving;          ///< phase serving: the request-level result (the rest describes its middle decode step)
};

/// Lowered communication ops shared between WorkloadRunners of one cluster, cost table and
/// compute table (the candidates of `ccsim plan`): the same collective of the same size on the
/// same GPUs, with the same concurrent groups, is simulated once. Thread-safe. Keys are built
/// by WorkloadRunner (op, phase, collective choices, engine, the groups as GPU ids).
class CommCostCache {
 public:
  std::optional<CommCost> find(const std::string& key) const;
  void insert(const std::string& key, const CommCost& cost);
  std::size_t size() const;
  /// Lookups that found a cost, and lookups that did not.
  std::pair<std::size_t, std::size_t> hits_misses() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, CommCost> costs_;
  mutable std::size_t hits_ = 0, misses_ = 0;
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
  /// Replaces the compute constants for the next run(); lowered communication ops stay memoized
  /// (they do not depend on them), so a calibration fit reruns a step cheaply.
  void set_compute(ComputeCalibration compute) { compute_ = std::move(compute); }
  /// Looks lowered communication ops up in (and adds them to) `cache`, shared with other
  /// runners on the same cluster and cost table; results are identical to a run without it.
  void set_shared_costs(std::shared_ptr<CommCostCache> cache) { shared_ = std::move(cache); }
  /// What run() computes beyond the timing of every op: Full (default) the per-stage breakdown
  /// and the per-link loads; NoLinks leaves WorkloadResult::links empty; StepOnly also leaves
  /// ::stages empty (step time and MFU only). A layout search screens candidates by their step
  /// time, and the link loads summed over every op instance are a large part of a big run.
  enum class Detail : std::uint8_t { Full, NoLinks, StepOnly };
  void set_detail(Detail d) { detail_ = d; }

 private:
  CommCost lower(const models::ProgramOp& op, int stage);
  /// Simulates one communication op of `group` with the `others` running beside it.
  CommCost simulate(const models::ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others);
  /// vLLM's custom all-reduce for an inference TP AllReduce when vLLM would pick it, else nullopt.
  std::optional<CommCost> lower_vllm_allreduce(const models::ProgramOp& op, const std::vector<int>& group,
                                               const std::vector<std::vector<int>>& others);
  /// phase serving: one prefill step and decode steps at three contexts, each a run of its own.
  WorkloadResult run_serving(const std::function<void(std::size_t, std::size_t)>& progress);
  ComputeEstimate compute_time(const models::ProgramOp& op, const models::GpuSpec& gpu) const;

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
  std::vector<std::vector<int>> node_ranks_;  ///< ranks on each node, ascending (built by lower())
  std::shared_ptr<CommCostCache> shared_;  ///< costs shared with other runners (ccsim plan), or null
  Detail detail_ = Detail::Full;
};

}  // namespace ccsim::planner
