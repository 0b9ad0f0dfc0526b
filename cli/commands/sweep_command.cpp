#include "cli/commands/sweep_command.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "cli/commands/sweep_mpi.hpp"
#include "models/hardware/catalog.hpp"
#include "support/input_error.hpp"
#include "models/scenario/overrides.hpp"
#include "support/mpi/launcher.hpp"
#include "support/output_dir.hpp"
#include "support/progress.hpp"
#include "planner/algorithms/registry.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/cluster/jobs.hpp"
#include "planner/sweep/sweep_output.hpp"
#include "planner/search/layout_plan.hpp"
#include "planner/search/layout_space.hpp"
#include "planner/sweep/sweep_point.hpp"

namespace ccsim::cli {

namespace {

/// Points in one sweep at most: each is a scenario load before anything runs.
constexpr std::size_t kMaxPoints = 1'000'000;

const support::SourceLocation kCommandLine{"<command line>", 0, 0};

/// Everything checked before the first point runs.
struct Prepared {
  planner::SweepResult result;
  std::vector<std::optional<models::Scenario>> scenarios;  ///< per point; nullopt: infeasible by a rule (row set)
  planner::PointOptions point;
};

/// --out DIR: checked before the first point runs, created when the rows are written.
support::OutputDirRules out_rules() {
  support::OutputDirRules rules;
  rules.regular_files = {"sweep.csv", "sweep.json"};
  return rules;
}

/// "(point 3: strategy.tp=4, cluster.nodes[0].count=16)".
std::string point_note(const planner::SweepResult& r, std::size_t i) {
  const auto idx = models::grid_point(r.axes, i);
  std::string s;
  for (std::size_t k = 0; k < r.axes.size(); ++k) s += (k ? ", " : "") + r.axes[k].key + "=" + r.axes[k].values[idx[k]];
  return fmt::format("at sweep point {}{}{}", i, s.empty() ? "" : ": ", s);
}

Prepared prepare(const SweepCliOptions& o) {
  Prepared p;
  if (o.format != "text" && o.format != "csv" && o.format != "json") {
    throw support::InputError(kCommandLine, "--format", "text, csv or json", "'" + o.format + "'");
  }
  if (!o.engine.empty() && o.engine != "analytic" && o.engine != "flow") {
    throw support::InputError(kCommandLine, "--engine", "analytic or flow", "'" + o.engine + "'");
  }
  if (o.price_per_gpu_hour && !(std::isfinite(*o.price_per_gpu_hour) && *o.price_per_gpu_hour > 0 && *o.price_per_gpu_hour <= 1e6)) {
    throw support::InputError(kCommandLine, "--price-per-gpu-hour", "a positive price in USD per GPU-hour, at most 1e6",
                              fmt::format("{}", *o.price_per_gpu_hour));
  }
  if (!o.out.empty()) support::OutputDir(o.out, out_rules()).prepare();
  // An empty --engine (checked above) parses to nullopt: each point's own engine.
  p.point.engine = models::parse_engine_kind(o.engine);
  p.point.calibration = o.calibration;
  p.point.compute_calibration = o.compute_calibration;
  p.point.serving_calibration = o.serving_calibration;
  p.point.price_per_gpu_hour = o.price_per_gpu_hour;
  p.point.plan = o.plan;
  p.point.fix = o.fix;
  p.point.space = o.space;
  p.point.objective = o.objective;
  p.point.jobs = o.jobs;
  p.result.planned = o.plan;
  if (!o.plan && (!o.fix.empty() || !o.space.empty() || o.objective != "step-time" || o.jobs != 0)) {
    throw support::InputError(kCommandLine, !o.fix.empty() ? "--fix" : !o.space.empty() ? "--space" : o.objective != "step-time" ? "--objective" : "--jobs",
                              "--plan as well (it sets the layout search)", "no --plan");
  }
  if (o.plan) {
    // The search options are checked before any point runs (a space of its own for the syntax).
    planner::check_objective(o.objective, o.price_per_gpu_hour.value_or(0));
    planner::SearchSpace check;
    for (const auto& s : o.space) planner::apply_space_option(check, s, false);
    for (const auto& f : o.fix) planner::apply_space_option(check, f, true);
    // The search sets the layout: a swept layout key would be overwritten without a word.
    static const std::set<std::string> searched = {
        "strategy.tp", "strategy.pp", "strategy.dp", "strategy.cp", "strategy.ep", "strategy.sequence_parallel",
        "strategy.tp_comm_overlap", "strategy.zero_stage", "strategy.virtual_stages", "strategy.pipeline_schedule",
        "strategy.order", "workload.micro_batch_size", "workload.recompute", "workload.batch_size"};
    for (const std::string& s : o.sets) {
      const std::string key = s.substr(0, s.find('='));
      if (searched.count(key) != 0) {
        throw support::InputError(kCommandLine, "--set " + key,
                                  "a key the layout search does not set (with --plan, pin a layout knob with --fix or list its values with --space)",
                                  "a layout key");
      }
    }
  }
  p.result.scenario = o.scenario;
  p.result.price_per_gpu_hour = o.price_per_gpu_hour;
  std::set<std::string> keys;
  for (const std::string& s : o.sets) {
    models::SweepAxis axis = models::parse_set_option(s);
    if (!keys.insert(axis.key).second) {
      throw support::InputError(kCommandLine, "--set " + axis.key, "each key in one --set", "the key in two");
    }
    p.result.axes.push_back(std::move(axis));
  }
  const std::size_t n = models::grid_size(p.result.axes, kMaxPoints);

  const models::Catalog catalog = models::Catalog::load(o.catalog.empty() ? models::Catalog::default_dir() : o.catalog);
  const std::vector<support::YamlSource> base = models::load_scenario_layers(o.scenario);
  p.scenarios.resize(n);
  p.result.rows.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto idx = models::grid_point(p.result.axes, i);
    std::vector<models::Assignment> assignments;
    for (std::size_t k = 0; k < idx.size(); ++k) assignments.push_back({p.result.axes[k].key, p.result.axes[k].values[idx[k]]});
    try {
      models::Scenario sc = models::load_scenario(models::point_layers(base, assignments), o.scenario, catalog,
                                                  {.algorithm_names = planner::algorithm_names(), .layout_rules = !o.plan});
      if (!sc.workload && sc.jobs.empty()) {
        throw support::InputError({o.scenario, 0, 0}, "workload", "a workload section (model, phase, ...) or a jobs: list for ccsim sweep",
                                  "a scenario without one");
      }
      if (!sc.jobs.empty() && o.plan) {
        throw support::InputError(support::Fields(sc.layers, "").location("jobs"), "jobs",
                                  "a one-job scenario for sweep --plan (the layout search plans one job)", "a jobs: list");
      }
      planner::check_jobs_scenario(sc);
      p.scenarios[i] = std::move(sc);
    } catch (const support::RuleError& e) {
      p.result.rows[i] = planner::rule_row(e);
      // The scenario's own dp no longer fits a swept cluster or layout: say how to derive it.
      if (e.key() == "strategy.dp" && keys.count("strategy.dp") == 0) {
        p.result.rows[i].reason += " (--set strategy.dp=auto derives dp from the GPUs)";
      }
    } catch (const support::InputError& e) {
      const std::string hint = (e.hint().empty() ? "" : e.hint() + "; ") + point_note(p.result, i);
      if (e.where().file == models::kSetLayerFile) {
        throw support::InputError(kCommandLine, "--set " + e.key(), e.expected(), e.found(), hint);
      }
      throw support::InputError(e.where(), e.key(), e.expected(), e.found(), hint);
    }
  }
  return p;
}

/// The exit code and the message of the exception being handled (as main() prints them).
std::pair<int, std::string> failure() {
  try {
    throw;
  } catch (const support::InputError& e) {
    return {2, e.what()};
  } catch (const support::OutputError& e) {
    return {2, std::string("ccsim: error: ") + e.what()};
  } catch (const std::exception& e) {
    return {1, std::string("ccsim: internal error: ") + e.what()};
  }
}

/// Collective: every rank's (code, message) at rank 0, which prints the first failure (lowest
/// rank) once; returns that code on every rank (0 when none failed).
int agree(const SweepRanks& ranks, int code, const std::string& message) {
  const auto all = ranks.gather(std::to_string(code) + "\n" + message);
  int first = 0;
  for (const std::string& s : all) {
    const int c = std::atoi(s.c_str());
    if (c != 0) {
      first = c;
      std::cerr << s.substr(s.find('\n') + 1) << "\n";
      break;
    }
  }
  return ranks.broadcast(first);
}

/// The sweep's metadata (from the first point whose scenario loaded) and its ties with their
/// notes, for the outputs (rank 0, after every row is in).
void describe(Prepared& p) {
  planner::SweepResult& r = p.result;
  for (const auto& sc : p.scenarios) {
    if (!sc) continue;
    r.meta = planner::describe_sweep(*sc, p.point);
    break;
  }
#ifdef CCSIM_VERSION
  r.meta.ccsim_version = CCSIM_VERSION;  // cli/CMakeLists.txt: the project's version
#endif
  r.ties = planner::find_ties(r);
  for (planner::SweepTie& t : r.ties) {
    std::vector<const models::Scenario*> tied;
    std::vector<std::string> values;
    for (std::size_t i : t.points) {
      tied.push_back(p.scenarios[i] ? &*p.scenarios[i] : nullptr);
      values.push_back(r.axes[t.axis].values[models::grid_point(r.axes, i)[t.axis]]);
    }
    t.note = planner::explain_tie(tied, values, p.point);
  }
}

void write_outputs(const SweepCliOptions& o, const planner::SweepResult& r) {
  std::string text;
  if (o.format == "csv") text = planner::sweep_csv(r);
  if (o.format == "json") text = planner::sweep_json(r);
  if (o.format == "text") text = planner::sweep_text(r);
  if (!o.out.empty()) {
    const support::OutputDir out(o.out, out_rules());
    out.create();
    out.write("sweep.csv", planner::sweep_csv(r));
    out.write("sweep.json", planner::sweep_json(r));
  }
  std::cout << text;
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepCliOptions& o) {
  CLI::App* c = app.add_subcommand(
      "sweep", "run the scenario at every point of a grid of overrides (--set KEY=V1,V2,...), one row per point; splits the points between ranks under mpirun");
  c->add_option("scenario", o.scenario, "scenario file with cluster, workload and strategy sections (or cluster and a jobs: list)")->required();
  c->add_option("--set", o.sets,
                "KEY=V1,V2,...: a key path into the scenario (cluster.nodes[0].count, strategy.tp, "
                "cluster.nodes[0].node.nics.link) and its values; repeat for more keys (the first is the outermost loop); "
                "the value auto removes the key (strategy.dp=auto: derived from the GPUs)")
      ->allow_extra_args(false);
  c->add_option("--out", o.out, "directory for sweep.csv and sweep.json")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  c->add_option("--price-per-gpu-hour", o.price_per_gpu_hour, "USD per GPU-hour: adds the cost per million tokens");
  c->add_option("--engine", o.engine, "analytic or flow (default: each point's simulation.engine)");
  c->add_option("--calibration", o.calibration, "collective calibration table (as ccsim run)");
  c->add_option("--compute-calibration", o.compute_calibration, "compute efficiency table (as ccsim run)");
  c->add_option("--serving-calibration", o.serving_calibration, "serving engine table for inference phases (as ccsim run)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  c->add_flag("--plan", o.plan, "plan each point: the best layout of `ccsim plan` (and its figures) instead of the scenario's strategy");
  c->add_option("--fix", o.fix, "with --plan: pin a layout knob (as ccsim plan --fix); repeatable");
  c->add_option("--space", o.space, "with --plan: values of a layout knob (as ccsim plan --space); repeatable");
  c->add_option("--objective", o.objective, "with --plan: step-time (default), tokens-per-s, mfu or cost");
  c->add_option("--jobs", o.jobs, "with --plan: threads of each point's search (default: the machine's)")->check(CLI::Range(1, 1024));
  c->add_option("--format", o.format, "stdout: text (a table), csv or json (the contents of sweep.csv / sweep.json)");
  return c;
}

int run_sweep(const SweepCliOptions& o) {
  std::optional<SweepRanks> ranks;
  try {
    ranks.emplace();
  } catch (...) {
    const auto [code, message] = failure();
    if (support::mpi::launched_rank() == 0) std::cerr << message << "\n";
    return code;
  }
  const bool root = ranks->rank() == 0;

  // 1. Every rank checks every point (the same input gives every rank the same verdict).
  Prepared p;
  {
    int code = 0;
    std::string message;
    try {
      p = prepare(o);
    } catch (...) {
      std::tie(code, message) = failure();
    }
    if (const int rc = agree(*ranks, code, message); rc != 0) return rc;
  }

  // 2. Each rank runs its points: point i on rank i mod N.
  const std::size_t n = p.result.rows.size();
  const auto size = static_cast<std::size_t>(ranks->size());
  const auto me = static_cast<std::size_t>(ranks->rank());
  int code = 0;
  std::string payload;
  try {
    // Progress on rank 0's stderr (support/progress.hpp: on a terminal, or with CCSIM_PROGRESS=1).
    support::ProgressOptions shown;
    shown.enabled = shown.enabled && root;
    support::Progress progress("ccsim sweep", shown);
    const std::string what = size > 1 ? fmt::format("points on rank 0 of {}", size) : std::string("points");
    const std::size_t mine = n > me ? (n - me + size - 1) / size : 0;
    std::size_t done = 0;
    for (std::size_t i = me; i < n; i += size) {
      progress.update(what, done, mine);
      // A point whose settings break a rule together (failures that cut a node off) is an
      // infeasible row, as at load.
      try {
        if (p.scenarios[i]) p.result.rows[i] = planner::evaluate_point(*p.scenarios[i], p.point);
      } catch (const support::RuleError& e) {
        p.result.rows[i] = planner::rule_row(e);
      }
      payload += planner::encode_row(p.result.rows[i]) + "\n";
      ++done;
    }
    progress.finish();
  } catch (...) {
    std::tie(code, payload) = failure();
  }

  // 3. Rank 0 gathers the rows in point order, prints and writes.
  const auto all = ranks->gather(std::to_string(code) + "\n" + payload);
  int rc = 0;
  if (root) {
    try {
      for (std::size_t r = 0; r < all.size() && rc == 0; ++r) {
        const std::size_t nl = all[r].find('\n');
        const int c = std::atoi(all[r].substr(0, nl).c_str());
        if (c != 0) {
          std::cerr << all[r].substr(nl + 1) << "\n";
          rc = c;
          break;
        }
        std::istringstream lines(all[r].substr(nl + 1));
        std::size_t i = r;
        for (std::string line; std::getline(lines, line); i += size) {
          if (i >= n) throw std::runtime_error("rank " + std::to_string(r) + " sent more rows than it has points");
          p.result.rows[i] = planner::decode_row(line);
        }
      }
      if (rc == 0) {
        describe(p);
        write_outputs(o, p.result);
        std::size_t feasible = 0;
        for (const auto& row : p.result.rows) feasible += row.feasible ? 1 : 0;
        rc = feasible > 0 ? 0 : 3;
      }
    } catch (...) {
      auto [c, message] = failure();
      std::cerr << message << "\n";
      rc = c;
    }
  }
  return ranks->broadcast(rc);
}

}  // namespace ccsim::cli
