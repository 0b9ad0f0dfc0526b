// NCCL's Tree AllReduce (NCCL 2.4+, src/graph/trees.cc and connect.cc): inside each node the
// ranks form a chain below the node's head (the rank whose NIC the channel uses); across nodes
// the heads form a double binary tree (Sanders, Speck, Träff, "Two-tree algorithms for full
// bandwidth broadcast, reduction and scan", Parallel Computing 2009): two binary trees over the
// nodes, each reducing and broadcasting half of the data, pipelined in chunks. Tree 0 places
// node i at depth given by its lowest set bit, so odd nodes are leaves; tree 1 mirrors it (even
// count) or shifts it by one (odd count), so most nodes are interior in only one tree. On one
// node the Tree is the chain alone. Channel pair c (channels 2c, 2c+1) has its head on local
// rank tree_heads[c] (default c mod L): the planner puts successive pairs on successive NIC
// rails (NCCL: one tree pair per NIC).

#include <algorithm>
#include <numeric>
#include <vector>

#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {
namespace {

/// Parent of each rank in tree 0 (-1 for the root, rank 0).
std::vector<int> tree0_parents(int n) {
  std::vector<int> parent(static_cast<std::size_t>(n), -1);
  for (int r = 1; r < n; ++r) {
    const int low = r & -r;
    int up = (r ^ low) | (low << 1);
    if (up >= n) up = r ^ low;
    parent[static_cast<std::size_t>(r)] = up;
  }
  return parent;
}

struct Tree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
};

Tree make_tree(int n, int which) {
  const std::vector<int> p0 = tree0_parents(n);
  // Position of rank r in tree 0's numbering, and back.
  const auto to_pos = [&](int r) { return which == 0 ? r : (n % 2 == 0 ? n - 1 - r : (r + n - 1) % n); };
  const auto to_rank = [&](int q) { return which == 0 ? q : (n % 2 == 0 ? n - 1 - q : (q + 1) % n); };
  Tree t;
  t.parent.assign(static_cast<std::size_t>(n), -1);
  t.children.assign(static_cast<std::size_t>(n), {});
  for (int r = 0; r < n; ++r) {
    const int pq = p0[static_cast<std::size_t>(to_pos(r))];
    t.parent[static_cast<std::size_t>(r)] = pq < 0 ? -1 : to_rank(pq);
  }
  for (int r = 0; r < n; ++r)
    if (t.parent[static_cast<std::size_t>(r)] >= 0) t.children[static_cast<std::size_t>(t.parent[static_cast<std::size_t>(r)])].push_back(r);
  return t;
}

/// Reduce up and broadcast down `tr` (positions; members[i] is the rank at position i) for
/// `region`, pipelined in `chunks`, on `channel`. Returns each position's last op.
std::vector<std::uint32_t> reduce_broadcast(Builder& b, const Tree& tr, const std::vector<int>& members, Range region,
                                            BufferKind local, int channel, int chunks, const std::vector<std::uint32_t>& entry,
                                            int first_chunk) {
  const int n = static_cast<int>(members.size());
  const auto at = [&](Range r) { return Slice{local, r.offset, r.bytes}; };
  std::vector<std::uint32_t> exit(entry);
  for (int k = 0; k < chunks; ++k) {
    const Range chunk = part(region, b.element_size(), chunks, k);
    for (int i = 0; i < n; ++i) {  // positions in the tree; members[i] is the rank there
      const int r = members[static_cast<std::size_t>(i)];
      const auto& kids = tr.children[static_cast<std::size_t>(i)];
      const int up = tr.parent[static_cast<std::size_t>(i)];
      std::uint32_t last = entry[static_cast<std::size_t>(i)];
      bool first = true;
      for (int child : kids) {  // reduce the children's partial sums into the output
        last = b.recv_reduce(r, members[static_cast<std::size_t>(child)], first ? at(chunk) : out(chunk), out(chunk), channel, {last});
        first = false;
      }
      if (up >= 0) {
        const std::uint32_t sent =
            b.send(r, members[static_cast<std::size_t>(up)], kids.empty() ? at(chunk) : out(chunk), channel, {last}, chunk_steps(first_chunk + k));
        last = b.recv(r, members[static_cast<std::size_t>(up)], out(chunk), channel, {sent});  // the final sum comes back down
      } else if (kids.empty() && local == BufferKind::Input) {
        last = b.copy(r, in(chunk), out(chunk), {last});
      }
      for (int child : kids) b.send(r, members[static_cast<std::size_t>(child)], out(chunk), channel, {last}, chunk_steps(first_chunk + k));
      exit[static_cast<std::size_t>(i)] = last;
    }
  }
  return exit;
}

