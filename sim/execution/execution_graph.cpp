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

ExecutionGraph::ExecutionGraph(const Plan& plan, models::Router& router) : plan_(plan) {
  const models::Schedule& s = *plan.schedule;
  const models::Topology& topo = router.topology();
  if (static_cast<int>(plan.rank_gpu.size()) != s.nranks) {
    throw std::invalid_argument(fmt::format("plan maps {} ranks to GPUs, schedule has {}", plan.rank_gpu.size(), s.nranks));
  }
  // Global op ids, rank by rank.
  std::uint32_t total = 0;
  for (int r = 0; r < s.nranks; ++r) {
    rank_first_op_.push_back(total);
    total += static_cast<std::uint32_t>(s.ranks[static_cast<std::size_t>(r)].ops.size());
  }
  rank_first_op_.push_back(total);
  op_rank_.resize(total);
  for (int r = 0; r < s.nranks; ++r)
    for (std::uint32_t i = rank_first_op_[r]; i < rank_first_op_[r + 1]; ++i) op_rank_[i] = r;

  // Dependencies: each op's as global ids, in rows; the DAG lists the ops that depend on each.
  {
    std::vector<std::uint32_t> dep_begin(total + 1, 0), deps;
    std::size_t pool = 0;
    for (const auto& prog : s.ranks) pool += prog.dep_pool.size();
    deps.reserve(pool);
    for (int r = 0; r < s.nranks; ++r) {
      const auto& prog = s.ranks[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < prog.ops.size(); ++i) {
        for (std::uint32_t d : prog.deps(i)) deps.push_back(rank_first_op_[r] + d);
        dep_begin[rank_first_op_[r] + i + 1] = static_cast<std::uint32_t>(deps.size());
      }
    }
    dag = Dag(dep_begin, deps);
  }

  // Match sends and receives FIFO per (src, dst, channel).
  const CostParams& cost = plan.cost;
  const auto add_transfer = [&](Transfer t, const models::Path& path, std::uint32_t steps, std::uint64_t data_bytes) {
    models::LinkClass worst = models::LinkClass::ScaleUp;
    for (models::LinkId id : path.links) worst = std::max(worst, topo.link(id).link_class);
    // Whole bytes, as SimGrid's payloads are: both engines see the same transfer.
    t.bytes = std::round(static_cast<double>(data_bytes) * cost.wire_factor);
    t.latency = steps * (path.latency + cost.step_latency[static_cast<std::size_t>(worst)]);
    t.path_begin = static_cast<std::uint32_t>(path_links.size());
    t.path_count = static_cast<std::uint32_t>(path.links.size());
    path_links.insert(path_links.end(), path.links.begin(), path.links.end());
    transfers.push_back(t);
    return static_cast<std::uint32_t>(transfers.size() - 1);
  };
  op_transfer.assign(total, kNoOp);
  group_size.assign(s.switch_groups.begin(), s.switch_groups.end());
  group_receivers.assign(s.switch_groups.size(), {});
  // Sends per (source, destination, channel) in op order, matched to receives in order: one
  // sorted array (no per-key containers: a direct AlltoAll has n(n−1) keys). The range of a
  // key starts at its first entry; next[start] counts its sends already matched and
  // last_on_connection[start] is its latest transfer.
  const auto key_of = [](int src, int dst, int channel) {
    return (static_cast<std::uint64_t>(src) << 40) | (static_cast<std::uint64_t>(dst) << 16) | static_cast<std::uint64_t>(channel);
  };
  // Each send with what its transfer needs of it (steps, latency pool, bytes), so matching a
  // receive reads the entry the search found rather than the peer's program.
  struct SendEntry {
    std::uint64_t key;
    std::uint32_t op;
    std::uint32_t steps;
    std::uint32_t tag;
    std::uint64_t bytes;
    bool operator<(const SendEntry& o) const { return key != o.key ? key < o.key : op < o.op; }
  };
  std::vector<SendEntry> sends;  // sorted by (key, send op)
  std::unordered_map<std::uint64_t, std::uint32_t> connection_ids;  // (source GPU, destination GPU, channel)
  const bool capped = cost.max_rate < std::numeric_limits<double>::infinity();
  for (int r = 0; r < s.nranks; ++r) {
    const auto& prog = s.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < prog.ops.size(); ++i)
      if (const models::Op& op = prog.ops[i]; op.kind == OpKind::Send) {
        sends.push_back({key_of(r, op.peer, op.channel), rank_first_op_[r] + static_cast<std::uint32_t>(i), op.steps, op.tag, op.src.bytes});
      }
  }
  std::sort(sends.begin(), sends.end());  // op ids grow with op order: each key's sends stay in order
  {
    // One transfer per send and per switch leg.
    std::size_t legs = 0;
    for (const auto& prog : s.ranks)
      for (const models::Op& op : prog.ops) legs += op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv ? 1 : 0;
    transfers.reserve(sends.size() + legs);
  }
  std::vector<std::uint32_t> next(sends.size(), 0), last_on_connection(sends.size(), kNoOp);
  const auto range_of = [&](std::uint64_t key) -> std::size_t {  // start of key's range, or sends.size()
    const auto it = std::lower_bound(sends.begin(), sends.end(), key, [](const SendEntry& e, std::uint64_t k) { return e.key < k; });
    return it != sends.end() && it->key == key ? static_cast<std::size_t>(it - sends.begin()) : sends.size();
  };
  const auto nvswitch_of = [&](int rank) {
    const models::DeviceId gpu = plan.rank_gpu[static_cast<std::size_t>(rank)];
    for (models::LinkId id : topo.out_links(gpu))
      if (topo.device(topo.link_target(id)).kind == models::DeviceKind::NvSwitch) return topo.link_target(id);
    throw std::invalid_argument(fmt::format("NVLS: rank {} ({}) has no NVSwitch", rank, topo.name(gpu)));
  };
  for (int r = 0; r < s.nranks; ++r) {
    const auto& prog = s.ranks[static_cast<std::size_t>(r)];
    const models::DeviceId gpu = plan.rank_gpu[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const models::Op& op = prog.ops[i];
      const std::uint32_t id = rank_first_op_[r] + static_cast<std::uint32_t>(i);
      if (op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce) {
        const std::uint64_t key = key_of(op.peer, r, op.channel);
        const std::size_t start = range_of(key);
        if (start == sends.size() || start + next[start] >= sends.size() || sends[start + next[start]].key != key) {
          throw std::invalid_argument(fmt::format("rank {} op {} receives from rank {} but nothing is sent", r, i, op.peer));
        }
        const SendEntry& send = sends[start + next[start]++];
        const std::uint32_t send_id = send.op;
        const models::DeviceId src = plan.rank_gpu[static_cast<std::size_t>(op.peer)];
        Transfer t;
        if (capped) {  // connections matter only for a rate cap
          const auto [it_conn, fresh] =
              connection_ids.try_emplace(key_of(static_cast<int>(src), static_cast<int>(gpu), op.channel), connections);
          if (fresh) ++connections;
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
        const std::uint64_t flow = support::splitmix64(key_of(op.peer, r, op.channel));
        const std::uint32_t tid =
            src == gpu ? add_transfer(t, models::Path{}, send.steps, send.bytes)
                       : add_transfer(t, router.route(src, gpu, flow, static_cast<std::uint32_t>(op.channel)), send.steps, send.bytes);
        op_transfer[send_id] = tid;
        op_transfer[id] = tid;
        // Receives of one rank come in op order, and are matched to sends in op order, so
        // transfers of one connection are created in message order.
        if (last_on_connection[start] != kNoOp) {
          transfers[last_on_connection[start]].next_on_connection = tid;
          transfers[tid].waits_for_previous = true;
        }
        last_on_connection[start] = tid;
      } else if (op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv) {
        const models::DeviceId sw = nvswitch_of(r);
        Transfer t;
        t.connection = connections++;  // in-switch legs are not capped together
        t.group = op.tag;
        const bool up = op.kind == OpKind::SwitchSend;
        (up ? t.send_op : t.recv_op) = id;
        t.src = up ? gpu : sw;
        t.dst = up ? sw : gpu;
        const std::uint32_t tid = add_transfer(t, router.route(t.src, t.dst), op.steps, op.bytes());
        op_transfer[id] = tid;
        if (!up) group_receivers[op.tag].push_back(tid);
      }
    }
  }
  // Latency pools (phase-granularity rings): every transfer pays its steps times the pool's
  // mean per-step latency (see models::Op::tag).
  // Pooled transfers are the matched sends (group == kNoOp) of Send ops with a tag and steps,
  // whose steps and tag each Transfer keeps. Pools are numbered densely from 1 per generator.
  const auto pooled = [](const Transfer& t) { return t.send_op != kNoOp && t.group == kNoOp && t.pool != 0 && t.steps != 0; };
  std::uint32_t pools = 0;
  for (const Transfer& t : transfers)
    if (pooled(t)) pools = std::max(pools, t.pool);
  if (pools > 0) {
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
  std::uint64_t unmatched = ~0ULL;  // the smallest key with a send left over, for a deterministic message
  for (std::size_t start = 0; start < sends.size() && unmatched == ~0ULL;) {
    std::size_t end = start;
    while (end < sends.size() && sends[end].key == sends[start].key) ++end;
    if (start + next[start] != end) unmatched = sends[start].key;
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

void DagState::start(Events& out) {
  // Collect first: readying one op can cascade into later ops reaching zero dependencies.
  std::vector<std::uint32_t> initial;
  for (std::uint32_t op = 0; op < g_.op_count(); ++op)
    if (g_.dag.dependency_counts()[op] == 0) initial.push_back(op);
  for (std::uint32_t op : initial) ready(op, out);
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
