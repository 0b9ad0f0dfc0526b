#include "models/hardware/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace ccsim::models {

std::string_view to_string(FabricKind kind) {
  switch (kind) {
    case FabricKind::None: return "none";
    case FabricKind::SingleSwitch: return "single-switch";
    case FabricKind::FatTree: return "fat-tree";
  }
  return "?";
}

std::string_view to_string(Wiring wiring) { return wiring == Wiring::RailOptimized ? "rail-optimized" : "tor"; }

std::string_view to_string(Ecmp ecmp) { return ecmp == Ecmp::Hash ? "hash" : "balanced"; }

namespace {

DeviceId add_switch(Topology& t, int tier, int local, int rail) {
  Device d;
  d.kind = DeviceKind::NetworkSwitch;
  d.tier = tier;
  d.local = local;
  d.rail = rail;
  return t.add_device(d);
}

/// NIC <-> switch port: the slower of the NIC and the switch port kind.
LinkAttrs nic_port(const LinkSpec& nic, const FabricTier& tier) {
  const LinkSpec& port = tier.link ? *tier.link : nic;
  const LinkSpec& slow = port.bandwidth < nic.bandwidth ? port : nic;
  return LinkAttrs{LinkClass::Network, slow.name, 1, slow.bandwidth, tier.latency.value_or(slow.latency), slow.lineage};
}

struct Leaf {
  DeviceId id = kNoDevice;
  double down_bandwidth = 0.0;  // bytes per second per direction, sum over attached NIC ports
  int down_ports = 0;
};

}  // namespace

int FabricSpec::pods(int node_count) const {
  if (kind != FabricKind::FatTree || nodes_per_pod <= 0 || node_count <= 0) return 1;
  return (node_count + nodes_per_pod - 1) / nodes_per_pod;
}

