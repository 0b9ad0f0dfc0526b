#include "planner/sweep/sweep_point.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "models/hardware/topology_summary.hpp"
#include "planner/cluster/jobs.hpp"
#include "planner/cluster/run_reliability.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/search/layout_plan.hpp"
#include "planner/workload/serving.hpp"
#include "planner/workload/workload_runner.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The rule of cli::choose_table: the command line's table, else the scenario's, else the default.
std::string choose(const std::string& option, const std::string& scenario, const std::string& fallback) {
  if (!option.empty()) return option;
  if (!scenario.empty()) return scenario;
  return fallback;
}

}  // namespace

SweepRow rule_row(const support::InputError& e) {
  SweepRow row;
  row.feasible = false;
  row.reason = (e.key().empty() ? std::string() : e.key() + ": ") + "expected " + e.expected() + ", found " + e.found();
  if (!e.hint().empty()) row.reason += "; " + e.hint();
  return row;
}

namespace {

/// A scenario with jobs: the co-run's row (SweepRow's jobs fields).
SweepRow jobs_point(const models::Scenario& scenario, const PointOptions& o) {
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const CostModel costs =
      CostModel::load(choose(o.calibration, scenario.simulation.calibration, CostModel::default_path(cluster)));
  CoRunOptions co;
  co.costs = &costs;
  co.compute = ComputeCalibration::load_for_cluster(
      choose(o.compute_calibration, scenario.simulation.compute_calibration, ComputeCalibration::default_path()), cluster);
  co.engine = o.engine.value_or(scenario.simulation.engine);
  co.serving = ServingCalibration::load(o.serving_calibration.empty() ? ServingCalibration::default_path() : o.serving_calibration,
                                        cluster.spec.groups.front().node.gpu.kind_names());
  const bool best = std::any_of(scenario.jobs.begin(), scenario.jobs.end(),
                                [](const models::JobSpec& j) { return j.placement.policy == models::PlacementPolicy::Best; });
  std::optional<BestPlacement> ranking;
  CoRunResult r;
  if (best) {
    ranking = place_best(scenario, cluster, co);
    r = std::move(ranking->best);
  } else {
    r = run_jobs(scenario, cluster, co);
  }
  SweepRow row;
  row.phase = "jobs";
  double worst = 0, hbm = std::numeric_limits<double>::infinity();
  for (const auto& j : r.jobs) {
    row.gpus += static_cast<int>(j.gpus.size());
    for (const auto& m : j.result.memory) worst = std::max(worst, m.total());
    hbm = std::min(hbm, j.result.hbm_capacity);
  }
  row.memory_gib = worst / kGiB;
  row.hbm_gib = hbm / kGiB;
  const JobOutcome& last = r.jobs.back();
  row.placement = last.placement;
  // (a job with placement best reads "best: leaf": place_best names it so)
  if (r.passes == 0) {
    for (const auto& j : r.jobs) {
      if (j.result.feasible) continue;
      double need = 0;
      for (const auto& m : j.result.memory) need = std::max(need, m.total());
      row.reason = fmt::format("out of memory: job {} needs {:.2f} GiB per GPU, more than the {:.2f} GiB of HBM", j.name, need / kGiB,
                               j.result.hbm_capacity / kGiB);
      break;
    }
    return row;
  }
  row.feasible = true;
  row.step_time_s = last.mean;
  row.tokens_per_s = last.tokens / last.mean;
  row.mfu = last.mfu_alone * last.alone / last.mean;  // the same FLOPs in the longer step
  const models::WorkloadPhase phase = scenario.jobs.back().workload.phase;
  if (phase == models::WorkloadPhase::Prefill) row.ttft_s = last.mean;
  if (phase == models::WorkloadPhase::Decode) row.tpot_s = last.mean;
  if (o.price_per_gpu_hour) row.cost_per_mtok = *o.price_per_gpu_hour * static_cast<double>(last.gpus.size()) / 3600.0 * last.mean / last.tokens * 1e6;
  // A feasible row's reason is empty; here it carries what the figures' reader must know.
  for (const std::string& w : jobs_warnings(r)) row.reason += (row.reason.empty() ? "" : "; ") + w;
  row.worst_slowdown = 0;
  for (const auto& j : r.jobs) {
    row.worst_slowdown = std::max(*row.worst_slowdown, j.slowdown);
    row.slowdowns += fmt::format("{}{} {:.3f}x", row.slowdowns.empty() ? "" : ", ", j.name, j.slowdown);
  }
  return row;
}

}  // namespace

