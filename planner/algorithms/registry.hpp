#pragma once
// The algorithm registry: one entry per algorithm, the one place that says what an algorithm
// is called, what it implements, how NCCL's tuner treats it, which figures of the cost table it
// takes and which generator builds its Schedule. The generic functions (algorithms.hpp), the
// cost model and its calibration groups, the NCCL policy, the collective planner, the command
// line's option parsing and the scenario's strategy.algorithms check all read it.
//
// Adding an algorithm: its generator file (the build, its refusal, when its size grows with
// ranks² its op estimate, and when it needs a particular placement its placement rules over
// GroupShape; declared in generators.hpp and listed in planner/CMakeLists.txt), its Algorithm
// value (algorithms.hpp, before the framework kernels) and its entry in registry.cpp. The
// entry's cost_table names its row in the cost tables (scenarios/calibration/nccl.yaml); without
// one it is costed with the `default` row.
//
//   ring               AllReduce, ReduceScatter, AllGather, Broadcast, Reduce; multi-channel
//   tree               AllReduce as NCCL's Tree: a chain inside each node, a double binary tree
//                      over the nodes (two trees, half the data each); one pair per channel
//   halving-doubling   AllReduce (Rabenseifner: recursive-halving ReduceScatter + recursive-
//                      doubling AllGather, any rank count); ReduceScatter, AllGather (powers of 2)
//   recursive-doubling AllReduce, AllGather (any rank count)
//   bruck              AllGather, AlltoAll
//   direct             AlltoAll, AllGather, SendRecv (every pair at once)
//   pairwise           AlltoAll (n−1 exchange steps)
//   hierarchical       AllReduce: intra-node ReduceScatter → inter-node AllReduce per rail →
//                      intra-node AllGather (ranks node-major, `ranks_per_node` each)
//   nvls               AllReduce, ReduceScatter, AllGather through NVSwitch in-switch reduction
//                      and multicast (one NVLink domain)
//   nvls-tree          AllReduce across nodes: NVLS inside each node, a double binary tree per
//                      rail across nodes (NCCL's NVLSTree)
//   pat                AllGather, ReduceScatter as NCCL's PAT: binomial trees over the distances
//                      2^d, farthest first, blocks aggregated per message (one rank per node)
//   vllm-oneshot       vLLM's one-stage custom all-reduce kernel inside a node (vllm_allreduce.hpp)
//   vllm-twoshot       vLLM's two-stage custom all-reduce kernel inside a node (vllm_allreduce.hpp)
//   p2p                point-to-point sends (pipeline parallelism): rank 2i sends its input to
//                      rank 2i+1 (NCCL's p2p with the Simple protocol)
//   synthesized        a Schedule given whole: ForestColl trees from `ccsim synthesize`, or an
//                      MSCCL XML file (--algo synth:FILE); its entry carries the costs (the
//                      default row, Simple), its generator refuses every request

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/collective/schedule.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/protocol.hpp"

