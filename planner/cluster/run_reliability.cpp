#include "planner/cluster/run_reliability.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "models/hardware/failure_rates.hpp"
#include "planner/workload/placement.hpp"
#include "support/input_error.hpp"
#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::planner {
namespace {

constexpr double kYear = 365.0 * 86400.0;

support::InputError section_error(const models::Scenario& scenario, const std::string& expected, const std::string& found) {
  const support::Fields root(scenario.layers, "");
  return support::InputError(root.location("reliability"), "reliability", expected, found);
}

/// Per node: the DP replicas with ranks on it; per replica and node group: the share of the
/// group's nodes the replica occupies (its ranks there / GPUs per node).
struct ReplicaNodes {
  std::vector<std::vector<int>> node_replicas;
  std::vector<std::map<int, double>> group_share;  ///< per replica
};

ReplicaNodes replica_nodes(const models::Scenario& scenario, const models::Cluster& cluster) {
  const models::StrategySpec& s = *scenario.strategy;
  const Placement placement(s, cluster.spec.total_gpus());
  ReplicaNodes out;
  out.node_replicas.resize(cluster.nodes.size());
  out.group_share.resize(static_cast<std::size_t>(s.dp));
  int rank = 0;
  for (std::size_t n = 0; n < cluster.nodes.size(); ++n) {
    const double gpus = static_cast<double>(cluster.nodes[n].gpus.size());
    for (std::size_t g = 0; g < cluster.nodes[n].gpus.size(); ++g, ++rank) {
      const int d = placement.coords(rank).dp;
      auto& list = out.node_replicas[n];
      if (std::find(list.begin(), list.end(), d) == list.end()) list.push_back(d);
      out.group_share[static_cast<std::size_t>(d)][cluster.node_group[n]] += 1.0 / gpus;
    }
  }
  return out;
}

}  // namespace

