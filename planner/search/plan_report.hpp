#pragma once
// What `ccsim plan` writes: the text summary on stdout (the space, what was pruned and why,
// the top candidates, why the best beats the runner-up) and with --out DIR the files plan.json
// and best.yaml (the best candidate as a scenario `ccsim run` takes; its run reproduces the
// planned figures). Pure functions of the result: same input, same bytes (timings go to stderr).

#include <string>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/search/layout_plan.hpp"

namespace ccsim::planner {

struct PlanContext {
  const models::Scenario& scenario;
  const models::Cluster& cluster;
  const SearchSpace& space;
  const PlanOptions& options;
  const PlanResult& result;
};

std::string plan_summary(const PlanContext& c);
std::string plan_json(const PlanContext& c);
/// The ranked candidate `rank` (0 = best) as a self-contained scenario (models::effective_yaml).
std::string candidate_yaml(const PlanContext& c, std::size_t rank);
/// "the best beats the runner-up by ...: the largest differing terms" (one line), or "" with
/// fewer than two candidates.
std::string explain_best(const PlanContext& c);

}  // namespace ccsim::planner
