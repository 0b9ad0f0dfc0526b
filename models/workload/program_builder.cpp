#include "models/workload/program_builder.hpp"

#include <algorithm>

#include "models/workload/program_builder/inference_program.hpp"
#include "models/workload/program_builder/training_program.hpp"

namespace ccsim::models {

Program build_program(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  Program p;
  for (int stage = 0; stage < s.pp; ++stage) p.ranks.push_back({stage, 0, {}});
  if (w.phase == WorkloadPhase::TrainingStep) {
    // About 32 ops per (micro-batch, layer) pass forward and backward, 96 with TP overlap's
    // chunked GEMMs (Llama-3-70B); reserving them saves the reallocations that were a large
    // part of building a big step.
    const double passes = static_cast<double>(micro_batches(w, s)) * m.layers;
    p.ops.reserve(static_cast<std::size_t>(std::min(passes * (s.tp_comm_overlap ? 100.0 : 34.0) + 4096.0, 5e7)));
    p.op_rank.reserve(p.ops.capacity());
    detail::build_training(p, m, w, s);
  } else {
    detail::build_inference(p, m, w, s);
  }
  return p;
}

}  // namespace ccsim::models
