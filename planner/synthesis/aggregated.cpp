#include "planner/synthesis/aggregated.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <numeric>
#include <set>

#include "planner/synthesis/synthesis_graph.hpp"

// aggregated_forest(): node-level aggregated trees and their loads (aggregated.hpp).

namespace ccsim::planner::synthesis {

using models::DeviceId;
using models::DeviceKind;
using models::LinkId;

namespace {

/// The leaf switch `nic` enters: the target of its first up link into a tier-1 network switch.
DeviceId leaf_of_nic(const models::Topology& t, DeviceId nic) {
  for (LinkId l : t.out_links(nic)) {
    const DeviceId d = t.link_target(l);
    if (t.device(d).kind == DeviceKind::NetworkSwitch && t.device(d).tier == 1) return d;
  }
  return models::kNoDevice;
}

/// Position of the link in `links` that ends at `device`, or npos.
std::size_t link_into(const models::Topology& t, const std::vector<LinkId>& links, DeviceId device) {
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (t.link_target(links[i]) == device) return i;
  }
  return std::string::npos;
}

/// Foreign roots leaf B (of `size` endpoints on a rail of `rail` endpoints) takes through its
/// endpoint at index `idx`: positions q in 0 .. rail − size − 1 with q mod size == idx.
std::int64_t represented(int rail, int size, int idx) {
  const int foreign = rail - size;
  return foreign / size + (idx < foreign % size ? 1 : 0);
}

}  // namespace

int aggregated_representative(const AggregatedForest& f, int root, int leaf) {
  const int g = f.endpoint_of.at(static_cast<std::size_t>(root));
  const auto& leaves = f.rail_leaves[static_cast<std::size_t>(g)];
  const auto& members = leaves.at(static_cast<std::size_t>(leaf));
  // Root's position among the rail's endpoints outside B: its rail position less B's endpoints before it.
  const int pos = f.rail_position[static_cast<std::size_t>(root)];
  int before = 0;
  for (int e : members) before += f.rail_position[static_cast<std::size_t>(e)] < pos ? 1 : 0;
  return members[static_cast<std::size_t>((pos - before) % static_cast<int>(members.size()))];
}

std::vector<WeightedEdge> aggregated_tree(const AggregatedForest& f, int root, std::int64_t* denominator) {
  if (root < 0 || root >= f.ranks) throw std::out_of_range(fmt::format("aggregated_tree: rank {} of {}", root, f.ranks));
  std::int64_t d = 1;
  for (const Forest& c : f.intra) d = std::lcm(d, c.weight_per_root);
  if (denominator) *denominator = d;
  std::vector<WeightedEdge> edges;
  const int g = f.endpoint_of[static_cast<std::size_t>(root)];
  const auto& leaves = f.rail_leaves[static_cast<std::size_t>(g)];
  const int own = f.leaf_of[static_cast<std::size_t>(root)];
  for (int e : leaves[static_cast<std::size_t>(own)]) {
    if (e != root) edges.push_back({root, e, d});
  }
  for (int b = 0; b < static_cast<int>(leaves.size()); ++b) {
    if (b == own) continue;
    const int rep = aggregated_representative(f, root, b);
    edges.push_back({root, rep, d});
    for (int e : leaves[static_cast<std::size_t>(b)]) {
      if (e != rep) edges.push_back({rep, e, d});
    }
  }
  for (int p = 0; p < f.nodes; ++p) {
    const int c = f.node_intra[static_cast<std::size_t>(p)];
    if (c < 0) continue;
    const Forest& intra = f.intra[static_cast<std::size_t>(c)];
    const auto& ranks = f.node_ranks[static_cast<std::size_t>(p)];
    for (const Tree& t : intra.trees) {
      if (t.root != g) continue;
      const std::int64_t w = t.weight * (d / intra.weight_per_root);
      for (const TreeEdge& e : t.edges) edges.push_back({ranks[static_cast<std::size_t>(e.parent)], ranks[static_cast<std::size_t>(e.child)], w});
    }
  }
  return edges;
}

