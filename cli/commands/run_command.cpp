#include "cli/commands/run_command.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli/options.hpp"
#include "models/scenario/effective_yaml.hpp"
#include "support/atomic_file.hpp"
#include "support/input_error.hpp"
#include "planner/workload/workload_report.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::cli {

namespace fs = std::filesystem;

static int simulate_and_write(const RunCliOptions& o, const models::Scenario& scenario);

CLI::App* add_run_command(CLI::App& app, RunCliOptions& o) {
  CLI::App* c = app.add_subcommand("run", "simulate one step of the scenario's LLM workload (training step, prefill or decode) or a batch of requests (serving)");
  c->add_option("scenario", o.scenario, "scenario file with cluster, workload and strategy sections")->required();
  c->add_option("--engine", o.engine, "analytic or flow (default: the scenario's simulation.engine)");
  c->add_option("--out", o.out, "directory for report.json, ops.csv, links.csv, trace.json, effective.yaml")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  c->add_flag("--report-only", o.report_only,
              "with --out: write report.json and effective.yaml only (ops.csv and trace.json of a large run take most of its time)");
  c->add_option("--calibration", o.calibration, "collective calibration table (default: the scenario's simulation.calibration, else scenarios/calibration/nccl.yaml, rccl.yaml for AMD GPUs)");
  c->add_option("--compute-calibration", o.compute_calibration,
                "compute efficiency table (default: the scenario's simulation.compute_calibration, else scenarios/calibration/compute.yaml)");
  c->add_option("--serving-calibration", o.serving_calibration,
                "serving engine table for inference phases (default: scenarios/calibration/serving.yaml)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  return c;
}

int run_run(const RunCliOptions& o) {
  if (!o.engine.empty() && o.engine != "analytic" && o.engine != "flow") {
    throw support::InputError({"<command line>", 0, 0}, "--engine", "analytic or flow", "'" + o.engine + "'");
  }
  const models::Scenario scenario = load_scenario_file(o.scenario, o.catalog);
  if (!scenario.workload) {
    throw support::InputError({o.scenario, 0, 0}, "workload", "a workload section (model, phase, ...) for ccsim run",
                              "a scenario without one (use ccsim topo or ccsim collective for cluster-only scenarios)");
  }
  if (o.report_only && o.out.empty()) {
    throw support::InputError({"<command line>", 0, 0}, "--report-only", "--out DIR as well (it selects the files --out writes)", "no --out");
  }
  // Check the output directory before spending time on the simulation.
  bool created = false;
  if (!o.out.empty()) {
    std::error_code ec;
    if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec)) {
      throw support::OutputError(fmt::format("--out {}: exists and is not a directory", o.out));
    }
    created = !fs::exists(o.out, ec);
    fs::create_directories(o.out, ec);
    if (ec || !fs::is_directory(o.out)) {
      throw support::OutputError(fmt::format("--out {}: cannot create the directory ({})", o.out, ec ? ec.message() : "unknown"));
    }
  }
  try {
    return simulate_and_write(o, scenario);
  } catch (...) {
    // A directory this run created and left empty goes away with the failure.
    std::error_code ec;
    if (created && fs::is_empty(o.out, ec)) fs::remove(o.out, ec);
    throw;
  }
}

static int simulate_and_write(const RunCliOptions& o, const models::Scenario& scenario) {
  const models::Cluster cluster = models::build_cluster(scenario.cluster);
  const planner::CostModel costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
  const auto& gpu0 = cluster.spec.groups.front().node.gpu;
  planner::ComputeCalibration compute =
      planner::ComputeCalibration::load(compute_table(o.compute_calibration, scenario).path, gpu0.name);
  // --engine is checked above: empty (nullopt) takes the scenario's.
  const models::EngineKind engine = models::parse_engine_kind(o.engine).value_or(scenario.simulation.engine);
  planner::WorkloadRunner runner(scenario, cluster, costs, compute, engine);
  if (scenario.workload->phase != models::WorkloadPhase::TrainingStep) {
    runner.set_serving(planner::ServingCalibration::load(
        o.serving_calibration.empty() ? planner::ServingCalibration::default_path() : o.serving_calibration, gpu0.name));
  }

  // Progress on stderr for runs longer than a second, when stderr is a terminal.
  const bool tty = ::isatty(2) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  bool shown = false;
  const auto progress = [&](std::size_t done, std::size_t total) {
    if (!tty) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (elapsed < 1.0 && !shown) return;
    if (done != total && done % 64 != 0) return;
    shown = true;
    std::cerr << fmt::format("\rccsim run: communication ops {}/{} ({:.0f} s)", done, total, elapsed) << std::flush;
  };
  const planner::WorkloadResult result = runner.run(progress);
  if (shown) std::cerr << "\r\033[K" << std::flush;

  const planner::RunContext ctx{scenario, cluster, result, engine};
  const std::string summary = planner::run_summary(ctx);
  if (!o.out.empty()) {
    const fs::path dir(o.out);
    // report.json last: when it is there, the rest is complete (an old one goes first; a
    // symbolic link, device or FIFO in its place stays and is written through at the end).
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(dir / "report.json", ec))) fs::remove(dir / "report.json", ec);
    support::write_file_atomic((dir / "effective.yaml").string(), models::effective_yaml(scenario));
    if (!o.report_only) {
      support::write_file_atomic((dir / "ops.csv").string(), planner::ops_csv(ctx));
      support::write_file_atomic((dir / "links.csv").string(), planner::links_csv(ctx));
      support::write_file_atomic((dir / "trace.json").string(), planner::trace_json(ctx));
    }
    support::write_file_atomic((dir / "report.json").string(), planner::report_json(ctx));
  }
  std::cout << summary;
  return result.feasible ? 0 : 3;
}

}  // namespace ccsim::cli
