#include "planner/collective/channel_plan.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "planner/collective/ring_search.hpp"
#include "planner/tuning/protocol_rules.hpp"

namespace ccsim::planner {

namespace {

/// Ranks per node when the ranks fill their nodes evenly in node-major order (else 0), and the
/// number of nodes they span.
struct NodeShape {
  int ranks_per_node = 0;
  int nodes = 0;
};

NodeShape node_shape(const models::Topology& t, const std::vector<models::DeviceId>& gpus) {
  std::map<int, int> per_node;
  int last_node = -2;
  bool contiguous = true;
  std::vector<int> seen_nodes;
  for (models::DeviceId g : gpus) {
    const int node = t.device(g).node;
    if (node != last_node) {
      if (std::find(seen_nodes.begin(), seen_nodes.end(), node) != seen_nodes.end()) contiguous = false;
      seen_nodes.push_back(node);
      last_node = node;
    }
    ++per_node[node];
  }
  const int first = per_node.begin()->second;
  const bool even = std::all_of(per_node.begin(), per_node.end(), [&](const auto& kv) { return kv.second == first; });
  return {contiguous && even ? first : 0, static_cast<int>(per_node.size())};
}

/// The direct GPU-to-GPU links (xGMI and NVLink meshes; none on NVSwitch and PCIe-only nodes)
/// among ranks u, v < `per` of node block `block` (ranks block·per .. block·per + per − 1), as
/// bytes per second per ordered pair.
std::vector<double> block_mesh(const models::Topology& t, const std::vector<models::DeviceId>& gpus, int per, int block) {
  std::vector<double> capacity(static_cast<std::size_t>(per * per), 0.0);
  const auto gpu = [&](int u) { return gpus[static_cast<std::size_t>(block * per + u)]; };
  for (int u = 0; u < per; ++u)
    for (models::LinkId id : t.out_links(gpu(u))) {
      if (t.link(id).link_class != models::LinkClass::ScaleUp) continue;
      for (int v = 0; v < per; ++v)
        if (t.link_target(id) == gpu(v)) capacity[static_cast<std::size_t>(u * per + v)] += t.link(id).bandwidth;
    }
  return capacity;
}

/// The direct links of the ranks' nodes (ranks node-major in blocks of `per`), pair by pair the
/// weakest over the nodes: the rings found on it suit every node, as NCCL keeps the minimum of
/// every rank's search (init.cc, the AllGather of the graphs' channels and bandwidths). Nodes
/// of one class (Topology::node_class) whose ranks sit on the same local GPUs in the same order
/// have the same mesh, so one of them is read; nullopt when no pair has a link.
std::optional<LinkGraph> direct_links(const models::Topology& t, const std::vector<models::DeviceId>& gpus, int per) {
  if (per <= 1) return std::nullopt;
  LinkGraph mesh;
  mesh.n = per;
  std::vector<std::vector<int>> seen;  // per block read: its node class, then its ranks' local GPUs
  const int blocks = static_cast<int>(gpus.size()) / per;
  for (int block = 0; block < blocks; ++block) {
    std::vector<int> key{t.node_class(t.device(gpus[static_cast<std::size_t>(block * per)]).node)};
    for (int u = 0; u < per; ++u) key.push_back(t.device(gpus[static_cast<std::size_t>(block * per + u)]).local);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(std::move(key));
    const std::vector<double> capacity = block_mesh(t, gpus, per, block);
    if (mesh.capacity.empty()) {
      mesh.capacity = capacity;
    } else {
      for (std::size_t k = 0; k < capacity.size(); ++k) mesh.capacity[k] = std::min(mesh.capacity[k], capacity[k]);
    }
  }
  if (std::all_of(mesh.capacity.begin(), mesh.capacity.end(), [](double c) { return c == 0.0; })) return std::nullopt;
  return mesh;
}

/// The ring channels NCCL's search reaches when the ranks (all on one node) reach each other
/// through an NVSwitch: nccl_nvswitch_ring_search over the NVLink bandwidth of the ranks' links
/// to and from the switch, the least over the ranks and directions (a channel must fit every
/// GPU's links), as `costs` credits it; 0 when a rank has no NVLink to a switch.
int nvswitch_ring_channels(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus, const CostModel* costs) {
  const models::Topology& t = cluster.topology;
  const int node = t.device(gpus.front()).node;
  if (node < 0) return 0;
  const std::string& arch = cluster.spec.groups[static_cast<std::size_t>(cluster.node_group[static_cast<std::size_t>(node)])].node.gpu.arch;
  const std::optional<int> cc = compute_capability(arch);
  if (!cc) return 0;  // NCCL's search is NVIDIA's
  double least = std::numeric_limits<double>::infinity();
  for (models::DeviceId g : gpus) {
    double up = 0, down = 0;
    for (models::LinkId id : t.out_links(g)) {
      const models::DeviceId sw = t.link_target(id);
      if (t.device(sw).kind != models::DeviceKind::NvSwitch) continue;
      const double efficiency = costs ? costs->link_efficiency(t, t.link(id).kind, arch).value_or(1.0) : 1.0;
      up += t.link(id).bandwidth * efficiency;
      for (models::LinkId back : t.out_links(sw))
        if (t.link_target(back) == g) down += t.link(back).bandwidth * (costs ? costs->link_efficiency(t, t.link(back).kind, arch).value_or(1.0) : 1.0);
    }
    least = std::min({least, up, down});
  }
  if (!(least > 0) || least == std::numeric_limits<double>::infinity()) return 0;
  return nccl_nvswitch_ring_search(least / 1e9, *cc, 2 * kMaxRingChannels).channels;
}

/// Each node's ranks as they come, nodes in index order.
std::vector<std::vector<int>> ranks_by_node(const models::Topology& t, const std::vector<models::DeviceId>& gpus) {
  std::map<int, std::vector<int>> by_node;
  for (int r = 0; r < static_cast<int>(gpus.size()); ++r) by_node[t.device(gpus[static_cast<std::size_t>(r)]).node].push_back(r);
  std::vector<std::vector<int>> groups;
  for (auto& [node, ranks] : by_node) groups.push_back(std::move(ranks));
  return groups;
}

/// Rings across unequal nodes: channel c walks every node from its local c+1 round to local c
/// (every other node backwards), one channel per rank of the smallest node, so the node-to-node
/// hops of the first channels stay on one NIC rail and no NIC carries every channel.
std::vector<std::vector<int>> rings_over_groups(const std::vector<std::vector<int>>& node_groups) {
  std::size_t smallest = std::numeric_limits<std::size_t>::max();
  for (const auto& g : node_groups) smallest = std::min(smallest, g.size());
  const int channels = static_cast<int>(std::min<std::size_t>(kMaxRingChannels, smallest));
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> order;
    for (std::size_t node = 0; node < node_groups.size(); ++node) {
      const auto& g = node_groups[node];
      const int size = static_cast<int>(g.size());
      std::vector<int> seq;
      for (int k = 1; k <= size; ++k) seq.push_back(g[static_cast<std::size_t>((c + k) % size)]);
      if (node % 2 == 1) std::reverse(seq.begin(), seq.end());
      order.insert(order.end(), seq.begin(), seq.end());
    }
    rings.push_back(std::move(order));
  }
  return rings;
}

/// Rings across `nodes` nodes of `per` ranks each: channel c walks every node once, inside a
/// node along paths[c] (searched Hamiltonian paths of a direct-link node, entered at its first
/// GPU's NIC and left at its last's) or from local c+1 round to local c; every other node is
/// walked backwards, so each node-to-node hop joins GPUs of the same local index.
std::vector<std::vector<int>> rings_over_nodes(int per, int nodes, int channels, const std::vector<std::vector<int>>& paths) {
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> order;
    for (int node = 0; node < nodes; ++node) {
      std::vector<int> seq;
      if (!paths.empty()) {
        for (int local : paths[static_cast<std::size_t>(c)]) seq.push_back(node * per + local);
      } else {
        for (int k = 1; k <= per; ++k) seq.push_back(node * per + (c + k) % per);
      }
      if (node % 2 == 1) std::reverse(seq.begin(), seq.end());
      order.insert(order.end(), seq.begin(), seq.end());
    }
    rings.push_back(std::move(order));
  }
  return rings;
}

