#pragma once
// The engine interface: execute a Plan (a Schedule placed on GPUs, with its cost parameters)
// on a cluster and return a Timeline. Two implementations share one test suite:
// `analytic` (own event queue, max-min sharing) and `flow` (SimGrid S4U).

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/collective/schedule.hpp"

namespace ccsim::sim {

/// How a Schedule's ops cost time. Every transfer of `b` data bytes over a path pays
///   steps × (path latency + step_latency[class of the path's farthest link])
/// before its data flows, then moves b × wire_factor bytes at its max-min fair share of the
/// links' capacities (bandwidth × link_efficiency of the link's kind). Local copies and
/// reductions are free (NCCL fuses them with the transfers). base_latency is paid once, before
/// anything starts. Defaults describe an ideal network: exact α-β with the topology's figures.
struct CostParams {
  double wire_factor = 1.0;                       ///< wire bytes per data byte (≥ 1: protocol overhead)
  std::array<double, 4> step_latency{};           ///< seconds per step, by LinkClass
  double base_latency = 0.0;                      ///< seconds, once per collective
  std::vector<double> link_efficiency;            ///< by Topology link kind index; missing = 1
  /// Highest rate of one connection — the transfers between a source and a destination GPU on
  /// one channel, together — in wire bytes per second (+inf: links only). Models limits that
  /// are not in the links, such as NCCL's LL / LL128 protocol throughput caps per channel.
  double max_rate = std::numeric_limits<double>::infinity();
  /// NCCL's PXN for point-to-point sends (AlltoAll, SendRecv; NCCL_PXN_DISABLE unset): a
  /// transfer between GPUs of two nodes leaves through the NIC of the source node's GPU on the
  /// destination's rail, reached over NVLink (models::Router::route, pxn_relay).
  bool pxn = false;
};

struct Plan {
  const models::Schedule* schedule = nullptr;
  std::vector<models::DeviceId> rank_gpu;  ///< GPU of each rank
  CostParams cost;
  /// Ready-time skew: seconds after the collective's start (after base_latency) at which rank r
  /// calls the collective; none of its ops start before. Empty: every rank at 0. Entries must
  /// be finite and ≥ 0, one per rank (engines throw std::invalid_argument otherwise).
  std::vector<double> rank_ready;
  /// Several collectives in one run (cross-dimension contention; sim/execution/plan_merge.hpp
  /// builds such plans). Part k holds ranks [part_first_rank[k], part_first_rank[k + 1]) (the
  /// last part up to the schedule's end); their transfers cost by part_cost[k] (wire factor,
  /// step latencies, rate cap per connection), and ECMP hashes a rank by its index within its
  /// part, so each part takes the routes of its own run. Link capacities use Plan::cost's
  /// efficiencies; Plan::cost.base_latency is paid once and the parts' base_latency is not
  /// read (the merge folds it into rank_ready). Empty: one part, costed by Plan::cost. Both
  /// engines run such plans.
  std::vector<CostParams> part_cost;
  std::vector<std::uint32_t> part_first_rank;
};

/// What an engine returns. Times in seconds from the collective's start.
struct OpRecord {
  std::int32_t rank = 0;
  std::uint32_t op = 0;
  double start = 0.0;
  double end = 0.0;
};
struct LinkRecord {
  models::LinkId link = 0;
  double bytes = 0.0;  ///< wire bytes carried
  double busy = 0.0;   ///< seconds with at least one transfer's data flowing over it
  double peak = 0.0;   ///< highest fraction of capacity in use at any instant (0..1)
};
struct Timeline {
  double makespan = 0.0;
  std::vector<OpRecord> ops;     ///< one per op per rank
  std::vector<LinkRecord> links; ///< links that carried data, by link id
  std::uint64_t transfers = 0;
  /// Work counters of the analytic engine's incremental sharing (0 from other engines): max-min
  /// solves, and flows re-solved over all of them. Deterministic, so tests can bound the work.
  std::uint64_t solves = 0;
  std::uint64_t solved_flows = 0;
  /// Entries of the links' flow lists that the component walks looked at (analytic engine).
  std::uint64_t walked = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  /// Executes the plan. Throws std::invalid_argument for plans that do not fit the cluster
  /// (rank without GPU, NVLS without NVSwitch) and std::runtime_error for schedules that
  /// deadlock.
  virtual Timeline run(const Plan& plan) = 0;
};

}  // namespace ccsim::sim