SweepRow evaluate_point(const models::Scenario& scenario, const PointOptions& o) {
  if (!scenario.jobs.empty()) return jobs_point(scenario, o);
  if (o.plan) return plan_point(scenario, o);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const CostModel costs =
      CostModel::load(choose(o.calibration, scenario.simulation.calibration, CostModel::default_path(cluster)));
  const auto& gpu0 = cluster.spec.groups.front().node.gpu;
  ComputeCalibration compute = ComputeCalibration::load_for_cluster(
      choose(o.compute_calibration, scenario.simulation.compute_calibration, ComputeCalibration::default_path()), cluster);
  const models::EngineKind engine = o.engine.value_or(scenario.simulation.engine);
  WorkloadRunner runner(scenario, cluster, costs, compute, engine);
  const models::WorkloadPhase phase = scenario.workload->phase;
  if (phase != models::WorkloadPhase::TrainingStep) {
    runner.set_serving(ServingCalibration::load(
        o.serving_calibration.empty() ? ServingCalibration::default_path() : o.serving_calibration, gpu0.kind_names()));
  }
  const WorkloadResult r = runner.run();

  SweepRow row;
  row.gpus = r.world;
  row.phase = std::string(models::to_string(phase));
  double worst = 0;
  int worst_stage = 0;
  for (const auto& f : r.memory) {
    if (f.total() > worst) {
      worst = f.total();
      worst_stage = f.stage;
    }
  }
  row.memory_gib = worst / kGiB;
  row.hbm_gib = r.hbm_capacity / kGiB;
  if (!r.feasible) {
    row.feasible = false;
    row.reason = fmt::format("out of memory: stage {} needs {:.2f} GiB per GPU, more than the {:.2f} GiB of HBM", worst_stage,
                             worst / kGiB, r.hbm_capacity / kGiB);
    return row;
  }
  row.feasible = true;
  row.step_time_s = r.step_time;
  row.tokens_per_s = r.program.tokens / r.step_time;
  row.mfu = r.mfu;
  if (phase == models::WorkloadPhase::Prefill) row.ttft_s = r.step_time;
  if (phase == models::WorkloadPhase::Decode) row.tpot_s = r.step_time;
  if (r.serving) {
    row.ttft_s = r.serving->ttft;
    row.tpot_s = r.serving->tpot;
  }
  if (o.price_per_gpu_hour) {
    // USD per GPU-second × GPUs × seconds per token × 1e6 tokens.
    row.cost_per_mtok = *o.price_per_gpu_hour * r.world / 3600.0 * r.step_time / r.program.tokens * 1e6;
  }
  // Reliability on a point that is not a training step is refused by run_reliability (a rule:
  // an infeasible row), not skipped.
  if (scenario.reliability.enabled) {
    const auto step_time_of = [&](const models::Scenario& sc) {
      const models::Cluster cl = models::build_scenario_cluster(sc);
      WorkloadRunner reduced(sc, cl, costs, compute, engine);
      reduced.set_detail(WorkloadRunner::Detail::StepOnly);
      return reduced.run().step_time;
    };
    const ReliabilityReport rel = run_reliability(scenario, cluster, r, step_time_of);
    row.ettr = rel.result.ettr.mean;
    row.run_wall_s = rel.result.wall.mean;
    row.checkpoint_interval_s = rel.settings.interval;
  }
  return row;
}

