#include "sim/analytic/analytic_engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/execution/execution_graph.hpp"
#include "sim/sharing/maxmin.hpp"

namespace ccsim::sim {

using detail::DagState;
using detail::ExecutionGraph;
using detail::Transfer;

AnalyticEngine::AnalyticEngine(const models::Cluster& cluster, Sharing sharing)
    : cluster_(cluster), router_(cluster), sharing_(sharing) {}

Timeline AnalyticEngine::run(const Plan& plan) {
  return sharing_ == Sharing::Reference ? run_reference(plan) : run_incremental(plan);
}

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

Timeline AnalyticEngine::run_reference(const Plan& plan) {
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

namespace ccsim::sim {

// Why only some flows are re-solved (each rule keeps the others' rates exactly):
//
// 1. Components. Max-min sharing on resources (links, and per-connection rate caps) splits
//    into independent problems, one per connected component of the flow–resource graph. When
//    flows start or finish, only the components that hold them (or held them) can change; the
//    engine walks those components from the changed flows' resources (breadth first over each
//    resource's flowing transfers) and re-solves them alone, at full capacity (every flow on a
//    visited resource is in the walk). A ring, a tree or a pipeline across a fabric has small
//    components — the flows that share a link with each other — so an event costs the size of
//    its component, not the number of flows in flight.
//
// 2. Slower flows keep their rates when flows only finish. Progressive filling raises all
//    unfrozen rates together and freezes the flows of a resource when its fair share (remaining
//    capacity ÷ unfrozen flows) is the lowest; a resource's fair share only grows as it runs.
//    Let L be the lowest old rate of the finished flows F. Every resource a flow f of F crosses
//    saturated at a level ≥ rate(f) ≥ L, so its fair share stayed above every level v < L;
//    without F it is larger still, so it still does not saturate below L. Resources that F
//    does not cross see the same flows and the same frozen rates. By induction over the levels
//    below L, the same resources saturate at the same levels and freeze the same flows at the
//    same rates. What is left at L — the other flows, and each resource's capacity less the
//    kept flows' rates — is solved afresh, which is exactly how progressive filling would
//    continue. A started flow may lower any level of its component, so it re-solves the
//    component whole.
//
// 3. Nothing to do when every flow left is slower. When flows only finish and no flow still
//    in flight has a rate at or above L, rule 2 keeps every rate: the walk of rule 2 would find
//    nothing, so it is skipped (the highest rate in flight comes from a max-heap of rates). In
//    terms of bottlenecks (an allocation is max-min fair iff every flow crosses a saturated
//    resource on which no flow is faster): a flow g left has rate < L ≤ rate(f) for every
//    finished f, so no finished flow crossed g's bottleneck (g would not be the fastest there);
//    that resource keeps its flows and rates, stays saturated, and g stays its fastest. Every
//    flow keeps a bottleneck, so the old rates are the (unique) max-min allocation.
//
// Both rules apply together when flows only finish: the flows below L are constants, so what
// is left at L splits into components joined only by flows at or above L; the walk from the
// finished flows' resources passes through those flows alone, and re-solves them. When a component is large (a direct AlltoAll
// whose million flows all cross one spine), walking it at every completion would cost as much
// as re-solving it, so when the walk costs more than rule 2 alone would, it stops and rule 2 alone picks the flows
// (from all flows in flight, kept sorted by rate); after such a failed walk the next 1, 2, 4 …
// 64 walks are not tried (direct AlltoAll under hashed ECMP, where the flows at or above L are
// all one component: a complete walk found 1,431,440 flows to re-solve over a 256-rank run,
// rule 2 alone 1,431,900).

namespace {
/// A flow's finish time as the heap holds it; stale when `version` differs from the flow's.
struct Finish {
  double time;
  std::uint32_t transfer;
  std::uint32_t version;
  bool operator>(const Finish& o) const { return time != o.time ? time > o.time : transfer > o.transfer; }
};
/// A flow's rate as the rate heap holds it; stale when `version` differs from the flow's.
struct RateEntry {
  double rate;
  std::uint32_t transfer;
  std::uint32_t version;
};
/// A priority queue (smallest first, by T's operator>) for entries that arrive in large
/// batches: a batch becomes a sorted run (one sort instead of a heap operation per entry — a
/// 1,024-rank AlltoAll starts a million flows at once, and popping them one by one from a heap
/// cost a third of its run time), single entries go to a heap; top() is the smaller of the two.
template <typename T>
class BatchQueue {
 public:
  void push(const T& e) { heap_.push(e); }
  /// Adds many entries at once (merged with what is left of the sorted run).
  void push_batch(std::vector<T> batch) {
    batch.insert(batch.end(), run_.begin() + static_cast<std::ptrdiff_t>(next_), run_.end());
    std::sort(batch.begin(), batch.end(), [](const T& a, const T& b) { return b > a; });
    run_ = std::move(batch);
    next_ = 0;
  }
  /// Replaces everything with `live`.
  void rebuild(std::vector<T> live) {
    run_.clear();
    next_ = 0;
    heap_ = {};
    push_batch(std::move(live));
  }
  bool empty() const { return next_ == run_.size() && heap_.empty(); }
  std::size_t size() const { return run_.size() - next_ + heap_.size(); }
  const T& top() const { return from_run() ? run_[next_] : heap_.top(); }
  void pop() {
    if (from_run()) {
      ++next_;
    } else {
      heap_.pop();
    }
  }

 private:
  bool from_run() const { return next_ < run_.size() && (heap_.empty() || heap_.top() > run_[next_]); }
  std::vector<T> run_;
  std::size_t next_ = 0;
  std::priority_queue<T, std::vector<T>, std::greater<>> heap_;
};

/// Flows whose old rate is below lowest finished rate × (1 − kKeepMargin) keep their rate;
/// the margin covers the solver's relative tie tolerance (10^-12) many times over.
constexpr double kKeepMargin = 1e-9;
/// A walk of the finished flows' components stops after looking at about this many entries of
/// the resources' flow lists beyond what rule 2 alone would cost (rule 2 alone then).
constexpr std::size_t kWalkBudget = 256;
/// After a walk runs out of budget the next walks are skipped (rule 2 alone, exact as well):
/// 1, then 2, 4 … up to this many after consecutive failures; a walk that completes resets it.
constexpr std::uint32_t kMaxWalkBackoff = 64;
constexpr std::uint32_t kNone = ~0U;
}  // namespace

Timeline AnalyticEngine::run_incremental(const Plan& plan) {
  const models::Topology& topo = cluster_.topology;
  ExecutionGraph g(plan, router_);
  DagState dag(g);
  Timeline tl;
  tl.transfers = g.transfers.size();
  const double t0 = plan.cost.base_latency;
  std::vector<double> op_start(g.op_count(), -1.0), op_end(g.op_count(), -1.0);

  // Resources: the links the transfers use, 0 .. nlinks − 1 in link id order, then (with a
  // rate cap) one per connection. Only used links get state: a tensor-parallel group of 8 GPUs
  // on a 16,384-GPU fabric touches a few dozen of its links, not all of them.
  const bool capped = plan.cost.max_rate < kInf;
  if (link_local_.size() != topo.num_links()) link_local_.assign(topo.num_links(), kNone);
  std::vector<models::LinkId> used_links;
  // link_local_ is all kNone again when this run ends, however it ends.
  struct Restore {
    std::vector<std::uint32_t>& local;
    const std::vector<models::LinkId>& used;
    ~Restore() {
      for (models::LinkId id : used) local[id] = kNone;
    }
  } restore{link_local_, used_links};
  for (models::LinkId id : g.path_links) {
    if (link_local_[id] == kNone) {
      link_local_[id] = 0;
      used_links.push_back(id);
    }
  }
  std::sort(used_links.begin(), used_links.end());
  for (std::size_t i = 0; i < used_links.size(); ++i) link_local_[used_links[i]] = static_cast<std::uint32_t>(i);
  std::vector<std::uint32_t> path_res(g.path_links.size());
  for (std::size_t i = 0; i < g.path_links.size(); ++i) path_res[i] = link_local_[g.path_links[i]];
  const std::size_t nlinks = used_links.size();
  const std::size_t nres = nlinks + (capped ? g.connections : 0);
  std::vector<double> res_capacity(nres, plan.cost.max_rate);
  for (std::size_t i = 0; i < nlinks; ++i) {
    const models::Link& l = topo.link(used_links[i]);
    const double eff = l.kind < plan.cost.link_efficiency.size() ? plan.cost.link_efficiency[l.kind] : 1.0;
    res_capacity[i] = l.bandwidth * eff;
  }
  std::vector<double> res_load(nres, 0.0);                // Σ rates of the flows on each resource
  // Transfers on each resource: the flowing ones, and finished ones not yet swept out (a list
  // is compacted when its finished entries outnumber the flowing ones: amortised O(1) per
  // completion, with sequential rather than random memory access).
  std::vector<std::vector<std::uint32_t>> res_users(nres);
  std::vector<std::uint32_t> res_live(nres, 0);  // flowing transfers on each resource
  std::vector<double> link_bytes(nlinks, 0.0), link_busy(nlinks, 0.0), link_peak(nlinks, 0.0), busy_since(nlinks, 0.0);
  std::vector<char> link_used(nlinks, 0);

  const std::size_t nt = g.transfers.size();
  // A transfer's resources: its path's links, then its connection's cap.
  const auto res_count = [&](std::uint32_t t) { return g.transfers[t].path_count + (capped ? 1U : 0U); };
  const auto res_at = [&](std::uint32_t t, std::uint32_t k) -> std::uint32_t {
    const Transfer& tr = g.transfers[t];
    return k < tr.path_count ? path_res[tr.path_begin + k] : static_cast<std::uint32_t>(nlinks + tr.connection);
  };

  BatchQueue<Event> events;
  BatchQueue<Finish> finishes;
  std::uint64_t seq = 0;
  double now = t0;
  // Lazy progress: transfer t has remaining[t] bytes left at time since[t], moving at rate[t].
  std::vector<double> remaining(nt, 0.0), since(nt, 0.0), rate(nt, 0.0);
  std::vector<std::uint32_t> version(nt, 0);
  std::vector<char> flowing(nt, 0);
  std::vector<std::uint32_t> active, active_pos(nt, kNone);  // flowing transfers (unordered)
  std::vector<std::uint32_t> by_rate;  // flowing transfers sorted by rate, when `by_rate_valid`
  bool by_rate_valid = false;
  bool started = false;            // a flow started since the last solve
  double lowest_finished = kInf;   // lowest rate of the flows finished since the last solve
  std::vector<std::uint32_t> seeds;  // resources of the flows started or finished since the last solve
  std::size_t active_incidences = 0;  // Σ resources over the flowing transfers

  const auto finish_time = [&](std::uint32_t t) { return rate[t] == kInf ? since[t] : since[t] + remaining[t] / rate[t]; };
  // Flowing transfers' rates, highest on top (a max-heap; entries whose version is stale, or
  // whose transfer stopped, are dropped when they reach the top). A flow enters when a solve
  // gives it a new rate; a started flow whose first solve leaves it at 0 has no entry, which
  // only ever matters below every positive rate.
  std::vector<RateEntry> top_rates;
  const auto by_rate_entry = [](const RateEntry& a, const RateEntry& b) { return a.rate < b.rate; };
  bool bulk = false;  // every flow re-solved: finish times are rebuilt at once afterwards
  const auto set_rate = [&](std::uint32_t t, double r) {
    if (rate[t] == r) return;  // unchanged: its heap entry stands
    remaining[t] = rate[t] == kInf ? 0.0 : std::max(0.0, remaining[t] - rate[t] * (now - since[t]));
    since[t] = now;
    if (r != kInf && rate[t] != kInf)
      for (std::uint32_t k = 0, m = res_count(t); k < m; ++k) res_load[res_at(t, k)] += r - rate[t];
    rate[t] = r;
    ++version[t];
    if (!bulk) {
      finishes.push({finish_time(t), t, version[t]});
      top_rates.push_back({r, t, version[t]});
      std::push_heap(top_rates.begin(), top_rates.end(), by_rate_entry);
    }
  };
  const auto rebuild_finishes = [&]() {
    std::vector<Finish> live;
    live.reserve(active.size());
    for (std::uint32_t t : active) live.push_back({finish_time(t), t, version[t]});
    finishes.rebuild(std::move(live));
    top_rates.clear();
    for (std::uint32_t t : active) top_rates.push_back({rate[t], t, version[t]});
    std::make_heap(top_rates.begin(), top_rates.end(), by_rate_entry);
  };
  // The highest rate of a flowing transfer (0 when none flows), from the top of top_rates
  // (stale entries dropped on the way).
  const auto highest_rate = [&]() {
    while (!top_rates.empty() && (!flowing[top_rates.front().transfer] || top_rates.front().version != version[top_rates.front().transfer])) {
      std::pop_heap(top_rates.begin(), top_rates.end(), by_rate_entry);
      top_rates.pop_back();
    }
    return top_rates.empty() ? 0.0 : top_rates.front().rate;
  };

  DagState::Events ev;
  const auto flow = [&](std::uint32_t t) {
    if (g.transfers[t].bytes <= 0.0 || g.transfers[t].path_count == 0) {
      dag.transfer_done(t, ev);
      return;
    }
    flowing[t] = 1;
    since[t] = now;
    rate[t] = 0.0;
    active_pos[t] = static_cast<std::uint32_t>(active.size());
    active.push_back(t);
    active_incidences += res_count(t);
    started = true;
    by_rate_valid = false;
    for (std::uint32_t k = 0, m = res_count(t); k < m; ++k) {
      const std::uint32_t r = res_at(t, k);
      if (r < nlinks) {
        if (res_live[r] == 0) busy_since[r] = now;
        link_used[r] = 1;
      }
      res_users[r].push_back(t);
      ++res_live[r];
      seeds.push_back(r);
    }
  };
  // Transfer t stops flowing: out of `active` and of its resources' user lists.
  const auto unflow = [&](std::uint32_t t) {
    flowing[t] = 0;
    const std::uint32_t p = active_pos[t];
    active[p] = active.back();
    active_pos[active[p]] = p;
    active.pop_back();
    active_pos[t] = kNone;
    active_incidences -= res_count(t);
    for (std::uint32_t k = 0, m = res_count(t); k < m; ++k) {
      const std::uint32_t r = res_at(t, k);
      std::vector<std::uint32_t>& users = res_users[r];
      if (rate[t] != kInf) res_load[r] -= rate[t];
      if (--res_live[r] == 0) {
        users.clear();
        res_load[r] = 0.0;  // no drift carried into the next flows
        if (r < nlinks) link_busy[r] += now - busy_since[r];
      } else if (users.size() > 32 && 2 * static_cast<std::size_t>(res_live[r]) < users.size()) {
        users.erase(std::remove_if(users.begin(), users.end(), [&](std::uint32_t u) { return !flowing[u]; }), users.end());
      }
      seeds.push_back(r);
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
      std::vector<Event> batch;
      constexpr std::size_t kBatch = 4096;  // this many latencies start together: one sorted run
      if (startable.size() >= kBatch) batch.reserve(startable.size());
      for (std::uint32_t t : startable) {
        const Transfer& tr = g.transfers[t];
        for (std::uint32_t op : {tr.send_op, tr.recv_op})
          if (op != detail::kNoOp) op_start[op] = now;
        remaining[t] = tr.bytes;
        if (startable.size() >= kBatch) {
          batch.push_back({now + tr.latency, seq++, t});
        } else {
          events.push({now + tr.latency, seq++, t});
        }
      }
      if (!batch.empty()) events.push_batch(std::move(batch));
      for (std::uint32_t t : flowable) flow(t);
    }
  };
  dag.start(ev);
  handle();

  // Scratch for the walks and solves (epoch marks: no clearing between events).
  std::vector<std::uint32_t> res_mark(nres, 0), flow_mark(nt, 0);
  std::uint32_t epoch = 0;
  std::vector<std::uint32_t> walk, solve_set, touched, local_index(nres, kNone);
  std::vector<double> kept;
  std::vector<std::uint32_t> solved_on;  // per local resource: re-solved flows on it
  MaxMinProblem problem;
  std::vector<std::uint32_t> flow_res;
  std::vector<std::uint32_t> finished;
  const auto rate_order = [&](std::uint32_t a, std::uint32_t b) { return rate[a] != rate[b] ? rate[a] < rate[b] : a < b; };

  // Chooses the flows to re-solve into solve_set (see the rules above) and what the kept
  // flows use of each of their resources (`kept`, by local resource index, set up in touched).
  std::uint32_t walks_to_skip = 0, walk_backoff = 0;  // walks to skip after failed ones, and the current step
  const auto choose = [&]() {
    solve_set.clear();
    ++epoch;
    if (epoch == 0) {  // wrapped: reset the marks
      std::fill(res_mark.begin(), res_mark.end(), 0);
      std::fill(flow_mark.begin(), flow_mark.end(), 0);
      epoch = 1;
    }
    const double keep_below = started ? 0.0 : lowest_finished * (1.0 - kKeepMargin);
    if (!started && keep_below > 0.0 && highest_rate() < keep_below) {
      // Only finishes, and every flow left runs below them: all keep their rates (rule 2, see
      // above), and walking the finished flows' components would find nothing to re-solve.
      // (Missing entries in top_rates are flows at rate 0, below keep_below.)
    } else if (started && 2 * seeds.size() >= active_incidences) {
      // Most flows just started (a direct AlltoAll's million at once): the walk would visit
      // them all; solve everything.
      solve_set = active;
      ++epoch;
      for (std::uint32_t t : solve_set) flow_mark[t] = epoch;
      by_rate_valid = false;
    } else {
      // Walk the components of the seeds (unbounded when a flow started).
      walk.clear();
      for (std::uint32_t r : seeds) {
        if (res_mark[r] != epoch) {
          res_mark[r] = epoch;
          walk.push_back(r);
        }
      }
      // The walk's budget when flows only finished: what rule 2 alone would cost — the flows at
      // or above the lowest finished rate when the sorted list is at hand, else a sort of all.
      std::size_t budget = std::numeric_limits<std::size_t>::max();
      if (!started) {
        if (by_rate_valid) {
          const auto from = std::partition_point(by_rate.begin(), by_rate.end(), [&](std::uint32_t t) { return rate[t] < keep_below; });
          budget = kWalkBudget + 8 * static_cast<std::size_t>(by_rate.end() - from);
        } else {
          budget = std::max(kWalkBudget, active.size());
        }
      }
      bool complete = true;
      const bool skip_walk = !started && walks_to_skip > 0;
      if (skip_walk) {
        // Recent walks ran out of budget (the flows at or above L are one component, as under
        // hashed ECMP in a direct AlltoAll): go to rule 2 alone without trying.
        --walks_to_skip;
        complete = false;
      }
      std::size_t examined = 0;  // user-list entries looked at
      for (std::size_t i = 0; i < walk.size() && complete; ++i) {
        const std::vector<std::uint32_t>& users = res_users[walk[i]];
        examined += users.size();
        if (examined > budget) {
          complete = false;
          break;
        }
        tl.walked += users.size();
        for (const std::uint32_t t : users) {
          if (!flowing[t] || flow_mark[t] == epoch || rate[t] < keep_below) continue;
          flow_mark[t] = epoch;
          solve_set.push_back(t);
          for (std::uint32_t k = 0, m = res_count(t); k < m; ++k) {
            const std::uint32_t q = res_at(t, k);
            if (res_mark[q] != epoch) {
              res_mark[q] = epoch;
              walk.push_back(q);
            }
          }
        }
      }
      if (!started && !skip_walk) {
        // Back off after a walk that ran out of budget: skip the next 1, 2, 4 … 64 walks.
        walk_backoff = complete ? 0 : std::min<std::uint32_t>(kMaxWalkBackoff, std::max<std::uint32_t>(1, 2 * walk_backoff));
        walks_to_skip = walk_backoff;
      }
      if (complete) {
        by_rate_valid = by_rate_valid && solve_set.empty();
      } else {
        // Rule 2 alone, over every flow in flight, sorted by rate.
        if (!by_rate_valid) {
          by_rate = active;
          std::sort(by_rate.begin(), by_rate.end(), rate_order);
          by_rate_valid = true;
        } else {
          // Finished flows sit at or above the lowest finished rate: drop them from the tail.
          const auto from = std::partition_point(by_rate.begin(), by_rate.end(), [&](std::uint32_t t) { return rate[t] < keep_below; });
          by_rate.erase(std::remove_if(from, by_rate.end(), [&](std::uint32_t t) { return !flowing[t]; }), by_rate.end());
        }
        const auto from = std::partition_point(by_rate.begin(), by_rate.end(), [&](std::uint32_t t) { return rate[t] < keep_below; });
        solve_set.assign(from, by_rate.end());
        ++epoch;
        for (std::uint32_t t : solve_set) flow_mark[t] = epoch;
      }
    }
    // Resources of the re-solved flows, and what the other flows keep of each: exactly 0 when
    // every user is re-solved, the sum of the kept users' rates on short lists, else the
    // running load less the re-solved flows' rates.
    for (std::uint32_t r : touched) local_index[r] = kNone;
    touched.clear();
    kept.clear();
    solved_on.clear();
    for (std::uint32_t t : solve_set) {
      for (std::uint32_t k = 0, m = res_count(t); k < m; ++k) {
        const std::uint32_t r = res_at(t, k);
        if (local_index[r] == kNone) {
          local_index[r] = static_cast<std::uint32_t>(touched.size());
          touched.push_back(r);
          kept.push_back(0.0);
          solved_on.push_back(0);
        }
        kept[local_index[r]] += rate[t];
        ++solved_on[local_index[r]];
      }
    }
    for (std::size_t i = 0; i < touched.size(); ++i) {
      const std::vector<std::uint32_t>& users = res_users[touched[i]];
      if (solved_on[i] == res_live[touched[i]]) {
        kept[i] = 0.0;
      } else if (users.size() <= 64) {
        double other = 0.0;
        for (const std::uint32_t u : users)
          if (flowing[u] && flow_mark[u] != epoch) other += rate[u];
        kept[i] = other;
      } else {
        kept[i] = std::max(0.0, res_load[touched[i]] - kept[i]);
      }
    }
  };

  bool pending = false;
  while (true) {
    if (started || pending) {
      choose();
      if (!solve_set.empty()) {
        problem.capacity.clear();
        problem.offsets.assign(1, 0);
        problem.resources.clear();
        for (std::size_t i = 0; i < touched.size(); ++i) problem.capacity.push_back(std::max(0.0, res_capacity[touched[i]] - kept[i]));
        for (std::uint32_t t : solve_set) {
          flow_res.clear();
          for (std::uint32_t k = 0, m = res_count(t); k < m; ++k) flow_res.push_back(local_index[res_at(t, k)]);
          problem.add_flow(flow_res);
        }
        const std::vector<double> rates = solve_max_min(problem);
        ++tl.solves;
        tl.solved_flows += solve_set.size();
        bulk = solve_set.size() == active.size();
        for (std::size_t f = 0; f < solve_set.size(); ++f) set_rate(solve_set[f], rates[f]);
        if (bulk) rebuild_finishes();
        bulk = false;
        if (by_rate_valid) {
          // The re-solved flows (the tail) take rates ≥ the kept ones, up to rounding.
          const auto from = std::partition_point(by_rate.begin(), by_rate.end(), [&](std::uint32_t t) { return flow_mark[t] != epoch; });
          std::sort(from, by_rate.end(), rate_order);
        }
        for (std::uint32_t r : touched)
          if (r < nlinks) link_peak[r] = std::max(link_peak[r], res_load[r] / res_capacity[r]);
      }
      seeds.clear();
      started = false;
      pending = false;
      lowest_finished = kInf;
    }
    // Stale heap entries (flows re-rated or done) are dropped lazily; when they outnumber the
    // live ones the heap is rebuilt, so it stays O(flowing) however often rates change.
    if (finishes.size() > 2 * active.size() + 1024 || top_rates.size() > 2 * active.size() + 1024) rebuild_finishes();
    while (!finishes.empty() && (!flowing[finishes.top().transfer] || finishes.top().version != version[finishes.top().transfer])) {
      finishes.pop();
    }
    const double next_finish = finishes.empty() ? kInf : std::max(now, finishes.top().time);
    const double next_event = events.empty() ? kInf : events.top().time;
    const double next = std::min(next_finish, next_event);
    if (next == kInf) break;
    now = next;
    // Completed flows: due within kCoalesce (relative) of now, or with nothing left up to
    // rounding, as in the reference loop.
    finished.clear();
    while (!finishes.empty()) {
      const Finish top = finishes.top();
      const std::uint32_t t = top.transfer;
      if (!flowing[t] || top.version != version[t]) {
        finishes.pop();
        continue;
      }
      const double left = rate[t] == kInf ? 0.0 : std::max(0.0, remaining[t] - rate[t] * (now - since[t]));
      const bool done = rate[t] == kInf || top.time <= now * (1.0 + kCoalesce) || left <= 1e-12 * g.transfers[t].bytes + 1e-9;
      if (!done) break;
      finishes.pop();
      finished.push_back(t);
    }
    std::sort(finished.begin(), finished.end());
    for (std::uint32_t t : finished) {
      lowest_finished = std::min(lowest_finished, rate[t]);
      for (std::uint32_t k = 0; k < g.transfers[t].path_count; ++k) link_bytes[path_res[g.transfers[t].path_begin + k]] += g.transfers[t].bytes;
      unflow(t);
      remaining[t] = 0.0;
    }
    if (!finished.empty()) pending = true;
    for (std::uint32_t t : finished) dag.transfer_done(t, ev);
    handle();
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
  for (std::size_t i = 0; i < nlinks; ++i) {
    if (link_used[i]) tl.links.push_back({used_links[i], link_bytes[i], link_busy[i], link_peak[i]});
  }
  return tl;
}

}  // namespace ccsim::sim
