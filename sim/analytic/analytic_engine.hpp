#pragma once
// The analytic engine: ccsim's own discrete-event simulation of a Plan, the fast path and the
// planner's inner loop (DESIGN.md, decision 2).
//
// Model. A transfer becomes startable when both its ops are ready; it waits its latency
// (steps × (path latency + per-step overhead)), then its bytes flow. All flowing transfers
// share link capacity max-min fairly (sim/sharing/maxmin.hpp), recomputed whenever the set of
// flowing transfers changes — the same fluid model SimGrid's CM02 solves, so without
// contention the two engines agree exactly (α + S/B per transfer).
// Events are ordered by (time, sequence number): ties resolve in creation order.
//
// Sharing is re-solved incrementally (Sharing::Incremental, the default), exactly, by
// IncrementalSharing (sim/sharing/incremental_sharing.hpp, where the proofs are): max-min
// sharing splits into independent problems, one per connected component of the flow–link
// graph, so a flow that starts or finishes re-solves only its component (found by walking the
// links' flow lists from the changed flows); and when flows only finish, the flows whose rate
// is below the lowest rate of a finished flow keep their rates exactly — progressive filling
// reaches their levels before any level the finished flows took part in — so the walk passes
// only through flows at or above that rate. A ring, tree or pipeline across a fabric has small
// components (the flows that collide on a link), so an event costs its component, not every
// flow in flight: Llama-3.1-405B on 8,192 H100 with ToR wiring takes tens of seconds (1,150 s
// when every event re-solves every flow), a 1,024-rank ring at step granularity ~15 s (180–284
// s). When a component is huge (a direct AlltoAll whose flows all cross one spine), flows at or
// above the lowest finished rate are found in a list sorted by rate instead; and when no flow in
// flight runs at or above that rate (a heap of rates says so in O(log n)), nothing is walked or
// re-solved at all (direct AlltoAll on 1,024 ranks of the 2:1 fabric: ~1,000 such completions,
// each of which would otherwise walk flow lists of 10^5 entries).
// Finish times sit in a heap and each flow's bytes are settled lazily when its rate changes.
//
// Why direct AlltoAll on the rail-optimized fabric blows up with hashed ECMP (384–2,048 ranks
// of scenarios/h100-16k-rail.yaml: minutes to hours). Every GPU sends to every other at once;
// a cross-rail flow leaves its leaf on the uplink its connection hash picks, so some uplinks
// (and spine downlinks) carry more flows than the NIC-limited share allows and throttle them,
// by different amounts on each link. The NICs behind them then share their bandwidth among
// flows of many different rates: thousands of distinct rates, coupled through NICs and
// uplinks into one component, and thousands of distinct completion times. Each completion
// speeds up the flows of its NIC and link, which then overtake others, so the flows at or
// above the finished rate — what rule 2 of incremental_sharing.hpp must re-solve — are a large
// share of all flows at every event: O(events · flows), with no exact shortcut, since the rates
// really are all different.
// The balanced spread (FabricSpec::ecmp = balanced, adaptive routing) has no collisions: each
// NIC's flows share it equally, finish together, and the run takes a handful of solves.
// Sharing::Reference re-solves every flowing transfer at every event, kept for the tests that
// prove the two agree. The loops: sim/analytic/reference_loop.cpp and incremental_loop.cpp,
// over what they share (sim/analytic/detail/analytic_run.hpp).

#include <cstdint>
#include <vector>

#include "models/hardware/router.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::sim {

class AnalyticEngine final : public Engine {
 public:
  enum class Sharing : std::uint8_t {
    Incremental,  ///< re-solve only the flows a completion can speed up (default)
    Reference     ///< re-solve every flowing transfer at every event
  };
  explicit AnalyticEngine(const models::Cluster& cluster, Sharing sharing = Sharing::Incremental);
  std::string_view name() const override { return "analytic"; }
  Timeline run(const Plan& plan) override;
  /// The engine's router, with the routes it has cached: planners that bound plans on this
  /// cluster (planner/collective/candidate_bound.hpp) share it instead of building and warming another.
  models::Router& router() { return router_; }

 private:
  Timeline run_reference(const Plan& plan);
  Timeline run_incremental(const Plan& plan);

  const models::Cluster& cluster_;
  models::Router router_;
  Sharing sharing_;
  /// Per link of the topology: its resource index in the run in progress, ~0 otherwise (kept
  /// between runs so a run allocates state only for the links its transfers use).
  std::vector<std::uint32_t> link_local_;
};

}  // namespace ccsim::sim
