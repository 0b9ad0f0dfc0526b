#pragma once
// From (transformer, workload, parallel strategy) to the Program of one step.
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
//
// The layout rules the inputs obey (layout_rules.hpp) and the memory of the same layout
// (memory.hpp) are included for the callers that use them beside build_program.

#include "models/workload/layout_rules.hpp"
#include "models/workload/memory.hpp"
#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

namespace ccsim::models {

/// Builds the Program of one step of the workload's phase. Assumes check_layout() passed.
Program build_program(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

}  // namespace ccsim::models
