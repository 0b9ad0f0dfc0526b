#include "planner/collective/candidate_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/execution/execution_graph.hpp"

namespace ccsim::planner {

namespace {
constexpr std::uint32_t kNone = ~0U;
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

ScheduleBound::ScheduleBound(const sim::Plan& plan, models::Router& router) : shape_(*plan.schedule) {
  const sim::detail::ExecutionGraph g(plan, router);
  t0_ = plan.cost.base_latency;
  wire_factor_ = plan.cost.wire_factor;
  add_ops(g);
  add_legs(plan, router.topology(), g);
  const std::vector<std::uint32_t> up_count = add_groups(g);
  add_order(g, up_count);
}

void ScheduleBound::add_ops(const sim::detail::ExecutionGraph& g) {
  const models::Schedule& s = shape_;
  // Ops: global ids rank by rank (as ExecutionGraph numbers them), dependencies forward.
  std::uint32_t total = 0;
  for (const auto& prog : s.ranks) {
    rank_first_op_.push_back(total);
    total += static_cast<std::uint32_t>(prog.ops.size());
  }
  rank_first_op_.push_back(total);
  op_deps_begin_.assign(1, 0);
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& prog = s.ranks[r];
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      for (std::uint32_t d : prog.deps(i)) op_deps_.push_back(rank_first_op_[r] + d);
      op_deps_begin_.push_back(static_cast<std::uint32_t>(op_deps_.size()));
    }
  }
  op_transfer_ = g.op_transfer;
}

void ScheduleBound::add_legs(const sim::Plan& plan, const models::Topology& topo, const sim::detail::ExecutionGraph& g) {
  const auto nt = static_cast<std::uint32_t>(g.transfers.size());
  // Transfers: latency and lone rate as the engine charges them, links as local indices.
  const auto capacity = [&](models::LinkId id) {
    const models::Link& l = topo.link(id);
    const double eff = l.kind < plan.cost.link_efficiency.size() ? plan.cost.link_efficiency[l.kind] : 1.0;
    return l.bandwidth * eff;
  };
  // Local index of each link the transfers use: by a table over the topology's links when
  // that is no larger than the transfers' links, else by search in their sorted set (a few
  // GPUs' plan on a 16,384-GPU fabric must not cost a table of all its links).
  const bool table = topo.num_links() <= 8 * g.path_links.size();
  std::vector<std::uint32_t> local(table ? topo.num_links() : 0, kNone);
  std::vector<models::LinkId> used;
  std::vector<std::uint32_t> used_local;
  if (!table) {
    used.assign(g.path_links.begin(), g.path_links.end());
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    used_local.assign(used.size(), kNone);
  }
  const auto slot = [&](models::LinkId id) -> std::uint32_t& {
    return table ? local[id] : used_local[static_cast<std::size_t>(std::lower_bound(used.begin(), used.end(), id) - used.begin())];
  };
  std::vector<std::uint32_t> prev(nt, kNone);
  for (std::uint32_t t = 0; t < nt; ++t)
    if (g.transfers[t].next_on_connection != sim::detail::kNoOp) prev[g.transfers[t].next_on_connection] = t;
  legs_.reserve(nt);
  for (std::uint32_t t = 0; t < nt; ++t) {
    const sim::detail::Transfer& tr = g.transfers[t];
    Leg leg{};
    leg.send_op = tr.send_op;
    leg.recv_op = tr.recv_op;
    leg.data_op = tr.send_op != sim::detail::kNoOp ? tr.send_op : tr.recv_op;
    leg.data_rank = static_cast<std::uint32_t>(g.rank_of(leg.data_op));
    leg.data_index = g.local_index(leg.data_op);
    leg.prev = tr.waits_for_previous ? prev[t] : kNone;
    leg.group = tr.group != sim::detail::kNoOp && tr.send_op == sim::detail::kNoOp ? tr.group : kNone;
    leg.latency = tr.latency;
    double rate = plan.cost.max_rate;
    leg.links_begin = static_cast<std::uint32_t>(link_of_.size());
    for (std::uint32_t k = 0; k < tr.path_count; ++k) {
      const models::LinkId id = g.path_links[tr.path_begin + k];
      std::uint32_t& l = slot(id);
      if (l == kNone) {
        l = static_cast<std::uint32_t>(link_capacity_.size());
        link_capacity_.push_back(capacity(id));
      }
      link_of_.push_back(l);
      rate = std::min(rate, capacity(id));
    }
    leg.links_end = static_cast<std::uint32_t>(link_of_.size());
    // No links: the engine completes it when its latency ends. A zero or unbounded rate would
    // stall or not flow in the engine; 0 here (no data time) keeps the bound a bound.
    leg.rate = tr.path_count > 0 && rate > 0.0 && rate < kInf ? rate : 0.0;
    legs_.push_back(leg);
  }
}

