#include "cli/commands/chakra_run.hpp"

#include <filesystem>
#include <iostream>

#include "cli/options.hpp"
#include "models/workload/chakra/chakra_trace.hpp"
#include "planner/workload/chakra_run.hpp"
#include "support/input_error.hpp"

namespace ccsim::cli {

namespace {

const support::SourceLocation kCommandLine{"<command line>", 0, 0};

std::unique_ptr<support::OutputDir> open_out(const std::string& dir) {
  support::OutputDirRules rules;
  rules.option = "--chakra-out";
  rules.create = support::CreateDir::BeforeWork;
  auto out = std::make_unique<support::OutputDir>(dir, rules);
  out->prepare();
  return out;
}

}  // namespace

int run_chakra_trace(const RunCliOptions& o, const models::Scenario& scenario) {
  if (!o.out.empty()) throw support::InputError(kCommandLine, "--out", "no --out with --chakra (a trace run prints its summary; --chakra-out DIR writes the trace again)", "--out " + o.out);
  if (o.horizon) throw support::InputError(kCommandLine, "--horizon", "no --horizon with --chakra (failures over a run are modelled for the scenario's own training workload)", "--horizon");
  if (o.steps) throw support::InputError(kCommandLine, "--steps", "no --steps with --chakra", "--steps");
  if (!scenario.jobs.empty()) throw support::InputError({o.scenario, 0, 0}, "jobs", "a one-job scenario for --chakra (the trace is the workload)", "a jobs: list");
  std::unique_ptr<support::OutputDir> out;
  if (!o.chakra_out.empty()) out = open_out(o.chakra_out);
  const models::chakra::ChakraTrace trace = models::chakra::read_chakra_dir(o.chakra);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const planner::CostModel costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
  planner::ChakraRunOptions ro;
  ro.compute = planner::ComputeCalibration::load_for_cluster(compute_table(o.compute_calibration, scenario).path, cluster);
  ro.engine = models::parse_engine_kind(o.engine).value_or(scenario.simulation.engine);
  if (scenario.workload) ro.dtype = scenario.workload->dtype;
  const planner::ChakraRunResult r = planner::run_chakra(trace.program, cluster, costs, ro);
  if (out) {
    for (const auto& [name, bytes] : models::chakra::chakra_files(trace.program, trace.prefix)) out->write(name, bytes);
  }
  std::cout << planner::chakra_summary(o.chakra, trace.program, r);
  return 0;
}

std::unique_ptr<support::OutputDir> prepare_chakra_out(const RunCliOptions& o, const models::Scenario& scenario) {
  if (o.chakra_out.empty()) return nullptr;
  if (!scenario.jobs.empty()) throw support::InputError(kCommandLine, "--chakra-out", "a one-job scenario (a jobs: list has no single Program)", "a jobs: list");
  if (scenario.workload && scenario.workload->phase == models::WorkloadPhase::Serving) {
    throw support::InputError(kCommandLine, "--chakra-out", "a training step, prefill or decode workload (one step's Program)", "phase serving (many steps)");
  }
  return open_out(o.chakra_out);
}

void write_chakra_out(const support::OutputDir& dir, const RunCliOptions& o, const models::Scenario& scenario,
                      const planner::WorkloadResult& result) {
  if (!result.feasible) return;  // nothing was simulated
  const models::Program world = planner::world_program(result, scenario);
  const std::string prefix = std::filesystem::path(o.scenario).stem().string();
  for (const auto& [name, bytes] : models::chakra::chakra_files(world, prefix)) dir.write(name, bytes);
}

}  // namespace ccsim::cli
