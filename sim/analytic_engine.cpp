#include "sim/analytic_engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/execution.hpp"
#include "sim/maxmin.hpp"

namespace ccsim::sim {

using detail::DagState;
using detail::ExecutionGraph;
using detail::Transfer;

AnalyticEngine::AnalyticEngine(const models::Cluster& cluster) : cluster_(cluster), router_(cluster) {}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Relative time window within which completions and latency expiries are handled as one
/// event (10^-12: far below any reported precision, far above double rounding).
constexpr double kCoalesce = 1e-12;

struct Event {
  double time;
  std::uint64_t seq;
  std::uint32_t transfer;  // latency of this transfer elapsed
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

}  // namespace

Timeline AnalyticEngine::run(const Plan& plan) {
  const models::Topology& topo = cluster_.topology;
  ExecutionGraph g(plan, router_);
  DagState dag(g);
  Timeline tl;
  tl.transfers = g.transfers.size();
  const double t0 = plan.cost.base_latency;
  std::vector<double> op_start(g.op_count(), -1.0), op_end(g.op_count(), -1.0);

  // Link capacities after efficiency, and per-link statistics.
  const auto capacity = [&](models::LinkId id) {
    const models::Link& l = topo.link(id);
    const double eff = l.kind < plan.cost.link_efficiency.size() ? plan.cost.link_efficiency[l.kind] : 1.0;
    return l.bandwidth * eff;
  };
  std::vector<double> link_bytes(topo.num_links(), 0.0), link_busy(topo.num_links(), 0.0), link_peak(topo.num_links(), 0.0);
  std::vector<char> link_used(topo.num_links(), 0);

  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::uint64_t seq = 0;
  double now = t0;
  std::vector<double> remaining(g.transfers.size(), 0.0), rate(g.transfers.size(), 0.0);
  std::vector<std::uint32_t> active;  // transfers whose bytes are flowing
  bool dirty = false;

  DagState::Events ev;
  // Data of transfer t starts flowing (an empty or local transfer completes at once).
  const auto flow = [&](std::uint32_t t) {
    if (g.transfers[t].bytes <= 0.0 || g.transfers[t].path_count == 0) {
      dag.transfer_done(t, ev);
    } else {
      active.push_back(t);
      dirty = true;
    }
  };
  const auto handle = [&]() {
    while (!ev.empty()) {
      for (std::uint32_t op : ev.finished) {
        if (op_start[op] < 0) op_start[op] = now;
        op_end[op] = now;
      }
      ev.finished.clear();
      const std::vector<std::uint32_t> startable = std::move(ev.startable);
      const std::vector<std::uint32_t> flowable = std::move(ev.flowable);
      ev.startable.clear();
      ev.flowable.clear();
      for (std::uint32_t t : startable) {
        const Transfer& tr = g.transfers[t];
        for (std::uint32_t op : {tr.send_op, tr.recv_op})
          if (op != detail::kNoOp) op_start[op] = now;
        remaining[t] = tr.bytes;
        events.push({now + tr.latency, seq++, t});
      }
      for (std::uint32_t t : flowable) flow(t);
    }
  };
  dag.start(ev);
  handle();

  std::vector<std::uint32_t> local_index(topo.num_links(), ~0U);
  std::vector<std::uint32_t> connection_index(g.connections, ~0U), capped_connections;
  std::vector<models::LinkId> touched;
  MaxMinProblem problem;
  std::vector<std::uint32_t> flow_res;
  std::vector<std::uint32_t> finished;
  while (true) {
    if (dirty) {
      problem.capacity.clear();
      problem.offsets.assign(1, 0);
      problem.resources.clear();
      for (models::LinkId id : touched) local_index[id] = ~0U;
      touched.clear();
      // Links are resources 0 .. touched − 1; with a rate cap, one private resource per
      // connection comes after them (a second pass, so link indices stay contiguous).
      const bool capped = plan.cost.max_rate < kInf;
      for (std::uint32_t t : active) {
        const Transfer& tr = g.transfers[t];
        flow_res.clear();
        for (std::uint32_t k = 0; k < tr.path_count; ++k) {
          const models::LinkId id = g.path_links[tr.path_begin + k];
          if (local_index[id] == ~0U) {
            local_index[id] = static_cast<std::uint32_t>(problem.capacity.size());
            problem.capacity.push_back(capacity(id));
            touched.push_back(id);
          }
          flow_res.push_back(local_index[id]);
        }
        problem.add_flow(flow_res);
      }
      if (capped) {
        for (std::uint32_t c : capped_connections) connection_index[c] = ~0U;
        capped_connections.clear();
        MaxMinProblem with_caps;
        with_caps.capacity = problem.capacity;
        for (std::size_t f = 0; f < active.size(); ++f) {
          const Transfer& tr = g.transfers[active[f]];
          flow_res.assign(problem.resources.begin() + problem.offsets[f], problem.resources.begin() + problem.offsets[f + 1]);
          if (connection_index[tr.connection] == ~0U) {
            connection_index[tr.connection] = static_cast<std::uint32_t>(with_caps.capacity.size());
            with_caps.capacity.push_back(plan.cost.max_rate);
            capped_connections.push_back(tr.connection);
          }
          flow_res.push_back(connection_index[tr.connection]);
          with_caps.add_flow(flow_res);
        }
        problem = std::move(with_caps);
      }
      const std::vector<double> rates = solve_max_min(problem);
      std::vector<double> load(touched.size(), 0.0);
      for (std::size_t f = 0; f < active.size(); ++f) {
        rate[active[f]] = rates[f];
        for (std::uint32_t k = problem.offsets[f]; k < problem.offsets[f + 1]; ++k)
          if (problem.resources[k] < load.size()) load[problem.resources[k]] += rates[f];
      }
      for (std::size_t i = 0; i < touched.size(); ++i) {
        link_used[touched[i]] = 1;
        link_peak[touched[i]] = std::max(link_peak[touched[i]], load[i] / problem.capacity[i]);
      }
      dirty = false;
    }
    // Next flow completion and next latency expiry.
    double next_finish = kInf;
    for (std::uint32_t t : active) next_finish = std::min(next_finish, rate[t] == kInf ? now : now + remaining[t] / rate[t]);
    const double next_event = events.empty() ? kInf : events.top().time;
    const double next = std::min(next_finish, next_event);
    if (next == kInf) break;
    // Advance flowing transfers to `next`.
    const double dt = next - now;
    if (dt > 0) {
      for (std::uint32_t t : active) {
        const double moved = rate[t] == kInf ? remaining[t] : std::min(remaining[t], rate[t] * dt);
        remaining[t] -= moved;
        const Transfer& tr = g.transfers[t];
        for (std::uint32_t k = 0; k < tr.path_count; ++k) link_bytes[g.path_links[tr.path_begin + k]] += moved;
      }
      for (models::LinkId id : touched) link_busy[id] += dt;
    }
    now = next;
    // Completed flows: those that reach zero now (relative tolerance for rounding).
    finished.clear();
    std::vector<std::uint32_t> still;
    still.reserve(active.size());
    for (std::uint32_t t : active) {
      // Done when nothing is left up to rounding, or when what is left would finish within
      // the clock's resolution at this time (now + rem/rate == now), which would stall time.
      // Flows due within kCoalesce (relative) of now finish together: symmetric flows that
      // differ only by rounding would otherwise cost one re-solve each.
      const bool done = rate[t] == kInf || remaining[t] <= 1e-12 * g.transfers[t].bytes + 1e-9 ||
                        remaining[t] / rate[t] <= now * kCoalesce;
      (done ? finished : still).push_back(t);
    }
    active.swap(still);
    if (!finished.empty()) dirty = true;
    for (std::uint32_t t : finished) {
      // Bytes not yet counted (rounding) go to the links now.
      const Transfer& tr = g.transfers[t];
      if (remaining[t] > 0 && rate[t] != kInf)
        for (std::uint32_t k = 0; k < tr.path_count; ++k) link_bytes[g.path_links[tr.path_begin + k]] += remaining[t];
      remaining[t] = 0;
      dag.transfer_done(t, ev);
    }
    handle();
    // Transfers whose latency has elapsed start flowing (or finish, when empty).
    while (!events.empty() && events.top().time <= now * (1.0 + kCoalesce)) {
      const std::uint32_t t = events.top().transfer;
      events.pop();
      if (dag.latency_elapsed(t)) flow(t);
      handle();
    }
  }
  if (dag.ops_done() != g.op_count()) {
    throw std::runtime_error(fmt::format("schedule {} deadlocks: {} of {} ops never ran", plan.schedule->algorithm,
                                         g.op_count() - dag.ops_done(), g.op_count()));
  }
  tl.makespan = now;
  tl.ops.reserve(g.op_count());
  for (std::uint32_t op = 0; op < g.op_count(); ++op) {
    tl.ops.push_back({g.rank_of(op), g.local_index(op), op_start[op], op_end[op]});
  }
  for (models::LinkId id = 0; id < topo.num_links(); ++id) {
    if (link_used[id]) tl.links.push_back({id, link_bytes[id], link_busy[id], link_peak[id]});
  }
  return tl;
}

}  // namespace ccsim::sim
