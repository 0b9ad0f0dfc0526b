#pragma once
// Helpers shared by the Catch2 tests: paths into the source tree.

#include <string>

#include "models/catalog.hpp"
#include "models/cluster.hpp"
#include "models/scenario.hpp"

namespace ccsim::test {

inline std::string source_path(const std::string& relative) { return std::string(CCSIM_SOURCE_DIR) + "/" + relative; }

inline const models::Catalog& shipped_catalog() {
  static const models::Catalog catalog = models::Catalog::load(source_path("scenarios/hardware"));
  return catalog;
}

inline models::Cluster shipped_cluster(const std::string& scenario) {
  return models::build_cluster(models::load_scenario(source_path("scenarios/" + scenario), shipped_catalog()).cluster);
}

/// The cluster of a scenario file given relative to the source tree (e.g. tests/data/real-cases/X.yaml).
inline models::Cluster cluster_at(const std::string& relative) {
  return models::build_cluster(models::load_scenario(source_path(relative), shipped_catalog()).cluster);
}

}  // namespace ccsim::test
