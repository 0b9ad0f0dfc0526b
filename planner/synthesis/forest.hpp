#pragma once
// Throughput-optimal AllGather and ReduceScatter trees on any topology with switches: the
// spanning-tree packing of ForestColl (Zhao, Yao, Li, Liu, Zhang, Krishnamurthy et al.,
// "ForestColl: Throughput-Optimal Collective Communications on Heterogeneous Network Fabrics",
// arXiv 2402.06787), written for ccsim's synthesis graph (synthesis_graph.hpp) on Boost.Graph's
// max-flow with exact integer arithmetic.
//
// Capacities are whole units of ForestOptions::unit bytes/s (1 MB/s by default) so that every
// step is exact. With N ranks, x the rate (units/s) at which every root's block leaves it:
//  * optimality: x is feasible iff, with a super-source s feeding every rank at x, the
//    max-flow from s to every rank is at least N·x (Edmonds' arborescence packing theorem); the
//    optimum x* = min over vertex sets S holding a rank but not all of B⁻(S) / |ranks ∉ S|,
//    B⁻(S) the capacity entering S. It is found exactly by Dinkelbach's iteration on that ratio:
//    each failing max-flow's minimum cut gives a strictly smaller ratio, a fraction p/q with
//    q ≤ N − 1, until every rank passes. (ForestColl bisects on U/k instead; the fixed point is
//    the same number.) Only one rank per equivalence class is tested: classes by colour
//    refinement of the graph on its exact capacities (a rank is alike another only when its
//    links, their capacities and everything they reach refine alike), so a degraded link splits
//    the class; up to 256 ranks every rank is checked again at the optimum.
//  * switch removal: with capacities scaled by q and p units per root, each switch w is split
//    off: capacity γ moves from arcs (u,w), (w,t) onto a new arc (u,t) that remembers the switch
//    path, γ the most that keeps the max-flow condition (forced max-flows: the cuts that lose γ
//    are those with w on one side and u, t on the other); Bang-Jensen, Frank and Jackson (1995)
//    show a complete splitting exists when a switch's in- and out-capacity are equal.
//  * tree construction: every root's p units grow as arborescences, one arc at a time, each arc
//    taking the largest multiplicity μ that keeps Lovász's condition (ρ(X) ≥ the trees not yet
//    entering X, for every X), a tree splitting in two when μ is less than its multiplicity.
//    Only cuts holding the new vertex change, so one max-flow to it decides; a failing cut gives
//    the next μ exactly (Newton's step on a piecewise-linear function).
// The trees are throughput-optimal: the fluid time of AllGather of size S is (S/N) / x*, the
// max-flow bound's bandwidth term; they ignore latency (the schedule charges their height).

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/hardware/topology.hpp"
#include "planner/synthesis/synthesis_graph.hpp"

namespace ccsim::planner::synthesis {

struct ForestOptions {
  double unit = 1e6;          ///< bytes per second per capacity unit; bandwidths are rounded to it
  bool build_trees = true;    ///< false: the optimum only (no switch removal, no trees)
  int check_all_up_to = 256;  ///< check every rank (not one per class) at the optimum up to this many ranks
};

struct TreeEdge {
  int parent = 0;                      ///< rank
  int child = 0;                       ///< rank
  std::vector<int> via;                ///< the switch vertices between them, in order
  std::vector<models::LinkId> links;   ///< topology links of the path (empty for a hand-built graph)
};

struct Tree {
  int root = 0;
  std::int64_t weight = 0;       ///< multiplicity: the tree carries weight / Forest::weight_per_root of its root's block
  std::vector<TreeEdge> edges;   ///< every non-root rank once as a child, parents before their children
  int height() const;            ///< edges on the longest root-to-leaf path
};

struct Forest {
  int ranks = 0;
  double unit = 1e6;               ///< bytes per second per capacity unit
  std::int64_t rate_num = 0;       ///< x* = rate_num / rate_den units per second per root
  std::int64_t rate_den = 1;
  std::int64_t weight_per_root = 0;  ///< the sum of one root's tree weights
  std::vector<Tree> trees;         ///< grouped by root, roots in rank order
  std::vector<int> tight_cut;      ///< the ranks inside a set S whose entering capacity is tight
  double tight_bandwidth = 0;      ///< bytes/s entering that set
  int rank_classes = 0;            ///< equivalence classes of ranks tested
  bool every_rank_checked = false; ///< every rank was checked at the optimum (not one per class)
  std::int64_t max_flows = 0;      ///< max-flow computations, for the benchmarks
  double seconds_optimum = 0, seconds_splitting = 0, seconds_packing = 0;  ///< wall time of each step

  /// x*: bytes per second at which every root's block leaves it (AllGather algbw = N·x*).
  double rate() const { return static_cast<double>(rate_num) / static_cast<double>(rate_den) * unit; }
  int height() const;
};

/// Switch removal could not split a switch off completely: one that takes in more than it sends
/// out (or less), e.g. a NIC two GPUs share after a failover, for which the edge-splitting theorem
/// gives no guarantee. The optimum stands; no trees. what() names the switch.
class SplittingFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The optimal rate, and with options.build_trees the trees, of AllGather on `g` (ReduceScatter:
/// call it on g.reversed() and reverse the trees). Throws std::invalid_argument for fewer than
/// two ranks or a rank that cannot receive (no capacity into it), SplittingFailed (above),
/// std::logic_error when a step the theory guarantees fails (a bug).
Forest allgather_forest(const SynthesisGraph& g, const ForestOptions& options = {});

/// Colour refinement of `g` (1-dimensional Weisfeiler-Leman on exact capacities in units): a
/// class id per vertex, ranks and switches never in one class. Vertices in different classes are
/// never alike; vertices of one class are alike in every respect the refinement sees.
std::vector<int> vertex_classes(const SynthesisGraph& g, double unit);

}  // namespace ccsim::planner::synthesis
