#include "planner/algorithms/algorithms.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "planner/algorithms/registry.hpp"

namespace ccsim::planner {

using models::Collective;

std::string_view to_string(Algorithm a) { return algorithm_entry(a).name; }

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> out;
    for (const AlgorithmEntry& e : registry())
      if (e.selection == Selection::Library) out.push_back(e.algorithm);
    return out;
  }();
  return all;
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  // Case-insensitive, as NCCL_ALGO is (tuning.cc parseList compares with strcasecmp): "Ring",
  // "NVLS", "PAT" and "Tree" are NCCL's spellings of ring, nvls, pat and tree.
  const auto same = [s](std::string_view name) {
    return name.size() == s.size() && std::equal(name.begin(), name.end(), s.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (Algorithm a : all_algorithms())
    if (same(to_string(a))) return a;
  for (Algorithm a : all_algorithms()) {
    const auto& aliases = algorithm_entry(a).aliases;
    if (std::any_of(aliases.begin(), aliases.end(), same)) return a;
  }
  return std::nullopt;
}

std::string unsupported_reason(Algorithm a, const AlgorithmRequest& r) {
  const Collective c = r.collective;
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
  return algorithm_entry(a).refusal(r);
}

bool shape_independent_of_size(Algorithm a, const AlgorithmRequest& x, const AlgorithmRequest& y) {
  if (!algorithm_entry(a).shape_fixed) return false;
  return x.collective == y.collective && x.nranks == y.nranks && x.root == y.root && x.element_size == y.element_size &&
         x.channels == y.channels && x.pipeline_chunks == y.pipeline_chunks && x.chunk_bytes == y.chunk_bytes && x.ranks_per_node == y.ranks_per_node &&
         x.granularity == y.granularity && x.max_ops == y.max_ops && x.ring_orders == y.ring_orders &&
         x.node_orders == y.node_orders && x.node_groups == y.node_groups && x.tree_heads == y.tree_heads;
}

double estimated_ops(Algorithm a, const AlgorithmRequest& r) {
  const auto estimate = algorithm_entry(a).estimated_ops;
  return estimate == nullptr ? 0 : estimate(r);
}

models::Schedule generate(Algorithm a, const AlgorithmRequest& request) {
  if (const std::string why = unsupported_reason(a, request); !why.empty()) {
    throw std::invalid_argument(std::string(to_string(a)) + " " + std::string(models::to_string(request.collective)) +
                                " on " + std::to_string(request.nranks) + " ranks: " + why);
  }
  return algorithm_entry(a).generate(request);
}

}  // namespace ccsim::planner
