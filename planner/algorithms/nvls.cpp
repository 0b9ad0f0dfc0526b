// NVLS: NVLink SHARP in-switch reduction and multicast on NVSwitch gen3+ (NCCL ≥ 2.18,
// SM90+). AllReduce as NCCL runs it: rank p reduces part p of the data in the switch
// (multimem.ld_reduce: every GPU's copy of part p crosses its uplink once) and multicasts the
// result (multimem.st: part p goes up once from rank p and down to every GPU). Per GPU and
// direction that is S (1 + 1/n) bytes, against 2 S (n − 1)/n for a ring.
// ReduceScatter keeps only the reduction, AllGather only the multicast.

#include <vector>

#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {

void nvls(Builder& b) {
  const int n = b.nranks();
  const int chunks = b.request().pipeline_chunks;
  const auto c = b.request().collective;
  const std::uint64_t block = c == models::Collective::AllReduce ? 0 : b.request().bytes / static_cast<std::uint64_t>(n);
  // Each rank keeps at most kWindow in-switch operations in flight, issued in buffer order
  // (NCCL's NCCL_STEPS = 8 buffer slots), so reductions of early chunks finish early and
  // their multicasts overlap with later reductions.
  constexpr std::size_t kWindow = 8;
  std::vector<std::vector<std::uint32_t>> issued(static_cast<std::size_t>(n));
  std::vector<std::uint32_t> last(static_cast<std::size_t>(n), kNone);  // op that frees a slot for the next issue
  const auto issue = [&](int r, std::uint32_t op) {
    auto& list = issued[static_cast<std::size_t>(r)];
    list.push_back(op);
    last[static_cast<std::size_t>(r)] = list.size() >= kWindow ? list[list.size() - kWindow] : kNone;
    return op;
  };
  for (int ch = 0; ch < b.request().channels; ++ch) {
    for (int k = 0; k < chunks; ++k) {
      for (int p = 0; p < n; ++p) {
        if (c == models::Collective::AllReduce) {
          const Range mine = part({0, b.request().bytes}, b.element_size(), b.request().channels, ch);
          const Range piece = part(part(mine, b.element_size(), chunks, k), b.element_size(), n, p);
          const std::uint32_t reduce = b.switch_group(n);
          for (int r = 0; r < n; ++r) issue(r, b.switch_send(r, reduce, in(piece), ch, {last[static_cast<std::size_t>(r)]}, chunk_steps(k)));
          const std::uint32_t got = b.switch_recv(p, reduce, out(piece), ch, {}, chunk_steps(k));
          const std::uint32_t cast = b.switch_group(1);
          issue(p, b.switch_send(p, cast, out(piece), ch, {got, last[static_cast<std::size_t>(p)]}, chunk_steps(k)));
          for (int r = 0; r < n; ++r)
            if (r != p) b.switch_recv(r, cast, out(piece), ch, {}, chunk_steps(k));
        } else if (c == models::Collective::ReduceScatter) {
          const Range blk{static_cast<std::uint64_t>(p) * block, block};
          const Range piece = part(part(blk, b.element_size(), b.request().channels, ch), b.element_size(), chunks, k);
          const std::uint32_t reduce = b.switch_group(n);
          for (int r = 0; r < n; ++r) issue(r, b.switch_send(r, reduce, in(piece), ch, {last[static_cast<std::size_t>(r)]}, chunk_steps(k)));
          b.switch_recv(p, reduce, out({piece.offset - static_cast<std::uint64_t>(p) * block, piece.bytes}), ch, {}, chunk_steps(k));
        } else {  // AllGather
          const Range local = part(part({0, block}, b.element_size(), b.request().channels, ch), b.element_size(), chunks, k);
          const std::uint32_t cast = b.switch_group(1);
          issue(p, b.switch_send(p, cast, in(local), ch, {last[static_cast<std::size_t>(p)]}, chunk_steps(k)));
          const Range dst{static_cast<std::uint64_t>(p) * block + local.offset, local.bytes};
          for (int r = 0; r < n; ++r) {
            if (r == p) b.copy(r, in(local), out(dst));
            else b.switch_recv(r, cast, out(dst), ch, {}, chunk_steps(k));
          }
        }
      }
    }
  }
}

