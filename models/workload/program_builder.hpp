#pragma once
// From (transformer, workload, parallel strategy) to a Program and a memory footprint.
//
// The communication follows the standard Megatron-LM / vLLM scheme of
// shared/reference/models.md (b micro-batch, s sequence, h hidden, e bytes per element,
// t = TP, p = PP): per layer 2 TP AllReduces of b·s·h·e forward (ReduceScatter + AllGather
// with sequence parallelism); the backward runs layers in reverse, MLP before attention, each
// linear as a data-gradient and a weight-gradient GEMM, with the TP collectives where autograd
// puts them (column-parallel input gradients AllReduced beside the wgrad GEMM; with SP the
// row-parallel output gradients all-gathered, the column-parallel inputs re-gathered and their
// gradients reduce-scattered); with tp_comm_overlap the GEMMs are chunked as Transformer
// Engine's userbuffers do it. PP sends b·s·h·e per micro-batch per stage boundary each way. DP
// reduces gradients in Megatron-Core's buckets (padded to lcm(dp, 128) elements with the
// distributed optimizer), during the last micro-batch's backward with overlap_grad_reduce or
// after the backward without (AllReduce, or ReduceScatter + parameter AllGathers for ZeRO-1/2,
// plus per-layer parameter AllGathers for ZeRO-3); EP AlltoAll dispatch and combine of T·k·h·e
// per MoE layer per direction; CP passes K and V around the CP ring (cp − 1 hops) per layer.
// Inference (vLLM): 2 TP AllReduces per layer plus 1 after the vocab-parallel embedding, of
// N_tok·h·e; the logits are gathered to TP rank 0; PP sends hidden states and residual.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"

