#pragma once
// Lower bounds on a collective's time on a given cluster and rank placement. A simulated time
// below the bound is a bug (the runner fails loudly).
//
// Three bounds, each rigorous for any algorithm (in-switch reduction included), on raw link
// bandwidth and wire latency:
//  * latency: information from the farthest rank a rank depends on needs that path's latency;
//  * per rank: a rank must send and receive at least the collective's minimum volumes
//    (AllReduce: send S and receive S, since every output element depends on every input;
//    ReduceScatter: send S(n−1)/n, receive S/n; AllGather the reverse; AlltoAll S(n−1)/n both
//    ways; Broadcast/Reduce: S at the root and at every other rank; SendRecv S), at most at
//    its GPU's total link bandwidth, and the last byte still needs the shortest path latency;
//  * cut: across the halves of the ranks (first half against second) the volume one half
//    needs from the other, divided by the max-flow between them (Boost push-relabel);
//  * forest cut (AllGather, ReduceScatter; up to kForestBoundRanks ranks): the tightest cut of
//    all, ForestColl's optimum x* on the synthesis graph (planner/synthesis/forest.hpp): every
//    set S of vertices holding some ranks must take in (AllGather; ReduceScatter: send out) a
//    block for each rank outside it, so the time is at least (S/N) / x*, x* = min over S of
//    B⁻(S) / |ranks ∉ S|. Exact: the number ForestColl's trees reach.

#include <cstdint>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/collective/collective.hpp"
#include "models/hardware/router.hpp"

namespace ccsim::planner {

struct LowerBound {
  models::Collective collective = models::Collective::AllReduce;
  int nranks = 1;
  int half = 0;                        ///< ranks in the first half of the cut
  double alpha_far = 0;                ///< seconds
  double alpha_near = 0;               ///< seconds
  std::vector<double> egress, ingress; ///< bytes/s per rank, raw link bandwidth of its GPU
  double flow_ab = 0, flow_ba = 0;     ///< bytes/s, max-flow between the halves
  /// bytes/s per root: ForestColl's optimum x* (AllGather, ReduceScatter), 0 when not computed
  double forest_rate = 0;
  int root = 0;

  /// Lower bound in seconds for nccl-tests size `bytes`.
  double time(double bytes) const;
};

/// Ranks up to which lower_bound computes the forest cut (a few max-flows on the synthesis graph
/// per rank class; above, the half cut stands alone).
inline constexpr int kForestBoundRanks = 2048;

/// Computes the bound's ingredients for ranks placed on `gpus` (rank i on gpus[i]).
/// Cost: O(n) routes and two max-flows, and for AllGather and ReduceScatter the forest cut.
LowerBound lower_bound(const models::Cluster& cluster, models::Router& router, models::Collective c,
                       const std::vector<models::DeviceId>& gpus, int root);

}  // namespace ccsim::planner
