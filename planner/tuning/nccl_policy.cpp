#include "planner/tuning/nccl_policy.hpp"

#include <set>

#include "planner/algorithms/registry.hpp"

namespace ccsim::planner {

NcclGroup nccl_group(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus, models::Collective collective,
                     int ranks_per_node) {
  const models::Topology& t = cluster.topology;
  std::set<int> nodes;
  for (models::DeviceId g : gpus) nodes.insert(t.device(g).node);
  NcclGroup group;
  group.collective = collective;
  group.ranks = static_cast<int>(gpus.size());
  group.nodes = static_cast<int>(nodes.size());
  group.ranks_per_node = ranks_per_node;
  group.nvls_all_nodes = true;
  for (int node_index : nodes) {
    const auto& node = cluster.nodes[static_cast<std::size_t>(node_index)];
    group.nvls_all_nodes = group.nvls_all_nodes && node.nvswitch != models::kNoDevice && t.device(node.nvswitch).nvls;
  }
  // NVLS needs every rank's NVLinks to the switch up (a what-if failure takes one down; NCCL then
  // has no NVLS for the communicator).
  for (models::DeviceId g : gpus) {
    bool up = false, down = false;
    for (models::LinkId id : t.out_links(g)) {
      const models::DeviceId sw = t.link_target(id);
      if (t.device(sw).kind != models::DeviceKind::NvSwitch) continue;
      up = true;
      for (models::LinkId back : t.out_links(sw)) down = down || t.link_target(back) == g;
    }
    group.nvls_all_nodes = group.nvls_all_nodes && up && down;
  }
  group.nvls_one_domain = nodes.size() == 1 && group.nvls_all_nodes;
  return group;
}

std::string placement_refusal(Algorithm a, const NcclGroup& g) {
  const auto rule = algorithm_entry(a).placement_refusal;
  return rule == nullptr ? std::string() : rule(g);
}

std::vector<Algorithm> nccl_algorithms(const NcclGroup& g, bool enabled) {
  std::vector<Algorithm> out;
  for (const AlgorithmEntry& e : registry()) {
    if (!e.nccl_collectives.contains(g.collective)) continue;
    if (!enabled && e.nccl_auto != nullptr && !e.nccl_auto(g)) continue;
    if (e.nccl_placement == nullptr || e.nccl_placement(g)) out.push_back(e.algorithm);
  }
  return out;
}

std::vector<Protocol> nccl_protocols(Algorithm a, std::optional<Protocol> asked, const CostModel& costs,
                                     const ProtocolContext& context) {
  std::vector<Protocol> out;
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    if (asked && *asked != p) continue;
    // NCCL runs NVLS, and point-to-point (AlltoAll, SendRecv), with Simple only.
    if (!asked && !algorithm_entry(a).protocols.contains(p)) continue;
    // Protocols the library enables only in some cases (LL128) are offered where it does.
    if (!asked && !costs.default_refusal(p, context).empty()) continue;
    if (costs.supports(a, p)) out.push_back(p);
  }
  return out;
}

std::string nccl_architecture(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                              const ProtocolContext& context) {
  // NCCL tunes a communicator by its lowest compute capability (minCompCap).
  if (!context.archs.empty()) return tuning_architecture(context.archs);
  const int node0 = cluster.topology.device(gpus.front()).node;
  if (node0 < 0) return {};
  return cluster.spec.groups[static_cast<std::size_t>(cluster.node_group[static_cast<std::size_t>(node0)])].node.gpu.arch;
}

bool prefers_phase(Algorithm a, std::optional<models::Granularity> asked, int ranks, int channels) {
  if (asked) return *asked == models::Granularity::Phase;
  return ranks > kStepRanks || ranks * channels > kStepRankChannels ||
         algorithm_entry(a).preferred_granularity == models::Granularity::Phase;
}

}  // namespace ccsim::planner
