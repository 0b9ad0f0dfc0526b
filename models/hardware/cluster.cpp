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

Cluster job_view(const Cluster& c, const std::vector<DeviceId>& gpus) {
  Cluster out = c;
  out.topology.restrict_gpus(gpus);
  if (!c.gpu_speed.empty()) {
    // Global rank of each GPU: its position in the whole cluster's list.
    std::vector<int> index(c.topology.num_devices(), -1);
    const auto& all = c.topology.gpus();
    for (std::size_t i = 0; i < all.size(); ++i) index[all[i]] = static_cast<int>(i);
    out.gpu_speed.clear();
    for (DeviceId g : gpus) out.gpu_speed.push_back(c.gpu_speed[static_cast<std::size_t>(index[g])]);
  }
  return out;
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
  // Node classes: the groups' templates compared field by field, equal ones one class (two
  // groups of the same DGX share their routes and costs; one link kind's bandwidth apart, they
  // do not). Ids in order of first use; a group of count 0 uses none.
  std::vector<int> group_class(spec.groups.size(), -1);
  std::vector<int> node_class;
  int classes = 0;
  for (std::size_t g = 0; g < spec.groups.size(); ++g) {
    if (spec.groups[g].count <= 0) continue;
    for (std::size_t e = 0; e < g && group_class[g] < 0; ++e)
      if (group_class[e] >= 0 && spec.groups[e].node == spec.groups[g].node) group_class[g] = group_class[e];
    if (group_class[g] < 0) group_class[g] = classes++;
    node_class.insert(node_class.end(), static_cast<std::size_t>(spec.groups[g].count), group_class[g]);
  }
  cluster.topology.set_node_classes(node_class);
  return cluster;
}

}  // namespace ccsim::models