SweepRow plan_point(const models::Scenario& scenario, const PointOptions& o) {
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const CostModel costs =
      CostModel::load(choose(o.calibration, scenario.simulation.calibration, CostModel::default_path(cluster)));
  const auto& gpu0 = cluster.spec.groups.front().node.gpu;
  const ComputeCalibration compute = ComputeCalibration::load_for_cluster(
      choose(o.compute_calibration, scenario.simulation.compute_calibration, ComputeCalibration::default_path()), cluster);
  const ServingCalibration serving =
      ServingCalibration::load(o.serving_calibration.empty() ? ServingCalibration::default_path() : o.serving_calibration, gpu0.kind_names());
  const SearchSpace space = space_from_options(scenario, cluster, o.space, o.fix);
  PlanOptions po;
  po.objective = o.objective;
  po.price_per_gpu_hour = o.price_per_gpu_hour.value_or(0);
  po.top = 1;
  po.jobs = o.jobs;
  const PlanResult plan = plan_layouts(scenario, cluster, costs, compute, serving, space, po);
  SweepRow row;
  row.gpus = cluster.spec.total_gpus();
  row.phase = std::string(models::to_string(scenario.workload->phase));
  double hbm = std::numeric_limits<double>::infinity();
  for (const auto& g : cluster.spec.groups) hbm = std::min(hbm, g.node.gpu.hbm_capacity);
  row.hbm_gib = hbm / kGiB;
  if (plan.ranked.empty()) {
    std::string counts;
    for (const auto& [reason, n] : plan.pruned) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, reason);
    row.reason = fmt::format("no feasible layout among {} ({})", plan.enumerated, counts.empty() ? "none enumerated" : counts);
    return row;
  }
  const CandidateResult& best = plan.ranked.front();
  row.feasible = true;
  row.layout = layout_name(best.candidate.layout, scenario.workload->phase);
  row.step_time_s = best.step_time;
  row.tokens_per_s = best.tokens_per_s;
  row.mfu = best.mfu;
  row.memory_gib = best.candidate.memory / kGiB;
  const models::WorkloadPhase phase = scenario.workload->phase;
  if (phase == models::WorkloadPhase::Prefill || phase == models::WorkloadPhase::Serving) row.ttft_s = best.ttft;
  if (phase == models::WorkloadPhase::Decode || phase == models::WorkloadPhase::Serving) row.tpot_s = best.tpot;
  if (o.price_per_gpu_hour) row.cost_per_mtok = best.cost_per_mtok;
  return row;
}

namespace {

/// A table's file name, "(default)" after it when neither the command line nor the scenario named it.
std::string table_label(const std::string& option, const std::string& scenario, const std::string& fallback) {
  const std::string chosen = choose(option, scenario, fallback);
  const std::string name = std::filesystem::path(chosen).filename().string();
  return option.empty() && scenario.empty() ? name + " (default)" : name;
}

/// A model as people name it: a scenarios/models entry as is, a Hugging Face config.json by its folder.
std::string model_label(const std::string& model) {
  const std::filesystem::path p(model);
  if (p.filename() == "config.json" && p.has_parent_path()) return p.parent_path().filename().string();
  if (p.has_extension()) return p.stem().string();
  return model;
}

/// The link efficiencies per link kind of `cluster` that the point's collective table credits.
std::vector<double> link_efficiencies(const models::Scenario& scenario, const models::Cluster& cluster, const PointOptions& o,
                                      std::string& table) {
  table = choose(o.calibration, scenario.simulation.calibration, CostModel::default_path(cluster));
  const CostModel costs = CostModel::load(table);
  const std::string& arch = cluster.spec.groups.front().node.gpu.arch;
  std::vector<double> eff(cluster.topology.link_kinds().size(), 1.0);
  for (std::size_t k = 0; k < eff.size(); ++k) eff[k] = costs.link_efficiency(cluster.topology, k, arch).value_or(1.0);
  table = std::filesystem::path(table).filename().string();
  return eff;
}

}  // namespace

