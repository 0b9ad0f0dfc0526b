#pragma once
// The workload a scenario runs and how it is parallelised: the `workload` and `strategy`
// sections of a scenario file as typed values (read by models/scenario/workload_section.cpp and
// strategy_section.cpp, which check every rule on the input). Sizes are counts of tokens,
// sequences and ranks; the names in comments are Megatron-LM's and vLLM's.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/input_error.hpp"

namespace ccsim::models {

/// What one `ccsim run` simulates: a training step (Megatron-LM), or an inference phase as vLLM
/// runs it: one prefill step (TTFT), one decode step (TPOT), or a request batch served from
/// prefill to the last token (serving).
enum class WorkloadPhase : std::uint8_t { TrainingStep, Prefill, Decode, Serving };

/// "training_step", "prefill", "decode", "serving".
constexpr std::string_view to_string(WorkloadPhase p) {
  switch (p) {
    case WorkloadPhase::Prefill: return "prefill";
    case WorkloadPhase::Decode: return "decode";
    case WorkloadPhase::Serving: return "serving";
    case WorkloadPhase::TrainingStep: break;
  }
  return "training_step";
}

/// The phase of one of the words above; nullopt for any other text.
constexpr std::optional<WorkloadPhase> parse_workload_phase(std::string_view s) {
  for (WorkloadPhase p : {WorkloadPhase::TrainingStep, WorkloadPhase::Prefill, WorkloadPhase::Decode, WorkloadPhase::Serving})
    if (to_string(p) == s) return p;
  return std::nullopt;
}

/// What to simulate. Used by `ccsim run` (training steps and inference phases).
struct WorkloadSpec {
  std::string model;                     ///< scenarios/models entry or a path to a Hugging Face config.json
  WorkloadPhase phase = WorkloadPhase::TrainingStep;  ///< training_step | prefill | decode | serving
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
  /// collective -> algorithm ("auto" by default): "allreduce" for every dimension's, "dp.allreduce"
  /// for one dimension's (tp, cp, dp, ep), which wins; a value is auto, a registry name,
  /// "synthesized" or "synth:PATH" (an MSCCL XML file, its path resolved against the scenario's).
  std::map<std::string, std::string> algorithms;
  std::map<std::string, support::SourceLocation> algorithm_locations;  ///< where each choice was written (for errors)
  bool tp_comm_overlap = false;          ///< TP collectives pipelined with their GEMMs as Transformer Engine's userbuffers do (Megatron --tp-comm-overlap; needs sequence_parallel)
  bool overlap_grad_reduce = false;      ///< DP gradient buckets reduce during the last micro-batch's backward (Megatron --overlap-grad-reduce; default False: after the backward)
  bool overlap_param_gather = false;     ///< ZeRO-1/2: parameter AllGathers overlap the next step's forward (Megatron --overlap-param-gather)
  std::string grad_reduce_dtype = "fp32";///< gradient reduction precision: fp32 (Megatron's default main grads) | bf16
  std::int64_t bucket_params = 0;        ///< DP gradient bucket, parameters; 0 = Megatron's max(40M, 1M·dp)
  bool disable_custom_all_reduce = false;///< inference: NCCL for every TP AllReduce (vLLM's engine argument of that name)
  /// Layers per model chunk (chunk c = virtual index · pp + stage), pp·virtual_stages entries of
  /// at least 1 summing to the model's layers; empty: as Megatron-Core's two keys below say, or
  /// the even split (chunk_layers). See model_chunks (layout_rules.hpp).
  std::vector<int> pipeline_layers;
  /// Megatron-Core --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers:
  /// the first / last pipeline stage's layers (1F1B), the other stages sharing the rest evenly;
  /// 0 = unset.
  int decoder_first_pipeline_num_layers = 0;
  int decoder_last_pipeline_num_layers = 0;
  /// Training: micro-batches per DP replica (heterogeneity-aware planners — HexGen, Metis,
  /// FlashFlex, Cephalo — give the faster replicas more); dp entries of at least 1 whose sum ×
  /// micro_batch_size is the global batch. Empty: global_batch / (micro_batch·dp) each.
  std::vector<int> dp_micro_batches;
  /// `dp_micro_batches: proportional`: the global batch's micro-batches split in proportion to
  /// each replica's compute speed (planner::replica_micro_batches), resolved on the cluster.
  bool dp_micro_batches_proportional = false;
};

}  // namespace ccsim::models
