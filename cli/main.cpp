// ccsim: collective-communication simulator and what-if planner for GPU clusters.
// Exit codes: 0 success, 2 bad input (scenario, catalog, command line, unwritable output path),
// 1 internal error or failure to write standard output, 3 `run`: the layout does not fit in
// GPU memory (reported, not simulated); `plan`: no layout is feasible; `sweep`: no point of the grid is feasible;
// `replay`: the backend cannot run here or failed. 4 `replay`: some rank's result was wrong.

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands/calibrate_command.hpp"
#include "cli/commands/collective_command.hpp"
#include "cli/commands/synthesize_command.hpp"
#include "cli/commands/compare_command.hpp"
#include "cli/commands/import_command.hpp"
#include "cli/commands/plan_command.hpp"
#include "cli/commands/replay_command.hpp"
#include "cli/commands/run_command.hpp"
#include "cli/commands/sweep_command.hpp"
#include "cli/commands/topo_command.hpp"
#include "support/atomic_file.hpp"
#include "support/input_error.hpp"
#include "support/mpi/launcher.hpp"
#include "support/progress.hpp"
#include "support/temp_files.hpp"

int main(int argc, char** argv) {
  // SIGINT / SIGTERM / SIGHUP while an output is written leave no temporary file behind.
  ccsim::support::install_temp_file_cleanup();
  CLI::App app{"ccsim: simulate collective communication and LLM workloads on GPU clusters"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("ccsim ") + CCSIM_VERSION);
  ccsim::cli::TopoOptions topo;
  CLI::App* topo_cmd = ccsim::cli::add_topo_command(app, topo);
  ccsim::cli::CollectiveCliOptions collective;
  CLI::App* collective_cmd = ccsim::cli::add_collective_command(app, collective);
  ccsim::cli::CompareCliOptions compare;
  CLI::App* compare_cmd = ccsim::cli::add_compare_command(app, compare);
  ccsim::cli::RunCliOptions run;
  CLI::App* run_cmd = ccsim::cli::add_run_command(app, run);
  ccsim::cli::CalibrateCliOptions calibrate;
  CLI::App* calibrate_cmd = ccsim::cli::add_calibrate_command(app, calibrate);
  ccsim::cli::PlanCliOptions plan;
  CLI::App* plan_cmd = ccsim::cli::add_plan_command(app, plan);
  ccsim::cli::ReplayCliOptions replay;
  CLI::App* replay_cmd = ccsim::cli::add_replay_command(app, replay);
  ccsim::cli::SweepCliOptions sweep;
  CLI::App* sweep_cmd = ccsim::cli::add_sweep_command(app, sweep);
  ccsim::cli::SynthesizeCliOptions synthesize;
  CLI::App* synthesize_cmd = ccsim::cli::add_synthesize_command(app, synthesize);
  ccsim::cli::ImportCliOptions import_options;
  CLI::App* import_cmd = ccsim::cli::add_import_command(app, import_options);
  // Every command: no progress line on standard error (support/progress.hpp).
  bool quiet = false;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->add_flag("-q,--quiet", quiet, "no progress line on standard error (shown only on a terminal, or with CCSIM_PROGRESS=1)");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);  // 0, like --help (it used to fall into ParseError: exit 2)
  } catch (const CLI::ParseError& e) {
    // Under mpirun every rank parses the same command line: rank 0 alone says what is wrong.
    if (ccsim::support::mpi::launched_rank() == 0) app.exit(e);
    return 2;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "ccsim: a subcommand is required (topo, collective, compare, run, plan, sweep, calibrate, replay, synthesize, import); see ccsim --help\n";
    return 2;
  }
  ccsim::support::set_progress_quiet(quiet);
  try {
    int rc = 0;
    if (topo_cmd->parsed()) rc = ccsim::cli::run_topo(topo);
    if (collective_cmd->parsed()) rc = ccsim::cli::run_collective(collective);
    if (compare_cmd->parsed()) rc = ccsim::cli::run_compare(compare);
    if (run_cmd->parsed()) rc = ccsim::cli::run_run(run);
    if (calibrate_cmd->parsed()) rc = ccsim::cli::run_calibrate(calibrate);
    if (plan_cmd->parsed()) rc = ccsim::cli::run_plan(plan);
    if (sweep_cmd->parsed()) rc = ccsim::cli::run_sweep(sweep);
    if (replay_cmd->parsed()) rc = ccsim::cli::run_replay(replay);
    if (synthesize_cmd->parsed()) rc = ccsim::cli::run_synthesize(synthesize);
    if (import_cmd->parsed()) rc = ccsim::cli::run_import(import_options);
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "ccsim: error: cannot write to standard output\n";
      return 1;
    }
    return rc;
  } catch (const ccsim::support::InputError& e) {
    // Under mpirun (sweep, replay) every rank reads the same input: rank 0 alone says what is wrong.
    if (ccsim::support::mpi::launched_rank() == 0) std::cerr << e.what() << "\n";
    return 2;
  } catch (const ccsim::support::OutputError& e) {
    std::cerr << "ccsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ccsim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
