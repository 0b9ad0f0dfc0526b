#include "planner/algorithms/algorithms.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "planner/algorithms/builder.hpp"

namespace ccsim::planner {

using models::Collective;

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::HalvingDoubling: return "halving-doubling";
    case Algorithm::RecursiveDoubling: return "recursive-doubling";
    case Algorithm::Bruck: return "bruck";
    case Algorithm::Direct: return "direct";
    case Algorithm::Pairwise: return "pairwise";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::Nvls: return "nvls";
    case Algorithm::NvlsTree: return "nvls-tree";
  }
  return "?";
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all{Algorithm::Ring,         Algorithm::Tree,   Algorithm::HalvingDoubling,
                                          Algorithm::RecursiveDoubling, Algorithm::Bruck, Algorithm::Direct,
                                          Algorithm::Pairwise,     Algorithm::Hierarchical, Algorithm::Nvls,
                                          Algorithm::NvlsTree};
  return all;
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  for (Algorithm a : all_algorithms())
    if (to_string(a) == s) return a;
  if (s == "rabenseifner") return Algorithm::HalvingDoubling;
  return std::nullopt;
}

namespace {
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace

std::string unsupported_reason(Algorithm a, const AlgorithmRequest& r) {
  const Collective c = r.collective;
  const std::string name(to_string(a));
  const std::string coll(models::to_string(c));
  if (r.nranks < 1) return "needs at least one rank";
  if (r.element_size == 0 || r.bytes % r.element_size != 0) return "the size must be a whole number of elements";
  if ((c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::AlltoAll) &&
      r.bytes % (static_cast<std::uint64_t>(r.nranks) * r.element_size) != 0) {
    return coll + " needs a size that is a multiple of ranks × element size";
  }
  if (r.root < 0 || r.root >= r.nranks) return "root outside the ranks";
  if (r.channels < 1 || r.pipeline_chunks < 1) return "channels and pipeline chunks must be at least 1";
  for (const auto& order : r.ring_orders) {
    std::vector<int> sorted(order);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int>(i)) return "a ring order is not a permutation of the ranks";
    if (static_cast<int>(order.size()) != r.nranks) return "a ring order is not a permutation of the ranks";
  }
  const bool phase = r.granularity == models::Granularity::Phase;
  switch (a) {
    case Algorithm::Ring:
      if (c == Collective::AlltoAll || c == Collective::SendRecv) return "ring does not implement " + coll;
      if (phase && (c == Collective::Broadcast || c == Collective::Reduce)) return "ring chains have no phase granularity";
      return {};
    case Algorithm::Tree:
      if (c != Collective::AllReduce) return "tree implements AllReduce only (as in NCCL)";
      return {};
    case Algorithm::HalvingDoubling:
      if (c == Collective::AllReduce) return phase ? "halving-doubling has no phase granularity" : "";
      if ((c == Collective::ReduceScatter || c == Collective::AllGather) && power_of_two(r.nranks)) {
        return phase ? "halving-doubling has no phase granularity" : "";
      }
      return "halving-doubling implements AllReduce, and ReduceScatter/AllGather on powers of two";
    case Algorithm::RecursiveDoubling:
      if (c != Collective::AllReduce && c != Collective::AllGather) return "recursive doubling implements AllReduce and AllGather";
      return phase ? "recursive doubling has no phase granularity" : "";
    case Algorithm::Bruck:
      if (c != Collective::AllGather && c != Collective::AlltoAll) return "bruck implements AllGather and AlltoAll";
      return phase ? "bruck has no phase granularity" : "";
    case Algorithm::Direct:
      if (c != Collective::AlltoAll && c != Collective::AllGather && c != Collective::SendRecv) {
        return "direct implements AlltoAll, AllGather and SendRecv";
      }
      return {};
    case Algorithm::Pairwise:
      if (c != Collective::AlltoAll) return "pairwise implements AlltoAll";
      return phase ? "pairwise has no phase granularity" : "";
    case Algorithm::Hierarchical:
      if (c != Collective::AllReduce) return "hierarchical implements AllReduce";
      if (r.ranks_per_node < 1 || r.nranks % r.ranks_per_node != 0) {
        return "hierarchical needs the same number of ranks on every node, in node order (tree handles unequal nodes)";
      }
      return {};
    case Algorithm::Nvls:
      if (c != Collective::AllReduce && c != Collective::ReduceScatter && c != Collective::AllGather) {
        return "nvls implements AllReduce, ReduceScatter and AllGather";
      }
      return phase ? "nvls has no phase granularity" : "";
    case Algorithm::NvlsTree:
      if (c != Collective::AllReduce) return "nvls-tree implements AllReduce";
      if (r.ranks_per_node < 1 || r.nranks % r.ranks_per_node != 0) {
        return "nvls-tree needs the same number of ranks on every node, in node order";
      }
      return phase ? "nvls-tree has no phase granularity" : "";
  }
  return "unknown algorithm";
}

