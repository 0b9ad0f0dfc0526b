#pragma once
// Scenario files: one YAML document with the sections `cluster`, `workload`, `strategy` and
// `simulation`, each loaded into a typed struct. A scenario may `include` other scenario files
// (paths relative to the including file; the including file's keys win; maps merge, lists
// replace) and may name catalog entries (`node: dgx-h100`, `gpu: H100-SXM5`) with overrides.
//
// Every rule on the input is checked here, with file, line, column, key, expected and found
// (InputError); see README.md "Scenario files" for the schema.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "models/workload/workload_spec.hpp"
#include "support/yaml_fields.hpp"
#include "models/workload/transformer.hpp"

namespace ccsim::models {

struct SimulationSpec {
  std::string engine = "analytic";       ///< analytic | flow
  std::string granularity = "auto";      ///< auto | step | phase
  /// `calibration`: the collective cost table (format of scenarios/calibration/nccl.yaml) the
  /// commands use when the command line names none (cli/options.hpp choose_table). The path as
  /// written, joined to the directory of the file that writes the key (an included file's own
  /// directory); an absolute path stays as it is. Empty: the scenario names none.
  std::string calibration;
  /// `compute_calibration`: the compute efficiency table (format of
  /// scenarios/calibration/compute.yaml), resolved as `calibration`. Empty: none named.
  std::string compute_calibration;
};

struct Scenario {
  std::string file;
  std::string name;
  ClusterSpec cluster;
  std::optional<WorkloadSpec> workload;
  std::optional<StrategySpec> strategy;
  SimulationSpec simulation;
  std::optional<TransformerConfig> model;  ///< the workload's model, loaded and checked against the strategy
  std::vector<support::YamlSource> layers;          ///< the file and its includes, most specific first
};

/// The scenario as one self-contained YAML document: includes merged (the including file's
/// keys win, maps merge, lists replace), every workload / strategy / simulation setting written
/// out with its effective value, and a model config path made absolute. Loading it gives the
/// same Scenario (`ccsim run DIR/effective.yaml` reproduces a run).
std::string effective_yaml(const Scenario& scenario);

/// Loads and checks a scenario file against `catalog`. Throws InputError on any bad input,
/// among it a simulation.calibration / compute_calibration that is not a path or names no
/// readable regular file (at the key's file, line and column, with the resolved path). The
/// tables' contents are checked where they are loaded (planner::CostModel::load,
/// planner::ComputeCalibration::load).
Scenario load_scenario(const std::string& path, const Catalog& catalog);

/// The YAML documents of a scenario file and everything it includes, most specific first (the
/// file itself, then its includes in order). Throws InputError as load_scenario does.
std::vector<support::YamlSource> load_scenario_layers(const std::string& path);

/// load_scenario on layers already read (most specific first): `ccsim sweep` puts a layer of
/// --set overrides in front of a scenario's own. `path` is the scenario's file (its name and
/// messages). Throws InputError; RuleError (a subclass) when well-formed values break a rule
/// tying settings together (layout, world size, global batch, cluster size, fabric).
/// `layout_rules` false (`ccsim plan`, `ccsim sweep --plan`, which search the layout): the
/// strategy's layout rules are not applied — a strategy that breaks one (tp·pp·cp not dividing
/// the GPUs, ...) is replaced by the default one (every setting at its default, dp = GPUs), and
/// the global-batch and model divisibility rules (check_layout) are left to the search.
Scenario load_scenario(const std::vector<support::YamlSource>& layers, const std::string& path, const Catalog& catalog,
                       bool layout_rules = true);

}  // namespace ccsim::models
