#include "models/hardware/cluster.hpp"

namespace ccsim::models {

int ClusterSpec::total_nodes() const {
  int n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

int ClusterSpec::total_gpus() const {
  int n = 0;
  for (const auto& g : groups) n += g.count * g.node.gpus;
  return n;
}

Cluster build_cluster(const ClusterSpec& spec) {
  Cluster cluster;
  cluster.spec = spec;
  cluster.nodes.reserve(static_cast<std::size_t>(spec.total_nodes()));
  int node = 0;
  for (std::size_t g = 0; g < spec.groups.size(); ++g) {
    for (int i = 0; i < spec.groups[g].count; ++i) {
      cluster.nodes.push_back(add_node(cluster.topology, spec.groups[g].node, node++));
      cluster.node_group.push_back(static_cast<int>(g));
    }
  }
  add_fabric(cluster.topology, spec.fabric, cluster.nodes);
  return cluster;
}

}  // namespace ccsim::models