void add_fabric(Topology& t, const FabricSpec& spec, const std::vector<NodeDevices>& nodes) {
  const NodeDevices* first_with_nics = nullptr;
  int rails = 0;
  for (const NodeDevices& n : nodes) {
    if (!n.nics.empty() && first_with_nics == nullptr) first_with_nics = &n;
    rails = std::max(rails, static_cast<int>(n.nics.size()));
  }
  if (spec.kind == FabricKind::None) {
    if (nodes.size() > 1) throw std::invalid_argument("a cluster of several nodes needs a fabric");
    return;
  }
  if (first_with_nics == nullptr) throw std::invalid_argument("a fabric needs nodes with NICs");

  const int node_count = static_cast<int>(nodes.size());
  const int per_leaf = spec.nodes_per_leaf > 0 ? spec.nodes_per_leaf : node_count;
  const int groups = spec.kind == FabricKind::SingleSwitch ? 1 : (node_count + per_leaf - 1) / per_leaf;
  const bool rail_optimized = spec.kind == FabricKind::FatTree && spec.wiring == Wiring::RailOptimized;
  const int leaves_per_group = rail_optimized ? rails : 1;
  const int pod_count = spec.pods(node_count);
  if (pod_count > 1 && (spec.nodes_per_leaf <= 0 || spec.nodes_per_pod % spec.nodes_per_leaf != 0)) {
    throw std::invalid_argument("nodes_per_pod must be a multiple of nodes_per_leaf (pods hold whole leaves)");
  }
  const int groups_per_pod = pod_count > 1 ? spec.nodes_per_pod / per_leaf : groups;

  std::vector<Leaf> leaves;
  leaves.reserve(static_cast<std::size_t>(groups * leaves_per_group));
  for (int g = 0; g < groups; ++g)
    for (int r = 0; r < leaves_per_group; ++r)
      leaves.push_back({add_switch(t, 1, static_cast<int>(leaves.size()), rail_optimized ? r : -1), 0.0, 0});

  for (int n = 0; n < node_count; ++n) {
    const NodeDevices& node = nodes[static_cast<std::size_t>(n)];
    const int group = spec.kind == FabricKind::SingleSwitch ? 0 : n / per_leaf;
    for (std::size_t r = 0; r < node.nics.size(); ++r) {
      Leaf& leaf = leaves[static_cast<std::size_t>(group * leaves_per_group + (rail_optimized ? static_cast<int>(r) : 0))];
      LinkAttrs port = nic_port(*node.nic_link, spec.leaf);
      // The NIC transport's per-message overhead, half at each end of a network path (per NIC:
      // GPUs without GPUDirect RDMA to it pay the bounce's, NodeDevices::nic_overheads).
      port.latency += (r < node.nic_overheads.size() ? node.nic_overheads[r] : node.nic_transport_overhead) / 2.0;
      t.add_link(node.nics[r], leaf.id, port);
      leaf.down_bandwidth += port.bandwidth;
      leaf.down_ports += 1;
    }
  }
  if (spec.kind == FabricKind::SingleSwitch || leaves.size() == 1) return;

  // Spine tier: uplink bandwidth = downlink ÷ oversubscription, spread over the spines of the
  // leaf's pod (all spines without pods). Every leaf is cabled as a full one (max_down_ports
  // ports of its port speed): a partly filled last leaf keeps whole-port uplinks instead of
  // slower-than-a-port links.
  int max_down_ports = 0;
  for (const Leaf& leaf : leaves) max_down_ports = std::max(max_down_ports, leaf.down_ports);
  const int uplink_ports = std::max(1, static_cast<int>(std::ceil(max_down_ports / spec.oversubscription)));
  const int spines = spec.spines > 0 ? spec.spines : uplink_ports;
  const LinkSpec& port_kind = spec.spine.link ? *spec.spine.link : *first_with_nics->nic_link;
  const int lanes = std::max(1, static_cast<int>(std::lround(max_down_ports / spec.oversubscription / spines)));
  // Spines of pod p are spine_ids[p × spines, (p + 1) × spines); their local index is their
  // position there.
  std::vector<DeviceId> spine_ids;
  for (int s = 0; s < pod_count * spines; ++s) spine_ids.push_back(add_switch(t, 2, s, -1));
  std::vector<Leaf> spine_down(spine_ids.size());  // per spine: its downlinks, as Leaf sums them
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    const Leaf& leaf = leaves[l];
    if (leaf.down_ports == 0) continue;
    const int pod = static_cast<int>(l) / leaves_per_group / groups_per_pod;
    const double uplink = leaf.down_bandwidth / leaf.down_ports * max_down_ports / spec.oversubscription;
    for (int s = pod * spines; s < (pod + 1) * spines; ++s) {
      const LinkAttrs link{LinkClass::Network, port_kind.name, lanes, uplink / spines,
                           spec.spine.latency.value_or(port_kind.latency), port_kind.lineage};
      t.add_link(leaf.id, spine_ids[static_cast<std::size_t>(s)], link);
      spine_down[static_cast<std::size_t>(s)].down_bandwidth += link.bandwidth;
      spine_down[static_cast<std::size_t>(s)].down_ports += 1;
    }
  }
  if (pod_count <= 1) return;

  // Core tier: a spine's uplink bandwidth = its downlink ÷ pod_oversubscription, spread over
  // the cores; every spine is cabled as one of a full pod (max_leaves leaf bundles of `lanes`
  // ports), so a partly filled last pod keeps a full pod's uplinks.
  int max_leaves = 0;
  for (const Leaf& s : spine_down) max_leaves = std::max(max_leaves, s.down_ports);
  const double spine_down_ports = static_cast<double>(max_leaves) * lanes;
  const int core_ports = std::max(1, static_cast<int>(std::ceil(spine_down_ports / spec.pod_oversubscription)));
  const int cores = spec.cores > 0 ? spec.cores : core_ports;
  const LinkSpec& core_kind = spec.core.link ? *spec.core.link : port_kind;
  const int core_lanes = std::max(1, static_cast<int>(std::lround(spine_down_ports / spec.pod_oversubscription / cores)));
  std::vector<DeviceId> core_ids;
  for (int c = 0; c < cores; ++c) core_ids.push_back(add_switch(t, 3, c, -1));
  for (std::size_t s = 0; s < spine_ids.size(); ++s) {
    const Leaf& down = spine_down[s];
    if (down.down_ports == 0) continue;
    const double uplink = down.down_bandwidth / down.down_ports * max_leaves / spec.pod_oversubscription;
    for (DeviceId core : core_ids) {
      t.add_link(spine_ids[s], core,
                 LinkAttrs{LinkClass::Network, core_kind.name, core_lanes, uplink / cores,
                           spec.core.latency.value_or(core_kind.latency), core_kind.lineage});
    }
  }
}

}  // namespace ccsim::models
