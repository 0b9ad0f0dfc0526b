#pragma once
// The memory of one GPU of a layout: activations stored for the backward pass (per layer and
// per pipeline stage over the schedule), weights, gradients, optimizer state and the KV cache,
// in bytes. Pure functions of (model, workload, strategy); sources at each declaration.

#include <vector>

#include "models/workload/layout_rules.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

namespace ccsim::models {

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

}  // namespace ccsim::models
