#include "sim/execution/execution_graph.hpp"

#include "support/hash.hpp"

#include <cmath>
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace ccsim::sim::detail {

using models::OpKind;

const models::Op& ExecutionGraph::op(std::uint32_t id) const {
  const auto r = static_cast<std::size_t>(op_rank_[id]);
  return plan_.schedule->ranks[r].ops[id - rank_first_op_[r]];
}

namespace {

/// Key of a (source, destination, channel) connection: ranks for matching, GPUs for caps.
std::uint64_t key_of(int src, int dst, int channel) {
  return (static_cast<std::uint64_t>(src) << 40) | (static_cast<std::uint64_t>(dst) << 16) | static_cast<std::uint64_t>(channel);
}

/// Whether any part of `plan` caps its connections' rate.
bool any_capped(const Plan& plan) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (plan.part_cost.empty()) return plan.cost.max_rate < kInf;
  return std::any_of(plan.part_cost.begin(), plan.part_cost.end(), [](const CostParams& c) { return c.max_rate < kInf; });
}

/// A send with what its transfer needs of it (steps, latency pool, bytes), so matching a
/// receive reads the entry the search found rather than the peer's program.
struct SendEntry {
  std::uint64_t key;
  std::uint32_t op;
  std::uint32_t steps;
  std::uint32_t tag;
  std::uint64_t bytes;
  bool operator<(const SendEntry& o) const { return key != o.key ? key < o.key : op < o.op; }
};

}  // namespace

/// The construction steps, in the order the constructor takes them (the errors come in that
/// order too: unpaired receives and NVLS without NVSwitch, then unpaired sends).
class ExecutionGraph::Builder {
 public:
  Builder(ExecutionGraph& g, const Plan& plan, models::Router& router)
      : g_(g), s_(*plan.schedule), plan_(plan), router_(router), topo_(router.topology()),
        capped_(any_capped(plan)) {}
  void number_parts();
  void number_ops();
  void link_dependents();
  void collect_sends();
  void add_transfers();
  void pool_latencies();
  void check_sends_matched() const;

 private:
  void add_received(int r, std::size_t i);
  void add_switch_leg(int r, std::size_t i);
  std::uint32_t add_transfer(Transfer t, const models::Path& path, std::uint32_t steps, std::uint64_t data_bytes, int rank);
  /// The cost parameters of rank r's part.
  const CostParams& cost_of(int r) const {
    return plan_.part_cost.empty() ? plan_.cost : plan_.part_cost[g_.rank_part[static_cast<std::size_t>(r)]];
  }
  /// Rank r's index within its part (what ECMP hashes).
  int local_rank(int r) const {
    return plan_.part_cost.empty() ? r : r - static_cast<int>(plan_.part_first_rank[g_.rank_part[static_cast<std::size_t>(r)]]);
  }
  /// A new rate-capped connection of rank r's part.
  std::uint32_t new_connection(int r) {
    g_.connection_rate.push_back(cost_of(r).max_rate);
    return g_.connections++;
  }
  std::size_t range_of(std::uint64_t key) const;
  models::DeviceId nvswitch_of(int rank) const;
  std::uint32_t op_id(int r, std::size_t i) const { return g_.rank_first_op_[static_cast<std::size_t>(r)] + static_cast<std::uint32_t>(i); }

  ExecutionGraph& g_;
  const models::Schedule& s_;
  const Plan& plan_;
  models::Router& router_;
  const models::Topology& topo_;
  const bool capped_;
  // Sends per (source, destination, channel) in op order, matched to receives in order: one
  // sorted array (no per-key containers: a direct AlltoAll has n(n−1) keys). The range of a
  // key starts at its first entry; next_[start] counts its sends already matched and
  // last_on_connection_[start] is its latest transfer.
  std::vector<SendEntry> sends_;  // sorted by (key, send op)
  std::vector<std::uint32_t> next_, last_on_connection_;
  // Per part: (source GPU, destination GPU, channel) -> connection.
  std::vector<std::unordered_map<std::uint64_t, std::uint32_t>> connection_ids_;
};

