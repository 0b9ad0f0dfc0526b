#include "models/scenario/scenario.hpp"

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "models/scenario/cluster_section.hpp"
#include "models/scenario/strategy_section.hpp"
#include "models/scenario/workload_section.hpp"
#include "models/workload/layout_rules.hpp"

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

/// The rules tying sections together, after every section is read: the global batch is a
/// multiple of micro_batch_size·dp, an fp8 workload runs on GPUs with FP8 tensor cores, and the
/// layout fits the model (check_layout). Throws RuleError at the key that breaks one.
/// `layout_rules` false: only the fp8 rule (the layout search applies the others).
void check_across_sections(const support::Fields& root, const Scenario& scenario, bool layout_rules) {
  const bool uneven = scenario.strategy && (!scenario.strategy->dp_micro_batches.empty() || scenario.strategy->dp_micro_batches_proportional);
  if (uneven && scenario.workload && scenario.workload->phase != WorkloadPhase::TrainingStep) {
    throw support::RuleError(root.map("strategy").error("dp_micro_batches", "no dp_micro_batches for inference (micro-batches are a training-step setting)"));
  }
  if (uneven && scenario.workload && scenario.workload->phase == WorkloadPhase::TrainingStep) {
    const WorkloadSpec& w = *scenario.workload;
    const StrategySpec& s = *scenario.strategy;
    std::int64_t sum = 0;
    for (int c : s.dp_micro_batches) sum += c;
    if (!s.dp_micro_batches.empty() && w.global_batch_size > 0 && sum * w.micro_batch_size != w.global_batch_size) {
      throw support::RuleError(root.map("workload").error(
          "global_batch_size", fmt::format("the sum of strategy.dp_micro_batches × micro_batch_size = {} × {} = {}", sum, w.micro_batch_size,
                                           sum * w.micro_batch_size)));
    }
    if (s.dp_micro_batches_proportional && (w.global_batch_size <= 0 || w.global_batch_size % w.micro_batch_size != 0 ||
                                            w.global_batch_size / w.micro_batch_size < s.dp)) {
      throw support::RuleError(root.map("workload").error(
          "global_batch_size", fmt::format("a multiple of micro_batch_size = {} with at least one micro-batch per DP replica (dp = {}) "
                                           "to split in proportion (strategy.dp_micro_batches: proportional)",
                                           w.micro_batch_size, s.dp)));
    }
    // ZeRO-3 gathers parameters per micro-batch (its DP ops differ with the count), and the
    // interleaved schedule's rules on the count are Megatron's per step: both stay even.
    if (s.zero_stage == 3) {
      throw support::RuleError(root.map("strategy").error("dp_micro_batches", "the even split with zero_stage 3 (its parameter AllGathers run per micro-batch, so replicas with other counts cannot share one DP collective)"));
    }
    if (s.pipeline_schedule == "interleaved") {
      throw support::RuleError(root.map("strategy").error("dp_micro_batches", "the even split with the interleaved schedule (uneven micro-batches are modelled for 1f1b)"));
    }
    if (s.dp_micro_batches_proportional && s.ep > s.cp) {
      throw support::RuleError(root.map("strategy").error(
          "dp_micro_batches", "a list of counts when an EP group spans several DP replicas (ep > cp): proportional splits one replica at a time"));
    }
    // The replicas' micro-batches must be alike within an EP group (its AlltoAlls pair them).
    if (s.ep > s.cp && !s.dp_micro_batches.empty()) {
      const int block = s.ep / s.cp;
      for (int d = 0; d < s.dp; ++d) {
        if (s.dp_micro_batches[static_cast<std::size_t>(d)] != s.dp_micro_batches[static_cast<std::size_t>(d / block * block)]) {
          throw support::RuleError(root.map("strategy").error(
              "dp_micro_batches", fmt::format("equal counts within each EP group of {} replicas (replicas {} and {} differ)", block, d / block * block, d)));
        }
      }
    }
  } else if (layout_rules && scenario.workload && scenario.strategy && scenario.workload->phase == WorkloadPhase::TrainingStep &&
      scenario.workload->global_batch_size > 0) {
    const std::int64_t per_step = scenario.workload->micro_batch_size * scenario.strategy->dp;
    if (scenario.workload->global_batch_size % per_step != 0) {
      const support::Fields w = root.map("workload");
      throw support::RuleError(w.error("global_batch_size", fmt::format("a multiple of micro_batch_size·dp = {}·{} = {}",
                                                                        scenario.workload->micro_batch_size, scenario.strategy->dp, per_step)));
    }
  }
  if (scenario.workload && scenario.workload->dtype == "fp8") {
    for (const auto& group : scenario.cluster.groups) {
      if (group.node.gpu.fp8_flops <= 0) {
        throw support::RuleError(root.map("workload").error("dtype", "a dtype every GPU of the cluster computes in (" + group.node.gpu.name +
                                                                " has no FP8 tensor cores)"));
      }
    }
  }
  if (layout_rules && scenario.model) {
    if (const auto problem = check_layout(*scenario.model, *scenario.workload, *scenario.strategy)) {
      const support::Fields section = root.has(problem->section) ? root.map(problem->section) : root;
      throw support::RuleError(section.error(problem->key, problem->expected));
    }
  }
}

}  // namespace

