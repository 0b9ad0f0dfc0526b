#include "planner/synthesis/forest_schedule.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <tuple>
#include <numeric>
#include <stdexcept>

namespace ccsim::planner::synthesis {

using models::BufferKind;
using models::Op;
using models::OpKind;
using models::Slice;

int default_chunks(std::uint64_t bytes, int ranks, std::size_t trees) {
  const double share = static_cast<double>(bytes) / std::max(1, ranks) / std::max<double>(1.0, static_cast<double>(trees) / std::max(1, ranks));
  return static_cast<int>(std::clamp(share / (256.0 * 1024.0), 1.0, 16.0));
}

namespace {

__extension__ using Wide = unsigned __int128;

struct Range {
  std::uint64_t offset = 0;  // elements
  std::uint64_t count = 0;
};

/// The element range of tree `j` among a root's trees (weights in order) of a block of `elements`.
std::vector<Range> shares(const std::vector<const Tree*>& trees, std::uint64_t elements) {
  std::int64_t total = 0;
  for (const Tree* t : trees) total += t->weight;
  std::vector<Range> out;
  std::int64_t cum = 0;
  for (const Tree* t : trees) {
    const auto at = [&](std::int64_t c) {
      return static_cast<std::uint64_t>(static_cast<Wide>(elements) * static_cast<Wide>(c) / static_cast<Wide>(total));
    };
    const std::uint64_t a = at(cum), b = at(cum + t->weight);
    out.push_back({a, b - a});
    cum += t->weight;
  }
  return out;
}

Range chunk_of(Range r, int chunks, int c) {
  const std::uint64_t base = r.count / static_cast<std::uint64_t>(chunks);
  const std::uint64_t extra = r.count % static_cast<std::uint64_t>(chunks);
  const std::uint64_t cu = static_cast<std::uint64_t>(c);
  return {r.offset + cu * base + std::min(cu, extra), base + (cu < extra ? 1 : 0)};
}

Op make_op(OpKind kind, int peer, int chunk, Slice src, Slice dst) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.steps = chunk == 0 ? 1U : 0U;
  op.src = src;
  op.dst = dst;
  return op;
}

/// Grid mode: pipeline chunk c of a tree share of `weight` units starting at unit `first`.
Range grid_chunk(std::uint64_t unit_elements, std::int64_t first, std::int64_t weight, int c) {
  if (c >= weight) return {0, 0};
  return {static_cast<std::uint64_t>(first + c) * unit_elements, unit_elements};
}

class ForestBuilder {
 public:
  ForestBuilder(models::Schedule& s, std::uint64_t block, int chunks) : s_(s), block_(block), chunks_(chunks) {}

  /// Chunk c of tree j of a root (its trees `trees`, their shares `share`); grid mode when chunks_ = 0.
  Range piece(const std::vector<const Tree*>& trees, const std::vector<Range>& share, std::size_t j, int c) const {
    if (chunks_ > 0) return chunk_of(share[j], chunks_, c);
    std::int64_t total = 0, first = 0;
    for (std::size_t i = 0; i < trees.size(); ++i) {
      if (i < j) first += trees[i]->weight;
      total += trees[i]->weight;
    }
    return grid_chunk(block_ / static_cast<std::uint64_t>(total), first, trees[j]->weight, c);
  }
  int rounds(const Forest& f) const {
    if (chunks_ > 0) return chunks_;
    std::int64_t most = 0;
    for (const Tree& t : f.trees) most = std::max(most, t.weight);
    return static_cast<int>(most);
  }

  Slice slice(BufferKind b, std::uint64_t element_offset, std::uint64_t count) const {
    return {b, element_offset * s_.element_size, count * s_.element_size};
  }

  std::uint32_t add(int rank, Op op, const std::vector<std::uint32_t>& deps) {
    return s_.ranks[static_cast<std::size_t>(rank)].add(op, deps);
  }

