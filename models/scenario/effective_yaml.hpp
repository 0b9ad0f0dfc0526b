#pragma once
// effective.yaml: a scenario written out as the one self-contained document it was loaded as,
// next to every result (`ccsim run DIR/effective.yaml` reproduces the run).

#include <string>

#include "models/scenario/scenario.hpp"

namespace ccsim::models {

/// The scenario as one self-contained YAML document: includes merged (the including file's
/// keys win, maps merge, lists replace), every workload / strategy / simulation setting written
/// out with its effective value, and a model config path made absolute. Loading it gives the
/// same Scenario (`ccsim run DIR/effective.yaml` reproduces a run).
std::string effective_yaml(const Scenario& scenario);

}  // namespace ccsim::models
