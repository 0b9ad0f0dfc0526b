#pragma once
// The sim layer's face: the engine interface (sim/execution/engine.hpp) and the factory that
// makes either engine by kind (or by name, for command-line text).

#include <memory>
#include <string_view>

#include "models/hardware/cluster.hpp"
#include "models/scenario/engine_kind.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::sim {

/// The analytic or the flow engine on `cluster`. Flow loads the flow engine plugin on first use
/// (sim/flow/flow_plugin.hpp) and throws support::InputError naming the file(s) tried when it
/// is missing, cannot be loaded or is from another build.
std::unique_ptr<Engine> make_engine(models::EngineKind kind, const models::Cluster& cluster);
/// The engine named "analytic" or "flow" (models::parse_engine_kind), as above. Throws
/// std::invalid_argument for other names.
std::unique_ptr<Engine> make_engine(std::string_view name, const models::Cluster& cluster);

}  // namespace ccsim::sim