ExecutionGraph::ExecutionGraph(const Plan& plan, models::Router& router) : plan_(plan) {
  const models::Schedule& s = *plan.schedule;
  if (static_cast<int>(plan.rank_gpu.size()) != s.nranks) {
    throw std::invalid_argument(fmt::format("plan maps {} ranks to GPUs, schedule has {}", plan.rank_gpu.size(), s.nranks));
  }
  Builder b(*this, plan, router);
  b.number_parts();
  b.number_ops();
  b.link_dependents();
  b.collect_sends();
  b.add_transfers();
  b.pool_latencies();
  b.check_sends_matched();
}

// Each rank's part (Plan::part_first_rank).
void ExecutionGraph::Builder::number_parts() {
  const auto n = static_cast<std::size_t>(s_.nranks);
  g_.rank_part.assign(n, 0);
  connection_ids_.resize(std::max<std::size_t>(1, plan_.part_cost.size()));
  if (plan_.part_cost.empty() && plan_.part_first_rank.empty()) return;
  const auto& first = plan_.part_first_rank;
  if (first.size() != plan_.part_cost.size() || first.front() != 0) {
    throw std::invalid_argument(fmt::format("plan has {} part costs and {} part starts (the first must be rank 0)",
                                            plan_.part_cost.size(), first.size()));
  }
  for (std::size_t k = 0; k < first.size(); ++k) {
    const std::size_t end = k + 1 < first.size() ? first[k + 1] : n;
    if (end < first[k] || end > n) throw std::invalid_argument(fmt::format("plan part {} starts at rank {} past its end {}", k, first[k], end));
    for (std::size_t r = first[k]; r < end; ++r) g_.rank_part[r] = static_cast<std::uint32_t>(k);
  }
}

// Global op ids, rank by rank.
void ExecutionGraph::Builder::number_ops() {
  std::uint32_t total = 0;
  for (int r = 0; r < s_.nranks; ++r) {
    g_.rank_first_op_.push_back(total);
    total += static_cast<std::uint32_t>(s_.ranks[static_cast<std::size_t>(r)].ops.size());
  }
  g_.rank_first_op_.push_back(total);
  g_.op_rank_.resize(total);
  for (int r = 0; r < s_.nranks; ++r)
    for (std::uint32_t i = g_.rank_first_op_[r]; i < g_.rank_first_op_[r + 1]; ++i) g_.op_rank_[i] = r;
}

// Dependencies: each op's as global ids, in rows; the DAG lists the ops that depend on each.
void ExecutionGraph::Builder::link_dependents() {
  const std::uint32_t total = g_.op_count();
  std::vector<std::uint32_t> dep_begin(total + 1, 0), deps;
  std::size_t pool = 0;
  for (const auto& prog : s_.ranks) pool += prog.dep_pool.size();
  deps.reserve(pool);
  for (int r = 0; r < s_.nranks; ++r) {
    const auto& prog = s_.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      for (std::uint32_t d : prog.deps(i)) deps.push_back(op_id(r, d));
      dep_begin[op_id(r, i) + 1] = static_cast<std::uint32_t>(deps.size());
    }
  }
  g_.dag = Dag(dep_begin, deps);
}

// Every send, sorted by connection key; room for one transfer per send and per switch leg.
void ExecutionGraph::Builder::collect_sends() {
  for (int r = 0; r < s_.nranks; ++r) {
    const auto& prog = s_.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < prog.ops.size(); ++i)
      if (const models::Op& op = prog.ops[i]; op.kind == OpKind::Send) {
        sends_.push_back({key_of(r, op.peer, op.channel), op_id(r, i), op.steps, op.tag, op.src.bytes});
      }
  }
  std::sort(sends_.begin(), sends_.end());  // op ids grow with op order: each key's sends stay in order
  std::size_t legs = 0;
  for (const auto& prog : s_.ranks)
    for (const models::Op& op : prog.ops) legs += op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv ? 1 : 0;
  g_.transfers.reserve(sends_.size() + legs);
  next_.assign(sends_.size(), 0);
  last_on_connection_.assign(sends_.size(), kNoOp);
}

// Match sends and receives FIFO per (src, dst, channel); one transfer per rank <-> NVSwitch leg.
void ExecutionGraph::Builder::add_transfers() {
  g_.op_transfer.assign(g_.op_count(), kNoOp);
  g_.group_size.assign(s_.switch_groups.begin(), s_.switch_groups.end());
  g_.group_receivers.assign(s_.switch_groups.size(), {});
  for (int r = 0; r < s_.nranks; ++r) {
    const auto& prog = s_.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const OpKind kind = prog.ops[i].kind;
      if (kind == OpKind::Recv || kind == OpKind::RecvReduce) {
        add_received(r, i);
      } else if (kind == OpKind::SwitchSend || kind == OpKind::SwitchRecv) {
        add_switch_leg(r, i);
      }
    }
  }
}

