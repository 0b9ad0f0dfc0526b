#include "cli/commands/channel_dump.hpp"

#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/text_table.hpp"

namespace ccsim::cli {

namespace {

/// The ranks ring channel c walks, in order (planner::AlgorithmRequest::ring_orders).
std::vector<int> ring_of(const planner::ChannelPlan& plan, int c) {
  if (!plan.ring_orders.empty()) return plan.ring_orders[static_cast<std::size_t>(c) % plan.ring_orders.size()];
  std::vector<int> identity(static_cast<std::size_t>(plan.ranks));
  std::iota(identity.begin(), identity.end(), 0);
  return identity;
}

/// Local index of the head of tree pair c: tree_heads[c % size], else c mod the ranks of the
/// first node (the tree's default).
int head_of(const planner::ChannelPlan& plan, int c, int first_node_ranks) {
  if (!plan.tree_heads.empty()) return plan.tree_heads[static_cast<std::size_t>(c) % plan.tree_heads.size()];
  return c % std::max(1, first_node_ranks);
}

/// Ranks on the node of rank 0.
int first_node_ranks(const planner::ChannelPlan& plan) {
  if (plan.ranks_per_node > 0) return plan.ranks_per_node;
  return plan.node_groups.empty() ? plan.ranks : static_cast<int>(plan.node_groups.front().size());
}

std::string joined(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

}  // namespace

std::string channel_dump_text(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                              const planner::ChannelPlan& plan) {
  const models::Topology& t = cluster.topology;
  const auto gpu = [&](int rank) { return t.name(gpus[static_cast<std::size_t>(rank)]); };
  const auto plural = [](int n) { return n == 1 ? "" : "s"; };
  std::string out = fmt::format("# ccsim collective --dump-channels: {} rank{} of {} on {} node{}, {}\n", plan.ranks, plural(plan.ranks),
                                cluster.spec.name, plan.nodes, plural(plan.nodes),
                                plan.ranks_per_node > 0 ? fmt::format("{} rank{} per node", plan.ranks_per_node, plural(plan.ranks_per_node))
                                                        : std::string("unequal ranks per node"));
  for (const auto& line : cluster.perturbations) out += "# what-if: " + line + "\n";
  out += fmt::format("# rings: {} channel{} (ring, and ring-based algorithms)\n", plan.channels, plural(plan.channels));
  support::TextTable rings({"channel", "ring order (GPU of each rank)"}, {true, false});
  for (int c = 0; c < plan.channels; ++c) {
    std::string order;
    for (int r : ring_of(plan, c)) order += (order.empty() ? "" : " ") + gpu(r);
    rings.add_row({std::to_string(c), order});
  }
  out += rings.render();
  if (!plan.node_orders.empty()) {
    out += fmt::format("# node rings: {} (ring search over the direct links of a node; local GPU indices)\n", plan.node_orders.size());
    support::TextTable node_rings({"ring", "order"}, {true, false});
    for (std::size_t i = 0; i < plan.node_orders.size(); ++i) node_rings.add_row({std::to_string(i), joined(plan.node_orders[i])});
    out += node_rings.render();
  }
  if (!plan.node_groups.empty()) {
    out += fmt::format("# nodes: {} (ranks of each node, as the tree and the rings walk them)\n", plan.node_groups.size());
    support::TextTable nodes({"node", "ranks"}, {false, false});
    for (const auto& group : plan.node_groups) {
      nodes.add_row({fmt::format("node{}", t.device(gpus[static_cast<std::size_t>(group.front())]).node), joined(group)});
    }
    out += nodes.render();
  }
  out += fmt::format("# tree: {} pair{} (channels 2c and 2c+1), each headed by one local rank of every node\n", plan.tree_pairs,
                     plural(plan.tree_pairs));
  support::TextTable tree({"pair", "channels", "head (local rank)", "head on the first node"}, {true, false, true, false});
  const int local_ranks = first_node_ranks(plan);
  for (int c = 0; c < plan.tree_pairs; ++c) {
    const int head = head_of(plan, c, local_ranks);
    const std::vector<int>* first = plan.node_groups.empty() ? nullptr : &plan.node_groups.front();
    const bool inside = first == nullptr ? head < plan.ranks : head < static_cast<int>(first->size());
    const std::string head_gpu = !inside ? "-" : gpu(first == nullptr ? head : (*first)[static_cast<std::size_t>(head)]);
    tree.add_row({std::to_string(c), fmt::format("{},{}", 2 * c, 2 * c + 1), std::to_string(head), head_gpu});
  }
  out += tree.render();
  return out;
}

std::string channel_dump_json(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                              const planner::ChannelPlan& plan) {
  const models::Topology& t = cluster.topology;
  nlohmann::json j;
  j["cluster"] = cluster.spec.name;
  j["ranks"] = plan.ranks;
  j["nodes"] = plan.nodes;
  j["ranks_per_node"] = plan.ranks_per_node;
  j["channels"] = plan.channels;
  if (!cluster.perturbations.empty()) j["perturbations"] = cluster.perturbations;
  j["rings"] = nlohmann::json::array();
  for (int c = 0; c < plan.channels; ++c) {
    const std::vector<int> ring = ring_of(plan, c);
    nlohmann::json names = nlohmann::json::array();
    for (int r : ring) names.push_back(t.name(gpus[static_cast<std::size_t>(r)]));
    j["rings"].push_back({{"channel", c}, {"ranks", ring}, {"gpus", names}});
  }
  j["node_rings"] = plan.node_orders;
  j["node_groups"] = plan.node_groups;
  nlohmann::json heads = nlohmann::json::array();
  const int local_ranks = first_node_ranks(plan);
  for (int c = 0; c < plan.tree_pairs; ++c) heads.push_back(head_of(plan, c, local_ranks));
  j["tree"] = {{"pairs", plan.tree_pairs}, {"heads", heads}};
  return j.dump(2) + "\n";
}

}  // namespace ccsim::cli