/// Phase granularity (many ranks): the fluid limit of the pipelined tree. Every edge carries
/// the whole region once up and once down, all edges at once (a deep pipeline keeps every edge
/// busy), and every transfer pays the critical path's hop count in steps at the tree's mean
/// hop latency (a latency pool), as NCCL's Tree latency sums the hops of the path up and down.
void phase_reduce_broadcast(Builder& b, const Tree& tr, const std::vector<int>& members, Range region, int channel) {
  const int n = static_cast<int>(members.size());
  // Depth of each position (root 0), the longest path up, and so the steps up and down.
  std::vector<int> depth(static_cast<std::size_t>(n), -1);
  const auto depth_of = [&](int i) {
    int d = 0;
    for (int j = i; tr.parent[static_cast<std::size_t>(j)] >= 0; j = tr.parent[static_cast<std::size_t>(j)]) ++d;
    return d;
  };
  int deepest = 0;
  for (int i = 0; i < n; ++i) deepest = std::max(deepest, depth_of(i));
  const auto steps = static_cast<std::uint32_t>(2 * std::max(1, deepest));
  const std::uint32_t pool = b.latency_pool();
  for (int i = 0; i < n; ++i) {
    const int up = tr.parent[static_cast<std::size_t>(i)];
    if (up < 0) continue;
    const int r = members[static_cast<std::size_t>(i)], p = members[static_cast<std::size_t>(up)];
    b.send(r, p, in(region), channel, {}, steps, pool);
    b.recv(p, r, out(region), channel, {}, steps);
    b.send(p, r, out(region), channel, {}, steps, pool);
    b.recv(r, p, out(region), channel, {}, steps);
  }
}

}  // namespace

std::vector<std::uint32_t> tree_all_reduce(Builder& b, const std::vector<int>& members, Range region, BufferKind local,
                                           int channel_base, int chunks, const std::vector<std::uint32_t>& entry,
                                           int first_chunk) {
  const int n = static_cast<int>(members.size());
  std::vector<std::uint32_t> exit(entry);
  if (n == 1) {
    if (local == BufferKind::Input) exit[0] = b.copy(members[0], in(region), out(region), {entry[0]});
    return exit;
  }
  std::vector<std::uint32_t> tree_exit[2];
  for (int t = 0; t < 2; ++t) {
    tree_exit[t] = reduce_broadcast(b, make_tree(n, t), members, part(region, b.element_size(), 2, t), local, channel_base + t,
                                    chunks, entry, first_chunk);
  }
  for (int i = 0; i < n; ++i) {
    exit[static_cast<std::size_t>(i)] =
        b.join(members[static_cast<std::size_t>(i)], {tree_exit[0][static_cast<std::size_t>(i)], tree_exit[1][static_cast<std::size_t>(i)]});
  }
  return exit;
}

