#pragma once
// What the analytic engine's two loops share (sim/analytic/analytic_engine.hpp): the Plan's
// execution graph and DAG state, the simulated clock, the latency events, the bytes each
// transfer has left and the ops' start and end times. The loops differ in how they share link
// capacity: reference_loop.cpp re-solves every flowing transfer at every event,
// incremental_loop.cpp keeps an IncrementalSharing (sim/sharing/incremental_sharing.hpp).

#include <limits>
#include <cstdint>
#include <vector>

#include "models/hardware/router.hpp"
#include "sim/analytic/detail/batch_queue.hpp"
#include "sim/execution/engine.hpp"
#include "sim/execution/execution_graph.hpp"

namespace ccsim::sim::detail {

/// Relative time window within which completions and latency expiries are handled as one
/// event (10^-12: far below any reported precision, far above double rounding).
inline constexpr double kCoalesce = 1e-12;
/// No time yet (a flow without a finish, an empty heap).
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// A transfer's latency elapses at `time` (seconds). Ordered by (time, sequence number): ties
/// resolve in creation order.
struct LatencyEvent {
  double time;
  std::uint64_t seq;
  std::uint32_t transfer;
  bool operator>(const LatencyEvent& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

class AnalyticRun {
 public:
  AnalyticRun(const AnalyticRun&) = delete;
  AnalyticRun& operator=(const AnalyticRun&) = delete;

 protected:
  /// Builds the execution graph (throws what ExecutionGraph throws); the clock starts at the
  /// plan's base latency.
  AnalyticRun(const Plan& plan, models::Router& router);
  virtual ~AnalyticRun() = default;

  /// Transfer t's latency has elapsed and its connection is free, and it has bytes to move over
  /// at least one link: they start flowing now.
  virtual void start_bytes(std::uint32_t t) = 0;

  /// Makes the ops ready that depend on nothing, and handles what follows (handle()).
  void start_dag();
  /// Handles what the DAG reported until it reports nothing: finished ops end now (and start,
  /// if they had not); the ops of startable transfers start now, their bytes are reset and their
  /// latencies are queued; flowable transfers start flowing (flow()).
  void handle();
  /// Transfer t may flow: an empty or local transfer completes at once, others start_bytes().
  void flow(std::uint32_t t);
  /// Transfer t has delivered its bytes: its ops finish (handled by the next handle()).
  void complete(std::uint32_t t);
  /// Takes every latency that elapses now (within kCoalesce): its transfer flows, or waits for
  /// its connection; and every late rank that arrives now (Plan::rank_ready): its first ops
  /// become ready.
  void expire_latencies();
  /// The next latency expiry or late rank's arrival (+inf when none is due).
  double next_latency() const;
  /// Nothing is left of transfer t up to rounding, with `left` bytes to go.
  bool drained(std::uint32_t t, double left) const { return left <= 1e-12 * g_.transfers[t].bytes + 1e-9; }
  /// The Timeline of the run: makespan (now) and one OpRecord per op, links not filled in.
  /// Throws std::runtime_error naming the schedule when ops never ran (a deadlock).
  Timeline timeline() const;

  const Plan& plan_;
  const models::Topology& topo_;
  ExecutionGraph g_;
  DagState dag_;
  double now_;                       ///< seconds
  std::vector<double> remaining_;    ///< bytes each transfer has left (the loops say as of when)

 private:
  DagState::Events ev_;
  std::vector<std::uint32_t> startable_, flowable_;
  BatchQueue<LatencyEvent> latencies_;
  std::uint64_t seq_ = 0;
  std::vector<double> op_start_, op_end_;
  std::vector<char> held_;                           ///< per rank: arrives after the start (held_ranks)
  std::vector<std::pair<double, std::size_t>> arrivals_;  ///< (time, rank) of the late ranks, by time
  std::size_t next_arrival_ = 0;
};

}  // namespace ccsim::sim::detail