ReliabilityReport run_reliability(const models::Scenario& scenario, const models::Cluster& cluster, const WorkloadResult& result,
                                  const std::function<double(const models::Scenario&)>& step_time_of,
                                  const std::function<void(long long, long long)>& progress) {
  const models::ReliabilitySpec& spec = scenario.reliability;
  if (!scenario.workload || scenario.workload->phase != models::WorkloadPhase::TrainingStep || !scenario.model) {
    throw support::RuleError(section_error(scenario, "a training-step workload (failures over a run are modelled for training)",
                                           "a scenario whose workload is not a training step"));
  }
  if (spec.duration <= 0 && spec.tokens <= 0) {
    throw section_error(scenario, "a run to simulate: reliability.duration (wall time, such as 30d), reliability.tokens (a token budget) or run --horizon",
                        "neither");
  }
  if (spec.tokens > 0 && spec.duration <= 0 && spec.tokens / (result.program.tokens / result.step_time) > 3.1536e9) {
    throw support::RuleError(section_error(scenario, "a token budget the job trains in at most 100 years without failures (or a duration)",
                        fmt::format("tokens {:.4g}: {:.3g} years at {:.4g} tokens/s", spec.tokens,
                                    spec.tokens / (result.program.tokens / result.step_time) / 3.1536e7, result.program.tokens / result.step_time)));
  }
  ReliabilityReport rep;
  rep.policy = spec.policy == models::RecoveryPolicy::Shrink ? "shrink" : "restart";
  // The classes on the job's units.
  double nics = 0;
  for (const auto& n : cluster.nodes) nics += static_cast<double>(n.nics.size());
  const double gpus = cluster.spec.total_gpus(), nodes = static_cast<double>(cluster.nodes.size());
  for (const models::FailureClass& c : models::failure_classes()) {
    ClassCount cc{std::string(c.name), c.per_year, 0, std::string(models::failure_unit_name(c.unit))};
    cc.units = c.unit == models::FailureUnit::Gpu ? gpus : c.unit == models::FailureUnit::Nic ? nics : nodes;
    for (const auto& [name, rate] : spec.rates) {
      if (name == c.name) {
        cc.per_year = rate;
        cc.overridden = true;
      }
    }
    rep.classes.push_back(cc);
  }
  double job_rate = 0;
  for (const auto& c : rep.classes) job_rate += c.per_year * c.units / kYear;
  if (spec.job_mtbf) {
    const double scale = (1.0 / *spec.job_mtbf) / job_rate;
    for (auto& c : rep.classes) c.per_year *= scale;
    job_rate = 1.0 / *spec.job_mtbf;
  }

  // Work grows with the interruptions simulated: bound them before running (a 1 ms MTBF over
  // 30 days is 2.6e9 per run). The span: the duration, else the token budget's wall time at most
  // 100 years (reliability.cpp's horizon).
  {
    const double full_rate = static_cast<double>(result.program.tokens) / result.step_time;
    const double span = spec.duration > 0 ? spec.duration : std::min(20.0 * spec.tokens / full_rate, 3.1536e9);
    const double per_run = job_rate * span;
    if (per_run > 1e6 || per_run * spec.samples > 1e8) {
      throw support::RuleError(section_error(
          scenario, "at most 1e6 interruptions per run on average and 1e8 over all runs (reliability.mtbf, reliability.rates, duration, samples)",
          fmt::format("{:.3g} per run (job MTBF {} over {}) x {} runs", per_run, support::format_duration(1.0 / job_rate),
                      support::format_duration(span), spec.samples)));
    }
  }

  ReliabilityJob job;
  job.nodes = static_cast<int>(cluster.nodes.size());
  job.dp = scenario.strategy->dp;
  job.tokens_per_step = static_cast<double>(result.program.tokens);
  rep.tokens_per_step = job.tokens_per_step;
  rep.step_time = result.step_time;
  for (std::size_t i = 0; i < rep.classes.size(); ++i) {
    const auto& c = rep.classes[i];
    if (c.units <= 0) continue;  // a cluster without NICs: no NIC or network failures
    job.classes.push_back({c.name, c.per_year * c.units / kYear, models::failure_classes()[i].removes_node});
  }
  job.replica_class.assign(static_cast<std::size_t>(job.dp), 0);
  for (std::size_t k = 0; k < result.classes.size(); ++k)
    for (int d : result.classes[k].replicas) job.replica_class[static_cast<std::size_t>(d)] = static_cast<int>(k);
  const ReplicaNodes placement = replica_nodes(scenario, cluster);
  job.node_replicas = placement.node_replicas;
  const double full_step = result.step_time;
  const int micro_batches = static_cast<int>(scenario.workload->global_batch_size / (scenario.workload->micro_batch_size * job.dp));
  job.step_time = [&, full_step, micro_batches](const std::vector<int>& dead) {
    int dropped = 0;
    for (int d : dead) dropped += d;
    if (dropped == 0) return full_step;
    // The job without the dropped replicas: per node group, the nodes of one replica of each
    // class times the class's dropped count, rounded up to whole nodes.
    std::map<int, double> removed;
    for (std::size_t k = 0; k < dead.size(); ++k) {
      if (dead[k] == 0) continue;
      const int first = result.classes.empty() ? 0 : result.classes[k].replicas.front();
      for (const auto& [group, share] : placement.group_share[static_cast<std::size_t>(first)]) removed[group] += share * dead[k];
    }
    models::Scenario reduced = scenario;
    reduced.reliability = {};
    for (const auto& [group, count] : removed) {
      auto& g = reduced.cluster.groups[static_cast<std::size_t>(group)];
      g.count = std::max(0, g.count - static_cast<int>(std::ceil(count - 1e-9)));
    }
    reduced.cluster.groups.erase(std::remove_if(reduced.cluster.groups.begin(), reduced.cluster.groups.end(),
                                                [](const models::NodeGroupSpec& g) { return g.count == 0; }),
                                 reduced.cluster.groups.end());
    reduced.strategy->dp = job.dp - dropped;
    reduced.strategy->dp_micro_batches.clear();
    reduced.workload->global_batch_size = static_cast<std::int64_t>(micro_batches) * reduced.workload->micro_batch_size * reduced.strategy->dp;
    try {
      return step_time_of(reduced);
    } catch (const support::InputError& e) {
      // A rule of the scenario that the shrunk job breaks (a what_if rule on a node it no
      // longer has): say where the smaller job comes from.
      const std::string note = fmt::format("in the job policy shrink leaves after dropping {} of {} DP replicas ({} nodes)", dropped,
                                           job.dp, reduced.cluster.total_nodes());
      const support::InputError noted(e.where(), e.key(), e.expected(), e.found(), e.hint().empty() ? note : e.hint() + "; " + note);
      if (dynamic_cast<const support::RuleError*>(&e) != nullptr) throw support::RuleError(noted);
      throw noted;
    }
  };
  if (spec.policy == models::RecoveryPolicy::Shrink && !scenario.strategy->dp_micro_batches.empty()) {
    throw section_error(scenario, "policy restart with strategy.dp_micro_batches (a shrunk job's uneven split is not modelled)", "policy shrink");
  }
  if (spec.policy == models::RecoveryPolicy::Shrink && job.dp < 2) {
    // A rule on the point's values: a sweep reports it as an infeasible row.
    throw support::RuleError(section_error(scenario, "policy restart when dp is 1 (shrink drops DP replicas)", "policy shrink with dp = 1"));
  }

  // Checkpoint save and load from the model's size and the storage bandwidth.
  rep.checkpoint_bytes = kCheckpointBytesPerParam * static_cast<double>(scenario.model->total_params());
  RecoverySettings& s = rep.settings;
  s.shrink = spec.policy == models::RecoveryPolicy::Shrink;
  s.spare_nodes = spec.spare_nodes;
  s.save = spec.save_time.value_or(rep.checkpoint_bytes / (spec.write_bandwidth * nodes));
  s.load = spec.load_time.value_or(rep.checkpoint_bytes / (spec.read_bandwidth * nodes));
  s.restart = spec.restart_time;
  s.repair = spec.repair_time;
  s.shrink_time = spec.shrink_time;
  s.duration = spec.duration;
  s.tokens = spec.tokens;
  s.samples = spec.samples;
  s.seed = spec.seed;
  s.progress = progress;
  rep.young = young_interval(s.save, 1.0 / job_rate);
  rep.daly = daly_interval(s.save, 1.0 / job_rate);
  if (spec.checkpoint_interval) {
    s.interval = *spec.checkpoint_interval;
    rep.result = simulate_run(job, s);
  } else {
    rep.interval_searched = true;
    rep.result = best_interval(job, s, &rep.curve);
    s.interval = rep.result.interval;
  }
  return rep;
}

