// Hierarchical AllReduce: intra-node ring ReduceScatter, then an AllReduce of each rank's
// reduced chunk across nodes among the ranks with the same local index (one rail each), then
// an intra-node ring AllGather, pipelined over chunks. Ranks are node-major: rank = node × L + local.

#include <numeric>

#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {

void hierarchical(Builder& b) {
  const int n = b.nranks();
  const int per_node = b.request().ranks_per_node;
  const int nodes = n / per_node;
  std::vector<int> identity(static_cast<std::size_t>(per_node));
  std::iota(identity.begin(), identity.end(), 0);
  const auto& node_orders = b.request().node_orders;
  // Pipelined: the channel's data goes through the three phases in chunks; a rank starts a
  // chunk's intra-node ReduceScatter once the previous chunk's has finished, so chunk k's
  // inter-node AllReduce overlaps chunk k+1's ReduceScatter (as NCCL's tree pipelines).
  const int chunks = b.request().pipeline_chunks;
  for (int c = 0; c < b.request().channels; ++c) {
    // The channel's intra-node ring order (the same on every node, so the ranks of one local
    // index hold the same chunk and form one rail ring).
    const std::vector<int>& local_order = node_orders.empty() ? identity : node_orders[static_cast<std::size_t>(c) % node_orders.size()];
    std::vector<std::vector<int>> node_members(static_cast<std::size_t>(nodes)), rail_members(static_cast<std::size_t>(per_node));
    for (int node = 0; node < nodes; ++node)
      for (int l : local_order) node_members[static_cast<std::size_t>(node)].push_back(node * per_node + l);
    for (int pos = 0; pos < per_node; ++pos)
      for (int node = 0; node < nodes; ++node) rail_members[static_cast<std::size_t>(pos)].push_back(node * per_node + local_order[static_cast<std::size_t>(pos)]);
    const Range channel_region = part({0, b.request().bytes}, b.element_size(), b.request().channels, c);
    std::vector<std::uint32_t> rs_done(static_cast<std::size_t>(n), kNone);
    for (int k = 0; k < chunks; ++k) {
      const Range region = part(channel_region, b.element_size(), chunks, k);
      std::vector<std::uint32_t> last(rs_done);
      const auto gather = [&](const std::vector<int>& members) {
        std::vector<std::uint32_t> entry;
        for (int r : members) entry.push_back(last[static_cast<std::size_t>(r)]);
        return entry;
      };
      const auto scatter = [&](const std::vector<int>& members, const std::vector<std::uint32_t>& exit) {
        for (std::size_t i = 0; i < members.size(); ++i) last[static_cast<std::size_t>(members[i])] = exit[i];
      };
      for (const auto& m : node_members) scatter(m, ring_reduce_scatter(b, m, region, BufferKind::Input, c, gather(m)));
      rs_done = last;
      for (int pos = 0; pos < per_node; ++pos) {
        // After the intra-node ReduceScatter the rank at ring position pos holds chunk (pos + 1) mod L.
        const Range piece = part(region, b.element_size(), per_node, (pos + 1) % per_node);
        const auto& m = rail_members[static_cast<std::size_t>(pos)];
        scatter(m, ring_reduce_scatter(b, m, piece, BufferKind::Output, c, gather(m)));
        scatter(m, ring_all_gather(b, m, piece, c, gather(m)));
      }
      // The intra-node AllGather runs on its own connections (channel c + channels): a
      // connection delivers in order (sim/execution/execution_graph.hpp), and on the ReduceScatter's
      // connections chunk k's AllGather would hold back chunk k+1's ReduceScatter.
      const int gather_channel = c + b.request().channels;
      for (const auto& m : node_members) scatter(m, ring_all_gather(b, m, region, gather_channel, gather(m)));
    }
  }
}

std::string hierarchical_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AllReduce) return "hierarchical implements AllReduce";
  if (r.ranks_per_node < 1 || r.nranks % r.ranks_per_node != 0) {
    return "hierarchical needs the same number of ranks on every node, in node order (tree handles unequal nodes)";
  }
  return {};
}

}  // namespace ccsim::planner::detail