  /// AllGather of every root's block from `source` (Input at offset 0, or Output at the root's
  /// block) into Output; `root_deps[r]`: ops the root's first sends wait for.
  void allgather(const Forest& f, BufferKind source, const std::vector<std::vector<std::uint32_t>>& root_deps) {
    std::map<std::tuple<std::size_t, int, int>, std::uint32_t> received;  // (tree, chunk, rank) -> its Recv
    for (const Event& ev : events(f, false)) {
      const TreeEdge& e = ev.tree->edges[ev.edge];
      const int root = ev.tree->root;
      const std::uint64_t at = static_cast<std::uint64_t>(root) * block_ + ev.range.offset;
      std::vector<std::uint32_t> deps;
      Slice src;
      if (e.parent == root) {
        src = source == BufferKind::Input ? slice(BufferKind::Input, ev.range.offset, ev.range.count) : slice(BufferKind::Output, at, ev.range.count);
        deps = root_deps[static_cast<std::size_t>(root)];
      } else {
        src = slice(BufferKind::Output, at, ev.range.count);
        deps = {received.at({ev.index, ev.chunk, e.parent})};
      }
      add(e.parent, make_op(OpKind::Send, e.child, ev.chunk, src, {}), deps);
      const Slice dst = slice(BufferKind::Output, at, ev.range.count);
      received[{ev.index, ev.chunk, e.child}] = add(e.child, make_op(OpKind::Recv, e.parent, ev.chunk, {}, dst), {});
    }
  }

  /// ReduceScatter of every root's block of Input up its trees; the sum lands at Output (at the
  /// root's block for AllReduce, at 0 otherwise). Returns per rank the ops that complete its own block.
  std::vector<std::vector<std::uint32_t>> reducescatter(const Forest& f, bool all_reduce) {
    std::vector<std::vector<std::uint32_t>> done(static_cast<std::size_t>(s_.nranks));
    std::map<std::tuple<std::size_t, int, int>, std::pair<std::uint32_t, Slice>> acc;  // (tree, chunk, rank) -> its last reduction
    std::map<std::pair<std::size_t, int>, int> children_left;  // (tree, chunk) at the root: edges still to come
    const std::vector<Event> evs = events(f, true);
    for (const Event& ev : evs) {
      if (ev.tree->edges[ev.edge].parent == ev.tree->root) ++children_left[{ev.index, ev.chunk}];
    }
    for (const Event& ev : evs) {
      const TreeEdge& e = ev.tree->edges[ev.edge];
      const int root = ev.tree->root;
      const Range r = ev.range;
      const std::uint64_t in_at = static_cast<std::uint64_t>(root) * block_ + r.offset;
      const std::uint64_t out_at = (all_reduce ? static_cast<std::uint64_t>(root) * block_ : 0) + r.offset;
      // Data flows child -> parent (the trees were found on the reversed graph).
      const int from = e.child, to = e.parent;
      Slice src = slice(BufferKind::Input, in_at, r.count);
      std::vector<std::uint32_t> deps;
      if (const auto a = acc.find({ev.index, ev.chunk, from}); a != acc.end()) {
        src = a->second.second;
        deps = {a->second.first};
      }
      add(from, make_op(OpKind::Send, to, ev.chunk, src, {}), deps);
      Slice dst;
      Slice local = slice(BufferKind::Input, in_at, r.count);
      auto& scratch_bytes = s_.ranks[static_cast<std::size_t>(to)].scratch_bytes;
      if (const auto a = acc.find({ev.index, ev.chunk, to}); a != acc.end()) {
        // A further child: its partial sum lands in scratch of its own with no wait (the
        // children's messages travel at once, as NCCL's per-peer buffers let them), then joins
        // the running sum locally. Chaining the receive on the sum instead would serialise
        // fan-in k into k step latencies.
        const Slice landing{BufferKind::Scratch, scratch_bytes, r.count * s_.element_size};
        scratch_bytes += r.count * s_.element_size;
        const std::uint32_t got = add(to, make_op(OpKind::Recv, from, ev.chunk, {}, landing), {});
        const Slice sum = a->second.second;
        Op reduce = make_op(OpKind::Reduce, -1, ev.chunk, landing, sum);
        reduce.steps = 0;  // local: no step latency
        const std::uint32_t op = add(to, reduce, {a->second.first, got});
        acc[{ev.index, ev.chunk, to}] = {op, sum};
        if (to == root && --children_left[{ev.index, ev.chunk}] == 0) done[static_cast<std::size_t>(root)].push_back(op);
        continue;
      }
      if (to == root) {
        dst = slice(BufferKind::Output, out_at, r.count);
      } else {
        dst = {BufferKind::Scratch, scratch_bytes, r.count * s_.element_size};
        scratch_bytes += r.count * s_.element_size;
      }
      const std::uint32_t op = add(to, make_op(OpKind::RecvReduce, from, ev.chunk, local, dst), {});
      acc[{ev.index, ev.chunk, to}] = {op, dst};
      if (to == root && --children_left[{ev.index, ev.chunk}] == 0) done[static_cast<std::size_t>(root)].push_back(op);
    }
    return done;
  }