std::vector<std::uint32_t> ScheduleBound::add_groups(const sim::detail::ExecutionGraph& g) {
  const auto nt = static_cast<std::uint32_t>(g.transfers.size());
  const auto ngroups = static_cast<std::uint32_t>(g.group_size.size());
  // In-switch groups: their GPU -> switch legs. The engine starts the switch -> GPU legs when
  // group_size legs have arrived: all of them when there are exactly that many (the latest
  // arrival), the first when there are more (a bound: the group_size-th comes no earlier).
  std::vector<std::uint32_t> up_count(ngroups, 0);
  for (std::uint32_t t = 0; t < nt; ++t)
    if (g.transfers[t].group != sim::detail::kNoOp && g.transfers[t].recv_op == sim::detail::kNoOp) ++up_count[g.transfers[t].group];
  group_begin_.assign(ngroups + 1, 0);
  for (std::uint32_t k = 0; k < ngroups; ++k) group_begin_[k + 1] = group_begin_[k] + up_count[k];
  group_up_.resize(group_begin_[ngroups]);
  std::vector<std::uint32_t> fill(group_begin_.begin(), group_begin_.end() - 1);
  for (std::uint32_t t = 0; t < nt; ++t)
    if (g.transfers[t].group != sim::detail::kNoOp && g.transfers[t].recv_op == sim::detail::kNoOp) group_up_[fill[g.transfers[t].group]++] = t;
  group_first_.assign(ngroups, 0);
  for (std::uint32_t k = 0; k < ngroups; ++k) group_first_[k] = up_count[k] > static_cast<std::uint32_t>(g.group_size[k]) ? 1 : 0;
  return up_count;
}

void ScheduleBound::add_order(const sim::detail::ExecutionGraph& g, const std::vector<std::uint32_t>& up_count) {
  const std::uint32_t nops = g.op_count();
  const auto nt = static_cast<std::uint32_t>(g.transfers.size());
  const auto ngroups = static_cast<std::uint32_t>(g.group_size.size());
  // Dependency order (Kahn) over nodes: op ready [0, ops), transfer done [ops, ops + T),
  // group complete [ops + T, ops + T + G).
  const std::uint32_t nnodes = nops + nt + ngroups;
  std::vector<std::uint32_t> indegree(nnodes, 0), succ_begin(nnodes + 1, 0), succ;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // (from, to)
  const auto finish_node = [&](std::uint32_t op) { return op_transfer_[op] == sim::detail::kNoOp ? op : nops + op_transfer_[op]; };
  for (std::uint32_t op = 0; op < nops; ++op)
    for (std::uint32_t k = op_deps_begin_[op]; k < op_deps_begin_[op + 1]; ++k) edges.emplace_back(finish_node(op_deps_[k]), op);
  for (std::uint32_t t = 0; t < nt; ++t) {
    const Leg& leg = legs_[t];
    if (leg.send_op != kNone) edges.emplace_back(leg.send_op, nops + t);
    if (leg.recv_op != kNone) edges.emplace_back(leg.recv_op, nops + t);
    if (leg.prev != kNone) edges.emplace_back(nops + leg.prev, nops + t);
    if (leg.group != kNone) edges.emplace_back(nops + nt + leg.group, nops + t);
  }
  for (std::uint32_t k = 0; k < ngroups; ++k) {
    for (std::uint32_t i = group_begin_[k]; i < group_begin_[k + 1]; ++i) edges.emplace_back(nops + group_up_[i], nops + nt + k);
    if (up_count[k] < static_cast<std::uint32_t>(g.group_size[k])) ++indegree[nops + nt + k];  // never completes
  }
  for (const auto& [from, to] : edges) {
    ++succ_begin[from + 1];
    ++indegree[to];
  }
  for (std::uint32_t i = 0; i < nnodes; ++i) succ_begin[i + 1] += succ_begin[i];
  succ.resize(edges.size());
  {
    std::vector<std::uint32_t> at(succ_begin.begin(), succ_begin.end() - 1);
    for (const auto& [from, to] : edges) succ[at[from]++] = to;
  }
  order_.reserve(nnodes);
  for (std::uint32_t i = 0; i < nnodes; ++i)
    if (indegree[i] == 0) order_.push_back(i);
  for (std::size_t head = 0; head < order_.size(); ++head) {
    const std::uint32_t u = order_[head];
    for (std::uint32_t k = succ_begin[u]; k < succ_begin[u + 1]; ++k)
      if (--indegree[succ[k]] == 0) order_.push_back(succ[k]);
  }
  // Ops and transfers left out never run: the engine reports the deadlock. (A group alone
  // left out has no receiver waiting for it.)
  std::uint32_t stuck = 0;
  for (std::uint32_t i = 0; i < nops + nt; ++i) stuck += indegree[i] > 0 ? 1 : 0;
  if (stuck > 0) throw std::runtime_error(fmt::format("schedule {} deadlocks ({} ops and transfers never run)", shape_.algorithm, stuck));
}