SweepMeta describe_sweep(const models::Scenario& scenario, const PointOptions& o) {
  SweepMeta m;
  m.name = scenario.name;
  const models::ClusterSpec& spec = scenario.cluster;
  std::string groups;
  for (const auto& g : spec.groups) {
    m.node_groups.push_back({g.node.name, g.node.gpu.name, g.count, g.node.gpus});
    groups += fmt::format("{}{} x {} ({} x {})", groups.empty() ? "" : " + ", g.count, g.node.name, g.count * g.node.gpus, g.node.gpu.name);
  }
  const models::FabricSpec& f = spec.fabric;
  std::string fabric(models::to_string(f.kind));
  if (f.kind == models::FabricKind::FatTree) {
    fabric += fmt::format(" {}", models::to_string(f.wiring));
    if (f.oversubscription != 1) fabric += fmt::format(" {}:1", f.oversubscription);
  }
  m.cluster = groups + ", " + fabric;
  if (!scenario.jobs.empty()) {
    m.phase = "jobs";
    std::string names;
    for (const auto& j : scenario.jobs) names += (names.empty() ? "" : ", ") + model_label(j.workload.model);
    m.model = names;
  } else if (scenario.workload) {
    const models::WorkloadSpec& w = *scenario.workload;
    m.model = model_label(w.model);
    m.phase = std::string(models::to_string(w.phase));
    switch (w.phase) {
      case models::WorkloadPhase::TrainingStep:
        m.workload = fmt::format("sequence {}, global batch {}, micro-batch {}", w.sequence_length, w.global_batch_size, w.micro_batch_size);
        break;
      case models::WorkloadPhase::Prefill: m.workload = fmt::format("prompt {}, batch {}", w.sequence_length, w.batch_size); break;
      case models::WorkloadPhase::Decode: m.workload = fmt::format("context {}, batch {}", w.context_length, w.batch_size); break;
      default: m.workload = fmt::format("input {}, batch {}", w.input_len, w.batch_size); break;
    }
  }
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  m.calibration = table_label(o.calibration, scenario.simulation.calibration, CostModel::default_path(cluster));
  m.compute_calibration =
      table_label(o.compute_calibration, scenario.simulation.compute_calibration, ComputeCalibration::default_path());
  m.engine = std::string(models::to_string(o.engine.value_or(scenario.simulation.engine)));
  return m;
}

std::string explain_tie(const std::vector<const models::Scenario*>& scenarios, const std::vector<std::string>& values,
                        const PointOptions& o) {
  struct Seen {
    models::InjectionLimit limit;
    std::string table;
  };
  std::vector<Seen> seen;
  for (const models::Scenario* sc : scenarios) {
    if (sc == nullptr || !sc->jobs.empty()) return {};
    const models::Cluster cluster = models::build_scenario_cluster(*sc);
    Seen s;
    const std::vector<double> eff = link_efficiencies(*sc, cluster, o, s.table);
    s.limit = models::injection_limit(cluster, 0, eff);
    if (s.limit.line_rate_per_gpu <= 0 || s.limit.per_gpu <= 0) return {};  // no fabric: nothing to compare
    seen.push_back(std::move(s));
  }
  if (seen.size() < 2) return {};
  const auto alike = [](double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(a, b); };
  bool same_reach = true;
  bool same_line = true;
  for (const Seen& s : seen) {
    same_reach = same_reach && alike(s.limit.per_gpu, seen.front().limit.per_gpu);
    same_line = same_line && alike(s.limit.line_rate_per_gpu, seen.front().limit.line_rate_per_gpu);
  }
  const std::string& table = seen.front().table;
  const std::string reach = support::format_bandwidth(seen.front().limit.per_gpu);
  if (same_reach && !same_line) {
    std::string lines;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      lines += fmt::format("{}{} {}", i == 0 ? "" : ", ", values[i], support::format_bandwidth(seen[i].limit.line_rate_per_gpu));
    }
    const bool below = std::none_of(seen.begin(), seen.end(), [](const Seen& s) { return s.limit.nic_binds; });
    if (below) {
      return fmt::format("{} binds at every point: {} per GPU into the fabric ({}'s link_efficiency), below the NIC line rates "
                         "({} per GPU)",
                         models::describe_binding(seen.front().limit), reach, table, lines);
    }
  }
  // The same injection and the same NICs: the key did not touch the way into the fabric, which
  // then explains nothing (a reliability or placement key); the tie stands without a note.
  if (same_reach) return {};
  std::string each;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    each += fmt::format("{}{} {}", i == 0 ? "" : ", ", values[i], support::format_bandwidth(seen[i].limit.per_gpu));
  }
  return fmt::format("their injection into the fabric differs ({} per GPU, {}'s link_efficiency), so the fabric does not set this "
                     "step's time",
                     each, table);
}

}  // namespace ccsim::planner