Scenario load_scenario(const std::string& path, const Catalog& catalog, const ScenarioChecks& checks) {
  return load_scenario(load_scenario_layers(path), path, catalog, checks);
}

Scenario load_scenario(const std::vector<support::YamlSource>& layers, const std::string& path, const Catalog& catalog,
                       const ScenarioChecks& checks) {
  const bool layout_rules = checks.layout_rules;

  const support::Fields root(layers, "");
  root.reject_unknown({"include", "name", "description", "cluster", "workload", "strategy", "jobs", "simulation", "what_if", "reliability"});

  Scenario scenario;
  scenario.layers = layers;
  scenario.file = path;
  scenario.name = root.optional_string("name").value_or(fs::path(path).stem().string());
  if (!root.has("cluster")) throw root.missing("cluster", "a cluster section");
  scenario.cluster = parse_cluster(root, catalog, path);
  if (const auto w = root.optional_map("workload")) scenario.workload = parse_workload(*w);
  if (const auto s = root.optional_map("strategy")) {
    try {
      scenario.strategy = parse_strategy(*s, checks.cluster_only ? 0 : scenario.cluster.total_gpus(), checks.algorithm_names);
    } catch (const support::RuleError&) {
      // A layout search replaces the layout: one that does not fit the cluster is dropped.
      if (layout_rules) throw;
    }
  }
  if (const auto sim = root.optional_map("simulation")) scenario.simulation = parse_simulation(*sim);
  if (const auto wi = root.optional_map("what_if")) scenario.what_if = parse_what_if(*wi);
  if (const auto r = root.optional_map("reliability")) scenario.reliability = parse_reliability(*r);
  if (scenario.workload) {
    scenario.model = load_workload_model(root.map("workload"), scenario.workload->model);
    if (!scenario.strategy) {
      scenario.strategy = parse_strategy(support::Fields({}, "strategy"), checks.cluster_only ? 0 : scenario.cluster.total_gpus(),
                                         checks.algorithm_names);
    }
  }
  if (root.has("jobs")) {
    for (const char* one : {"workload", "strategy"}) {
      if (root.has(one)) {
        throw root.error(one, "no top-level workload or strategy beside jobs: (each job has its own; a single workload: is the one-job shorthand)");
      }
    }
    scenario.jobs = parse_jobs(root, scenario.cluster, checks.algorithm_names, path);
    // Each job is checked as a one-job scenario is, at its own keys.
    const auto items = root.list("jobs");
    for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
      const support::Fields job(std::vector<support::YamlSource>{items[j]}, support::element_path("jobs", j));
      check_across_sections(job, job_scenario(scenario, j), true);
    }
  }
  check_across_sections(root, scenario, layout_rules);
  return scenario;
}

Scenario job_scenario(const Scenario& scenario, std::size_t j) {
  const JobSpec& job = scenario.jobs.at(j);
  Scenario out = scenario;
  out.jobs.clear();
  out.name = scenario.name + "/" + job.name;
  out.workload = job.workload;
  out.strategy = job.strategy;
  out.model = job.model;
  return out;
}

Cluster build_scenario_cluster(const Scenario& scenario) {
  Cluster cluster = build_cluster(scenario.cluster);
  apply_what_if(cluster, scenario.what_if);
  return cluster;
}

Scenario without_what_if(const Scenario& scenario) {
  Scenario out = scenario;
  out.what_if = {};
  // New nodes, never assignment into the shared ones: a yaml-cpp Node assigned to rebinds every
  // copy of it, the original scenario's layers included.
  std::vector<support::YamlSource> layers;
  for (const auto& layer : scenario.layers) {
    if (!layer.node.IsMap() || !layer.node["what_if"]) {
      layers.push_back(layer);
      continue;
    }
    YAML::Node copy = YAML::Clone(layer.node);
    copy.remove("what_if");
    layers.push_back({copy, layer.file});
  }
  out.layers = std::move(layers);
  return out;
}

}  // namespace ccsim::models
