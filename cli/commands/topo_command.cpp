#include "cli/commands/topo_command.hpp"

#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

#include "support/atomic_file.hpp"
#include "models/hardware/catalog.hpp"
#include "models/scenario/scenario.hpp"
#include "models/hardware/topology_summary.hpp"
#include "cli/options.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::cli {

CLI::App* add_topo_command(CLI::App& app, TopoOptions& options) {
  CLI::App* topo = app.add_subcommand("topo", "Print the cluster topology of a scenario: devices, links, "
                                               "injection and bisection bandwidth, paths from GPU 0");
  topo->add_option("scenario", options.scenario, "scenario YAML file")->required();
  topo->add_option("--format", options.format, "output format")->check(CLI::IsMember({"text", "json"}));
  topo->add_option("--dot", options.dot, "also write the topology as Graphviz DOT to FILE");
  topo->add_option("--catalog", options.catalog, "hardware catalog directory (default: the shipped scenarios/hardware)");
  topo->add_option("--calibration", options.calibration,
                   "collective calibration table whose link_efficiency gives the credited injection (default: the scenario's, else "
                   "calibration/nccl.yaml, rccl.yaml for AMD GPUs)");
  return topo;
}

int run_topo(const TopoOptions& options) {
  const models::Catalog catalog =
      models::Catalog::load(options.catalog.empty() ? models::Catalog::default_dir() : options.catalog);
  const models::Scenario scenario = models::load_scenario(options.scenario, catalog, {.algorithm_names = planner::algorithm_names(), .cluster_only = true});
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  // The credited injection: each link kind at the fraction of its bandwidth the collective
  // calibration table credits (as `ccsim run` charges it), for the first node group's GPUs.
  const TableChoice table = collective_table(options.calibration, scenario, cluster);
  const planner::CostModel costs = planner::CostModel::load(table.path);
  const std::string arch = cluster.spec.groups.front().node.gpu.arch;
  std::vector<double> efficiency(cluster.topology.link_kinds().size(), 1.0);
  for (std::size_t k = 0; k < efficiency.size(); ++k) efficiency[k] = costs.link_efficiency(cluster.topology, k, arch).value_or(1.0);
  const models::TopologySummary summary =
      models::summarize(cluster, efficiency, std::filesystem::path(table.path).filename().string());
  if (!options.dot.empty()) {
    std::ostringstream dot;
    models::write_dot(cluster, dot);
    support::write_file_atomic(options.dot, dot.str());
  }
  // The what-if rules applied (a perturbed scenario only): what each selected and changed.
  if (options.format == "json") {
    auto j = models::to_json(summary);
    if (!cluster.perturbations.empty()) j["perturbations"] = cluster.perturbations;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << models::render_text(summary);
    if (!cluster.perturbations.empty()) {
      std::cout << "\nwhat-if perturbations\n";
      for (const auto& line : cluster.perturbations) std::cout << "  " << line << "\n";
    }
  }
  return 0;
}

}  // namespace ccsim::cli
