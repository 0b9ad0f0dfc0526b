#pragma once
// Scenario files: one YAML document with the sections `cluster`, `workload`, `strategy` and
// `simulation`, each loaded into a typed struct. A scenario may `include` other scenario files
// (paths relative to the including file; the including file's keys win; maps merge, lists
// replace) and may name catalog entries (`node: dgx-h100`, `gpu: H100-SXM5`) with overrides.
//
// Every rule on the input is checked here, with file, line, column, key, expected and found
// (InputError); see README.md "Scenario files" for the schema.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "support/yaml_fields.hpp"
#include "models/workload/transformer.hpp"

namespace ccsim::models {

/// What to simulate. Used by `ccsim run` (training steps and inference phases).
struct WorkloadSpec {
  std::string model;                     ///< scenarios/models entry or a path to a Hugging Face config.json
  std::string phase = "training_step";   ///< training_step | prefill | decode | serving
  std::int64_t sequence_length = 0;      ///< tokens per sequence (prompt length for prefill)
  std::int64_t micro_batch_size = 1;     ///< sequences per micro-batch
  std::int64_t global_batch_size = 0;    ///< sequences per optimizer step (training); 0 = one micro-batch per DP rank
  std::int64_t batch_size = 1;           ///< running sequences (decode); requests admitted together (serving)
  std::int64_t context_length = 0;       ///< tokens already in the KV cache (decode)
  std::int64_t generated_tokens = 1;     ///< tokens to generate (decode)
  std::int64_t input_len = 0;            ///< prompt tokens per request (serving; vLLM benchmarks' --input-len)
  std::int64_t output_len = 0;           ///< tokens generated per request, ≥ 2 (serving; --output-len)
  std::string dtype = "bf16";            ///< bf16 | fp16 | fp8 | fp32
  std::string recompute = "none";        ///< none | selective | full (Megatron --recompute-granularity)
  /// full only: uniform | block (Megatron --recompute-method). uniform: every layer is
  /// recomputed, the input stored once per group of recompute_num_layers layers; block: only the
  /// first recompute_num_layers layers of each model chunk are recomputed.
  std::string recompute_method = "uniform";
  /// full only: layers per checkpointed group (uniform) or recomputed layers per model chunk
  /// (block), Megatron --recompute-num-layers; 1 ≤ N ≤ layers per pipeline stage.
  int recompute_num_layers = 1;
  /// selective only: the submodules recomputed (Megatron-Core --recompute-modules; default core_attn):
  /// core_attn | layernorm | mlp | moe_act | moe | shared_experts | mla_up_proj.
  std::vector<std::string> recompute_modules{"core_attn"};
};

/// How the work is parallelised, in Megatron-LM's terms.
struct StrategySpec {
  int tp = 1;                            ///< tensor parallel size
  int pp = 1;                            ///< pipeline parallel size
  int dp = 1;                            ///< data parallel size (derived when absent)
  int cp = 1;                            ///< context parallel size
  int ep = 1;                            ///< expert parallel size (MoE layers), divides dp × cp
  bool sequence_parallel = false;
  int zero_stage = 0;                    ///< 0, 1, 2, 3 (3 = FSDP)
  std::string pipeline_schedule = "1f1b";///< 1f1b | interleaved
  int virtual_stages = 1;                ///< model chunks per pipeline rank (interleaved)
  /// Interleaved: micro-batches run per model chunk before moving to the next chunk (Megatron-Core
  /// --microbatch-group-size-per-virtual-pipeline-stage); 0 = pp (Megatron's default).
  int microbatch_group_size_per_vp_stage = 0;
  std::string order = "tp-cp-ep-pp-dp";  ///< rank placement, innermost first (Megatron's default)
  std::map<std::string, std::string> algorithms;  ///< collective -> algorithm ("auto" by default)
  std::map<std::string, support::SourceLocation> algorithm_locations;  ///< where each choice was written (for errors)
  bool tp_comm_overlap = false;          ///< TP collectives pipelined with their GEMMs as Transformer Engine's userbuffers do (Megatron --tp-comm-overlap; needs sequence_parallel)
  bool overlap_grad_reduce = false;      ///< DP gradient buckets reduce during the last micro-batch's backward (Megatron --overlap-grad-reduce; default False: after the backward)
  bool overlap_param_gather = false;     ///< ZeRO-1/2: parameter AllGathers overlap the next step's forward (Megatron --overlap-param-gather)
  std::string grad_reduce_dtype = "fp32";///< gradient reduction precision: fp32 (Megatron's default main grads) | bf16
  std::int64_t bucket_params = 0;        ///< DP gradient bucket, parameters; 0 = Megatron's max(40M, 1M·dp)
  bool disable_custom_all_reduce = false;///< inference: NCCL for every TP AllReduce (vLLM's engine argument of that name)
};

struct SimulationSpec {
  std::string engine = "analytic";       ///< analytic | flow
  std::string granularity = "auto";      ///< auto | step | phase
  /// `calibration`: the collective cost table (format of scenarios/calibration/nccl.yaml) the
  /// commands use when the command line names none (cli/options.hpp choose_table). The path as
  /// written, joined to the directory of the file that writes the key (an included file's own
  /// directory); an absolute path stays as it is. Empty: the scenario names none.
  std::string calibration;
  /// `compute_calibration`: the compute efficiency table (format of
  /// scenarios/calibration/compute.yaml), resolved as `calibration`. Empty: none named.
  std::string compute_calibration;
};

struct Scenario {
  std::string file;
  std::string name;
  ClusterSpec cluster;
  std::optional<WorkloadSpec> workload;
  std::optional<StrategySpec> strategy;
  SimulationSpec simulation;
  std::optional<TransformerConfig> model;  ///< the workload's model, loaded and checked against the strategy
  std::vector<support::YamlSource> layers;          ///< the file and its includes, most specific first
};

/// The scenario as one self-contained YAML document: includes merged (the including file's
/// keys win, maps merge, lists replace), every workload / strategy / simulation setting written
/// out with its effective value, and a model config path made absolute. Loading it gives the
/// same Scenario (`ccsim run DIR/effective.yaml` reproduces a run).
std::string effective_yaml(const Scenario& scenario);

/// What load_scenario checks beyond the scenario format and the catalog.
struct ScenarioChecks {
  /// The algorithm names a strategy.algorithms value may give besides "auto", in the order a
  /// bad value's message lists them: the planner's registry (planner::algorithm_names()), a
  /// layer above models/, so every command's loader passes them. Empty: the values are read as
  /// strings and not checked.
  std::span<const std::string_view> algorithm_names;
  /// False (`ccsim plan`, `ccsim sweep --plan`, which search the layout): the strategy's layout
  /// rules are not applied — a strategy that breaks one (tp·pp·cp not dividing the GPUs, ...)
  /// is replaced by the default one (every setting at its default, dp = GPUs), and the
  /// global-batch and model divisibility rules (check_layout) are left to the search.
  bool layout_rules = true;
};

/// Loads and checks a scenario file against `catalog`. Throws InputError on any bad input,
/// among it a simulation.calibration / compute_calibration that is not a path or names no
/// readable regular file (at the key's file, line and column, with the resolved path), and a
/// strategy.algorithms value that is not "auto" or one of checks.algorithm_names (at the
/// value, with a suggestion). The tables' contents are checked where they are loaded
/// (planner::CostModel::load, planner::ComputeCalibration::load).
Scenario load_scenario(const std::string& path, const Catalog& catalog, const ScenarioChecks& checks = {});

/// The YAML documents of a scenario file and everything it includes, most specific first (the
/// file itself, then its includes in order). Throws InputError as load_scenario does.
std::vector<support::YamlSource> load_scenario_layers(const std::string& path);

/// load_scenario on layers already read (most specific first): `ccsim sweep` puts a layer of
/// --set overrides in front of a scenario's own. `path` is the scenario's file (its name and
/// messages). Throws InputError; RuleError (a subclass) when well-formed values break a rule
/// tying settings together (layout, world size, global batch, cluster size, fabric).
Scenario load_scenario(const std::vector<support::YamlSource>& layers, const std::string& path, const Catalog& catalog,
                       const ScenarioChecks& checks = {});

}  // namespace ccsim::models
