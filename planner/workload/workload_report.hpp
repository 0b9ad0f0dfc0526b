#pragma once
// What `ccsim run` writes: the text summary on stdout, and with --out DIR the files
// report.json (schema in docs/commands/run.md), ops.csv, links.csv, the trace (run_trace.hpp)
// and effective.yaml. All are pure functions of the result: same input, same bytes.

#include <string>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::planner {

struct RunContext {
  const models::Scenario& scenario;
  const models::Cluster& cluster;
  const WorkloadResult& result;
  models::EngineKind engine = models::EngineKind::Analytic;
  /// The step time of the same scenario without its what_if section (seconds); 0: not run.
  double unperturbed_step_time = 0;
  /// Serving: the unperturbed request's TTFT and end-to-end latency (seconds); 0: not run.
  double unperturbed_ttft = 0;
  double unperturbed_e2e = 0;
};

std::string run_summary(const RunContext& c);
std::string report_json(const RunContext& c);
std::string ops_csv(const RunContext& c);
std::string links_csv(const RunContext& c);

}  // namespace ccsim::planner