AggregatedForest aggregated_forest(const models::Cluster& cluster, models::Router& router, const std::vector<DeviceId>& gpus, bool reduce_scatter,
                                   const ForestOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const models::Topology& t = cluster.topology;
  AggregatedForest f;
  f.reduce_scatter = reduce_scatter;
  f.ranks = static_cast<int>(gpus.size());
  const int n = f.ranks;

  const auto node_name = [&](int r) {
    const std::string name = t.name(gpus[static_cast<std::size_t>(r)]);
    return name.substr(0, name.find('/'));
  };
  // Nodes in node order, their ranks in rank order.
  std::map<int, std::vector<int>> by_node;
  for (int r = 0; r < n; ++r) by_node[t.device(gpus[static_cast<std::size_t>(r)]).node].push_back(r);
  if (by_node.size() < 2) throw NotAggregatable("the ranks are on one node (the node-level trees join nodes)");
  f.nodes = static_cast<int>(by_node.size());
  f.ranks_per_node = static_cast<int>(by_node.begin()->second.size());
  f.node_of.assign(static_cast<std::size_t>(n), 0);
  f.endpoint_of.assign(static_cast<std::size_t>(n), 0);
  for (const auto& [node, ranks] : by_node) {
    if (static_cast<int>(ranks.size()) != f.ranks_per_node) {
      throw NotAggregatable(fmt::format("{} holds {} of the ranks and {} holds {} (the node-level trees need as many ranks on every node)",
                                        node_name(by_node.begin()->second[0]), f.ranks_per_node, node_name(ranks[0]), ranks.size()));
    }
    const int p = static_cast<int>(f.node_ranks.size());
    std::set<DeviceId> nics;
    for (std::size_t g = 0; g < ranks.size(); ++g) {
      const int r = ranks[g];
      f.node_of[static_cast<std::size_t>(r)] = p;
      f.endpoint_of[static_cast<std::size_t>(r)] = static_cast<int>(g);
      const DeviceId nic = t.device(gpus[static_cast<std::size_t>(r)]).nic;
      if (nic == models::kNoDevice) throw NotAggregatable(fmt::format("{} has no NIC", t.name(gpus[static_cast<std::size_t>(r)])));
      if (!nics.insert(nic).second) {
        throw NotAggregatable(fmt::format("{} shares its NIC {} with another rank of its node (the node-level trees need a NIC per rank)",
                                          t.name(gpus[static_cast<std::size_t>(r)]), t.name(nic)));
      }
    }
    f.node_ranks.push_back(ranks);
  }
  const int G = f.ranks_per_node;
  const int nodes = f.nodes;

  // Rails and their leaves.
  f.rail_leaves.assign(static_cast<std::size_t>(G), {});
  f.leaf_of.assign(static_cast<std::size_t>(n), 0);
  f.rail_position.assign(static_cast<std::size_t>(n), 0);
  std::vector<DeviceId> leaf_device(static_cast<std::size_t>(n), models::kNoDevice);
  for (int g = 0; g < G; ++g) {
    std::vector<int> rail;
    for (const auto& ranks : f.node_ranks) rail.push_back(ranks[static_cast<std::size_t>(g)]);
    std::sort(rail.begin(), rail.end());
    std::map<DeviceId, std::vector<int>> leaves;
    for (std::size_t i = 0; i < rail.size(); ++i) {
      const int r = rail[i];
      f.rail_position[static_cast<std::size_t>(r)] = static_cast<int>(i);
      const DeviceId nic = t.device(gpus[static_cast<std::size_t>(r)]).nic;
      const DeviceId leaf = leaf_of_nic(t, nic);
      if (leaf == models::kNoDevice) throw NotAggregatable(fmt::format("NIC {} enters no leaf switch (no network between the nodes)", t.name(nic)));
      leaf_device[static_cast<std::size_t>(r)] = leaf;
      leaves[leaf].push_back(r);
    }
    auto& out = f.rail_leaves[static_cast<std::size_t>(g)];
    for (auto& [leaf, members] : leaves) {
      for (int r : members) f.leaf_of[static_cast<std::size_t>(r)] = static_cast<int>(out.size());
      out.push_back(std::move(members));
    }
    f.leaves = std::max(f.leaves, static_cast<int>(out.size()));
  }

  // The sends between leaves are routed one by one (the router hashes each to its spine and keeps
  // its route): bounded so that memory stays in hundreds of MB.
  std::int64_t between = 0;
  for (const auto& leaves : f.rail_leaves) between += static_cast<std::int64_t>(leaves.size() - 1) * nodes;
  if (between > kMaxAggregatedRoutes) {
    throw NotAggregatable(fmt::format("{} sends between leaves to route (more than {}: rails of {} nodes over up to {} leaves)", between,
                                      kMaxAggregatedRoutes, nodes, f.leaves));
  }

  // Intra-node forests, one per (node class, local indices of the node's ranks).
  f.node_intra.assign(static_cast<std::size_t>(nodes), -1);
  if (G >= 2) {
    std::map<std::pair<int, std::vector<int>>, int> classes;
    ForestOptions intra_options = options;
    intra_options.build_trees = true;
    for (int p = 0; p < nodes; ++p) {
      std::vector<DeviceId> node_gpus;
      std::vector<int> locals;
      for (int r : f.node_ranks[static_cast<std::size_t>(p)]) {
        node_gpus.push_back(gpus[static_cast<std::size_t>(r)]);
        locals.push_back(t.device(gpus[static_cast<std::size_t>(r)]).local);
      }
      const int node = t.device(node_gpus[0]).node;
      const auto key = std::make_pair(t.node_class(node), locals);
      const auto it = classes.find(key);
      if (it != classes.end()) {
        f.node_intra[static_cast<std::size_t>(p)] = it->second;
        continue;
      }
      const SynthesisGraph g = synthesis_graph(cluster, router, node_gpus);
      f.intra.push_back(allgather_forest(reduce_scatter ? g.reversed() : g, intra_options));
      classes.emplace(key, static_cast<int>(f.intra.size()) - 1);
      f.node_intra[static_cast<std::size_t>(p)] = static_cast<int>(f.intra.size()) - 1;
    }
  }
  f.intra_classes = static_cast<int>(f.intra.size());

  // Loads in blocks per root's block. A send a -> b (AllGather direction) is routed b -> a for
  // ReduceScatter.
  std::vector<double> load(t.num_links(), 0.0);
  const auto charge = [&](const std::vector<LinkId>& links, double amount) {
    for (LinkId l : links) load[l] += amount;
  };
  const auto send = [&](int a, int b, double amount) {
    const DeviceId ga = gpus[static_cast<std::size_t>(a)], gb = gpus[static_cast<std::size_t>(b)];
    ++f.routes;
    charge(reduce_scatter ? router.route(gb, ga).links : router.route(ga, gb).links, amount);
  };
  // Intra-node: every endpoint spreads `nodes` blocks (its own and one per other node).
  for (int p = 0; p < nodes; ++p) {
    const int c = f.node_intra[static_cast<std::size_t>(p)];
    if (c < 0) continue;
    const Forest& intra = f.intra[static_cast<std::size_t>(c)];
    const auto& ranks = f.node_ranks[static_cast<std::size_t>(p)];
    for (const Tree& tree : intra.trees) {
      const double amount = static_cast<double>(nodes) * static_cast<double>(tree.weight) / static_cast<double>(intra.weight_per_root);
      for (const TreeEdge& e : tree.edges) {
        // Intra forests of ReduceScatter were found on the reversed graph: their edges already
        // point the way data flows reversed, so the send is child -> parent in both cases.
        send(ranks[static_cast<std::size_t>(e.parent)], ranks[static_cast<std::size_t>(e.child)], amount);
      }
    }
  }
  // Inter-node, per rail.
  int inter_height = 1;
  for (int g = 0; g < G; ++g) {
    const auto& leaves = f.rail_leaves[static_cast<std::size_t>(g)];
    const int rail = nodes;
    if (leaves.size() > 1) {
      for (const auto& members : leaves) {
        if (members.size() > 1) inter_height = 2;
      }
    }
    // Sends inside a leaf: the source's way up to the leaf and the destination's way down,
    // from the router's routes between neighbours of the leaf, checked alike on both sides.
    for (const auto& members : leaves) {
      const int size = static_cast<int>(members.size());
      if (size < 2) continue;
      const DeviceId leaf = leaf_device[static_cast<std::size_t>(members[0])];
      std::vector<std::vector<LinkId>> up(static_cast<std::size_t>(size)), down(static_cast<std::size_t>(size));
      const auto split = [&](int i, int j, std::vector<LinkId>* u, std::vector<LinkId>* dn) {
        const DeviceId gi = gpus[static_cast<std::size_t>(members[static_cast<std::size_t>(i)])];
        const DeviceId gj = gpus[static_cast<std::size_t>(members[static_cast<std::size_t>(j)])];
        ++f.routes;
        const std::vector<LinkId> links = router.route(gi, gj).links;
        const std::size_t at = link_into(t, links, leaf);
        if (at == std::string::npos) {
          throw NotAggregatable(fmt::format("the route {} -> {} does not pass their leaf {}", t.name(gi), t.name(gj), t.name(leaf)));
        }
        if (u) u->assign(links.begin(), links.begin() + static_cast<std::ptrdiff_t>(at) + 1);
        if (dn) dn->assign(links.begin() + static_cast<std::ptrdiff_t>(at) + 1, links.end());
      };
      for (int i = 0; i < size; ++i) split(i, (i + 1) % size, &up[static_cast<std::size_t>(i)], &down[static_cast<std::size_t>((i + 1) % size)]);
      if (size > 2) {
        for (int i = 0; i < size; ++i) {
          std::vector<LinkId> u, dn;
          split(i, (i + size - 1) % size, &u, &dn);
          if (u != up[static_cast<std::size_t>(i)] || dn != down[static_cast<std::size_t>((i + size - 1) % size)]) {
            throw NotAggregatable(fmt::format("routes inside leaf {} depend on the partner, not only on the ends' ways to the leaf", t.name(leaf)));
          }
        }
      }
      for (int i = 0; i < size; ++i) {
        const double reps = static_cast<double>(represented(rail, size, i));
        const double egress = static_cast<double>(size - 1) * (1.0 + reps);            // own block, and each it stands in for
        const double ingress = static_cast<double>(size - 1) + (rail - size) - reps;  // leaf mates', and foreign ones via a mate
        charge(up[static_cast<std::size_t>(i)], reduce_scatter ? ingress : egress);
        charge(down[static_cast<std::size_t>(i)], reduce_scatter ? egress : ingress);
      }
    }
    // Sends between leaves: root to its representative in every other leaf, on the router's route.
    if (leaves.size() > 1) {
      std::vector<int> rail_ranks;  // the rail's endpoints in rank order
      for (const auto& m : leaves) rail_ranks.insert(rail_ranks.end(), m.begin(), m.end());
      std::sort(rail_ranks.begin(), rail_ranks.end());
      for (int b = 0; b < static_cast<int>(leaves.size()); ++b) {
        const auto& members = leaves[static_cast<std::size_t>(b)];
        const int size = static_cast<int>(members.size());
        int q = 0;  // position among the rail's endpoints outside B, in rank order
        for (int r : rail_ranks) {
          if (f.leaf_of[static_cast<std::size_t>(r)] == b) continue;
          send(r, members[static_cast<std::size_t>(q % size)], 1.0);
          ++q;
        }
      }
    }
  }
  int intra_height = 0;
  for (const Forest& c : f.intra) intra_height = std::max(intra_height, c.height());
  f.height = inter_height + intra_height;

  double worst = 0;
  for (std::size_t l = 0; l < load.size(); ++l) {
    if (load[l] <= 0) continue;
    const double per = load[l] / t.link(static_cast<LinkId>(l)).bandwidth;
    if (per > worst) {
      worst = per;
      f.bottleneck = static_cast<LinkId>(l);
      f.bottleneck_load = load[l];
    }
  }
  if (worst <= 0) throw std::logic_error("aggregated_forest: the trees load no link");
  f.rate = 1.0 / worst;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace ccsim::planner::synthesis
