#pragma once
// A cluster: node groups (each a node template and a count) joined by one fabric, and the
// Topology built from it. Heterogeneous clusters list several groups, e.g.
// 16 × dgx-a100 + 16 × dgx-h100 on one fat tree. Nodes are numbered group by group, GPUs
// node by node; a GPU's position in Topology::gpus() is its global rank.

#include <string>
#include <vector>

#include "models/hardware/specs.hpp"
#include "models/hardware/fabric.hpp"
#include "models/hardware/node_builders.hpp"
#include "models/hardware/topology.hpp"

namespace ccsim::models {

struct NodeGroupSpec {
  NodeSpec node;
  int count = 1;
};

struct ClusterSpec {
  std::string name;
  std::vector<NodeGroupSpec> groups;
  FabricSpec fabric;

  int total_nodes() const;
  int total_gpus() const;
};

struct Cluster {
  ClusterSpec spec;
  Topology topology;
  std::vector<NodeDevices> nodes;  ///< one per node, in node order
  /// Group index of each node: which NodeGroupSpec it came from (its specs and its name in
  /// reports). Caches that treat nodes as alike key on topology.node_class(n), not on this.
  std::vector<int> node_group;
};

/// Builds the Topology of `spec`. Throws std::invalid_argument for inconsistent specs that
/// the scenario loader did not catch (it catches all it can, with file and line).
Cluster build_cluster(const ClusterSpec& spec);

}  // namespace ccsim::models
