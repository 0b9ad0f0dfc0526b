#include "planner/algorithms/registry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner {

namespace {

using models::Collective;
using models::Granularity;

/// The Schedule of a generator that fills a Builder named after its entry.
template <Algorithm A, void (*Build)(detail::Builder&)>
models::Schedule built(const AlgorithmRequest& request) {
  detail::Builder b(request, std::string(to_string(A)));
  Build(b);
  return b.take();
}

constexpr EnumSet<Protocol> kAllProtocols{Protocol::LL, Protocol::LL128, Protocol::Simple};
constexpr EnumSet<Protocol> kSimple{Protocol::Simple};
constexpr EnumSet<Granularity> kStep{Granularity::Step};
constexpr EnumSet<Granularity> kStepAndPhase{Granularity::Step, Granularity::Phase};

/// NCCL's pipelined algorithms.
void add_ring_and_tree(std::vector<AlgorithmEntry>& r) {
  r.push_back({.algorithm = Algorithm::Ring,
               .name = "ring",
               .collectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                               Collective::Reduce},
               .protocols = kAllProtocols,
               .granularities = kStepAndPhase,  // Broadcast and Reduce chains: Step only (ring_refusal)
               .cost_table = "ring",
               .capped = true,
               .nccl_collectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                    Collective::Broadcast, Collective::Reduce},
               .channels = ChannelUse::Rings,
               .shape_fixed = true,
               .refusal = detail::ring_refusal,
               .estimated_ops = detail::ring_ops,
               .generate = built<Algorithm::Ring, detail::ring>});
  r.push_back({.algorithm = Algorithm::Tree,
               .name = "tree",
               .collectives = {Collective::AllReduce},
               .protocols = kAllProtocols,
               .granularities = kStepAndPhase,
               .preferred_granularity = Granularity::Phase,
               .cost_table = "tree",
               .capped = true,
               .nccl_collectives = {Collective::AllReduce},
               .nccl_auto = detail::tree_nccl_auto,  // across nodes (tree.cpp says why)
               .channels = ChannelUse::TreePairs,
               .shape_fixed = true,
               .refusal = detail::tree_refusal,
               .generate = built<Algorithm::Tree, detail::tree>});
}

/// The classic MPI algorithms (Thakur, Rabenseifner, Gropp 2005; Bruck et al. 1997), and
/// point-to-point exchanges.
void add_exchanges(std::vector<AlgorithmEntry>& r) {
  r.push_back({.algorithm = Algorithm::HalvingDoubling,
               .name = "halving-doubling",
               .aliases = {"rabenseifner"},
               .collectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather},
               .protocols = kAllProtocols,
               .granularities = kStep,
               .refusal = detail::halving_doubling_refusal,
               .generate = built<Algorithm::HalvingDoubling, detail::halving_doubling>});
  r.push_back({.algorithm = Algorithm::RecursiveDoubling,
               .name = "recursive-doubling",
               .collectives = {Collective::AllReduce, Collective::AllGather},
               .protocols = kAllProtocols,
               .granularities = kStep,
               .refusal = detail::recursive_doubling_refusal,
               .generate = built<Algorithm::RecursiveDoubling, detail::recursive_doubling>});
  r.push_back({.algorithm = Algorithm::Bruck,
               .name = "bruck",
               .collectives = {Collective::AllGather, Collective::AlltoAll},
               .protocols = kAllProtocols,
               .granularities = kStep,
               .refusal = detail::bruck_refusal,
               .estimated_ops = detail::bruck_ops,
               .generate = built<Algorithm::Bruck, detail::bruck>});
  r.push_back({.algorithm = Algorithm::Direct,
               .name = "direct",
               .collectives = {Collective::AlltoAll, Collective::AllGather, Collective::SendRecv},
               .protocols = kSimple,
               .granularities = kStepAndPhase,
               .nccl_collectives = {Collective::AlltoAll, Collective::SendRecv},
               .shape_fixed = true,
               .refusal = detail::direct_refusal,
               .estimated_ops = detail::direct_ops,
               .generate = built<Algorithm::Direct, detail::direct>});
  r.push_back({.algorithm = Algorithm::Pairwise,
               .name = "pairwise",
               .collectives = {Collective::AlltoAll},
               .protocols = kSimple,
               .granularities = kStep,
               .refusal = detail::pairwise_refusal,
               .estimated_ops = detail::pairwise_ops,
               .generate = built<Algorithm::Pairwise, detail::pairwise>});
}

