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

#include <optional>
#include <string>
#include <vector>

#include "models/scenario.hpp"
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
  Selective,  ///< the attention core (softmax / dropout / QKᵀ·V) is recomputed
  Full,       ///< the whole layer's forward is recomputed from its stored input
};
/// The recomputation of every layer (index = global layer).
std::vector<LayerRecompute> recompute_plan(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

/// Memory of one GPU of a pipeline stage, bytes.
struct MemoryFootprint {
  int stage = 0;
  double weights = 0;      ///< parameters in the compute dtype (sharded by TP, PP; by DP for ZeRO-3)
  double gradients = 0;    ///< main gradients in grad_reduce_dtype (sharded by DP for ZeRO-2/3)
  double optimizer = 0;    ///< Adam: fp32 master weights, m, v = 12 B/param (sharded by DP for ZeRO ≥ 1)
  double activations = 0;  ///< stored for backward: Korthikanti et al. 2022 with FlashAttention (no s² term)
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
std::vector<PipelineSlot> pipeline_order(int stage, int stages, int micro_batches, int virtual_stages);

}  // namespace ccsim::models
