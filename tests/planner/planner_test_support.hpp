#pragma once
// Helpers shared by the planner tests.

#include <map>
#include <string>

#include "planner/cost_model.hpp"

namespace ccsim::test {

/// The shipped cost model for `c` (CostModel::default_path), loaded once per path, warnings
/// silenced.
inline const planner::CostModel& shipped_costs(const models::Cluster& c) {
  static std::map<std::string, planner::CostModel> models_by_path;
  const std::string path = planner::CostModel::default_path(c);
  auto it = models_by_path.find(path);
  if (it == models_by_path.end()) {
    it = models_by_path.emplace(path, planner::CostModel::load(path)).first;
    it->second.set_warning_sink([](const std::string&) {});
  }
  return it->second;
}

}  // namespace ccsim::test