/// The algorithms built on the node: ccsim's hierarchical AllReduce, NVLS, NVLS-tree.
void add_node_algorithms(std::vector<AlgorithmEntry>& r) {
  // ccsim's hierarchical AllReduce is not NCCL's: it runs only when asked for.
  r.push_back({.algorithm = Algorithm::Hierarchical,
               .name = "hierarchical",
               .collectives = {Collective::AllReduce},
               .protocols = kAllProtocols,
               .granularities = kStepAndPhase,
               .channels = ChannelUse::NodeRings,
               // About 4 ops per intra-node ring step.
               .chunk_ops = 2,
               .chunk_ops_per_node_rank = true,
               .shape_fixed = true,
               .refusal = detail::hierarchical_refusal,
               .generate = built<Algorithm::Hierarchical, detail::hierarchical>});
  r.push_back({.algorithm = Algorithm::Nvls,
               .name = "nvls",
               .collectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather},
               .protocols = kSimple,
               .granularities = kStep,
               .cost_table = "nvls",
               .nccl_collectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather},
               .placement_refusal = detail::nvls_placement_refusal,
               .nccl_placement = detail::nvls_nccl_placement,
               .nvls = true,
               .shape_fixed = true,
               .refusal = detail::nvls_refusal,
               .generate = built<Algorithm::Nvls, detail::nvls>});
  r.push_back({.algorithm = Algorithm::NvlsTree,
               .name = "nvls-tree",
               .aliases = {"nvlstree"},  // NCCL_ALGO's NVLSTree
               .collectives = {Collective::AllReduce},
               .protocols = kSimple,
               .granularities = kStep,
               .cost_table = "nvls-tree",
               .nccl_collectives = {Collective::AllReduce},
               .placement_refusal = detail::nvls_tree_placement_refusal,
               .nccl_placement = detail::nvls_tree_nccl_placement,
               .nvls = true,
               // No phase granularity and about 3 ops per rank per part and chunk.
               .chunk_ops = 4,
               .shape_fixed = true,
               .refusal = detail::nvls_tree_refusal,
               .generate = built<Algorithm::NvlsTree, detail::nvls_tree>});
  // NCCL's PAT (2.23+): AllGather and ReduceScatter with one rank per node, Simple only
  // (tuning.cc: PAT with any other protocol is skipped).
  r.push_back({.algorithm = Algorithm::Pat,
               .name = "pat",
               .collectives = {Collective::AllGather, Collective::ReduceScatter},
               .protocols = kSimple,
               .granularities = kStepAndPhase,
               .cost_table = "pat",
               .nccl_collectives = {Collective::AllGather, Collective::ReduceScatter},
               .placement_refusal = detail::pat_placement_refusal,
               .nccl_placement = detail::pat_nccl_placement,
               .refusal = detail::pat_refusal,
               .estimated_ops = detail::pat_ops,
               .generate = built<Algorithm::Pat, detail::pat>});
}