// NVLS-tree (NCCL's NVLSTree, multi-node): inside each node an NVLS ReduceScatter leaves local
// rank l with the node's sum of part l; a double binary tree across the nodes, one per rail
// (local index), completes each part; an NVLS multicast gives every GPU of the node all parts.
// Pipelined in chunks with the same in-flight window as NVLS.
void nvls_tree(Builder& b) {
  const int n = b.nranks();
  const int per = b.request().ranks_per_node;
  const int nodes = n / per;
  const int chunks = b.request().pipeline_chunks;
  constexpr std::size_t kWindow = 8;
  std::vector<std::vector<std::uint32_t>> issued(static_cast<std::size_t>(n));
  const auto slot = [&](int r) {
    const auto& list = issued[static_cast<std::size_t>(r)];
    return list.size() >= kWindow ? list[list.size() - kWindow] : kNone;
  };
  const auto issue = [&](int r, std::uint32_t op) {
    issued[static_cast<std::size_t>(r)].push_back(op);
    return op;
  };
  for (int c = 0; c < b.request().channels; ++c) {
    const Range mine = part({0, b.request().bytes}, b.element_size(), b.request().channels, c);
    for (int k = 0; k < chunks; ++k) {
      const Range region = part(mine, b.element_size(), chunks, k);
      std::vector<std::uint32_t> reduced(static_cast<std::size_t>(n), kNone);
      for (int node = 0; node < nodes; ++node) {
        for (int l = 0; l < per; ++l) {
          const Range piece = part(region, b.element_size(), per, l);
          const std::uint32_t group = b.switch_group(per);
          for (int m = 0; m < per; ++m) {
            const int r = node * per + m;
            issue(r, b.switch_send(r, group, in(piece), c, {slot(r)}, chunk_steps(k)));
          }
          const int owner = node * per + l;
          reduced[static_cast<std::size_t>(owner)] = b.switch_recv(owner, group, out(piece), c, {}, chunk_steps(k));
        }
      }
      for (int l = 0; l < per; ++l) {
        const Range piece = part(region, b.element_size(), per, l);
        std::vector<int> rail;
        std::vector<std::uint32_t> entry;
        for (int node = 0; node < nodes; ++node) {
          rail.push_back(node * per + l);
          entry.push_back(reduced[static_cast<std::size_t>(node * per + l)]);
        }
        const auto done = tree_all_reduce(b, rail, piece, BufferKind::Output, 1000 + 2 * c, 1, entry, k);
        for (int node = 0; node < nodes; ++node) {
          const int owner = node * per + l;
          const std::uint32_t cast = b.switch_group(1);
          issue(owner, b.switch_send(owner, cast, out(piece), c, {done[static_cast<std::size_t>(node)], slot(owner)}, chunk_steps(k)));
          for (int m = 0; m < per; ++m)
            if (m != l) b.switch_recv(node * per + m, cast, out(piece), c, {}, chunk_steps(k));
        }
      }
    }
  }
}

std::string nvls_refusal(const AlgorithmRequest& r) {
  const models::Collective c = r.collective;
  if (c != models::Collective::AllReduce && c != models::Collective::ReduceScatter && c != models::Collective::AllGather) {
    return "nvls implements AllReduce, ReduceScatter and AllGather";
  }
  return r.granularity == models::Granularity::Phase ? "nvls has no phase granularity" : "";
}

std::string nvls_tree_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AllReduce) return "nvls-tree implements AllReduce";
  if (r.ranks_per_node < 1 || r.nranks % r.ranks_per_node != 0) {
    return "nvls-tree needs the same number of ranks on every node, in node order";
  }
  return r.granularity == models::Granularity::Phase ? "nvls-tree has no phase granularity" : "";
}

// NVLS inside one NVSwitch domain: all ranks on one node whose NVSwitch has NVLink SHARP; NCCL
// considers it from 2 ranks (NCCL 2.28 src/graph/tuning.cc: NVLS with nvlsSupport, one node).
std::string nvls_placement_refusal(const GroupShape& g) {
  return g.nvls_one_domain ? "" : "nvls needs all ranks on one NVSwitch with NVLink SHARP (NVSwitch gen3+)";
}
bool nvls_nccl_placement(const GroupShape& g) { return g.nvls_one_domain && g.ranks > 1; }

// NVLSTree across nodes: whole NVLS nodes, the same number of ranks on each, in node order;
// NCCL considers it from 2 nodes.
std::string nvls_tree_placement_refusal(const GroupShape& g) {
  if (!g.nvls_all_nodes) return "nvls-tree needs whole nodes with NVLink SHARP (NVSwitch gen3+)";
  if (g.ranks_per_node == 0) return "nvls-tree needs the same number of ranks on every node, in node order";
  return "";
}
bool nvls_tree_nccl_placement(const GroupShape& g) { return g.nvls_all_nodes && g.nodes > 1 && g.ranks_per_node > 0; }

}  // namespace ccsim::planner::detail
