#pragma once
// Node-level aggregated AllGather / ReduceScatter trees for groups too large for tree packing
// (forest.hpp grows as N³: 128 ranks take about 20 s). The trees are those ForestColl packs on a
// fabric of whole nodes, written down by rule instead of searched for, and their rate is then
// measured on the engines' own routes, so what they reach is a measured fraction of the exact
// optimum, never an assumption:
//
//  * Rails: the ranks of every node are taken in the order of their NIC's rail, then their local
//    index (not the order the ranks were listed in); the g-th rank of each node is endpoint g of
//    that node, and the g-th ranks of all nodes form rail g (on a rail-optimized fabric, the GPUs
//    on one rail of leaves). Every rank needs a NIC of its own.
//  * Leaves: the endpoints of a rail are grouped by the network switch their NIC enters
//    (Device::nic's link into a tier-1 switch), leaves in device order, endpoints in rank order.
//  * The tree of root r (node n, endpoint g), inter-node part on rail g: r sends its block to
//    every endpoint of its own leaf, and to d(r, C) endpoints of every other leaf C (its direct
//    receivers), which pass it on to the rest of C, each to an equal share. d is 1 where the
//    leaves of a rail are equal; with unequal leaves (a job that does not fill its last leaf)
//    the roots of a small leaf send to more endpoints of a large one, chosen so that every leaf
//    sends as many blocks up its uplinks as it takes in: then every NIC sends N − 1 blocks, as it
//    receives N − 1, the load of the cut of one node (b/(N−1)); and each leaf takes each outside
//    block d times, once where leaves are equal (the cut of a leaf: its uplinks over the ranks
//    outside it). A leaf's direct receivers rotate over its endpoints root by root. A leaf passes
//    a block on from its direct receivers in stars (each to its share of the rest) where that
//    gives all its endpoints as many sends, else in chains (each endpoint to the next), which
//    spread a number of outside blocks the leaf's size does not divide within one send per
//    endpoint (a taller tree: up to the leaf's size in hops).
//  * Intra-node part: at every node the block that reached endpoint g is spread to the node's
//    other ranks on ForestColl's trees rooted at g of that node's own intra-node forest (found
//    with allgather_forest on the node's ranks alone), weight by weight.
//  * No hidden symmetry: the intra-node forest is found once per explicit equivalence class —
//    the node's Topology::node_class (same hardware, same perturbations) and the local indices
//    of its ranks — and a perturbed node, having a class of its own, gets a forest of its own.
//    Inter-node loads are added send by send on the router's own routes (the spine it hashes
//    to); a send between endpoints of one leaf is charged as its source's way up to the leaf and
//    its destination's way down (taken from the router's routes, checked alike for two partners).
// ReduceScatter runs the same trees reversed (data child to parent), routed child to parent.
//
// Only the trees' loads are computed (O(N·leaves) routes plus the intra-node forests), never the
// N·(N−1) tree edges, so 16,384 ranks take seconds; aggregated_tree() writes one root's trees out
// for checks and small cases.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"
#include "planner/synthesis/forest.hpp"

namespace ccsim::planner::synthesis {

/// Sends between leaves aggregated_forest routes at most (one router route each, so the
/// charging stays in seconds): 16,384 H100 on 64 leaves per rail take about 1.03 M.
inline constexpr std::int64_t kMaxAggregatedRoutes = 4'000'000;

/// The placement does not have the shape the aggregated trees need (what() says which rule:
/// unequal ranks per node, a rank without a NIC of its own, a NIC outside a leaf, one node, more
/// than kMaxAggregatedRoutes sends between leaves).
class NotAggregatable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AggregatedForest {
  bool reduce_scatter = false;    ///< data child to parent (the loads are on the reverse routes)
  int ranks = 0;                  ///< N
  int nodes = 0;                  ///< nodes holding ranks
  int ranks_per_node = 0;         ///< G: ranks per node (endpoints, rails)
  int leaves = 0;                 ///< the most leaves one rail spans
  int intra_classes = 0;          ///< intra-node forests found (one per node class and rank positions)
  /// Bytes per second at which every root's block leaves it (AllGather algbw = N·rate): the
  /// least over the links the trees load of bandwidth ÷ load, loads in blocks per unit rate.
  double rate = 0;
  models::LinkId bottleneck = 0;  ///< the link that sets `rate`
  double bottleneck_load = 0;     ///< blocks that cross it per root's block
  int height = 0;                 ///< edges on the longest root-to-rank path
  std::int64_t routes = 0;        ///< router routes taken to charge the loads (for the benchmark)
  double seconds = 0;             ///< wall time to build and charge the trees