/// A framework's own kernels and the point-to-point sends of pipeline parallelism.
void add_kernels_and_p2p(std::vector<AlgorithmEntry>& r) {
  // vLLM's kernels load and store over NVLink / P2P: the Simple figures of the default table,
  // with vLLM's own latencies (scenarios/calibration/serving.yaml).
  r.push_back({.algorithm = Algorithm::VllmOneShot,
               .name = "vllm-oneshot",
               .selection = Selection::Kernel,
               .collectives = {Collective::AllReduce},
               .protocols = kSimple,
               .granularities = kStep,
               .refusal = detail::vllm_one_shot_refusal,
               .estimated_ops = detail::vllm_one_shot_ops,
               .generate = detail::vllm_one_shot});
  r.push_back({.algorithm = Algorithm::VllmTwoShot,
               .name = "vllm-twoshot",
               .selection = Selection::Kernel,
               .collectives = {Collective::AllReduce},
               .protocols = kSimple,
               .granularities = kStep,
               .refusal = detail::vllm_two_shot_refusal,
               .estimated_ops = detail::vllm_two_shot_ops,
               .generate = detail::vllm_two_shot});
  r.push_back({.algorithm = Algorithm::P2p,
               .name = "p2p",
               .selection = Selection::PointToPoint,
               .collectives = {Collective::SendRecv},
               .protocols = kSimple,
               .granularities = kStep,
               .refusal = detail::p2p_refusal,
               .generate = built<Algorithm::P2p, detail::p2p>});
}

std::string synthesized_refusal(const AlgorithmRequest&) {
  return "a synthesized schedule is given whole (ccsim synthesize, or an MSCCL XML file with --algo synth:FILE), not generated";
}

models::Schedule synthesized_generate(const AlgorithmRequest& r) { throw std::invalid_argument(synthesized_refusal(r)); }

/// Schedules given whole (planner/synthesis): costed with the default row and Simple, as MSCCL
/// runs its interpreted schedules on NCCL's Simple protocol primitives.
void add_synthesized(std::vector<AlgorithmEntry>& r) {
  r.push_back({.algorithm = Algorithm::Synthesized,
               .name = "synthesized",
               .selection = Selection::Synthesized,
               .collectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                               Collective::Reduce, Collective::AlltoAll},
               .protocols = kSimple,
               .granularities = kStep,
               .refusal = synthesized_refusal,
               .generate = synthesized_generate});
}

std::vector<AlgorithmEntry> make_registry() {
  std::vector<AlgorithmEntry> r;
  add_ring_and_tree(r);
  add_exchanges(r);
  add_node_algorithms(r);
  add_kernels_and_p2p(r);
  add_synthesized(r);
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (static_cast<std::size_t>(r[i].algorithm) != i || r[i].refusal == nullptr || r[i].generate == nullptr) {
      throw std::logic_error("algorithm registry: entry " + std::to_string(i) + " (" + std::string(r[i].name) +
                             ") is out of order or lacks its refusal or generator");
    }
  }
  return r;
}

}  // namespace

const std::vector<AlgorithmEntry>& registry() {
  static const std::vector<AlgorithmEntry> entries = make_registry();
  return entries;
}

const AlgorithmEntry& algorithm_entry(Algorithm a) {
  const auto& entries = registry();
  const auto i = static_cast<std::size_t>(a);
  if (i >= entries.size()) throw std::logic_error("algorithm " + std::to_string(i) + " has no registry entry");
  return entries[i];
}

const std::vector<std::string_view>& algorithm_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const AlgorithmEntry& e : registry())
      if (e.selection == Selection::Library) out.push_back(e.name);
    return out;
  }();
  return names;
}

const std::vector<std::string_view>& cost_table_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const AlgorithmEntry& e : registry())
      if (e.cost_table != "default" && std::find(out.begin(), out.end(), e.cost_table) == out.end()) out.push_back(e.cost_table);
    out.push_back("default");
    return out;
  }();
  return names;
}

const std::vector<std::string_view>& nvls_cost_tables() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const AlgorithmEntry& e : registry())
      if (e.nvls && std::find(out.begin(), out.end(), e.cost_table) == out.end()) out.push_back(e.cost_table);
    return out;
  }();
  return names;
}

}  // namespace ccsim::planner
