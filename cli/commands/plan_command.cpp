#include "cli/commands/plan_command.hpp"

#include <unistd.h>

#include <cmath>
#include <sstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "cli/options.hpp"
#include "support/input_error.hpp"
#include "support/output_dir.hpp"
#include "support/progress.hpp"
#include "support/units.hpp"
#include "planner/search/layout_plan.hpp"
#include "planner/search/layout_space.hpp"
#include "planner/search/plan_report.hpp"

namespace ccsim::cli {

CLI::App* add_plan_command(CLI::App& app, PlanCliOptions& o) {
  CLI::App* c = app.add_subcommand("plan", "search the parallel layouts (TP, PP, DP, CP, EP, SP, ZeRO, micro-batch, schedule, recompute, "
                                           "rank order; inference: TP x PP x DP and batch) and rank them");
  c->add_option("scenario", o.scenario, "scenario file with cluster, workload and (optionally) strategy sections")->required();
  c->add_option("--fix", o.fix, "pin a knob: KNOB=VALUE (tp, pp, cp, ep, zero, mbs, v, sp, tp_overlap, recompute, order, batch); repeatable");
  c->add_option("--space", o.space, "values to try for a knob: KNOB=A,B,C or KNOB=A..B (every integer); repeatable");
  c->add_option("--objective", o.objective, "step-time (default), tokens-per-s, mfu or cost (needs --price-per-gpu-hour)");
  c->add_option("--price-per-gpu-hour", o.price_per_gpu_hour, "USD per GPU-hour, for the cost column and objective")
      ->check(CLI::Range(1e-9, 1e6));
  c->add_option("--top", o.top, "candidates to print and write (default 10)")->check(CLI::Range(1, 100000));
  c->add_option("--rerank", o.rerank, "flow: re-simulate the top candidates with the flow engine (link contention) and rank by it");
  c->add_option("--max-tpot", o.max_tpot, "inference: keep layouts whose TPOT (decode step) is at most this (e.g. 50ms)");
  c->add_option("--max-ttft", o.max_ttft, "inference: keep layouts whose TTFT (prefill step) is at most this (e.g. 2s)");
  c->add_option("--synthesize", o.synthesize,
                 "tp,cp,dp (any of them): the top candidates try these dimensions' AllReduce/AllGather/ReduceScatter on synthesized "
                 "schedules (ccsim synthesize), kept per dimension where they shorten the step");
  c->add_flag("--exact", o.exact, "simulate every candidate's whole step (no screening from shorter steps)");
  c->add_option("--jobs", o.jobs, "worker threads (default: the machine's)")->check(CLI::Range(1, 1024));
  c->add_option("--out", o.out, "directory for plan.json and best.yaml (the best layout as a scenario ccsim run takes)")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  c->add_option("--format", o.format, "text (default) or json (plan.json on stdout)");
  c->add_option("--calibration", o.calibration, "collective calibration table (default: the scenario's, else the shipped one)");
  c->add_option("--compute-calibration", o.compute_calibration, "compute efficiency table (default: the scenario's, else the shipped one)");
  c->add_option("--serving-calibration", o.serving_calibration, "serving engine table for inference phases");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  return c;
}

namespace {

std::optional<double> time_option(const std::string& text, const std::string& option) {
  if (text.empty()) return std::nullopt;
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) v = support::parse_quantity(text, support::Quantity::Time);
  } catch (const std::exception&) {
    try {
      v = support::parse_quantity(text, support::Quantity::Time);
    } catch (const std::exception&) {
      v = -1;
    }
  }
  if (!(v > 0) || !std::isfinite(v) || v > 86400) {
    throw support::InputError({"<command line>", 0, 0}, option, "a time above 0 and at most a day, e.g. 50ms or 0.05 (seconds)",
                              "'" + text + "'");
  }
  return v;
}

}  // namespace

