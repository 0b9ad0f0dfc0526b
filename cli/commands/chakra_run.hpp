#pragma once
// `ccsim run SCENARIO --chakra DIR` (a directory of Chakra execution traces run on the
// scenario's cluster instead of its workload) and `--chakra-out DIR` (the step's Program
// written as Chakra traces, one file per GPU). docs/commands/run.md, "Chakra execution traces".

#include <memory>

#include "cli/commands/run_command.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/workload/workload_runner.hpp"
#include "support/output_dir.hpp"

namespace ccsim::cli {

/// Runs o.chakra on `scenario`'s cluster and prints the summary (stdout); writes the trace
/// again to o.chakra_out when given. Returns the exit code (0). Throws support::InputError for
/// a bad trace, a rank count other than the cluster's GPUs, options that do not apply to a
/// trace (--out, --horizon, --steps, a jobs: scenario).
int run_chakra_trace(const RunCliOptions& o, const models::Scenario& scenario);

/// The --chakra-out directory checked (and created) before the simulation; null without one.
/// Throws support::InputError when the scenario cannot be written as a trace (a jobs: list, a
/// serving phase, a reliability run), support::OutputError when DIR cannot be written.
std::unique_ptr<support::OutputDir> prepare_chakra_out(const RunCliOptions& o, const models::Scenario& scenario);

/// Writes `result`'s step as Chakra traces (planner::world_program, models::chakra::chakra_files)
/// into `dir`: PREFIX.R.et per GPU (PREFIX: the scenario file's stem) and comm_group.json.
void write_chakra_out(const support::OutputDir& dir, const RunCliOptions& o, const models::Scenario& scenario,
                      const planner::WorkloadResult& result);

}  // namespace ccsim::cli
