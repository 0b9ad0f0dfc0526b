#pragma once
// `ccsim plan`: searches the parallel layouts of a scenario (planner/search/layout_space.hpp) and
// ranks them by an objective.
//
// Every candidate that passes the rules and the memory check is simulated with the analytic
// engine through the same WorkloadRunner `ccsim run` uses; lowered communication ops are
// shared between candidates (CommCostCache: the same collective of the same size on the same
// GPUs with the same concurrent groups is simulated once). A training step of m micro-batches
// is screened from two shorter steps of m_a < m_b micro-batches: every further micro-batch
// (1F1B) or group of g micro-batches (interleaved) adds the same time to the step, so
// f(m) = f(m_b) + (m − m_b)/g · (f(m_b) − f(m_a)), with m_a = 1, m_b = 2 (g = 1) for
// 1F1B and m_a = g + r, m_b = 2g + r (r = m mod g, g the micro-batch group, pp by default) for
// the interleaved schedule; the screen extrapolates the step time, tokens/s and MFU (the
// per-dim breakdown comes from full runs only). (The pipeline formula (m + p − 1)·(F + B) of Narayanan et al.,
// SC'21, is affine in m from m = 1; tests/planner/search/layout_plan_test.cpp checks the screen
// against full runs.) The best candidates of the screen are then run in full (`exact`), and the figures
// reported for them are `ccsim run`'s, bit for bit. `--exact` runs every candidate in full.

#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/search/layout_space.hpp"
#include "planner/search/micro_batch_split.hpp"
#include "planner/workload/serving.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::planner {

struct PlanOptions {
  /// step-time (lowest first), tokens-per-s (highest), mfu (highest) or cost (USD per million
  /// tokens: price_per_gpu_hour × GPUs × step time / 3600 / tokens per step × 1e6, lowest).
  std::string objective = "step-time";
  double price_per_gpu_hour = 0;   ///< USD per GPU-hour; > 0 required by the cost objective
  int top = 10;                    ///< candidates reported (and re-simulated with --rerank)
  std::string rerank;              ///< "" or "flow": the top `top` re-simulated with the flow engine
  /// --synthesize: dimensions ("tp", "cp", "dp") whose AllReduce, AllGather and ReduceScatter
  /// the top `top` candidates try on synthesized schedules (strategy.algorithms.DIM.* =
  /// synthesized), each dimension kept where it shortens the step.
  std::vector<std::string> synthesize;
  std::optional<double> max_tpot;  ///< seconds: decode step / serving TPOT at most this
  std::optional<double> max_ttft;  ///< seconds: prefill step / serving TTFT at most this
  bool exact = false;              ///< run every candidate in full (no screening)
  int jobs = 0;                    ///< worker threads; 0 = the machine's hardware threads
  /// Called from the calling thread as candidates finish (done, total), at most every 0.2 s.
  std::function<void(std::size_t, std::size_t)> progress;
};

/// The figures of one simulated candidate (per GPU figures are means over pipeline stages, as
/// `ccsim run` reports them; seconds unless named otherwise).
struct CandidateResult {
  Candidate candidate;
  std::size_t index = 0;            ///< position in the enumeration (ties rank by it)
  bool exact = false;               ///< simulated in full (else screened, see the file comment)
  double step_time = 0;             ///< training step, prefill TTFT, decode TPOT, serving: middle decode step
  double tokens_per_s = 0;          ///< as report.json: tokens of the step / step time
  double mfu = 0;
  // The breakdown below is 0 for a screened candidate (every candidate reported is a full run).
  double compute = 0;               ///< compute per GPU
  double exposed_total = 0;         ///< exposed communication per GPU
  std::array<double, models::kParallelDims> exposed{};  ///< exposed communication per dim
  double bubble = 0;                ///< idle per GPU (pipeline bubble, engine overhead)
  double ttft = 0, tpot = 0;        ///< inference: the phase's latencies (serving: request-level)
  double output_tokens_per_s = 0;   ///< serving: output tokens/s of all replicas
  double cost_per_mtok = 0;         ///< USD per million tokens (price given), else 0
  std::optional<double> flow_step_time;  ///< --rerank flow: the flow engine's step time
  /// --synthesize: the step time on the scenario's own algorithms (the library's unless it names others) (the figures above are then with
  /// the kept dimensions' collectives synthesized), nullopt when not tried.
  std::optional<double> library_step_time;
  std::vector<std::string> synthesized;  ///< --synthesize: the dimensions kept synthesized ("dp", ...)
  double objective = 0;             ///< the ranked value (smaller is better after sign)
  bool fits = true;                 ///< a full run found the footprint within HBM (serving: the KV cache at its largest)
  /// A strategy.algorithms choice this layout cannot run (a synth:FILE made for groups of
  /// another size): the error, file:line:column first; empty when it ran.
  std::string rejected;
};

struct PlanResult {
  std::size_t enumerated = 0;                  ///< layouts enumerated
  std::map<std::string, std::size_t> pruned;   ///< reason -> count (latency targets included)
  std::size_t evaluated = 0;                   ///< candidates simulated (screened or exact)
  std::size_t exact_runs = 0;                  ///< full runs (analytic engine), those later dropped by a latency target included
  std::size_t synthesized_runs = 0;            ///< --synthesize: full runs of the top candidates with synthesized dimensions
  std::vector<CandidateResult> ranked;         ///< the best first: full runs, then screened ones
  std::size_t shared_hits = 0, shared_misses = 0;  ///< communication lowerings reused / simulated
  double seconds = 0;                          ///< wall time of the search
  /// The scenario's own layout when it is among the candidates: its rank (0 = best) and its
  /// figures from a full run; nullopt when the search pruned it or its space lacks it.
  std::optional<std::size_t> scenario_rank;
  /// Why the scenario's own layout is not ranked when the search simulated and dropped it
  /// (a latency target or its memory), else empty.
  std::string scenario_dropped;
  std::optional<CandidateResult> scenario_layout;
  /// Training on a cluster whose best layout has several replica classes (other GPU models,
  /// what-if speeds): the best micro-batch split between them (best_micro_batch_split).
  std::optional<MicroBatchSplit> split;
  /// Training whose best layout has stages on other GPU models or speeds: the best layers per
  /// stage (best_layer_split).
  std::optional<LayerSplit> layer_split;
};

/// Throws support::InputError (at "<command line>") for an objective other than step-time,
/// tokens-per-s, mfu, cost, or the cost objective without a positive price.
void check_objective(const std::string& objective, double price_per_gpu_hour);

/// Runs the search. Throws support::InputError for option values that cannot work (cost
/// objective without a price, latency targets on a training step, unknown objective).
PlanResult plan_layouts(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                        const ComputeCalibration& compute, const ServingCalibration& serving, const SearchSpace& space,
                        const PlanOptions& options);

/// Simulates one candidate: in full (`exact`) or screened from two shorter steps. `engine`:
/// analytic or flow. `shared` may be null.
CandidateResult evaluate_candidate(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                                   const ComputeCalibration& compute, const ServingCalibration& serving, const Candidate& c,
                                   bool exact, models::EngineKind engine, const std::shared_ptr<CommCostCache>& shared);

}  // namespace ccsim::planner
