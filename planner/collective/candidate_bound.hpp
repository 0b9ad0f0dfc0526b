#pragma once
// A cheap lower bound on what the analytic engine returns for one Plan, for exact pruning of
// the planner's candidates (CollectiveRunner::run): a candidate whose bound is at least the
// best simulated time so far cannot win, so it is not simulated.
//
// The bound is the larger of two relaxations of the engine's fluid model (sim/execution/engine.hpp,
// sim/analytic/analytic_engine.hpp), both evaluated on the transfers, routes, latencies and
// dependencies the engine itself builds (sim::detail::ExecutionGraph):
//  * contention-free: every transfer flows alone, at its path's bottleneck capacity
//    (bandwidth × link efficiency) capped by CostParams::max_rate; latencies, connection FIFO
//    order, in-switch groups and dependencies exactly as the engine charges them. Under
//    max-min sharing no transfer ever flows faster than that, and every time the engine
//    computes is a max / + of earlier times (monotone), so by induction over the dependency
//    order each transfer finishes no earlier in the engine than here.
//  * link volume: the data of every transfer over link ℓ flows after that transfer's
//    contention-free flow start, and ℓ carries at most its capacity, so the makespan is at
//    least min over ℓ's transfers of their contention-free flow start + Σ bytes / capacity.
// Concurrent groups only add traffic, so the bound of one group bounds them all. The engine
// coalesces events within 10^-12 relative; callers compare with a relative slack
// (kBoundSlack) far above that.
//
// ScheduleBound keeps the structure (dependency order, routes, latencies, rates), so the
// same schedule at another size — only byte counts differ — is bounded in one linear pass.

#include <cstdint>
#include <vector>

#include "models/hardware/router.hpp"
#include "models/collective/schedule.hpp"
#include "sim/engine.hpp"

namespace ccsim::sim::detail {
class ExecutionGraph;
}  // namespace ccsim::sim::detail

namespace ccsim::planner {

/// Relative slack under which a bound is trusted when pruning: the engine's event coalescing
/// (10^-12 relative per event) and rounding stay far below it.
inline constexpr double kBoundSlack = 1e-6;

class ScheduleBound {
 public:
  /// Builds the structure of `plan` on `router`'s cluster: O(ops + transfers) plus one route
  /// per transfer. Throws what sim::detail::ExecutionGraph throws for plans that do not fit
  /// the cluster, and std::runtime_error for a schedule that deadlocks (the engine would too).
  ScheduleBound(const sim::Plan& plan, models::Router& router);

  /// Whether `s` is the schedule this was built on up to its byte counts: the same ranks, ops
  /// (kind, peer, channel, steps, tag), dependencies, channels and in-switch groups.
  bool matches(const models::Schedule& s) const;

  /// Lower bound, in seconds, on AnalyticEngine::run(plan).makespan for this plan with
  /// schedule `s` (matches(s) must hold; the plan's GPUs and costs as built). O(ops + deps +
  /// transfer-links).
  double evaluate(const models::Schedule& s) const;

  std::size_t ops() const { return op_deps_begin_.size() - 1; }

 private:
  // The constructor's steps, in order.
  void add_ops(const sim::detail::ExecutionGraph& g);
  void add_legs(const sim::Plan& plan, const models::Topology& topo, const sim::detail::ExecutionGraph& g);
  /// In-switch groups; returns each group's GPU -> switch legs counted.
  std::vector<std::uint32_t> add_groups(const sim::detail::ExecutionGraph& g);
  /// Dependency order; throws std::runtime_error when the schedule deadlocks.
  void add_order(const sim::detail::ExecutionGraph& g, const std::vector<std::uint32_t>& up_count);

  models::Schedule shape_;                     ///< the schedule built on (its slices ignored by matches)
  double t0_ = 0;                              ///< seconds, CostParams::base_latency
  double wire_factor_ = 1;
  std::vector<std::uint32_t> rank_first_op_;   ///< global op id of each rank's first op
  std::vector<std::uint32_t> op_deps_begin_, op_deps_;  ///< CSR: dependencies of each op (global ids)
  std::vector<std::uint32_t> op_transfer_;     ///< transfer of each op, or ~0 for local ops
  struct Leg {
    std::uint32_t send_op, recv_op;  ///< ~0 on the switch side of an NVLS leg
    std::uint32_t data_op;           ///< the op whose bytes the transfer carries
    std::uint32_t data_rank, data_index;  ///< that op's rank and index in the rank's program
    std::uint32_t prev;              ///< previous transfer on its connection, or ~0
    std::uint32_t group;             ///< switch -> GPU: the in-switch group it waits for, or ~0
    double latency;                  ///< seconds
    double rate;                     ///< bytes/s, alone on its path (0: no data flows)
    std::uint32_t links_begin, links_end;  ///< local link indices in link_of_
  };
  std::vector<Leg> legs_;
  std::vector<std::uint32_t> link_of_;         ///< per transfer-link incidence: local link index
  std::vector<double> link_capacity_;          ///< bytes/s per local link
  std::vector<std::uint32_t> group_begin_, group_up_;  ///< CSR: GPU -> switch legs of each group
  std::vector<std::uint8_t> group_first_;      ///< 1: the group completes with its first arrival (more legs than contributors)
  std::vector<std::uint32_t> order_;           ///< nodes in dependency order: op ready (< ops), transfer done, group done
};

/// ScheduleBound(plan, router).evaluate(*plan.schedule): lower bound, in seconds, on
/// AnalyticEngine::run(plan).makespan (Sharing::Incremental and Reference alike).
double engine_lower_bound(const sim::Plan& plan, models::Router& router);

}  // namespace ccsim::planner
