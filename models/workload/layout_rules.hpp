#pragma once
// The rules a parallel layout obeys against a model (check_layout) and the layout's shape: how
// layers are split into model chunks, which layers recompute their forward, how many
// micro-batches a step runs and in which order a pipeline stage runs its passes (Megatron-LM and
// Megatron-Core's rules, cited at each declaration). Pure functions of (model, workload,
// strategy); the Program builder (program_builder.hpp) and the memory model (memory.hpp) read them.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

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

/// Micro-batches per optimizer step per DP rank: global_batch / (micro_batch · dp), or 1.
int micro_batches(const WorkloadSpec& w, const StrategySpec& s);

/// Layers of each model chunk: chunk c (0 ≤ c < pp·v) holds [first, first + count). Layers
/// are spread as evenly as possible; when they do not divide, the first and last chunks
/// (which also hold the embedding and the LM head) get the fewer layers.
std::vector<std::pair<int, int>> chunk_layers(int layers, int chunks);

/// The model chunks of strategy `s`: its pipeline_layers, or Megatron-Core's
/// decoder_first/last_pipeline_num_layers (the middle stages share the rest evenly), or
/// chunk_layers(m.layers, pp·v). Assumes check_layout passed.
std::vector<std::pair<int, int>> model_chunks(const TransformerConfig& m, const StrategySpec& s);

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
