// Double binary tree AllReduce (Sanders, Speck, Träff, "Two-tree algorithms for full
// bandwidth broadcast, reduction and scan", Parallel Computing 2009; NCCL 2.4): two binary
// trees over the ranks, each reducing and broadcasting half of the data, pipelined in chunks.
// Tree 0 places rank r at depth given by its lowest set bit, so odd ranks are leaves; tree 1
// mirrors it (n even) or shifts it by one (n odd), so most ranks are interior in only one tree.

#include <vector>

#include "planner/algorithms/builder.hpp"

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

}  // namespace

std::vector<std::uint32_t> tree_all_reduce(Builder& b, const std::vector<int>& members, Range region, BufferKind local,
                                           int channel_base, int chunks, const std::vector<std::uint32_t>& entry,
                                           int first_chunk) {
  const int n = static_cast<int>(members.size());
  std::vector<std::uint32_t> exit(entry);
  const auto at = [&](Range r) { return Slice{local, r.offset, r.bytes}; };
  if (n == 1) {
    if (local == BufferKind::Input) exit[0] = b.copy(members[0], in(region), out(region), {entry[0]});
    return exit;
  }
  const Tree trees[2] = {make_tree(n, 0), make_tree(n, 1)};
  std::vector<std::uint32_t> tree_exit[2] = {entry, entry};
  for (int t = 0; t < 2; ++t) {
    const Tree& tr = trees[t];
    const Range half = part(region, b.element_size(), 2, t);
    const int channel = channel_base + t;
    for (int k = 0; k < chunks; ++k) {
      const Range chunk = part(half, b.element_size(), chunks, k);
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
        tree_exit[t][static_cast<std::size_t>(i)] = last;
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    exit[static_cast<std::size_t>(i)] =
        b.join(members[static_cast<std::size_t>(i)], {tree_exit[0][static_cast<std::size_t>(i)], tree_exit[1][static_cast<std::size_t>(i)]});
  }
  return exit;
}

void tree(Builder& b) {
  const int n = b.nranks();
  std::vector<int> members(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) members[static_cast<std::size_t>(r)] = r;
  const std::vector<std::uint32_t> none(static_cast<std::size_t>(n), kNone);
  for (int c = 0; c < b.request().channels; ++c) {
    const Range mine = part({0, b.request().bytes}, b.element_size(), b.request().channels, c);
    tree_all_reduce(b, members, mine, BufferKind::Input, 2 * c, b.request().pipeline_chunks, none, 0);
  }
}

}  // namespace ccsim::planner::detail