 private:
  /// One transfer: chunk `chunk` of tree `index` (its root's share `range`) over edge `edge`.
  struct Event {
    std::size_t index;
    const Tree* tree;
    std::size_t edge;
    int chunk;
    Range range;
    int wave;  ///< the round it can go in a full pipeline: chunk + depth (AllGather), chunk + height − depth (ReduceScatter)
  };

  /// Every transfer in wavefront order (by wave, then tree, chunk and edge): the order in which
  /// a full pipeline has them ready, so one tree's deep edge does not hold another tree's
  /// shallow edge back on a shared connection. Every dependency and every earlier message of a
  /// connection comes earlier in this order.
  std::vector<Event> events(const Forest& f, bool up) const {
    std::vector<Event> out;
    const auto by_root = group(f);
    std::map<const Tree*, std::size_t> index;
    for (std::size_t i = 0; i < f.trees.size(); ++i) index[&f.trees[i]] = i;
    for (int c = 0; c < rounds(f); ++c) {
      for (const auto& [root, trees] : by_root) {
        const std::vector<Range> share = shares(trees, block_);
        for (std::size_t j = 0; j < trees.size(); ++j) {
          const Range r = piece(trees, share, j, c);
          if (r.count == 0) continue;
          std::map<int, int> depth{{root, 0}};
          int height = 0;
          for (const TreeEdge& e : trees[j]->edges) height = std::max(height, depth[e.child] = depth[e.parent] + 1);
          for (std::size_t k = 0; k < trees[j]->edges.size(); ++k) {
            const int d = depth[trees[j]->edges[k].child];
            out.push_back({index[trees[j]], trees[j], k, c, r, c + (up ? height - d : d)});
          }
        }
      }
    }
    std::stable_sort(out.begin(), out.end(), [up](const Event& a, const Event& b) {
      if (a.wave != b.wave) return a.wave < b.wave;
      if (a.index != b.index) return a.index < b.index;
      if (a.chunk != b.chunk) return a.chunk < b.chunk;
      return up ? a.edge > b.edge : a.edge < b.edge;  // children before parents going up
    });
    return out;
  }

  static std::map<int, std::vector<const Tree*>> group(const Forest& f) {
    std::map<int, std::vector<const Tree*>> out;
    for (const Tree& t : f.trees) out[t.root].push_back(&t);
    return out;
  }

  models::Schedule& s_;
  std::uint64_t block_;  // elements per rank
  int chunks_;
};

void check_forest(const Forest* f, int n, std::string_view what) {
  if (f == nullptr) throw std::invalid_argument(fmt::format("forest_schedule: no {} forest", what));
  if (f->ranks != n) throw std::invalid_argument(fmt::format("forest_schedule: {} forest of {} ranks, expected {}", what, f->ranks, n));
}

}  // namespace

