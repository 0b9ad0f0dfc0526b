#pragma once
// The analytic engine: ccsim's own discrete-event simulation of a Plan, the fast path and the
// planner's inner loop (DESIGN.md, decision 2).
//
// Model. A transfer becomes startable when both its ops are ready; it waits its latency
// (steps × (path latency + per-step overhead)), then its bytes flow. All flowing transfers
// share link capacity max-min fairly (sim/maxmin.hpp), recomputed whenever the set of
// flowing transfers changes — the same fluid model SimGrid's CM02 solves, so without
// contention the two engines agree exactly (α + S/B per transfer).
// Events are ordered by (time, sequence number): ties resolve in creation order.
//
// Sharing is re-solved incrementally (Sharing::Incremental, the default): when flows only
// finish (none starts), the flows whose max-min rate is below the lowest rate of a finished
// flow keep their rates exactly — progressive filling reaches their levels before any level
// the finished flows took part in (see run_incremental) — so only the flows at or above that
// rate are re-solved, on what the others leave of each link. Finish times sit in a heap and
// each flow's bytes are settled lazily when its rate changes. A direct AlltoAll across an
// oversubscribed spine, whose flows all start together and finish fastest-first, then costs
// about O(flows · log) instead of O(events · flows) (1,024 ranks: ~3,000 events, 1.1 M flow
// re-solves in all). Not solved: where many flows share the top rate but finish at different
// times (direct AlltoAll on 384–2,048 ranks of the non-blocking 16K rail fabric), each
// completion re-solves them all and the run stays O(events · flows) (512 ranks: ~110 s).
// Sharing::Reference re-solves every flowing transfer at every event (the original loop),
// kept for the tests that prove the two agree.

#include "models/router.hpp"
#include "sim/engine.hpp"

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

 private:
  Timeline run_reference(const Plan& plan);
  Timeline run_incremental(const Plan& plan);

  const models::Cluster& cluster_;
  models::Router router_;
  Sharing sharing_;
};

}  // namespace ccsim::sim