bool shape_independent_of_size(Algorithm a, const AlgorithmRequest& x, const AlgorithmRequest& y) {
  switch (a) {
    case Algorithm::Ring:
    case Algorithm::Tree:
    case Algorithm::Nvls:
    case Algorithm::NvlsTree:
    case Algorithm::Direct:
    case Algorithm::Hierarchical: break;
    default: return false;
  }
  return x.collective == y.collective && x.nranks == y.nranks && x.root == y.root && x.element_size == y.element_size &&
         x.channels == y.channels && x.pipeline_chunks == y.pipeline_chunks && x.ranks_per_node == y.ranks_per_node &&
         x.granularity == y.granularity && x.max_ops == y.max_ops && x.ring_orders == y.ring_orders &&
         x.node_orders == y.node_orders && x.node_groups == y.node_groups && x.tree_heads == y.tree_heads;
}

double estimated_ops(Algorithm a, const AlgorithmRequest& r) {
  const double n = r.nranks;
  const double ch = r.channels;
  const Collective c = r.collective;
  switch (a) {
    case Algorithm::Direct:  // one copy per rank, a send and a receive per ordered pair
      return c == Collective::SendRecv ? 2 * n : n + 2 * n * (n - 1);
    case Algorithm::Pairwise:  // one copy, then per step a send, a receive and a join
      return n + 3 * n * (n - 1);
    case Algorithm::Bruck: {
      // AllGather: a copy in, per step a send, a receive and a join, n copies out.
      // AlltoAll: n copies in, per step d the blocks with bit d set packed and unpacked
      // (2 copies each) around a send, a receive and a join, n copies out.
      double per_rank = 2 * n;
      for (int d = 1; d < r.nranks; d *= 2) {
        if (c == Collective::AllGather) {
          per_rank += 3;
          continue;
        }
        double moving = 0;  // indices in [0, n) with bit d set
        const double period = 2.0 * d;
        moving += std::floor(n / period) * d + std::max(0.0, std::fmod(n, period) - d);
        per_rank += 3 + 2 * moving;
      }
      return c == Collective::AllGather ? n * (per_rank - n + 1) : n * per_rank;
    }
    case Algorithm::Ring:
      if (r.granularity != models::Granularity::Step || n < 2) return 0;
      // Per channel, rank and step a send and a receive; AllReduce has two passes.
      if (c == Collective::AllReduce) return ch * n * 4 * (n - 1);
      if (c == Collective::ReduceScatter || c == Collective::AllGather) return ch * n * 2 * (n - 1);
      return 0;
    default: return 0;
  }
}

models::Schedule generate(Algorithm a, const AlgorithmRequest& request) {
  if (const std::string why = unsupported_reason(a, request); !why.empty()) {
    throw std::invalid_argument(std::string(to_string(a)) + " " + std::string(models::to_string(request.collective)) +
                                " on " + std::to_string(request.nranks) + " ranks: " + why);
  }
  detail::Builder b(request, std::string(to_string(a)));
  switch (a) {
    case Algorithm::Ring: detail::ring(b); break;
    case Algorithm::Tree: detail::tree(b); break;
    case Algorithm::HalvingDoubling: detail::halving_doubling(b); break;
    case Algorithm::RecursiveDoubling: detail::recursive_doubling(b); break;
    case Algorithm::Bruck: detail::bruck(b); break;
    case Algorithm::Direct: detail::direct(b); break;
    case Algorithm::Pairwise: detail::pairwise(b); break;
    case Algorithm::Hierarchical: detail::hierarchical(b); break;
    case Algorithm::Nvls: detail::nvls(b); break;
    case Algorithm::NvlsTree: detail::nvls_tree(b); break;
  }
  return b.take();
}

}  // namespace ccsim::planner
