#pragma once
// The simulation engine a scenario asks for (`simulation.engine`), parsed once where the
// scenario is read (models/scenario/simulation_section.cpp) and compared as an enum everywhere
// else; to_string gives back the scenario's own word, which effective.yaml and the reports print.

#include <cstdint>
#include <optional>
#include <string_view>

namespace ccsim::models {

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
