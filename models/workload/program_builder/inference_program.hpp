#pragma once
// The Program of one inference step as vLLM runs it: one prefill over the prompts, or one
// decode step of a running batch (one token per sequence attending over the KV cache at its
// mean length during generation). See models/workload/program_builder.hpp for the scheme.

#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

namespace ccsim::models::detail {

/// Appends the ops of one prefill or decode step to `p` (whose ranks are the pipeline stages)
/// and sets its model FLOPs and tokens (every DP replica serves its own batch). Assumes
/// check_layout() passed.
void build_inference(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s);

}  // namespace ccsim::models::detail