// Receive op i of rank r: the transfer from the next unmatched send of its connection.
void ExecutionGraph::Builder::add_received(int r, std::size_t i) {
  const models::Op& op = s_.ranks[static_cast<std::size_t>(r)].ops[i];
  const std::uint32_t id = op_id(r, i);
  const models::DeviceId gpu = plan_.rank_gpu[static_cast<std::size_t>(r)];
  const std::uint64_t key = key_of(op.peer, r, op.channel);
  const std::size_t start = range_of(key);
  if (start == sends_.size() || start + next_[start] >= sends_.size() || sends_[start + next_[start]].key != key) {
    throw std::invalid_argument(fmt::format("rank {} op {} receives from rank {} but nothing is sent", r, i, op.peer));
  }
  const SendEntry& send = sends_[start + next_[start]++];
  const std::uint32_t send_id = send.op;
  const models::DeviceId src = plan_.rank_gpu[static_cast<std::size_t>(op.peer)];
  Transfer t;
  if (capped_) {  // connections matter only for a rate cap
    auto& ids = connection_ids_[g_.rank_part[static_cast<std::size_t>(r)]];
    const auto [it_conn, fresh] = ids.try_emplace(key_of(static_cast<int>(src), static_cast<int>(gpu), op.channel), g_.connections);
    if (fresh) new_connection(r);
    t.connection = it_conn->second;
  }
  t.send_op = send_id;
  t.recv_op = id;
  t.src = src;
  t.dst = gpu;
  t.steps = send.steps;
  t.pool = send.tag;
  // ECMP: the spine is chosen by a hash of the connection (source rank, destination
  // rank, channel), as a switch hashes a queue pair's header; each channel is its own QP.
  // (With balanced ECMP the router uses the channel and the NICs' leaf ports instead.)
  const std::uint64_t flow = support::splitmix64(key_of(local_rank(op.peer), local_rank(r), op.channel));
  const std::uint32_t tid =
      src == gpu ? add_transfer(t, models::Path{}, send.steps, send.bytes, op.peer)
                 : add_transfer(t, router_.route(src, gpu, flow, static_cast<std::uint32_t>(op.channel), cost_of(r).pxn), send.steps, send.bytes, op.peer);
  g_.op_transfer[send_id] = tid;
  g_.op_transfer[id] = tid;
  // Receives of one rank come in op order, and are matched to sends in op order, so
  // transfers of one connection are created in message order.
  if (last_on_connection_[start] != kNoOp) {
    g_.transfers[last_on_connection_[start]].next_on_connection = tid;
    g_.transfers[tid].waits_for_previous = true;
  }
  last_on_connection_[start] = tid;
}

// Switch op i of rank r: a GPU -> NVSwitch (SwitchSend) or NVSwitch -> GPU (SwitchRecv) leg.
void ExecutionGraph::Builder::add_switch_leg(int r, std::size_t i) {
  const models::Op& op = s_.ranks[static_cast<std::size_t>(r)].ops[i];
  const std::uint32_t id = op_id(r, i);
  const models::DeviceId gpu = plan_.rank_gpu[static_cast<std::size_t>(r)];
  const models::DeviceId sw = nvswitch_of(r);
  Transfer t;
  t.connection = new_connection(r);  // in-switch legs are not capped together
  t.group = op.tag;
  const bool up = op.kind == OpKind::SwitchSend;
  (up ? t.send_op : t.recv_op) = id;
  t.src = up ? gpu : sw;
  t.dst = up ? sw : gpu;
  const std::uint32_t tid = add_transfer(t, router_.route(t.src, t.dst), op.steps, op.bytes(), r);
  g_.op_transfer[id] = tid;
  if (!up) g_.group_receivers[op.tag].push_back(tid);
}

