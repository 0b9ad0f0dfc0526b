// Hierarchical AllReduce: intra-node ring ReduceScatter, then an AllReduce of each rank's
// reduced chunk across nodes among the ranks with the same local index (one rail each), then
// an intra-node ring AllGather, pipelined over chunks. Ranks are node-major: rank = node × L + local.

#include <numeric>

#include "planner/algorithms/builder.hpp"

namespace ccsim::planner::detail {

void hierarchical(Builder& b) {
  const int n = b.nranks();
  const int per_node = b.request().ranks_per_node;
  const int nodes = n / per_node;
  std::vector<std::vector<int>> node_members(static_cast<std::size_t>(nodes)), rail_members(static_cast<std::size_t>(per_node));
  for (int node = 0; node < nodes; ++node)
    for (int l = 0; l < per_node; ++l) {
      node_members[static_cast<std::size_t>(node)].push_back(node * per_node + l);
      rail_members[static_cast<std::size_t>(l)].push_back(node * per_node + l);
    }
  // Pipelined: the channel's data goes through the three phases in chunks; a rank starts a
  // chunk's intra-node ReduceScatter once the previous chunk's has finished, so chunk k's
  // inter-node AllReduce overlaps chunk k+1's ReduceScatter (as NCCL's tree pipelines).
  const int chunks = b.request().pipeline_chunks;
  for (int c = 0; c < b.request().channels; ++c) {
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
      for (int l = 0; l < per_node; ++l) {
        // After the intra-node ReduceScatter local rank l holds chunk (l + 1) mod L.
        const Range piece = part(region, b.element_size(), per_node, (l + 1) % per_node);
        const auto& m = rail_members[static_cast<std::size_t>(l)];
        scatter(m, ring_reduce_scatter(b, m, piece, BufferKind::Output, c, gather(m)));
        scatter(m, ring_all_gather(b, m, piece, c, gather(m)));
      }
      for (const auto& m : node_members) scatter(m, ring_all_gather(b, m, region, c, gather(m)));
    }
  }
}

}  // namespace ccsim::planner::detail
