#pragma once
// The Program of one training step (Megatron-LM, Megatron-Core): every pipeline stage's
// forward and backward passes in the schedule's order (pipeline_order), PP sends between
// stages, DP gradient buckets reduced during or after the backward, ZeRO parameter gathers and
// the optimizer step. See models/workload/program_builder.hpp for the communication scheme.

#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

namespace ccsim::models::detail {

/// Appends the ops of one training step to `p` (whose ranks are the pipeline stages) and sets
/// its model FLOPs and tokens. Assumes check_layout() passed. Throws std::logic_error if the
/// pipeline schedule deadlocks (a bug).
void build_training(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

}  // namespace ccsim::models::detail