int run_plan(const PlanCliOptions& o) {
  const support::SourceLocation cmd{"<command line>", 0, 0};
  if (o.format != "text" && o.format != "json") throw support::InputError(cmd, "--format", "text or json", "'" + o.format + "'");
  if (o.price_per_gpu_hour != 0 && !(std::isfinite(o.price_per_gpu_hour) && o.price_per_gpu_hour > 0)) {
    throw support::InputError(cmd, "--price-per-gpu-hour", "a positive price in USD per GPU-hour", fmt::format("{}", o.price_per_gpu_hour));
  }
  planner::PlanOptions po;
  po.objective = o.objective;
  po.price_per_gpu_hour = o.price_per_gpu_hour;
  po.top = o.top;
  po.rerank = o.rerank;
  if (o.synthesize) {
    // Given but empty ("") names one empty dimension, refused with the others.
    std::stringstream dims(*o.synthesize);
    for (std::string d; std::getline(dims, d, ',');) po.synthesize.push_back(d);
    if (o.synthesize->empty() || o.synthesize->back() == ',') po.synthesize.emplace_back();  // "dp," names an empty dimension
  }
  po.max_tpot = time_option(o.max_tpot, "--max-tpot");
  po.max_ttft = time_option(o.max_ttft, "--max-ttft");
  po.exact = o.exact;
  po.jobs = o.jobs;
  // The strategy only seeds the search: one that does not fit the cluster is replaced.
  const models::Scenario scenario = load_scenario_file(o.scenario, o.catalog, false);
  if (!scenario.jobs.empty()) {
    throw support::InputError(support::Fields(scenario.layers, "").location("jobs"), "jobs",
                              "a one-job scenario (workload: and strategy:) for ccsim plan; to place a new job beside running ones, "
                              "give it placement: best and use ccsim run",
                              "a jobs: list");
  }
  if (!scenario.workload) {
    throw support::InputError({o.scenario, 0, 0}, "workload", "a workload section (model, phase, ...) for ccsim plan", "a scenario without one");
  }
  if (scenario.workload->phase == models::WorkloadPhase::TrainingStep && scenario.workload->global_batch_size <= 0) {
    throw support::InputError({o.scenario, 0, 0}, "workload.global_batch_size",
                              "a global batch (sequences per optimizer step) for ccsim plan: the search keeps it fixed while dp and the micro-batch vary",
                              "none");
  }
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const planner::SearchSpace space = planner::space_from_options(scenario, cluster, o.space, o.fix);
  // Checked before the search: a directory plan.json and best.yaml can be written into.
  std::optional<support::OutputDir> out;
  if (!o.out.empty()) {
    support::OutputDirRules rules;
    rules.regular_files = {"plan.json", "best.yaml"};
    out.emplace(o.out, rules);
    out->prepare();
  }
  const planner::CostModel costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
  const auto& gpu0 = cluster.spec.groups.front().node.gpu;
  const planner::ComputeCalibration compute = planner::ComputeCalibration::load_for_cluster(compute_table(o.compute_calibration, scenario).path, cluster);
  const planner::ServingCalibration serving = planner::ServingCalibration::load(
      o.serving_calibration.empty() ? planner::ServingCalibration::default_path() : o.serving_calibration, gpu0.kind_names());
  // Progress on stderr (support/progress.hpp: on a terminal, or with CCSIM_PROGRESS=1).
  support::Progress progress("ccsim plan");
  po.progress = progress.counter("candidate layouts");
  const planner::PlanResult result = planner::plan_layouts(scenario, cluster, costs, compute, serving, space, po);
  progress.finish();
  std::cerr << fmt::format("ccsim plan: {} candidates simulated in {:.2f} s ({:.0f}/s, {} full runs); communication lowerings: {} simulated, {} shared\n",
                           result.evaluated, result.seconds, result.seconds > 0 ? result.evaluated / result.seconds : 0.0,
                           result.exact_runs, result.shared_misses, result.shared_hits);
  const planner::PlanContext ctx{scenario, cluster, space, po, result};
  if (out) {
    out->create();
    // plan.json last: an old one goes first, and a best.yaml of an earlier plan goes when this
    // one has no feasible layout, so the files in DIR always belong together.
    out->remove_stale("plan.json", support::Stale::Remove);
    if (result.ranked.empty()) out->remove_stale("best.yaml", support::Stale::Remove);
    else out->write("best.yaml", planner::candidate_yaml(ctx, 0));
    out->write("plan.json", planner::plan_json(ctx));
  }
  std::cout << (o.format == "json" ? planner::plan_json(ctx) : planner::plan_summary(ctx));
  return result.ranked.empty() ? 3 : 0;
}

}  // namespace ccsim::cli
