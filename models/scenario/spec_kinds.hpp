#pragma once
// The words of a scenario that choose behaviour, parsed once where the scenario is read
// (models/scenario/scenario.cpp) and compared as enums everywhere else: the workload phase
// (`workload.phase`) and the engine (`simulation.engine`). to_string gives back the scenario's
// own word, which effective.yaml and the reports print.

#include <cstdint>
#include <optional>
#include <string_view>

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

/// The simulation engine: Analytic (ccsim's own event queue and max-min sharing) or Flow
/// (SimGrid's flow-level model, a plugin); see sim/engine.hpp.
enum class EngineKind : std::uint8_t { Analytic, Flow };

/// "analytic", "flow".
constexpr std::string_view to_string(EngineKind e) { return e == EngineKind::Flow ? "flow" : "analytic"; }

/// The engine of "analytic" or "flow"; nullopt for any other text.
constexpr std::optional<EngineKind> parse_engine_kind(std::string_view s) {
  if (s == "analytic") return EngineKind::Analytic;
  if (s == "flow") return EngineKind::Flow;
  return std::nullopt;
}

}  // namespace ccsim::models