std::uint32_t ExecutionGraph::Builder::add_transfer(Transfer t, const models::Path& path, std::uint32_t steps, std::uint64_t data_bytes,
                                                    int rank) {
  const CostParams& cost = cost_of(rank);
  models::LinkClass worst = models::LinkClass::ScaleUp;
  for (models::LinkId id : path.links) worst = std::max(worst, topo_.link(id).link_class);
  // Whole bytes, as SimGrid's payloads are: both engines see the same transfer.
  t.bytes = std::round(static_cast<double>(data_bytes) * cost.wire_factor);
  t.latency = steps * (path.latency + cost.step_latency[static_cast<std::size_t>(worst)]);
  t.path_begin = static_cast<std::uint32_t>(g_.path_links.size());
  t.path_count = static_cast<std::uint32_t>(path.links.size());
  g_.path_links.insert(g_.path_links.end(), path.links.begin(), path.links.end());
  g_.transfers.push_back(t);
  return static_cast<std::uint32_t>(g_.transfers.size() - 1);
}

// Start of key's range in sends_, or sends_.size().
std::size_t ExecutionGraph::Builder::range_of(std::uint64_t key) const {
  const auto it = std::lower_bound(sends_.begin(), sends_.end(), key, [](const SendEntry& e, std::uint64_t k) { return e.key < k; });
  return it != sends_.end() && it->key == key ? static_cast<std::size_t>(it - sends_.begin()) : sends_.size();
}

models::DeviceId ExecutionGraph::Builder::nvswitch_of(int rank) const {
  const models::DeviceId gpu = plan_.rank_gpu[static_cast<std::size_t>(rank)];
  for (models::LinkId id : topo_.out_links(gpu))
    if (topo_.device(topo_.link_target(id)).kind == models::DeviceKind::NvSwitch) return topo_.link_target(id);
  throw std::invalid_argument(fmt::format("NVLS: rank {} ({}) has no NVSwitch", rank, topo_.name(gpu)));
}

// Latency pools (phase-granularity rings): every transfer pays its steps times the pool's
// mean per-step latency (see models::Op::tag).
// Pooled transfers are the matched sends (group == kNoOp) of Send ops with a tag and steps,
// whose steps and tag each Transfer keeps. Pools are numbered densely from 1 per generator.
void ExecutionGraph::Builder::pool_latencies() {
  std::vector<Transfer>& transfers = g_.transfers;
  const auto pooled = [](const Transfer& t) { return t.send_op != kNoOp && t.group == kNoOp && t.pool != 0 && t.steps != 0; };
  std::uint32_t pools = 0;
  for (const Transfer& t : transfers)
    if (pooled(t)) pools = std::max(pools, t.pool);
  if (pools == 0) return;
  // (Σ per-step latency, count) per pool: by index when tags are dense (the generators'), else by map.
  std::vector<std::pair<double, std::uint32_t>> dense;
  std::map<std::uint32_t, std::pair<double, std::uint32_t>> sparse;
  const bool by_index = pools <= transfers.size() + 1;
  if (by_index) dense.assign(static_cast<std::size_t>(pools) + 1, {0.0, 0});
  const auto acc_of = [&](std::uint32_t pool) -> std::pair<double, std::uint32_t>& { return by_index ? dense[pool] : sparse[pool]; };
  for (const Transfer& t : transfers) {
    if (!pooled(t)) continue;
    auto& acc = acc_of(t.pool);
    acc.first += t.latency / t.steps;
    acc.second += 1;
  }
  for (Transfer& t : transfers) {
    if (!pooled(t)) continue;
    const auto& acc = acc_of(t.pool);
    t.latency = t.steps * (acc.first / acc.second);
  }
}

// Throws for the smallest connection key with a send left over (a deterministic message).
void ExecutionGraph::Builder::check_sends_matched() const {
  std::uint64_t unmatched = ~0ULL;
  for (std::size_t start = 0; start < sends_.size() && unmatched == ~0ULL;) {
    std::size_t end = start;
    while (end < sends_.size() && sends_[end].key == sends_[start].key) ++end;
    if (start + next_[start] != end) unmatched = sends_[start].key;
    start = end;
  }
  if (unmatched != ~0ULL) {
    throw std::invalid_argument(fmt::format("rank {} sends to rank {} on channel {} with no matching receive", unmatched >> 40,
                                            (unmatched >> 16) & 0xFFFFFF, unmatched & 0xFFFF));
  }
}