std::string reliability_text(const ReliabilityReport& r) {
  const RecoverySettings& s = r.settings;
  const ReliabilityResult& x = r.result;
  std::string out;
  std::string span;
  if (s.duration > 0) span = "of " + support::format_duration(s.duration);
  if (s.tokens > 0) span += fmt::format("{}to {:.4g} tokens", s.duration > 0 ? ", stopping at the budget, " : "", s.tokens);
  out += fmt::format("\nreliability: {} Monte-Carlo runs {} (seed {}), policy {}, spare nodes {}\n", s.samples, span, s.seed, r.policy,
                     s.spare_nodes < 0 ? std::string("unlimited") : std::to_string(s.spare_nodes));
  support::TextTable t({"class", "per unit/year", "units", "events/run", "rework", "downtime", "reduced DP", "lost"},
                       {false, true, true, true, true, true, true, true});
  const double wall = x.wall.mean;
  double lost_total = 0;
  for (std::size_t i = 0; i < x.classes.size(); ++i) {
    const ClassCost& c = x.classes[i];
    const auto it = std::find_if(r.classes.begin(), r.classes.end(), [&](const ClassCount& k) { return k.name == c.name; });
    lost_total += c.lost();
    t.add_row({c.name, fmt::format("{:.4g}{}", it->per_year, it->overridden ? " (set)" : ""), fmt::format("{:.0f} {}s", it->units, it->unit),
               fmt::format("{:.1f}", c.events), support::format_duration(c.rework), support::format_duration(c.downtime),
               support::format_duration(c.reduced), fmt::format("{:.2f} %", wall > 0 ? 100 * c.lost() / wall : 0.0)});
  }
  t.add_row({"checkpoint saves", "", "", "", "", "", "", fmt::format("{:.2f} %", wall > 0 ? 100 * x.saves / wall : 0.0)});
  out += t.render(2);
  out += fmt::format("  job MTBF {} ({:.3g} a day); step {} for {:.4g} tokens: {:.4g} tokens/s without failures\n",
                     support::format_duration(1.0 / x.job_rate), x.job_rate * 86400, support::format_time(r.step_time), r.tokens_per_step,
                     x.full_rate);
  out += fmt::format("  checkpoint {}: save {}, load {}; restart {}, repair {}{}\n", support::format_bytes(r.checkpoint_bytes),
                     support::format_time(s.save), support::format_time(s.load), support::format_duration(s.restart),
                     support::format_duration(s.repair), s.shrink ? ", shrink " + support::format_duration(s.shrink_time) : std::string());
  out += fmt::format("  checkpoint interval {} of compute{}; Young's sqrt(2·save·MTBF) {}, Daly's {}\n", support::format_duration(s.interval),
                     r.interval_searched ? " (the best of 17 around Young's)" : " (set)", support::format_duration(r.young),
                     support::format_duration(r.daly));
  out += fmt::format("  ETTR {:.2f} % ± {:.2f} % (95 % CI of the mean; p5 {:.2f} %, p95 {:.2f} %); goodput {:.4g} tokens/s\n", 100 * x.ettr.mean,
                     100 * x.ettr.half_width, 100 * x.ettr.p5, 100 * x.ettr.p95, x.tokens.mean / std::max(wall, 1e-300));
  if (s.tokens > 0) {
    out += fmt::format("  time to {:.4g} tokens: {} ± {} (p5 {}, p95 {}); without failures {}", s.tokens, support::format_duration(x.wall.mean),
                       support::format_duration(x.wall.half_width), support::format_duration(x.wall.p5), support::format_duration(x.wall.p95),
                       support::format_duration(s.tokens / x.full_rate));
    if (x.finished < 1) out += fmt::format("; {:.1f} % of runs did not reach the budget", 100 * (1 - x.finished));
    out += "\n";
  } else {
    out += fmt::format("  tokens in {}: {:.4g} ± {:.2g} (p5 {:.4g}, p95 {:.4g})\n", support::format_duration(s.duration), x.tokens.mean,
                       x.tokens.half_width, x.tokens.p5, x.tokens.p95);
  }
  out += fmt::format("  lost to failures {:.2f} % of the wall time, checkpoint saves {:.2f} %\n", wall > 0 ? 100 * lost_total / wall : 0.0,
                     wall > 0 ? 100 * x.saves / wall : 0.0);
  return out;
}

