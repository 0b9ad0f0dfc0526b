#pragma once
// What both engines share: a Plan turned into transfers with routes and costs, and the
// dependency bookkeeping that says which ops and transfers may start as others complete.

#include <cstdint>
#include <vector>

#include "models/hardware/router.hpp"
#include "sim/execution/dag.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::sim::detail {

inline constexpr std::uint32_t kNoOp = ~0U;

/// What link `l` carries under `cost`, in bytes per second per direction: its bandwidth ×
/// CostParams::link_efficiency of its kind (1 when the table has no entry for the kind).
inline double link_capacity(const models::Link& l, const CostParams& cost) {
  const double eff = l.kind < cost.link_efficiency.size() ? cost.link_efficiency[l.kind] : 1.0;
  return l.bandwidth * eff;
}

/// One data movement: a matched send/recv pair, or a rank <-> NVSwitch leg of an NVLS op.
struct Transfer {
  std::uint32_t send_op = kNoOp;  ///< global op id of the send side (kNoOp for switch -> GPU)
  std::uint32_t recv_op = kNoOp;  ///< global op id of the receive side (kNoOp for GPU -> switch)
  models::DeviceId src = 0;
  models::DeviceId dst = 0;
  double bytes = 0.0;             ///< wire bytes
  double latency = 0.0;           ///< seconds before data flows
  std::uint32_t path_begin = 0;   ///< links in ExecutionGraph::path_links
  std::uint32_t path_count = 0;
  std::uint32_t group = kNoOp;    ///< in-switch group (NVLS legs)
  std::uint32_t connection = 0;   ///< (source, destination, channel) connection: CostParams::max_rate applies per connection
  /// The next transfer on the same (source rank, destination rank, channel) connection, in
  /// message order (kNoOp: none). A connection is a FIFO, as NCCL's per-peer, per-channel
  /// connection buffers and an RDMA queue pair are: a transfer's data flows only after the
  /// previous transfer on its connection has been delivered, so pipeline steps never share
  /// a link with their own predecessors. Latency is pipelined: a transfer's latency runs as
  /// soon as both sides are ready, while its predecessor is still in flight (NCCL keeps
  /// NCCL_STEPS slots in flight per connection), so a message's delivery is
  /// max(ready, predecessor delivered − latency) + latency + bytes / rate.
  std::uint32_t next_on_connection = kNoOp;
  bool waits_for_previous = false;  ///< there is an earlier transfer on this connection
  std::uint32_t steps = 0;          ///< the send op's Op::steps (latency multiplier)
  std::uint32_t pool = 0;           ///< the send op's latency pool (Op::tag of a Send; 0: none)
};

/// Static structure, built once per Plan.
class ExecutionGraph {
 public:
  /// Throws std::invalid_argument when a rank has no GPU, sends and receives do not pair up,
  /// or an NVLS op has no NVSwitch to talk to.
  ExecutionGraph(const Plan& plan, models::Router& router);

  std::uint32_t op_count() const { return static_cast<std::uint32_t>(op_rank_.size()); }
  std::int32_t rank_of(std::uint32_t op) const { return op_rank_[op]; }
  std::uint32_t local_index(std::uint32_t op) const { return op - rank_first_op_[static_cast<std::size_t>(op_rank_[op])]; }
  const models::Op& op(std::uint32_t id) const;
  /// Global ids of rank r's ops: [rank_first_op(r), rank_first_op(r + 1)).
  std::uint32_t rank_first_op(std::size_t r) const { return rank_first_op_[r]; }
  std::size_t rank_count() const { return rank_first_op_.size() - 1; }

  std::vector<Transfer> transfers;
  std::vector<models::LinkId> path_links;
  std::vector<std::uint32_t> op_transfer;       ///< transfer of each send/recv op (kNoOp for local ops)
  Dag dag;                                      ///< global op ids: the ops that depend on each op, dependency counts
  std::vector<int> group_size;                  ///< contributors per in-switch group
  std::vector<std::vector<std::uint32_t>> group_receivers;  ///< switch -> GPU transfers per group
  std::uint32_t connections = 0;                ///< distinct Transfer::connection values
  /// Per connection: its rate cap in wire bytes per second (CostParams::max_rate of its part).
  std::vector<double> connection_rate;
  /// Per rank: its part (Plan::part_first_rank; all 0 for a one-part plan).
  std::vector<std::uint32_t> rank_part;

 private:
  class Builder;  // the construction steps (execution_graph.cpp)

  const Plan& plan_;
  std::vector<std::int32_t> op_rank_;
  std::vector<std::uint32_t> rank_first_op_;
};

/// Dynamic state: which ops are done, which transfers may start. The engine calls
/// start(), then transfer_done() as transfers finish; callbacks report what became
/// startable and which ops finished.
class DagState {
 public:
  explicit DagState(const ExecutionGraph& graph);

  struct Events {
    std::vector<std::uint32_t> startable;  ///< transfers whose both sides are ready: their latency starts
    std::vector<std::uint32_t> finished;   ///< ops completed (local ops complete when ready)
    /// Transfers whose latency had elapsed, waiting for their connection, that may flow now.
    std::vector<std::uint32_t> flowable;
    bool empty() const { return startable.empty() && finished.empty() && flowable.empty(); }
  };
  /// Ops with no dependencies become ready, on every rank whose `held` entry is 0 (empty: all).
  void start(Events& out, const std::vector<char>& held = {});
  /// Rank r calls the collective late (Plan::rank_ready): its ops with no dependencies become
  /// ready now.
  void arrive(std::size_t r, Events& out);
  /// Transfer t's latency has elapsed. Returns true when its data may flow now; false when an
  /// earlier transfer on its connection is still in flight (t is then reported in
  /// Events::flowable when that one is done).
  bool latency_elapsed(std::uint32_t t);
  /// Marks both ops of transfer t done and cascades.
  void transfer_done(std::uint32_t t, Events& out);
  std::uint32_t ops_done() const { return done_count_; }

 private:
  void ready(std::uint32_t op, Events& out);
  void finish(std::uint32_t op, Events& out);

  const ExecutionGraph& g_;
  std::vector<std::uint32_t> pending_;   ///< unmet dependencies per op
  std::vector<std::uint8_t> side_ready_; ///< per transfer: sides ready (bit 0 send, bit 1 recv)
  std::vector<std::uint8_t> connection_free_;  ///< per transfer: no earlier transfer on its connection in flight
  std::vector<std::uint8_t> latency_over_;     ///< per transfer: latency elapsed, waiting for its connection
  std::vector<int> group_arrived_;       ///< per group: contributions completed
  std::vector<std::uint8_t> recv_waiting_;  ///< per transfer: switch receive ready, waiting for its group
  std::vector<std::uint8_t> finished_;   ///< per op: done (an always-on check)
  std::uint32_t done_count_ = 0;
  std::vector<std::uint32_t> stack_;
};

/// Per rank of `plan`: 1 when Plan::rank_ready holds it back past the start (empty when nobody
/// is). Throws std::invalid_argument when rank_ready has not one entry per rank or an entry is
/// negative or not finite.
std::vector<char> held_ranks(const Plan& plan);

}  // namespace ccsim::sim::detail
