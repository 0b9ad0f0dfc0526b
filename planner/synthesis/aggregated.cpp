#include "planner/synthesis/aggregated.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <numeric>
#include <set>

#include "planner/synthesis/synthesis_graph.hpp"
#include "support/hash.hpp"

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

/// d(r, c): the direct sends of root r (position `i` in its leaf b of `size` endpoints) into
/// leaf c, of the `total` direct sends from b into c: equal shares, the remainder to the roots
/// whose position, turned by c, comes first.
std::int64_t direct_of(std::int64_t total, int size, int i, int c) {
  return total / size + ((i + c) % size < total % size ? 1 : 0);
}

}  // namespace

std::vector<int> aggregated_receivers(const AggregatedForest& f, int root, int leaf) {
  const int g = f.endpoint_of.at(static_cast<std::size_t>(root));
  const auto& leaves = f.rail_leaves[static_cast<std::size_t>(g)];
  const auto& members = leaves.at(static_cast<std::size_t>(leaf));
  const int own = f.leaf_of[static_cast<std::size_t>(root)];
  if (leaf == own) return {};
  const int k = static_cast<int>(leaves.size());
  const auto size = static_cast<int>(leaves[static_cast<std::size_t>(own)].size());
  const std::int64_t d = direct_of(f.direct[static_cast<std::size_t>(g)][static_cast<std::size_t>(own * k + leaf)], size,
                                   f.leaf_position[static_cast<std::size_t>(root)], leaf);
  const int first = f.first_receiver[static_cast<std::size_t>(root)][static_cast<std::size_t>(leaf)];
  std::vector<int> out;
  for (std::int64_t q = 0; q < d; ++q) out.push_back(members[static_cast<std::size_t>((first + q) % static_cast<std::int64_t>(members.size()))]);
  return out;
}

std::vector<std::pair<int, int>> aggregated_forwarding(const AggregatedForest& f, int root, int leaf) {
  const std::vector<int> direct = aggregated_receivers(f, root, leaf);
  std::vector<std::pair<int, int>> out;
  if (direct.empty()) return out;
  const int g = f.endpoint_of[static_cast<std::size_t>(root)];
  const auto& members = f.rail_leaves[static_cast<std::size_t>(g)][static_cast<std::size_t>(leaf)];
  const auto size = static_cast<int>(members.size());
  const auto d = static_cast<int>(direct.size());
  const int first = f.first_receiver[static_cast<std::size_t>(root)][static_cast<std::size_t>(leaf)];
  const auto other = [&](int j) { return members[static_cast<std::size_t>((first + d + j) % size)]; };
  if (!f.chained[static_cast<std::size_t>(g)][static_cast<std::size_t>(leaf)]) {
    for (int j = 0; j < size - d; ++j) out.emplace_back(direct[static_cast<std::size_t>(j % d)], other(j));
    return out;
  }
  // Chains: receiver q heads a run of the others, each passing the block to the next.
  int j = 0;
  for (int q = 0; q < d; ++q) {
    const int share = (size - d) / d + (q < (size - d) % d ? 1 : 0);
    int from = direct[static_cast<std::size_t>(q)];
    for (int i = 0; i < share; ++i, ++j) {
      out.emplace_back(from, other(j));
      from = other(j);
    }
  }
  return out;
}