void tree(Builder& b) {
  const int n = b.nranks();
  const AlgorithmRequest& req = b.request();
  // The nodes' ranks in local order: the request's groups, blocks of ranks_per_node, or one node.
  std::vector<std::vector<int>> groups = req.node_groups;
  if (groups.empty()) {
    const int per = req.ranks_per_node > 0 && n % req.ranks_per_node == 0 ? req.ranks_per_node : n;
    for (int first = 0; first < n; first += per) {
      groups.emplace_back();
      for (int r = first; r < first + per; ++r) groups.back().push_back(r);
    }
  }
  const int nodes = static_cast<int>(groups.size());
  for (int c = 0; c < req.channels; ++c) {
    // Chain of every node for this pair: from the head (local c mod L) on, in the searched
    // ring order on direct-link nodes, else in local order.
    std::vector<std::vector<int>> chains;
    for (const auto& g : groups) {
      const int size = static_cast<int>(g.size());
      std::vector<int> locals(static_cast<std::size_t>(size));
      std::iota(locals.begin(), locals.end(), 0);
      if (!req.node_orders.empty() && static_cast<int>(req.node_orders.front().size()) == size) {
        locals = req.node_orders[static_cast<std::size_t>(c) % req.node_orders.size()];
      }
      const int head_local = req.tree_heads.empty() ? c : req.tree_heads[static_cast<std::size_t>(c) % req.tree_heads.size()];
      const auto head = std::find(locals.begin(), locals.end(), head_local % size);
      std::rotate(locals.begin(), head, locals.end());
      chains.emplace_back();
      for (int l : locals) chains.back().push_back(g[static_cast<std::size_t>(l)]);
    }
    // Positions: the ranks of every chain, node by node; members[i] is the rank at position i.
    std::vector<int> members, head_position;
    for (const auto& chain : chains) {
      head_position.push_back(static_cast<int>(members.size()));
      members.insert(members.end(), chain.begin(), chain.end());
    }
    const Range mine = part({0, req.bytes}, b.element_size(), req.channels, c);
    std::vector<std::uint32_t> tree_exit[2];
    for (int t = 0; t < 2; ++t) {
      // Tree t over nodes, expanded: a head's parent is its parent node's head, its children
      // the next rank of its chain and its child nodes' heads; chain ranks hang in a line.
      const Tree over_nodes = make_tree(nodes, nodes == 1 ? 0 : t);
      Tree tr;
      tr.parent.assign(members.size(), -1);
      tr.children.assign(members.size(), {});
      for (int node = 0; node < nodes; ++node) {
        const int h = head_position[static_cast<std::size_t>(node)];
        const int len = static_cast<int>(chains[static_cast<std::size_t>(node)].size());
        for (int k = 1; k < len; ++k) {
          tr.parent[static_cast<std::size_t>(h + k)] = h + k - 1;
          tr.children[static_cast<std::size_t>(h + k - 1)].push_back(h + k);
        }
        const int up = over_nodes.parent[static_cast<std::size_t>(node)];
        if (up >= 0) {
          tr.parent[static_cast<std::size_t>(h)] = head_position[static_cast<std::size_t>(up)];
          tr.children[static_cast<std::size_t>(head_position[static_cast<std::size_t>(up)])].push_back(h);
        }
      }
      if (members.size() == 1) {
        tree_exit[t] = {b.copy(members[0], in(part(mine, b.element_size(), 2, t)), out(part(mine, b.element_size(), 2, t)))};
        continue;
      }
      const Range half = part(mine, b.element_size(), 2, t);
      if (b.granularity() == models::Granularity::Phase) {
        phase_reduce_broadcast(b, tr, members, half, 2 * c + t);
        continue;
      }
      tree_exit[t] = reduce_broadcast(b, tr, members, half, BufferKind::Input, 2 * c + t, req.pipeline_chunks,
                                      std::vector<std::uint32_t>(members.size(), kNone), 0);
    }
  }
}

std::string tree_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AllReduce) return "tree implements AllReduce only (as in NCCL)";
  return {};
}

// NCCL keeps Tree enabled on one node (tuning.cc disables only NVLSTree there), but its model
// never rates it above Ring at a bandwidth-bound size: the tree graph has the ring graph's
// channels (init.cc: treeGraph min/maxChannels = ringGraph->nChannels) at no more bandwidth,
// Tree's busBw is × 0.92 (× 7/9 with LL128, ÷ 3.8 with LL, capped by perChMaxTreeBw), and
// "Convert bus BW to algorithm BW" gives Tree algbw = busBw × 0.5 against Ring's busBw ×
// nRanks / nsteps = busBw × n / (2(n − 1)) > 0.5 (NCCL 2.30.7 src/graph/tuning.cc,
// ncclTopoTuneModel). ccsim's one-node tree is a chain pipelined up and down, whose simulated
// time on the links beats the ring's by up to 2(n − 1)/n (a ring's link carries 2(n − 1)/n of
// the data per direction, a chain's 1): choosing among simulated candidates would pick what
// NCCL's tuner does not (nccl-tests#178: 3 ranks across a PCIe hop, ~20 GB/s measured with
// NCCL's Ring, 29.4 GB/s from the simulated chain). So Tree is an automatic candidate across
// nodes only. Left out: the narrow window of mid sizes (about 2 MB on 8 × A100) where NCCL's
// model rates Tree/LL128's lower NVLink latency (hwLat 1.25 against Ring's 1.9 us per step)
// above Ring/LL128. NCCL_ALGO=Tree still runs it inside a node, as it does in NCCL.
bool tree_nccl_auto(const GroupShape& g) { return g.nodes > 1; }

}  // namespace ccsim::planner::detail