/// Tree heads across nodes: on the first node, the first rank of each NIC rail, in rail order.
std::vector<int> rail_heads(const models::Topology& t, const std::vector<models::DeviceId>& gpus) {
  std::map<int, int> first_of_rail;
  const int node0 = t.device(gpus.front()).node;
  int local = 0;
  for (models::DeviceId g : gpus) {
    if (t.device(g).node != node0) break;
    first_of_rail.try_emplace(t.device(g).rail, local++);
  }
  std::vector<int> heads;
  for (const auto& [rail, l] : first_of_rail) heads.push_back(l);
  return heads;
}

}  // namespace

ChannelPlan plan_channels(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus, int channels,
                          const CostModel* costs) {
  if (gpus.empty()) throw std::invalid_argument("a collective needs at least one rank");
  const models::Topology& t = cluster.topology;
  ChannelPlan plan;
  plan.ranks = static_cast<int>(gpus.size());
  const NodeShape shape = node_shape(t, gpus);
  plan.ranks_per_node = shape.ranks_per_node;
  plan.nodes = shape.nodes;
  const int per = plan.ranks_per_node;
  const int nodes = per > 0 ? plan.ranks / per : 0;  // nodes of `per` ranks each (0: unequal)
  const std::optional<LinkGraph> mesh = direct_links(t, gpus, per);
  if (mesh) plan.node_orders = search_rings(*mesh, kMaxRingChannels);
  if (per == 0) plan.node_groups = ranks_by_node(t, gpus);
  int auto_channels = 1;
  if (per == 0 && plan.node_groups.size() > 1) {
    plan.ring_orders = rings_over_groups(plan.node_groups);
    auto_channels = static_cast<int>(plan.ring_orders.size());
  }
  if (per > 1 && nodes > 1) {
    auto_channels = std::min(kMaxRingChannels, per);
    const std::vector<std::vector<int>> paths = mesh ? search_paths(*mesh, auto_channels) : std::vector<std::vector<int>>{};
    plan.ring_orders = rings_over_nodes(per, nodes, auto_channels, paths);
  } else if (nodes == 1 && !plan.node_orders.empty()) {
    plan.ring_orders = plan.node_orders;
    auto_channels = static_cast<int>(plan.ring_orders.size());
  } else if (nodes == 1 && per > 1 && !mesh) {
    auto_channels = std::max(1, std::min(kMaxRingChannels, nvswitch_ring_channels(cluster, gpus, costs)));
  }
  plan.channels = channels > 0 ? channels : auto_channels;
  if (plan.nodes > 1) {
    plan.tree_heads = rail_heads(t, gpus);
    plan.tree_pairs = static_cast<int>(plan.tree_heads.size());
  } else {
    plan.tree_pairs = plan.node_orders.empty() ? 1 : static_cast<int>(plan.node_orders.size());
  }
  plan.tree_pairs = std::min(plan.tree_pairs, kMaxRingChannels);
  if (channels > 0) plan.tree_pairs = channels;
  return plan;
}

}  // namespace ccsim::planner