std::vector<WeightedEdge> aggregated_tree(const AggregatedForest& f, int root, std::int64_t* denominator) {
  if (root < 0 || root >= f.ranks) throw std::out_of_range(fmt::format("aggregated_tree: rank {} of {}", root, f.ranks));
  std::int64_t den = 1;
  for (const Forest& c : f.intra) den = std::lcm(den, c.weight_per_root);
  if (denominator) *denominator = den;
  std::vector<WeightedEdge> edges;
  const int g = f.endpoint_of[static_cast<std::size_t>(root)];
  const auto& leaves = f.rail_leaves[static_cast<std::size_t>(g)];
  const int own = f.leaf_of[static_cast<std::size_t>(root)];
  for (int e : leaves[static_cast<std::size_t>(own)]) {
    if (e != root) edges.push_back({root, e, den});
  }
  for (int c = 0; c < static_cast<int>(leaves.size()); ++c) {
    if (c == own) continue;
    for (int e : aggregated_receivers(f, root, c)) edges.push_back({root, e, den});
    for (const auto& [from, to] : aggregated_forwarding(f, root, c)) edges.push_back({from, to, den});
  }
  for (int p = 0; p < f.nodes; ++p) {
    const int c = f.node_intra[static_cast<std::size_t>(p)];
    if (c < 0) continue;
    const Forest& intra = f.intra[static_cast<std::size_t>(c)];
    const auto& ranks = f.node_ranks[static_cast<std::size_t>(p)];
    for (const Tree& t : intra.trees) {
      if (t.root != g) continue;
      const std::int64_t w = t.weight * (den / intra.weight_per_root);
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
  // Nodes in node order, their ranks by their NIC's rail, then local index (whatever order the
  // ranks were listed in).
  std::map<int, std::vector<int>> by_node;
  for (int r = 0; r < n; ++r) by_node[t.device(gpus[static_cast<std::size_t>(r)]).node].push_back(r);
  for (auto& [node, ranks] : by_node) {
    std::sort(ranks.begin(), ranks.end(), [&](int a, int b) {
      const models::Device& da = t.device(gpus[static_cast<std::size_t>(a)]);
      const models::Device& db = t.device(gpus[static_cast<std::size_t>(b)]);
      return std::make_pair(da.rail, da.local) < std::make_pair(db.rail, db.local);
    });
  }
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
  f.leaf_position.assign(static_cast<std::size_t>(n), 0);
  f.direct.assign(static_cast<std::size_t>(G), {});
  f.first_receiver.assign(static_cast<std::size_t>(n), {});
  f.chained.assign(static_cast<std::size_t>(G), {});
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
      for (std::size_t i = 0; i < members.size(); ++i) {
        f.leaf_of[static_cast<std::size_t>(members[i])] = static_cast<int>(out.size());
        f.leaf_position[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
      }
      out.push_back(std::move(members));
    }
    f.leaves = std::max(f.leaves, static_cast<int>(out.size()));
    // Direct sends between leaves: one per root and foreign leaf, then, while a leaf takes in more
    // than it sends out (a small leaf beside large ones), its roots send to more endpoints of a
    // leaf that sends out more than it takes in, until every leaf's up and down balance.
    const int k = static_cast<int>(out.size());
    std::vector<std::int64_t>& direct = f.direct[static_cast<std::size_t>(g)];
    direct.assign(static_cast<std::size_t>(k) * static_cast<std::size_t>(k), 0);
    const auto size_of = [&](int b) { return static_cast<std::int64_t>(out[static_cast<std::size_t>(b)].size()); };
    std::vector<std::int64_t> excess(static_cast<std::size_t>(k), 0);  // into the leaf minus out of it
    for (int b = 0; b < k; ++b) {
      for (int c = 0; c < k; ++c) {
        if (b == c) continue;
        direct[static_cast<std::size_t>(b * k + c)] = size_of(b);
        excess[static_cast<std::size_t>(c)] += size_of(b);
        excess[static_cast<std::size_t>(b)] -= size_of(b);
      }
    }
    for (int b = 0; b < k; ++b) {
      for (int c = 0; c < k && excess[static_cast<std::size_t>(b)] > 0; ++c) {
        if (c == b || excess[static_cast<std::size_t>(c)] >= 0) continue;
        std::int64_t& t_bc = direct[static_cast<std::size_t>(b * k + c)];
        const std::int64_t room = size_of(b) * size_of(c) - t_bc;
        const std::int64_t delta = std::min({excess[static_cast<std::size_t>(b)], -excess[static_cast<std::size_t>(c)], room});
        t_bc += delta;
        excess[static_cast<std::size_t>(b)] -= delta;
        excess[static_cast<std::size_t>(c)] += delta;
      }
    }
    // Direct receivers rotate over each leaf's endpoints, root by root in rank order.
    std::vector<std::int64_t> next(static_cast<std::size_t>(k), 0);
    for (int r : rail) {
      auto& first = f.first_receiver[static_cast<std::size_t>(r)];
      first.assign(static_cast<std::size_t>(k), -1);
      const int b = f.leaf_of[static_cast<std::size_t>(r)];
      for (int c = 0; c < k; ++c) {
        if (c == b) continue;
        const std::int64_t d = direct_of(direct[static_cast<std::size_t>(b * k + c)], static_cast<int>(size_of(b)),
                                         f.leaf_position[static_cast<std::size_t>(r)], c);
        first[static_cast<std::size_t>(c)] = static_cast<int>(next[static_cast<std::size_t>(c)]);
        next[static_cast<std::size_t>(c)] = (next[static_cast<std::size_t>(c)] + d) % size_of(c);
      }
    }
  }

  // The sends between leaves are routed one by one (each hashed to its spine as the engines hash
  // it): bounded so that the charging stays in seconds.
  std::int64_t between = 0;
  for (const auto& d : f.direct) between += std::accumulate(d.begin(), d.end(), std::int64_t{0});
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
    // The engines' ECMP hash of a connection: source rank, destination rank, channel 0
    // (sim/execution/execution_graph.cpp), so a send between leaves takes the spine it would
    // take in the schedule.
    const auto flow = [](int src, int dst) {
      return support::splitmix64((static_cast<std::uint64_t>(src) << 40) | (static_cast<std::uint64_t>(dst) << 16));
    };
    charge(reduce_scatter ? router.route(gb, ga, flow(b, a)).links : router.route(ga, gb, flow(a, b)).links, amount);
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
  // Inter-node, per rail: per endpoint (position in the rail's leaf) the blocks it sends to leaf
  // mates (its own and those it passes on) and takes from them; sends between leaves routed.
  int inter_height = 1;
  for (int g = 0; g < G; ++g) {
    const auto& leaves = f.rail_leaves[static_cast<std::size_t>(g)];
    const int k = static_cast<int>(leaves.size());
    std::vector<double> mates_out(static_cast<std::size_t>(n), 0.0), mates_in(static_cast<std::size_t>(n), 0.0);
    for (const auto& members : leaves) {
      for (int e : members) {
        mates_out[static_cast<std::size_t>(e)] = static_cast<double>(members.size() - 1);  // its own block
        mates_in[static_cast<std::size_t>(e)] = static_cast<double>(members.size() - 1);   // its mates' own blocks
      }
    }
    // A leaf passes blocks on in stars (each direct receiver sends to its share) where that gives
    // every endpoint as many sends; else in chains (each endpoint passes a block to one other), so
    // that a leaf taking a number of outside blocks its size does not divide still spreads them
    // within one send per endpoint.
    auto& chained = f.chained[static_cast<std::size_t>(g)];
    chained.assign(static_cast<std::size_t>(k), 0);
    {
      std::vector<std::int64_t> star(static_cast<std::size_t>(n), 0);
      for (const auto& from : leaves) {
        for (int r : from) {
          for (int c = 0; c < k; ++c) {
            // A star: direct receiver q passes the block to its share of the others.
            const std::vector<int> direct = aggregated_receivers(f, r, c);
            const auto d = static_cast<int>(direct.size());
            const auto size = static_cast<int>(leaves[static_cast<std::size_t>(c)].size());
            for (int q = 0; q < d; ++q) star[static_cast<std::size_t>(direct[static_cast<std::size_t>(q)])] += (size - d) / d + (q < (size - d) % d ? 1 : 0);
          }
        }
      }
      for (int c = 0; c < k; ++c) {
        const auto& members = leaves[static_cast<std::size_t>(c)];
        const auto [lo, hi] = std::minmax_element(members.begin(), members.end(), [&](int a, int b) {
          return star[static_cast<std::size_t>(a)] < star[static_cast<std::size_t>(b)];
        });
        chained[static_cast<std::size_t>(c)] = star[static_cast<std::size_t>(*lo)] != star[static_cast<std::size_t>(*hi)] ? 1 : 0;
      }
    }
    for (const auto& from : leaves) {
      for (int r : from) {
        for (int c = 0; c < k; ++c) {
          if (c == f.leaf_of[static_cast<std::size_t>(r)]) continue;
          const std::vector<int> direct = aggregated_receivers(f, r, c);
          for (int e : direct) send(r, e, 1.0);
          for (const auto& [a, b] : aggregated_forwarding(f, r, c)) {
            mates_out[static_cast<std::size_t>(a)] += 1;
            mates_in[static_cast<std::size_t>(b)] += 1;
          }
          // Hops from the root: 1 to a direct receiver, then a star's 1 or a chain's length.
          const auto d = static_cast<int>(direct.size());
          const auto size = static_cast<int>(leaves[static_cast<std::size_t>(c)].size());
          const int longest = (size - d + d - 1) / d;
          inter_height = std::max(inter_height, 1 + (longest == 0 ? 0 : chained[static_cast<std::size_t>(c)] ? longest : 1));
        }
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
        const int e = members[static_cast<std::size_t>(i)];
        charge(up[static_cast<std::size_t>(i)], reduce_scatter ? mates_in[static_cast<std::size_t>(e)] : mates_out[static_cast<std::size_t>(e)]);
        charge(down[static_cast<std::size_t>(i)], reduce_scatter ? mates_out[static_cast<std::size_t>(e)] : mates_in[static_cast<std::size_t>(e)]);
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
