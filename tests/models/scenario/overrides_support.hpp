#pragma once
// Helpers of the tests that load a shipped scenario with --set assignments in front
// (models/scenario/overrides.hpp point_layers): tests/models/scenario/overrides_test.cpp and
// tests/planner/sweep/sweep_test.cpp.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/scenario/overrides.hpp"
#include "models/scenario/scenario.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

namespace ccsim::test {

inline const std::string kTrain70b = "scenarios/workloads/llama3-70b-train-64xh100.yaml";

/// The scenario at `scenario` (relative to the source tree) with the assignments `a` put in front.
inline models::Scenario load_point(const std::string& scenario, const std::vector<models::Assignment>& a) {
  const std::string path = source_path(scenario);
  return models::load_scenario(models::point_layers(models::load_scenario_layers(path), a), path, shipped_catalog());
}

/// The InputError a --set assignment throws while its layers are built or loaded.
inline support::InputError error_of(const std::string& scenario, const std::vector<models::Assignment>& a) {
  try {
    load_point(scenario, a);
  } catch (const support::InputError& e) {
    return e;
  }
  FAIL("no InputError");
  return support::InputError({}, "", "", "");
}

/// True when loading the point throws a RuleError, false for another InputError.
inline bool is_rule(const std::string& scenario, const std::vector<models::Assignment>& a) {
  try {
    load_point(scenario, a);
  } catch (const support::RuleError&) {
    return true;
  } catch (const support::InputError&) {
    return false;
  }
  FAIL("loaded");
  return false;
}

}  // namespace ccsim::test
