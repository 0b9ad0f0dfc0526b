#pragma once
// The search space of `ccsim plan`: the parallel layouts a framework would accept for a
// scenario's model, phase and cluster, as Megatron-LM (training) and vLLM (inference) name
// their settings. A space holds, per knob, the values to try; `--space KNOB=VALUES` replaces a
// knob's values and `--fix KNOB=VALUE` pins one. Enumeration walks the cartesian product,
// skips settings that do not change the layout (sequence parallelism at TP 1, interleaving
// at PP 1, rank orders that place ranks identically) and prunes what a framework would refuse
// or what does not fit in GPU memory, counting each reason.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"

namespace ccsim::planner {

/// One layout: the knobs a search turns; everything else comes from the scenario.
struct Layout {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  bool sp = false;                  ///< sequence parallelism (Megatron --sequence-parallel)
  int zero = 0;                     ///< ZeRO stage: 1 = distributed optimizer, 3 = FSDP
  std::int64_t mbs = 1;             ///< training: micro-batch size, sequences
  int v = 1;                        ///< model chunks per pipeline rank; > 1 = interleaved 1F1B
  std::string recompute = "none";   ///< none | selective | full
  std::string order;                ///< rank order, innermost first (Megatron --order style)
  bool tp_overlap = false;          ///< TP communication overlapped with GEMMs (--tp-comm-overlap)
  std::int64_t batch = 0;           ///< inference: sequences per replica (decode / serving batch_size, prefill micro_batch_size)
};

/// "TP8 PP2 DP4 mbs1 SP ZeRO-1 1F1B sel" — the short name the plan table prints.
std::string layout_name(const Layout& l, models::WorkloadPhase phase);

/// The layout a scenario's strategy and workload set (dp as the strategy says).
Layout layout_of(const models::Scenario& scenario);
/// Whether two layouts place and run the same way (rank orders compared by the placement they
/// give: dimensions of size 1 do not count).
bool same_layout(const Layout& a, const Layout& b);

/// Values to try per knob (each list in the order it is enumerated).
struct SearchSpace {
  std::vector<int> tp, pp, cp, ep, zero, v;
  std::vector<std::int64_t> mbs, batch;
  std::vector<bool> sp, tp_overlap;
  std::vector<std::string> recompute, order;
};

/// The default space for a scenario, as a user of the frameworks would expect it:
/// * training: TP powers of two up to the smallest node's GPU count (TP within a node); PP
///   powers of two up to the layers; CP 1, plus powers of two keeping ≥ 8,192 tokens per CP
///   rank for sequences over 16,384; EP 1, or for MoE models powers of two dividing the experts;
///   micro-batch 1, 2, 4; sequence parallelism on (with TP > 1) and TP overlap off and on;
///   ZeRO 0, 1 (distributed optimizer), 3 (FSDP); 1F1B, interleaved with 2 or 4 chunks per stage;
///   recompute none, selective, full; rank orders tp-cp-ep-pp-dp (Megatron-Core's default) and
///   tp-cp-ep-dp-pp (Megatron-LM's older one).
/// * inference (prefill, decode, serving): TP powers of two up to the node, PP powers of two
///   up to the layers, DP the rest; batch powers of two 1 .. 256 per replica; no SP, ZeRO,
///   CP, EP, recomputation (vLLM's scheme).
/// Knobs the scenario's strategy sets to something the default would not try are kept too.
SearchSpace default_space(const models::Scenario& scenario, const models::Cluster& cluster);

/// Applies one `--space KNOB=VALUES` (fix = false) or `--fix KNOB=VALUE` (fix = true) to the
/// space. Knobs: tp, pp, cp, ep, zero (zero_stage), mbs (micro_batch_size), v
/// (virtual_stages), sp (sequence_parallel), tp_overlap (tp_comm_overlap), recompute, order,
/// batch (batch_size). VALUES: a comma list (`1,2,4`, `true,false`, `none,full`) or for
/// integers a range `A..B`, every integer in it (a framework's own rules then prune). Throws
/// support::InputError naming the option, the knob, what was expected and what was found.
/// Returns the knob's name (aliases resolved).
std::string apply_space_option(SearchSpace& space, const std::string& arg, bool fix);

/// Applies the --space then the --fix options to the scenario's default space. Throws
/// support::InputError for a knob given twice (in --space or --fix, or in both) and for a
/// training knob (cp, ep, mbs, sp, tp_overlap, zero, v, recompute) on an inference phase, or
/// batch on a training step.
SearchSpace space_from_options(const models::Scenario& scenario, const models::Cluster& cluster,
                               const std::vector<std::string>& space, const std::vector<std::string>& fix);

/// Why a candidate was not evaluated (keys of PruneCounts).
inline constexpr const char* kPruneGpus = "tp·pp·cp does not divide the GPUs";
inline constexpr const char* kPruneBatch = "global batch not divisible by micro-batch·dp";
inline constexpr const char* kPruneModel = "model rule (heads, KV heads, experts, sequence)";
inline constexpr const char* kPruneDepth = "pp·v more than the model's layers";
inline constexpr const char* kPruneInterleave = "interleaved schedule: too few micro-batches for its group (Megatron-Core's rule)";
inline constexpr const char* kPruneMemory = "does not fit in GPU memory";
inline constexpr const char* kPruneLatency = "latency target missed";
inline constexpr const char* kPruneAlgorithm = "strategy.algorithms: an MSCCL file (synth:FILE) for groups of another size";

/// A candidate that passed the rules and the memory check.
struct Candidate {
  Layout layout;
  models::StrategySpec strategy;
  models::WorkloadSpec workload;
  double memory = 0;  ///< bytes per GPU, the largest stage's footprint
};

struct Enumeration {
  std::vector<Candidate> candidates;
  std::map<std::string, std::size_t> pruned;  ///< reason -> candidates
  std::size_t total = 0;                       ///< layouts enumerated (after dropping duplicates)
};

/// Walks `space` for `scenario` on `cluster`: every knob combination, the scenario's other
/// strategy and workload settings kept, dp = GPUs / (tp·pp·cp). Candidates come out in
/// enumeration order (deterministic).
Enumeration enumerate_layouts(const models::Scenario& scenario, const models::Cluster& cluster, const SearchSpace& space);

/// The scenario with the candidate's strategy and workload.
models::Scenario with_layout(const models::Scenario& scenario, const Candidate& c);

}  // namespace ccsim::planner