Forest on_grid(const Forest& f, int grid) {
  if (grid < 1) throw std::invalid_argument("on_grid: a grid of at least one chunk");
  Forest g = f;
  g.trees.clear();
  g.weight_per_root = grid;
  std::map<int, std::vector<const Tree*>> by_root;
  for (const Tree& t : f.trees) by_root[t.root].push_back(&t);
  for (const auto& [root, trees] : by_root) {
    std::int64_t total = 0;
    for (const Tree* t : trees) total += t->weight;
    std::vector<std::int64_t> count(trees.size());
    std::vector<std::pair<std::int64_t, std::size_t>> remainder;
    std::int64_t used = 0;
    for (std::size_t j = 0; j < trees.size(); ++j) {
      const Wide x = static_cast<Wide>(trees[j]->weight) * static_cast<Wide>(grid);
      count[j] = static_cast<std::int64_t>(x / static_cast<Wide>(total));
      remainder.push_back({static_cast<std::int64_t>(x % static_cast<Wide>(total)), j});
      used += count[j];
    }
    std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; used < grid; ++i, ++used) ++count[remainder[i % remainder.size()].second];
    for (std::size_t j = 0; j < trees.size(); ++j) {
      if (count[j] == 0) continue;
      Tree t = *trees[j];
      t.weight = count[j];
      g.trees.push_back(std::move(t));
    }
  }
  return g;
}

int exact_grid(const Forest& f, int at_least, int at_most) {
  std::int64_t d = f.weight_per_root;
  for (const Tree& t : f.trees) d = std::gcd(d, t.weight);
  if (d == 0) return 0;
  const std::int64_t base = f.weight_per_root / d;
  if (base > at_most) return 0;
  const std::int64_t grid = base * std::max<std::int64_t>(1, (at_least + base - 1) / base);
  return grid > at_most ? static_cast<int>(base) : static_cast<int>(grid);
}

models::Schedule forest_schedule(models::Collective collective, const Forest* allgather, const Forest* reducescatter,
                                 std::uint64_t bytes, std::uint32_t element_size, int chunks) {
  using models::Collective;
  const Forest* any = allgather != nullptr ? allgather : reducescatter;
  if (any == nullptr) throw std::invalid_argument("forest_schedule: no forest");
  const int n = any->ranks;
  if (collective != Collective::AllGather && collective != Collective::ReduceScatter && collective != Collective::AllReduce) {
    throw std::invalid_argument(fmt::format("forest_schedule: forests build AllGather, ReduceScatter and AllReduce, not {}", models::to_string(collective)));
  }
  if (element_size == 0 || bytes % (static_cast<std::uint64_t>(n) * element_size) != 0) {
    throw std::invalid_argument(fmt::format("forest_schedule: {} bytes is not a whole number of {}-byte elements per rank for {} ranks", bytes, element_size, n));
  }
  models::Schedule s;
  s.collective = collective;
  s.algorithm = "forest";
  s.nranks = n;
  s.bytes = bytes;
  s.element_size = element_size;
  s.channels = 1;
  s.granularity = models::Granularity::Step;
  s.ranks.resize(static_cast<std::size_t>(n));
  const std::uint64_t block = bytes / element_size / static_cast<std::uint64_t>(n);
  if (chunks == 0) {
    for (const Forest* f : {allgather, reducescatter}) {
      if (f == nullptr) continue;
      const std::uint64_t grid = static_cast<std::uint64_t>(f->weight_per_root);
      if (grid == 0 || block % grid != 0) {
        throw std::invalid_argument(fmt::format("forest_schedule: {} elements per rank is not a whole number of the grid's {} chunks", block, grid));
      }
    }
  }
  ForestBuilder b(s, block, std::max(0, chunks));
  std::vector<std::vector<std::uint32_t>> none(static_cast<std::size_t>(n));
  switch (collective) {
    case Collective::AllGather: {
      check_forest(allgather, n, "AllGather");
      for (int r = 0; r < n; ++r) {
        const Slice src{BufferKind::Input, 0, block * element_size};
        const Slice dst{BufferKind::Output, static_cast<std::uint64_t>(r) * block * element_size, block * element_size};
        Op copy = make_op(OpKind::Copy, -1, 0, src, dst);
        b.add(r, copy, {});
      }
      b.allgather(*allgather, BufferKind::Input, none);
      break;
    }
    case Collective::ReduceScatter:
      check_forest(reducescatter, n, "ReduceScatter");
      b.reducescatter(*reducescatter, false);
      break;
    default:
      check_forest(allgather, n, "AllGather");
      check_forest(reducescatter, n, "ReduceScatter");
      b.allgather(*allgather, BufferKind::Output, b.reducescatter(*reducescatter, true));
      break;
  }
  return s;
}

}  // namespace ccsim::planner::synthesis