nlohmann::json reliability_json(const ReliabilityReport& r) {
  const RecoverySettings& s = r.settings;
  const ReliabilityResult& x = r.result;
  const auto stat = [](const SampleStat& v) { return nlohmann::json{{"mean", v.mean}, {"ci95_half_width", v.half_width}, {"p5", v.p5}, {"p95", v.p95}}; };
  nlohmann::json j;
  j["samples"] = s.samples;
  j["seed"] = s.seed;
  j["policy"] = r.policy;
  j["spare_nodes"] = s.spare_nodes < 0 ? nlohmann::json("unlimited") : nlohmann::json(s.spare_nodes);
  j["duration_s"] = s.duration;
  j["token_budget"] = s.tokens;
  j["step_time_s"] = r.step_time;
  j["tokens_per_step"] = r.tokens_per_step;
  j["job_mtbf_s"] = 1.0 / x.job_rate;
  j["checkpoint"] = {{"bytes", r.checkpoint_bytes}, {"save_s", s.save}, {"load_s", s.load}, {"interval_s", s.interval},
                     {"interval_searched", r.interval_searched}, {"young_s", r.young}, {"daly_s", r.daly}};
  j["restart_s"] = s.restart;
  j["repair_s"] = s.repair;
  j["ettr"] = stat(x.ettr);
  j["wall_s"] = stat(x.wall);
  j["tokens"] = stat(x.tokens);
  j["finished_fraction"] = x.finished;
  j["saves_s"] = x.saves;
  j["useful_s"] = x.useful;
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t i = 0; i < x.classes.size(); ++i) {
    const ClassCost& c = x.classes[i];
    const auto it = std::find_if(r.classes.begin(), r.classes.end(), [&](const ClassCount& k) { return k.name == c.name; });
    classes.push_back({{"class", c.name}, {"per_unit_per_year", it->per_year}, {"units", it->units}, {"unit", it->unit},
                       {"events", c.events}, {"rework_s", c.rework}, {"downtime_s", c.downtime}, {"reduced_dp_s", c.reduced}});
  }
  j["classes"] = classes;
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& [interval, ettr] : r.curve) curve.push_back({{"interval_s", interval}, {"ettr", ettr}});
  j["interval_search"] = curve;
  return j;
}

}  // namespace ccsim::planner
