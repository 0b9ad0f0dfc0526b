#include "cli/commands/run_command.hpp"

#include <memory>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "cli/commands/run_files.hpp"
#include "cli/commands/chakra_run.hpp"
#include "cli/options.hpp"
#include "models/scenario/effective_yaml.hpp"
#include "support/atomic_file.hpp"
#include "support/input_error.hpp"
#include "support/output_dir.hpp"
#include "support/progress.hpp"
#include "planner/cluster/jobs.hpp"
#include "planner/cluster/run_reliability.hpp"
#include "planner/workload/workload_report.hpp"
#include "support/units.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::cli {

static int simulate_and_write(const RunCliOptions& o, const models::Scenario& scenario, const support::OutputDir* out);
static int simulate_jobs(const RunCliOptions& o, const models::Scenario& scenario, const support::OutputDir* out);

CLI::App* add_run_command(CLI::App& app, RunCliOptions& o) {
  CLI::App* c = app.add_subcommand("run", "simulate one step of the scenario's LLM workload (training step, prefill or decode) or a batch of requests (serving)");
  c->add_option("scenario", o.scenario, "scenario file with cluster, workload and strategy sections (or cluster and a jobs: list)")->required();
  c->add_option("--engine", o.engine, "analytic or flow (default: the scenario's simulation.engine)");
  c->add_option("--out", o.out, "directory for report.json, ops.csv, links.csv, trace.json, effective.yaml (with jobs: report.json, steps.csv, effective.yaml)")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  c->add_flag("--report-only", o.report_only,
              "with --out: write report.json and effective.yaml only (ops.csv and trace.json of a large run take most of its time)");
  c->add_option("--trace-format", o.trace_format,
                 "with --out: the trace as json (trace.json, Chrome's trace event format; the default) or perfetto "
                 "(trace.perfetto-trace, Perfetto's protobuf format: smaller and faster to write and open)");
  c->add_option("--calibration", o.calibration, "collective calibration table (default: the scenario's simulation.calibration, else scenarios/calibration/nccl.yaml, rccl.yaml for AMD GPUs)");
  c->add_option("--compute-calibration", o.compute_calibration,
                "compute efficiency table (default: the scenario's simulation.compute_calibration, else scenarios/calibration/compute.yaml)");
  c->add_option("--serving-calibration", o.serving_calibration,
                "serving engine table for inference phases (default: scenarios/calibration/serving.yaml)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  c->add_option("--chakra", o.chakra, "run this directory of Chakra execution traces (PREFIX.R.et per rank, ASTRA-sim's workload format) on the scenario's cluster instead of its workload")
      ->check([](const std::string& v) { return v.empty() ? std::string("--chakra: an empty path") : std::string(); });
  c->add_option("--chakra-out", o.chakra_out, "also write the step (or the --chakra trace) as Chakra execution traces into this directory, one file per GPU")
      ->check([](const std::string& v) { return v.empty() ? std::string("--chakra-out: an empty path") : std::string(); });
  c->add_option("--horizon", o.horizon,
                "simulate failures over a run of this wall time (30d, 720h) with the scenario's reliability section or its defaults");
  c->add_option("--steps", o.steps,
                "with a jobs: list: the co-run window holds this many steps of the job with the longest step (default 4; the other jobs run the steps that fit)")
      ->check(CLI::Range(1, 1000));
  return c;
}

int run_run(const RunCliOptions& o) {
  if (!o.engine.empty() && o.engine != "analytic" && o.engine != "flow") {
    throw support::InputError({"<command line>", 0, 0}, "--engine", "analytic or flow", "'" + o.engine + "'");
  }
  models::Scenario scenario = load_scenario_file(o.scenario, o.catalog);
  if (!o.chakra.empty()) return run_chakra_trace(o, scenario);  // the trace replaces the workload
  if (o.horizon) {
    try {
      scenario.reliability.duration = support::parse_quantity(*o.horizon, support::Quantity::Duration);
    } catch (const support::UnitError& e) {
      throw support::InputError({"<command line>", 0, 0}, "--horizon", support::describe_quantity(support::Quantity::Duration),
                                "'" + *o.horizon + "' (" + e.what() + ")");
    }
    if (!(scenario.reliability.duration > 0)) {
      throw support::InputError({"<command line>", 0, 0}, "--horizon", "a positive duration such as 30d", "'" + *o.horizon + "'");
    }
    scenario.reliability.enabled = true;
  }
  if (o.steps && scenario.jobs.empty()) {
    throw support::InputError({"<command line>", 0, 0}, "--steps", "a scenario with a jobs: list (the co-run window)", "a one-job scenario");
  }
  if (!scenario.jobs.empty()) planner::check_jobs_scenario(scenario, o.horizon.has_value());
  if (!scenario.workload && scenario.jobs.empty()) {
    throw support::InputError({o.scenario, 0, 0}, "workload", "a workload section (model, phase, ...) for ccsim run",
                              "a scenario without one (use ccsim topo or ccsim collective for cluster-only scenarios)");
  }
  if (scenario.reliability.enabled && scenario.reliability.duration <= 0 && scenario.reliability.tokens <= 0) {
    throw support::InputError(support::Fields(scenario.layers, "").location("reliability"), "reliability",
                              "a run to simulate: reliability.duration (wall time, such as 30d), reliability.tokens (a token budget) or run --horizon",
                              "neither");
  }
  if (scenario.reliability.enabled && scenario.workload->phase != models::WorkloadPhase::TrainingStep) {
    throw support::InputError(!o.horizon ? support::Fields(scenario.layers, "").location("reliability") : support::SourceLocation{"<command line>", 0, 0},
                              !o.horizon ? "reliability" : "--horizon", "a training-step workload (failures over a run are modelled for training)",
                              "a workload of another phase");
  }
  check_trace_format(o.trace_format);
  if (o.report_only && o.out.empty()) {
    throw support::InputError({"<command line>", 0, 0}, "--report-only", "--out DIR as well (it selects the files --out writes)", "no --out");
  }
  // Check the output directory before spending time on the simulation; a directory this run
  // created and left empty goes away with a failure.
  std::optional<support::OutputDir> out;
  if (!o.out.empty()) {
    support::OutputDirRules rules;
    rules.create = support::CreateDir::BeforeWork;
    out.emplace(o.out, rules);
    out->prepare();
  }
  if (!scenario.jobs.empty() && !o.chakra_out.empty()) {
    throw support::InputError({"<command line>", 0, 0}, "--chakra-out", "a one-job scenario (a jobs: list has no single Program)", "a jobs: list");
  }
  if (!scenario.jobs.empty()) return simulate_jobs(o, scenario, out ? &*out : nullptr);
  return simulate_and_write(o, scenario, out ? &*out : nullptr);
}

static int simulate_jobs(const RunCliOptions& o, const models::Scenario& scenario, const support::OutputDir* out) {
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const planner::CostModel costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
  planner::CoRunOptions co;
  co.costs = &costs;
  co.compute = planner::ComputeCalibration::load_for_cluster(compute_table(o.compute_calibration, scenario).path, cluster);
  co.engine = models::parse_engine_kind(o.engine).value_or(scenario.simulation.engine);
  co.steps = o.steps.value_or(4);
  const bool inference = std::any_of(scenario.jobs.begin(), scenario.jobs.end(),
                                     [](const models::JobSpec& j) { return j.workload.phase != models::WorkloadPhase::TrainingStep; });
  if (inference) {
    co.serving = planner::ServingCalibration::load(o.serving_calibration.empty() ? planner::ServingCalibration::default_path() : o.serving_calibration,
                                                   cluster.spec.groups.front().node.gpu.kind_names());
  }
  support::Progress progress("ccsim run");
  co.progress = [&](const std::string& what, std::size_t done, std::size_t total) { progress.update(what, done, total); };
  const bool best = std::any_of(scenario.jobs.begin(), scenario.jobs.end(),
                                [](const models::JobSpec& j) { return j.placement.policy == models::PlacementPolicy::Best; });
  std::optional<planner::BestPlacement> ranking;
  planner::CoRunResult result;
  if (best) {
    ranking = planner::place_best(scenario, cluster, co);
    result = std::move(ranking->best);
  } else {
    result = planner::run_jobs(scenario, cluster, co);
  }
  progress.finish();
  const planner::BestPlacement* rank = ranking ? &*ranking : nullptr;
  const std::string summary = planner::jobs_summary(scenario, cluster, result, rank);
  if (out != nullptr) {
    out->remove_stale("report.json", support::Stale::RemoveIfRegular);
    out->write("effective.yaml", models::effective_yaml(scenario));
    if (!o.report_only) out->write("steps.csv", planner::jobs_steps_csv(result));
    out->write("report.json", planner::jobs_report_json(scenario, cluster, result, rank, co.engine));
  }
  std::cout << summary;
  for (const std::string& w : planner::jobs_warnings(result)) std::cerr << "ccsim run: warning: " << w << "\n";
  return result.passes > 0 ? 0 : 3;
}

static int simulate_and_write(const RunCliOptions& o, const models::Scenario& scenario, const support::OutputDir* out) {
  const std::unique_ptr<support::OutputDir> chakra_out = prepare_chakra_out(o, scenario);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const planner::CostModel costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
  const auto& gpu0 = cluster.spec.groups.front().node.gpu;
  const std::string compute_path = compute_table(o.compute_calibration, scenario).path;
  const planner::ComputeCalibration compute = planner::ComputeCalibration::load_for_cluster(compute_path, cluster);
  // --engine is checked above: empty (nullopt) takes the scenario's.
  const models::EngineKind engine = models::parse_engine_kind(o.engine).value_or(scenario.simulation.engine);
  const auto make_runner = [&](const models::Scenario& sc, const models::Cluster& cl) {
    auto runner = std::make_unique<planner::WorkloadRunner>(sc, cl, costs, compute, engine);
    if (sc.workload->phase != models::WorkloadPhase::TrainingStep) {
      runner->set_serving(planner::ServingCalibration::load(
          o.serving_calibration.empty() ? planner::ServingCalibration::default_path() : o.serving_calibration, gpu0.kind_names()));
    }
    return runner;
  };
  std::unique_ptr<planner::WorkloadRunner> runner = make_runner(scenario, cluster);

  // Progress on stderr (support/progress.hpp: on a terminal, or with CCSIM_PROGRESS=1).
  support::Progress progress("ccsim run");
  const planner::WorkloadResult result = runner->run(progress.counter("lowering communication ops"));
  // A perturbed scenario is reported next to the same step without its what_if section.
  double unperturbed = 0, unperturbed_ttft = 0, unperturbed_e2e = 0;
  if (!scenario.what_if.empty() && result.feasible) {
    progress.update("simulating the step without its what_if section");
    const models::Scenario base = models::without_what_if(scenario);
    const models::Cluster base_cluster = models::build_scenario_cluster(base);
    planner::WorkloadRunner::Detail detail = planner::WorkloadRunner::Detail::StepOnly;
    std::unique_ptr<planner::WorkloadRunner> base_runner = make_runner(base, base_cluster);
    base_runner->set_detail(detail);
    const planner::WorkloadResult base_result = base_runner->run();
    unperturbed = base_result.step_time;
    if (base_result.serving) {
      unperturbed_ttft = base_result.serving->ttft;
      unperturbed_e2e = base_result.serving->e2e;
    }
  }

  const planner::RunContext ctx{scenario, cluster, result, engine, unperturbed, unperturbed_ttft, unperturbed_e2e};
  std::string summary = planner::run_summary(ctx);
  std::string report = planner::report_json(ctx);
  if (scenario.reliability.enabled && result.feasible) {
    // The step at a reduced DP (shrink) runs as this step does, without links or ops detail.
    const auto step_time_of = [&](const models::Scenario& sc) {
      const models::Cluster cl = models::build_scenario_cluster(sc);
      std::unique_ptr<planner::WorkloadRunner> r = make_runner(sc, cl);
      r->set_detail(planner::WorkloadRunner::Detail::StepOnly);
      return r->run().step_time;
    };
    const auto rel_progress = [&](long long done, long long total) {
      progress.update("failure Monte-Carlo, samples", static_cast<std::size_t>(done), static_cast<std::size_t>(total));
    };
    const planner::ReliabilityReport rel = planner::run_reliability(scenario, cluster, result, step_time_of, rel_progress);
    summary += planner::reliability_text(rel);
    nlohmann::json j = nlohmann::json::parse(report);
    j["reliability"] = planner::reliability_json(rel);
    report = j.dump(2) + "\n";
  }
  progress.finish();
  if (out != nullptr) {
    const RunFilesOptions files{o.report_only, o.trace_format};
    std::cerr << out_cost_notice(ctx, files);
    write_run_files(ctx, report, files, *out, progress);
  }
  if (chakra_out) write_chakra_out(*chakra_out, o, scenario, result);
  std::cout << summary;
  return result.feasible ? 0 : 3;
}

}  // namespace ccsim::cli
