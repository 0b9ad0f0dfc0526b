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

#include "models/router.hpp"
#include "sim/engine.hpp"

namespace ccsim::sim {

class AnalyticEngine final : public Engine {
 public:
  explicit AnalyticEngine(const models::Cluster& cluster);
  std::string_view name() const override { return "analytic"; }
  Timeline run(const Plan& plan) override;

 private:
  const models::Cluster& cluster_;
  models::Router router_;
};

}  // namespace ccsim::sim