bool ScheduleBound::matches(const models::Schedule& s) const {
  if (s.nranks != shape_.nranks || s.channels != shape_.channels || s.ranks.size() != shape_.ranks.size() ||
      s.switch_groups != shape_.switch_groups) {
    return false;
  }
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    const models::RankProgram& a = s.ranks[r];
    const models::RankProgram& b = shape_.ranks[r];
    if (a.ops.size() != b.ops.size() || a.dep_pool != b.dep_pool) return false;
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      const models::Op& x = a.ops[i];
      const models::Op& y = b.ops[i];
      if (x.kind != y.kind || x.peer != y.peer || x.channel != y.channel || x.steps != y.steps || x.tag != y.tag ||
          x.dep_begin != y.dep_begin || x.dep_count != y.dep_count) {
        return false;
      }
    }
  }
  return true;
}

double ScheduleBound::evaluate(const models::Schedule& s) const {
  const std::size_t nops = ops();
  const std::size_t nt = legs_.size();
  std::vector<double> ready(nops, 0.0), fin(nops, 0.0), done(nt, 0.0), flow(nt, 0.0), bytes(nt, 0.0);
  std::vector<double> group_done(group_first_.size(), 0.0);
  double makespan = t0_;
  for (std::uint32_t node : order_) {
    if (node < nops) {
      double r = t0_;
      for (std::uint32_t k = op_deps_begin_[node]; k < op_deps_begin_[node + 1]; ++k) r = std::max(r, fin[op_deps_[k]]);
      ready[node] = r;
      if (op_transfer_[node] == sim::detail::kNoOp) fin[node] = r;
    } else if (node < nops + nt) {
      const std::size_t t = node - nops;
      const Leg& leg = legs_[t];
      double start = 0.0;
      if (leg.send_op != kNone) start = std::max(start, ready[leg.send_op]);
      if (leg.recv_op != kNone) start = std::max(start, ready[leg.recv_op]);
      if (leg.group != kNone) start = std::max(start, group_done[leg.group]);
      double f = start + leg.latency;
      if (leg.prev != kNone) f = std::max(f, done[leg.prev]);
      // Whole wire bytes, as ExecutionGraph rounds them.
      bytes[t] = std::round(static_cast<double>(s.ranks[leg.data_rank].ops[leg.data_index].bytes()) * wire_factor_);
      const double d = bytes[t] > 0.0 && leg.rate > 0.0 ? f + bytes[t] / leg.rate : f;
      flow[t] = f;
      done[t] = d;
      if (leg.send_op != kNone) fin[leg.send_op] = d;
      if (leg.recv_op != kNone) fin[leg.recv_op] = d;
      makespan = std::max(makespan, d);
    } else {
      const std::size_t k = node - nops - nt;
      double at = group_first_[k] ? kInf : 0.0;
      for (std::uint32_t i = group_begin_[k]; i < group_begin_[k + 1]; ++i) {
        at = group_first_[k] ? std::min(at, done[group_up_[i]]) : std::max(at, done[group_up_[i]]);
      }
      group_done[k] = at == kInf ? 0.0 : at;
    }
  }
  // Link volume after the earliest contention-free start of each link's data.
  std::vector<double> volume(link_capacity_.size(), 0.0), first(link_capacity_.size(), kInf);
  for (std::size_t t = 0; t < nt; ++t) {
    if (bytes[t] <= 0.0) continue;
    for (std::uint32_t k = legs_[t].links_begin; k < legs_[t].links_end; ++k) {
      volume[link_of_[k]] += bytes[t];
      first[link_of_[k]] = std::min(first[link_of_[k]], flow[t]);
    }
  }
  for (std::size_t l = 0; l < volume.size(); ++l)
    if (volume[l] > 0.0 && link_capacity_[l] > 0.0) makespan = std::max(makespan, first[l] + volume[l] / link_capacity_[l]);
  return makespan;
}

double engine_lower_bound(const sim::Plan& plan, models::Router& router) {
  return ScheduleBound(plan, router).evaluate(*plan.schedule);
}

}  // namespace ccsim::planner