  // What aggregated_tree() needs to write a root's trees out.
  std::vector<int> node_of;                       ///< per rank: its node's position (0 .. nodes−1)
  std::vector<int> endpoint_of;                   ///< per rank: its endpoint (rail) index g
  std::vector<std::vector<int>> node_ranks;       ///< per node position: its ranks in rank order
  std::vector<int> node_intra;                    ///< per node position: index into `intra` (−1 when G = 1)
  std::vector<Forest> intra;                      ///< intra-node forests, ranks as endpoint indices 0 .. G−1
  /// Per rail g: its leaves, each the ranks of its endpoints in rank order.
  std::vector<std::vector<std::vector<int>>> rail_leaves;
  std::vector<int> leaf_of;                       ///< per rank: its leaf's index within its rail
  std::vector<int> rail_position;                 ///< per rank: its position among its rail's endpoints (rank order)
  std::vector<int> leaf_position;                 ///< per rank: its position among its leaf's endpoints
  /// Per rail g, per leaf pair (b, c), b ≠ c: the direct sends from b's roots into c, row-major
  /// (b · leaves + c): at least |b| (one per root), more where b is the smaller leaf.
  std::vector<std::vector<std::int64_t>> direct;
  /// Per rank r, per leaf c of its rail (other than r's): the position in c of r's first direct
  /// receiver (the rest follow cyclically); −1 for r's own leaf.
  std::vector<std::vector<int>> first_receiver;
  /// Per rail g, per leaf: 1 where the leaf passes blocks on in chains, 0 in stars (see above).
  std::vector<std::vector<char>> chained;
};

/// A tree edge carrying `weight` / `denominator` of the root's block (aggregated_tree).
struct WeightedEdge {
  int parent = 0;
  int child = 0;
  std::int64_t weight = 0;
};

/// How the block of root `root` spreads inside leaf `leaf` of its rail from its direct
/// receivers: (parent, child) ranks, parents before children. Empty for root's own leaf.
std::vector<std::pair<int, int>> aggregated_forwarding(const AggregatedForest& f, int root, int leaf);

/// Root `root`'s trees as weighted edges (AllGather direction: parent to child), parents before
/// children; every other rank receives exactly `denominator` weight. Throws std::out_of_range
/// for a rank outside 0 .. ranks−1.
std::vector<WeightedEdge> aggregated_tree(const AggregatedForest& f, int root, std::int64_t* denominator);

/// The direct receivers of root `root`'s block in leaf `leaf` of its rail (see above), ranks in
/// the order they are chosen; empty for root's own leaf. Throws std::out_of_range for a rank or
/// leaf that does not exist.
std::vector<int> aggregated_receivers(const AggregatedForest& f, int root, int leaf);

/// The aggregated trees of ranks on `gpus` (rank i on gpus[i]) and their rate on the router's
/// routes. `options` is passed to the intra-node forests. Throws NotAggregatable (above),
/// std::runtime_error when the router finds no route, and what allgather_forest throws for an
/// intra-node forest (SplittingFailed, std::invalid_argument).
AggregatedForest aggregated_forest(const models::Cluster& cluster, models::Router& router, const std::vector<models::DeviceId>& gpus,
                                   bool reduce_scatter, const ForestOptions& options = {});

}  // namespace ccsim::planner::synthesis
