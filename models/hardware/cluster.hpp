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

/// Relative compute speed of one GPU per op kind (what-if perturbations): 1 is the GPU model's
/// nominal speed, 0.5 makes every op of that kind take twice as long. GEMM is the tensor-core
/// work, attention the attention core, memory the memory-bound kernels (a slow HBM is not a
/// slow tensor core).
struct ComputeSpeed {
  double gemm = 1.0;
  double attention = 1.0;
  double memory = 1.0;
  bool nominal() const { return gemm == 1.0 && attention == 1.0 && memory == 1.0; }
  friend bool operator==(const ComputeSpeed&, const ComputeSpeed&) = default;
};

struct Cluster {
  ClusterSpec spec;
  Topology topology;
  std::vector<NodeDevices> nodes;  ///< one per node, in node order
  /// Group index of each node: which NodeGroupSpec it came from (its specs and its name in
  /// reports). Caches that treat nodes as alike key on topology.node_class(n), not on this.
  std::vector<int> node_group;
  /// Per GPU (global rank): its compute speed under the scenario's what-if perturbations
  /// (models/hardware/perturbation.hpp); empty when no GPU is perturbed.
  std::vector<ComputeSpeed> gpu_speed;
  /// One line per what-if rule applied: what it selected and what it changed (for reports).
  std::vector<std::string> perturbations;

  /// The compute speed of the GPU of global rank `rank` (nominal when none is perturbed).
  ComputeSpeed speed_of(int rank) const {
    return gpu_speed.empty() ? ComputeSpeed{} : gpu_speed[static_cast<std::size_t>(rank)];
  }
};

/// A job's view of `c` (several jobs on one fabric): the same fabric and nodes, with
/// topology.gpus() the job's GPUs `gpus` in its rank order (Topology::restrict_gpus) and
/// gpu_speed the speeds of those GPUs, so a workload runner on the view places rank r on
/// gpus[r]. Throws std::invalid_argument as restrict_gpus does.
Cluster job_view(const Cluster& c, const std::vector<DeviceId>& gpus);

/// Builds the Topology of `spec`. Throws std::invalid_argument for inconsistent specs that
/// the scenario loader did not catch (it catches all it can, with file and line).
Cluster build_cluster(const ClusterSpec& spec);

}  // namespace ccsim::models