namespace ccsim::models {

/// Bytes per element of a dtype name (bf16, fp16: 2; fp8: 1; fp32: 4).
double dtype_bytes(const std::string& dtype);

/// A layout rule a scenario breaks: which section and key, and what was expected.
struct LayoutProblem {
  std::string section;   ///< "strategy" or "workload"
  std::string key;
  std::string expected;
};
/// Checks the parallel layout against the model: TP divides the attention heads (and the KV
/// heads, or is a multiple of them), PP × virtual stages ≤ layers, EP divides the experts (and
/// EP > 1 only for MoE models), CP divides the sequence, the phase's sizes are present.
std::optional<LayoutProblem> check_layout(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

/// Layers of each model chunk: chunk c (0 ≤ c < pp·v) holds [first, first + count). Layers
/// are spread as evenly as possible; when they do not divide, the first and last chunks
/// (which also hold the embedding and the LM head) get the fewer layers.
std::vector<std::pair<int, int>> chunk_layers(int layers, int chunks);

/// What the backward pass recomputes for one layer (Megatron-LM --recompute-granularity,
/// --recompute-method, --recompute-num-layers).
enum class LayerRecompute : std::uint8_t {
  None,       ///< every activation stored
  Selective,  ///< the submodules of WorkloadSpec::recompute_modules are recomputed (default the attention core)
  Full,       ///< the whole layer's forward is recomputed from its stored input
};
/// The recomputation of every layer (index = global layer), as Megatron-Core's
/// TransformerBlock._checkpointed_forward applies it per model chunk: selective -> Selective
/// everywhere; full uniform -> Full everywhere (the input is kept once per group of
/// recompute_num_layers layers, see memory_footprint); full block -> Full for the first
/// recompute_num_layers layers of each model chunk (chunk_layers(layers, pp·v)), None after.
std::vector<LayerRecompute> recompute_plan(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

/// Bytes of one layer's input (the residual stream) for one micro-batch on one GPU:
/// (s/cp)·b·h·e, divided by t with sequence parallelism. What full recomputation stores.
double layer_input_bytes(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

/// Bytes one GPU stores for the backward pass of global layer `layer`, one micro-batch, given
/// what the layer recomputes (Full: its input only, layer_input_bytes; Selective: without what
/// w.recompute_modules recompute). T = (s/cp)·b tokens, t = TP, sp = t with sequence
/// parallelism else 1, e = bytes of the compute dtype, a/t heads and max(1, kv/t) KV heads of
/// dimension d per GPU. Tensor by tensor, as Korthikanti et al. 2022 ("Reducing Activation
/// Recomputation in Large Transformer Models", Table 2, eq. 1-5) count them, with today's kernels:
///   input norm input h/sp, its output (the QKV GEMM input, re-gathered in backward with SP) h/sp;
///   FlashAttention keeps Q (a/t)·d, K and V (kv/t)·d each (GQA), its output (a/t)·d (also the
///     output projection's input) and the fp32 log-sum-exp 4·(a/t) bytes; no s² matrix;
///   pre-MLP norm input h/sp and output (fc1 input) h/sp;
///   MLP: SwiGLU activation input 2·I/t (gate and up) and fc2 input I/t, GELU I/t and I/t;
///   MoE layers: k·(h/sp + act·I_e/t + I_e/t) for the routed copies (expert TP = t) plus the
///     shared experts' act·I_s/t + I_s/t;
///   MLA: Q, K of (a/t)·(d_nope + d_rope), V and output (a/t)·d_v, and the latents
///     q_lora_rank + kv_lora_rank + d_rope;
///   dropout masks (1 byte per element, h/sp after attention and after the MLP) only for
///     GELU (GPT-style) models, whose Megatron default is hidden dropout 0.1; 0 for SwiGLU.
/// Selective modules (Megatron-Core recompute_modules) drop: core_attn the log-sum-exp (its
/// inputs Q, K, V are the checkpoint's inputs, its output the projection's input, so with
/// FlashAttention it saves little); layernorm both norm outputs; mlp the dense MLP's two;
/// moe_act the experts' fc2 inputs; moe all routed and shared expert tensors; shared_experts
/// the shared ones; mla_up_proj Q, K, V. Check: a GPT-3 layer (MHA, GELU 4h, dropout) with SP
/// gives 34·T·h/t bytes at e = 2 plus the log-sum-exp 4·T·a/t, i.e. Korthikanti's 34·s·b·h/t
/// with its 5·a·s²·b/t term dropped. Norm statistics (a few bytes per token) are neglected.
double layer_activation_bytes(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int layer, LayerRecompute r);

/// Memory of one GPU of a pipeline stage, bytes.
struct MemoryFootprint {
  int stage = 0;
  double weights = 0;      ///< parameters in the compute dtype (sharded by TP, PP; by DP for ZeRO-3)
  double gradients = 0;    ///< main gradients in grad_reduce_dtype (sharded by DP for ZeRO-2/3)
  double optimizer = 0;    ///< Adam: fp32 master weights, m, v = 12 B/param (sharded by DP for ZeRO ≥ 1)
  double activations = 0;  ///< training: peak stored for backward over the pipeline schedule (layer_activation_bytes per (micro-batch, chunk) in flight, plus the recomputation working memory); inference: working buffers
  double kv_cache = 0;     ///< inference: K and V of every token in flight
  double total() const { return weights + gradients + optimizer + activations + kv_cache; }
};
/// One footprint per pipeline stage.
std::vector<MemoryFootprint> memory_footprint(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

/// Micro-batches per optimizer step per DP rank: global_batch / (micro_batch · dp), or 1.
int micro_batches(const WorkloadSpec& w, const StrategySpec& s);

/// Builds the Program of one step of the workload's phase. Assumes check_layout() passed.
Program build_program(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

/// The order in which a pipeline stage runs forward and backward passes (1F1B, or Megatron's
/// interleaved schedule with v model chunks per stage).
struct PipelineSlot {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  ///< model chunk of this stage (0 ≤ chunk < v)
};
/// Megatron-Core's order (pipeline_parallel/schedules.py): 1F1B for v = 1; for v > 1 the
/// interleaved order of get_schedule_table with `group` micro-batches per model chunk before the
/// next (microbatch_group_size_per_vp_stage; ≤ 0 means `stages`, Megatron's default), warmup
/// min((p − i − 1)·2 + (v − 1)·group, m·v) forwards, then one forward one backward. Any m ≥ 1;
/// check_layout holds Megatron's limits on (m, group). 2·m·v slots.
std::vector<PipelineSlot> pipeline_order(int stage, int stages, int micro_batches, int virtual_stages, int group = 0);

}  // namespace ccsim::models
