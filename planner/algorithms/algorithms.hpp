#pragma once
// Collective algorithms: each turns a request into a Schedule (models/collective/schedule.hpp).
// What each algorithm is, implements and needs is its entry in the registry
// (planner/algorithms/registry.hpp); the functions here are the generic front of it: names,
// the common request checks, the size estimate and generation.
//
// Non-powers of two (recursive algorithms) use the standard fold: the first n − 2^⌊log2 n⌋
// ranks above the power of two hand their data to a partner first and get the result last
// (Thakur, Rabenseifner, Gropp, "Optimization of Collective Communication Operations in
// MPICH", IJHPCA 2005). The double binary tree follows Sanders, Speck, Träff (2009) as NCCL
// implements it (NCCL 2.4).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "support/input_error.hpp"
#include "models/collective/schedule.hpp"

namespace ccsim::planner {

/// The registry's algorithms, in registry order (registry.hpp has one entry per value).
/// Those before VllmOneShot are the collective library's (Selection::Library: `--algo` and a
/// scenario's strategy.algorithms name them; a new library algorithm goes there); VllmOneShot
/// and VllmTwoShot are vLLM's custom all-reduce kernels, P2p the point-to-point sends of
/// pipeline parallelism, Synthesized a schedule synthesized for the fabric or imported
/// (planner/synthesis: `ccsim synthesize`, `--algo synth:FILE`), which no generator builds.
enum class Algorithm : std::uint8_t {
  Ring, Tree, HalvingDoubling, RecursiveDoubling, Bruck, Direct, Pairwise, Hierarchical, Nvls, NvlsTree, Pat,
  VllmOneShot, VllmTwoShot, P2p, Synthesized
};

/// The entry's name: "ring", "tree", "halving-doubling", ..., "vllm-oneshot", "p2p".
std::string_view to_string(Algorithm a);
/// The library algorithm (Selection::Library) named `s` by its name or an alias
/// ("rabenseifner", NCCL_ALGO's "NVLSTree"), case-insensitive as NCCL_ALGO is ("Ring", "NVLS",
/// "PAT", "Tree"); nullopt for any other text, the kernels and p2p included. NCCL_ALGO's lists
/// and exclusions: nccl_names.hpp.
std::optional<Algorithm> parse_algorithm(std::string_view s);
/// The library algorithms (Selection::Library), in registry order.
const std::vector<Algorithm>& all_algorithms();

struct AlgorithmRequest {
  models::Collective collective = models::Collective::AllReduce;
  int nranks = 1;
  int root = 0;                      ///< Broadcast and Reduce
  std::uint64_t bytes = 0;           ///< nccl-tests size S
  std::uint32_t element_size = 4;    ///< bytes per element
  int channels = 1;                  ///< independent rings / tree pairs, each with 1/channels of the data
  int pipeline_chunks = 1;           ///< chunks per channel for pipelined trees, chains and NVLS
  /// The protocol's pipeline chunk, bytes (the cost table's `protocols:` chunk, NCCL's chunkSize
  /// before its per-algorithm adjustments): PAT sizes its loops and aggregation by it. 0: NCCL's
  /// Simple default, 512 KiB.
  std::uint64_t chunk_bytes = 0;
  int ranks_per_node = 0;            ///< hierarchical: ranks node-major in blocks of this size
  /// Ring order per channel (channel c uses ring_orders[c % size]); each a permutation of the
  /// ranks. Empty: every ring is 0, 1, ..., n−1. The planner uses it to put channels on
  /// different NIC rails or links (as NCCL's multi-channel rings do).
  std::vector<std::vector<int>> ring_orders;
  /// Hierarchical: the order of the local ranks in each channel's intra-node rings (channel c
  /// uses node_orders[c % size]; each a permutation of 0 .. ranks_per_node − 1). Empty: 0, 1, ...
  std::vector<std::vector<int>> node_orders;
  /// Tree: the ranks of each node in local order, when nodes hold different numbers of ranks
  /// (empty: blocks of ranks_per_node, or all ranks on one node when that is 0).
  std::vector<std::vector<int>> node_groups;
  /// Tree: the local index of the head of channel pair c (tree_heads[c % size]), the rank whose
  /// NIC the pair uses. Empty: local c mod L.
  std::vector<int> tree_heads;
  models::Granularity granularity = models::Granularity::Step;
  /// Most ops (sends, receives, local steps, switch legs; all ranks together) the Schedule may
  /// hold: generate() throws ScheduleTooLarge as soon as it would exceed it. 0: no limit.
  std::uint64_t max_ops = 0;
};

/// A schedule over its size limit: an input the tool refuses (the CLI exits with code 2),
/// not a bug. Thrown by generate() (AlgorithmRequest::max_ops) and by the planner's estimate
/// (planner/collective/schedule_limits.hpp). Declared here, with the generators that throw
/// it: algorithms/ is below collective/ and cannot include it.
class ScheduleTooLarge : public support::InputError {
 public:
  using support::InputError::InputError;
};

/// Ops (as counted by AlgorithmRequest::max_ops) that generate(a, request) makes, in closed
/// form, for the schedules whose size grows with ranks² (the entry's op estimate: direct and
/// pairwise with n(n−1) transfers, ring at step granularity with n(n−1) steps per channel and
/// pass, bruck, vLLM's kernels); a double, so 16,384² does not overflow. 0 for the others,
/// whose size the generator's limit guards.
double estimated_ops(Algorithm a, const AlgorithmRequest& request);

/// Why `a` cannot run `request`, or empty when it can: the checks every algorithm shares
/// (ranks, whole elements, per-rank divisibility, root, channels, ring orders), then the
/// entry's own (collective, rank count, granularity, node shape).
std::string unsupported_reason(Algorithm a, const AlgorithmRequest& request);

/// Whether generate(a, x) and generate(a, y) make the same ops (kinds, peers, channels, steps,
/// tags, dependencies, in-switch groups) and differ only in byte counts, each op's bytes
/// non-decreasing in the request's size: true when the requests are equal up to `bytes` (so
/// granularity and pipeline chunks are equal too) and `a` is one whose structure never depends
/// on the size (AlgorithmEntry::shape_fixed: ring, tree, nvls, nvls-tree, direct, hierarchical;
/// not the recursive algorithms, which skip empty transfers, nor bruck and pairwise). Every byte count of those generators is
/// a sum of near-equal element splits (detail::part) of the size, each monotone in it. Exact
/// pruning relies on it: a lower bound at a smaller size bounds the larger one (planner/collective/candidate_bound.hpp).
bool shape_independent_of_size(Algorithm a, const AlgorithmRequest& x, const AlgorithmRequest& y);

/// Generates the Schedule. Throws std::invalid_argument with unsupported_reason() when the
/// algorithm does not apply (collective, rank count, granularity).
models::Schedule generate(Algorithm a, const AlgorithmRequest& request);

}  // namespace ccsim::planner
