#include "models/fabric.hpp"

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
      // The NIC transport's per-message overhead, half at each end of a network path.
      port.latency += node.nic_transport_overhead / 2.0;
      t.add_link(node.nics[r], leaf.id, port);
      leaf.down_bandwidth += port.bandwidth;
      leaf.down_ports += 1;
    }
  }
  if (spec.kind == FabricKind::SingleSwitch || leaves.size() == 1) return;

  // Spine tier: uplink bandwidth = downlink ÷ oversubscription, spread over the spines. Every
  // leaf is cabled as a full one (max_down_ports ports of its port speed): a partly filled
  // last leaf keeps whole-port uplinks instead of slower-than-a-port links.
  int max_down_ports = 0;
  for (const Leaf& leaf : leaves) max_down_ports = std::max(max_down_ports, leaf.down_ports);
  const int uplink_ports = std::max(1, static_cast<int>(std::ceil(max_down_ports / spec.oversubscription)));
  const int spines = spec.spines > 0 ? spec.spines : uplink_ports;
  const LinkSpec& port_kind = spec.spine.link ? *spec.spine.link : *first_with_nics->nic_link;
  std::vector<DeviceId> spine_ids;
  for (int s = 0; s < spines; ++s) spine_ids.push_back(add_switch(t, 2, s, -1));
  for (const Leaf& leaf : leaves) {
    if (leaf.down_ports == 0) continue;
    const double uplink = leaf.down_bandwidth / leaf.down_ports * max_down_ports / spec.oversubscription;
    const int lanes = std::max(1, static_cast<int>(std::lround(max_down_ports / spec.oversubscription / spines)));
    for (DeviceId spine : spine_ids) {
      t.add_link(leaf.id, spine,
                 LinkAttrs{LinkClass::Network, port_kind.name, lanes, uplink / spines,
                           spec.spine.latency.value_or(port_kind.latency), port_kind.lineage});
    }
  }
}

}  // namespace ccsim::models
