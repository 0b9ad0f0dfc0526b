#pragma once
// Scenario files: one YAML document with the sections `cluster`, `workload`, `strategy` and
// `simulation`, each loaded into a typed struct. A scenario may `include` other scenario files
// (paths relative to the including file; the including file's keys win; maps merge, lists
// replace) and may name catalog entries (`node: dgx-h100`, `gpu: H100-SXM5`) with overrides.
//
// Every rule on the input is checked while loading, with file, line, column, key, expected and
// found (InputError); see docs/scenario-format.md for the schema. One parser per section
// (cluster_section, workload_section, strategy_section, simulation_section), the include chain
// (scenario_layers), the effective.yaml writer (effective_yaml) and the rules across sections
// (scenario.cpp).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "models/scenario/jobs_section.hpp"
#include "models/scenario/reliability_section.hpp"
#include "models/scenario/scenario_layers.hpp"
#include "models/scenario/simulation_section.hpp"
#include "models/scenario/what_if_section.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// A scenario file loaded and checked: every section typed, the model config loaded.
struct Scenario {
  std::string file;
  std::string name;
  ClusterSpec cluster;
  std::optional<WorkloadSpec> workload;
  std::optional<StrategySpec> strategy;
  SimulationSpec simulation;
  WhatIfSpec what_if;                      ///< the `what_if:` perturbations (empty: none)
  ReliabilitySpec reliability;             ///< the `reliability:` section (enabled false: none)
  std::optional<TransformerConfig> model;  ///< the workload's model, loaded and checked against the strategy
  /// The `jobs:` list (several jobs on one cluster); empty for a one-job scenario. A scenario
  /// has either jobs or a top-level workload (and strategy), never both.
  std::vector<JobSpec> jobs;
  std::vector<support::YamlSource> layers;          ///< the file and its includes, most specific first
};

/// What load_scenario checks beyond the scenario format and the catalog.
struct ScenarioChecks {
  /// The algorithm names a strategy.algorithms value may give besides "auto", in the order a
  /// bad value's message lists them: the planner's registry (planner::algorithm_names()), a
  /// layer above models/, so every command's loader passes them. Empty: the values are read as
  /// strings and not checked.
  std::span<const std::string_view> algorithm_names;
  /// False (`ccsim plan`, `ccsim sweep --plan`, which search the layout): the strategy's layout
  /// rules are not applied — a strategy that breaks one (tp·pp·cp not dividing the GPUs, ...)
  /// is replaced by the default one (every setting at its default, dp = GPUs), and the
  /// global-batch and model divisibility rules (check_layout) are left to the search.
  bool layout_rules = true;
  /// True (`ccsim topo`, `collective`, `compare`, `replay`, which simulate only the cluster): the
  /// workload and strategy are read and checked as usual except against the cluster's GPU count
  /// (tp·pp·cp·dp need not equal or divide it; an absent dp is 1).
  bool cluster_only = false;
};

/// Loads and checks a scenario file against `catalog`. Throws InputError on any bad input,
/// among it a simulation.calibration / compute_calibration that is not a path or names no
/// readable regular file (at the key's file, line and column, with the resolved path), and a
/// strategy.algorithms value that is not "auto" or one of checks.algorithm_names (at the
/// value, with a suggestion). The tables' contents are checked where they are loaded
/// (planner::CostModel::load, planner::ComputeCalibration::load).
Scenario load_scenario(const std::string& path, const Catalog& catalog, const ScenarioChecks& checks = {});

/// load_scenario on layers already read (most specific first): `ccsim sweep` puts a layer of
/// --set overrides in front of a scenario's own. `path` is the scenario's file (its name and
/// messages). Throws InputError; RuleError (a subclass) when well-formed values break a rule
/// tying settings together (layout, world size, global batch, cluster size, fabric).
Scenario load_scenario(const std::vector<support::YamlSource>& layers, const std::string& path, const Catalog& catalog,
                       const ScenarioChecks& checks = {});

/// Job `j` of `scenario.jobs` as a one-job scenario (its workload, strategy and model, the
/// scenario's cluster, simulation, what_if and reliability; no jobs). Throws std::out_of_range
/// for an index past the list.
Scenario job_scenario(const Scenario& scenario, std::size_t j);

/// The scenario's cluster as every command simulates it: build_cluster(scenario.cluster) with the
/// `what_if:` perturbations applied (apply_what_if). Throws what those throw (InputError for a
/// selector that matches nothing, at the rule's line).
Cluster build_scenario_cluster(const Scenario& scenario);

/// The same scenario without its `what_if:` section (the unperturbed baseline a perturbed run is
/// compared with).
Scenario without_what_if(const Scenario& scenario);

}  // namespace ccsim::models
