#pragma once
// A latency-aware greedy synthesizer for AllGather (and ReduceScatter, on the reversed routes),
// after TACOS (Won, Elavazhagan, Srinivasan, Gupta, Krishna, "TACOS: Topology-Aware Collective
// Algorithm Synthesizer for Distributed Machine Learning", MICRO 2024, arXiv 2304.05301): time
// advances event by event, and whenever a route between two ranks is free the greedy matches it
// with a chunk the sender holds and the receiver lacks. TACOS matches on a point-to-point
// topology; ccsim's fabrics have switches, so the matching here is over the router's routes
// between ranks (the paths the engines charge), a transfer holding every link of its route for
// its time on the wire (chunk / the route's bandwidth); it arrives a latency later (the route's
// wire latency plus the cost table's per-step latency of its farthest link class, what the
// engines charge a step). A link therefore carries one chunk at a time and a NIC is never
// oversubscribed by the greedy's own plan, while small chunks, whose wire time is short, leave
// a sender's links free for the next one during the latency: the latency-aware part.
//
// Each rank's block is cut into `chunks` chunks; a chunk is matched to at most one route into
// each rank, so every chunk's transfers form a tree rooted at its owner (a Forest of N × chunks
// trees of weight 1, which forest_schedule turns into a Schedule). At each event:
//  * routes are taken in order of their cost for one chunk (latency + chunk / bandwidth), the
//    cheapest first, so a rank is fed by its nearest holder (NVLink before the network);
//  * a route takes the rarest chunk its sender holds and its receiver neither holds nor awaits
//    (fewest holders first, as TACOS' chunk choice spreads chunks), ties broken by a rotation
//    per receiver so that receivers ask for different chunks.
// So a small collective on a switch becomes nearly direct sends (one latency and N − 1 short
// wire times), on a ring of direct links it floods both ways (⌈(N − 1)/2⌉ rounds), and with
// more chunks it pipelines. It is not throughput-optimal (ForestColl's trees are, forest.hpp):
// a chunk may cross the network into a node more than once. The greedy's own time estimate
// charges each transfer its route's latency and bottleneck bandwidth, nothing else; the engines
// time the Schedule.

#include <array>
#include <cstdint>
#include <vector>

#include "models/hardware/router.hpp"
#include "models/hardware/topology.hpp"
#include "planner/synthesis/forest.hpp"

namespace ccsim::planner::synthesis {

/// The point-to-point view of a placement: per ordered pair of ranks the router's route.
struct PairRoutes {
  int ranks = 0;
  /// [from · ranks + to]: the route's links in path order; empty on the diagonal and for a pair
  /// the greedy may not use directly (a hand-built point-to-point topology lists only its
  /// neighbours, as TACOS' links are; the data then travels by forwarding).
  std::vector<std::vector<models::LinkId>> links;
  std::vector<double> bandwidth;  ///< [from · ranks + to], bytes/s: the route's slowest link
  /// [from · ranks + to], seconds: the route's links' latencies summed, plus the step latency
  /// of its farthest link class (pair_routes' step_latency).
  std::vector<double> latency;
  std::size_t index(int from, int to) const { return static_cast<std::size_t>(from) * static_cast<std::size_t>(ranks) + static_cast<std::size_t>(to); }
};

/// The routes between the ranks placed on `gpus` (rank i on gpus[i]), as `router` routes them
/// (the first ECMP hash, as the engines route one send); `step_latency` (seconds, by
/// models::LinkClass, sim::CostParams::step_latency) is added to each route's latency by its
/// farthest link class, as the engines charge a step. Throws std::invalid_argument when two
/// ranks share a GPU or a route is empty (a rank cannot reach another).
PairRoutes pair_routes(models::Router& router, const std::vector<models::DeviceId>& gpus, const std::array<double, 4>& step_latency = {});

/// The routes with every pair's direction swapped: the route of (a, b) is the route b → a.
/// ReduceScatter's greedy trees are AllGather's on them (data flows child to parent).
PairRoutes reversed(const PairRoutes& routes);

struct GreedyResult {
  /// One tree per chunk, roots in rank order (rank r's chunks r·chunks .. r·chunks + chunks − 1),
  /// weight 1 each, weight_per_root = chunks; edges in the order the chunk arrived (parents
  /// before children). rate_num is 0: the greedy has no optimum.
  Forest forest;
  double estimated_time = 0;  ///< seconds: the greedy's own makespan (route latency + chunk / bandwidth per transfer)
  std::int64_t transfers = 0; ///< chunk transfers matched: N · (N − 1) · chunks
  std::int64_t events = 0;    ///< distinct event times processed (links freed, chunks arrived), for the benchmarks
};

/// Greedy AllGather of `chunks` chunks of `chunk_bytes` bytes per rank over `routes`. Throws
/// std::invalid_argument for fewer than two ranks, chunks < 1, chunk_bytes ≤ 0, a route of
/// zero bandwidth, or routes that do not connect the ranks.
GreedyResult greedy_allgather(const PairRoutes& routes, int chunks, double chunk_bytes);

}  // namespace ccsim::planner::synthesis