namespace ccsim::planner {

/// A set of values of a small enum class (at most 32 values), by bit.
template <class E>
class EnumSet {
 public:
  constexpr EnumSet() = default;
  constexpr EnumSet(std::initializer_list<E> items) {
    for (E e : items) bits_ |= bit(e);
  }
  constexpr bool contains(E e) const { return (bits_ & bit(e)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr void insert(E e) { bits_ |= bit(e); }
  constexpr void erase(E e) { bits_ &= ~bit(e); }
  constexpr bool operator==(const EnumSet&) const = default;

 private:
  static constexpr std::uint32_t bit(E e) { return std::uint32_t{1} << static_cast<unsigned>(e); }
  std::uint32_t bits_ = 0;
};

/// Who chooses the algorithm.
enum class Selection : std::uint8_t {
  Library,       ///< a collective library's algorithm: `--algo`, strategy.algorithms and the NCCL policy name it
  Kernel,        ///< a framework's own kernel (vLLM's custom all-reduce), chosen by the framework's rule
  PointToPoint,  ///< point-to-point sends (pipeline parallelism): not a collective choice
  Synthesized,   ///< a schedule synthesized for the fabric or imported from MSCCL XML (planner/synthesis): given, not generated
};

/// Where a group's ranks are, as far as an algorithm's placement rule asks: what NCCL's tuner
/// knows of a group when it picks an algorithm (planner/tuning/nccl_policy.hpp nccl_group
/// builds it from the cluster).
struct GroupShape {
  models::Collective collective = models::Collective::AllReduce;
  int ranks = 1;
  int nodes = 1;           ///< nodes the ranks span
  int ranks_per_node = 0;  ///< ranks on every node when equal and node-major, else 0 (ChannelPlan)
  bool nvls_all_nodes = false;   ///< every node of the ranks has an NVSwitch with NVLink SHARP (gen3+)
  bool nvls_one_domain = false;  ///< nvls_all_nodes, and the ranks are on one node
};

/// Which parts of the ChannelPlan (planner/collective/channel_plan.hpp) the generator reads.
enum class ChannelUse : std::uint8_t {
  One,        ///< one channel
  Rings,      ///< the ring channels and their ring orders
  TreePairs,  ///< the tree pairs and their heads, the ranks of each node and the searched node rings
  NodeRings,  ///< the searched rings of a direct-link node as the intra-node rings, one channel each
};

struct AlgorithmEntry {
  Algorithm algorithm = Algorithm::Ring;
  std::string_view name;                   ///< what to_string() gives and the outputs print
  std::vector<std::string_view> aliases{};  ///< other names parse_algorithm() accepts
  Selection selection = Selection::Library;
  /// The collectives the generator implements (on rank counts and node shapes its refusal allows).
  EnumSet<models::Collective> collectives{};
  /// The protocols an automatic choice runs it with (NCCL runs NVLS and point-to-point with
  /// Simple only); an explicit --protocol may pick any protocol the cost table has figures for.
  EnumSet<Protocol> protocols{};
  /// The granularities the generator builds (Step always: the data-exact form).
  EnumSet<models::Granularity> granularities{};
  /// Granularity of an automatic choice below the planner's size thresholds (nccl_policy.hpp):
  /// Phase for NCCL's Tree, whose pipeline is as deep as the chains and the tree together, so the
  /// step form's bounded chunk count would undercount its pipelining (tree.cpp: the fluid limit
  /// of the pipelined tree).
  models::Granularity preferred_granularity = models::Granularity::Step;
  /// The `algorithms:` key of the cost table (scenarios/calibration/nccl.yaml) whose figures it
  /// takes: "ring", "tree", "nvls", "nvls-tree", or "default" for the algorithms without their own.
  std::string_view cost_table = "default";
  /// Whether the table's bandwidth_caps apply (NCCL caps Ring and Tree throughput per channel
  /// or per rank: tuning.cc llMaxBws, perChMaxRingLL128Bw, perChMaxTreeBw).
  bool capped = false;
  /// The collectives NCCL's tuner considers it for (empty: NCCL never picks it; it runs only
  /// when asked for), when its placement holds (nccl_policy.hpp).
  EnumSet<models::Collective> nccl_collectives{};
  /// What it needs of the placement beyond what its generator checks: why it cannot run on a
  /// group placed as `g` when asked for explicitly, or empty; null: any placement will do.
  std::string (*placement_refusal)(const GroupShape& g) = nullptr;
  /// Whether NCCL's tuner considers it for a group placed as `g` (its collective in
  /// nccl_collectives as well); null: any placement.
  bool (*nccl_placement)(const GroupShape& g) = nullptr;
  /// Whether NCCL's tuner, choosing on its own, can prefer it for a group placed as `g` where
  /// it is enabled (nccl_placement); null: wherever it is enabled. An NCCL_ALGO list naming it
  /// still enables it (Tree inside one node).
  bool (*nccl_auto)(const GroupShape& g) = nullptr;
  /// Whether it runs on NVLink SHARP (its cost table is one of nvls_cost_tables()).
  bool nvls = false;
  ChannelUse channels = ChannelUse::One;
  /// Ops per rank, channel and pipeline chunk relative to a ring's, for the planner's chunk
  /// budget (schedule_limits.hpp), times the ranks per node when chunk_ops_per_node_rank.
  int chunk_ops = 1;
  bool chunk_ops_per_node_rank = false;
  /// Whether the structure of its Schedule never depends on the size (shape_independent_of_size).
  bool shape_fixed = false;
  /// Why the generator cannot build `request`, after the checks every algorithm shares
  /// (unsupported_reason); empty when it can.
  std::string (*refusal)(const AlgorithmRequest& request) = nullptr;
  /// The ops generate() makes, in closed form (estimated_ops); null where the size grows at most
  /// linearly with the ranks (the generator's limit guards it).
  double (*estimated_ops)(const AlgorithmRequest& request) = nullptr;
  /// Builds the Schedule of a request its refusal accepts.
  models::Schedule (*generate)(const AlgorithmRequest& request) = nullptr;
};

/// Every entry, in registry order (the order of the Algorithm values).
const std::vector<AlgorithmEntry>& registry();
/// The entry of `a`.
const AlgorithmEntry& algorithm_entry(Algorithm a);
/// The names of the library algorithms (Selection::Library), in registry order: what a
/// scenario's strategy.algorithms may give besides "auto", and what `--algo` lists.
const std::vector<std::string_view>& algorithm_names();
/// The `algorithms:` keys of a cost table: every entry's cost_table once, in registry order,
/// "default" last.
const std::vector<std::string_view>& cost_table_names();
/// The cost tables of the NVLS algorithms (needs OneNvlsDomain or NvlsNodes), in registry
/// order: their Simple bandwidth factor is NCCL's nvlsEfficiency, keyed by architecture family.
const std::vector<std::string_view>& nvls_cost_tables();

}  // namespace ccsim::planner