DagState::DagState(const ExecutionGraph& graph)
    : g_(graph),
      pending_(graph.dag.dependency_counts()),
      side_ready_(graph.transfers.size(), 0),
      connection_free_(graph.transfers.size(), 1),
      latency_over_(graph.transfers.size(), 0),
      group_arrived_(graph.group_size.size(), 0),
      recv_waiting_(graph.transfers.size(), 0),
      finished_(graph.op_count(), 0) {
  for (std::size_t t = 0; t < graph.transfers.size(); ++t)
    if (graph.transfers[t].waits_for_previous) connection_free_[t] = 0;
}

bool DagState::latency_elapsed(std::uint32_t t) {
  if (connection_free_[t]) return true;
  latency_over_[t] = 1;
  return false;
}

void DagState::start(Events& out, const std::vector<char>& held) {
  // Collect first: readying one op can cascade into later ops reaching zero dependencies.
  std::vector<std::uint32_t> initial;
  for (std::uint32_t op = 0; op < g_.op_count(); ++op) {
    if (g_.dag.dependency_counts()[op] != 0) continue;
    if (!held.empty() && held[static_cast<std::size_t>(g_.rank_of(op))]) continue;
    initial.push_back(op);
  }
  for (std::uint32_t op : initial) ready(op, out);
}

void DagState::arrive(std::size_t r, Events& out) {
  std::vector<std::uint32_t> initial;
  for (std::uint32_t op = g_.rank_first_op(r); op < g_.rank_first_op(r + 1); ++op)
    if (g_.dag.dependency_counts()[op] == 0) initial.push_back(op);
  for (std::uint32_t op : initial) ready(op, out);
}

std::vector<char> held_ranks(const Plan& plan) {
  std::vector<char> held;
  if (plan.rank_ready.empty()) return held;
  const std::size_t n = plan.schedule->ranks.size();
  if (plan.rank_ready.size() != n) {
    throw std::invalid_argument(fmt::format("rank_ready has {} entries for {} ranks", plan.rank_ready.size(), n));
  }
  held.assign(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    const double t = plan.rank_ready[r];
    if (!std::isfinite(t) || t < 0) throw std::invalid_argument(fmt::format("rank {} ready at {} s: expected a finite time >= 0", r, t));
    held[r] = t > 0 ? 1 : 0;
  }
  return held;
}

void DagState::ready(std::uint32_t op, Events& out) {
  const std::uint32_t t = g_.op_transfer[op];
  if (t == kNoOp) {  // local op: completes at once
    finish(op, out);
    return;
  }
  const Transfer& tr = g_.transfers[t];
  if (tr.group != kNoOp && tr.send_op == kNoOp) {  // switch -> GPU: needs the whole group
    if (group_arrived_[tr.group] >= g_.group_size[tr.group]) out.startable.push_back(t);
    else recv_waiting_[t] = 1;
    return;
  }
  if (tr.group != kNoOp) {  // GPU -> switch
    out.startable.push_back(t);
    return;
  }
  side_ready_[t] |= op == tr.send_op ? 1 : 2;
  if (side_ready_[t] == 3) out.startable.push_back(t);
}

void DagState::finish(std::uint32_t op, Events& out) {
  if (finished_[op]) {
    throw std::logic_error(fmt::format("engine bug: rank {} op {} finished twice", g_.rank_of(op), g_.local_index(op)));
  }
  finished_[op] = 1;
  out.finished.push_back(op);
  ++done_count_;
  for (std::uint32_t d : g_.dag.successors(op))
    if (--pending_[d] == 0) ready(d, out);
}

void DagState::transfer_done(std::uint32_t t, Events& out) {
  const Transfer& tr = g_.transfers[t];
  if (tr.group != kNoOp && tr.recv_op == kNoOp) {
    if (++group_arrived_[tr.group] == g_.group_size[tr.group]) {
      for (std::uint32_t r : g_.group_receivers[tr.group]) {
        if (recv_waiting_[r]) {
          recv_waiting_[r] = 0;
          out.startable.push_back(r);
        }
      }
    }
  }
  if (tr.next_on_connection != kNoOp) {
    const std::uint32_t next = tr.next_on_connection;
    connection_free_[next] = 1;
    if (latency_over_[next]) out.flowable.push_back(next);
  }
  if (tr.send_op != kNoOp) finish(tr.send_op, out);
  if (tr.recv_op != kNoOp) finish(tr.recv_op, out);
}

}  // namespace ccsim::sim::detail
