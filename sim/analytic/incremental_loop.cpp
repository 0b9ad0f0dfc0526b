// The analytic engine's default loop (AnalyticEngine::Sharing::Incremental): the event loop,
// latencies, connections and link records here; which flows to re-solve, and their rates, in
// IncrementalSharing (sim/sharing/incremental_sharing.hpp). Finish times sit in a heap and each
// flow's bytes are settled lazily when its rate changes.

#include <algorithm>
#include <limits>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/analytic/detail/analytic_run.hpp"
#include "sim/sharing/incremental_sharing.hpp"

namespace ccsim::sim {

namespace {

using detail::Transfer;

using detail::kInf;
constexpr std::uint32_t kNone = ~0U;

/// A flow's finish time as the heap holds it; stale when `version` differs from the flow's.
struct Finish {
  double time;
  std::uint32_t transfer;
  std::uint32_t version;
  bool operator>(const Finish& o) const { return time != o.time ? time > o.time : transfer > o.transfer; }
};

/// The links the plan's transfers use, numbered 0 .. n − 1 in link id order through the
/// engine's per-link table `local` (all kNone outside a run: restored when this is destroyed,
/// however the run ends). Only used links get state: a tensor-parallel group of 8 GPUs on a
/// 16,384-GPU fabric touches a few dozen of its links, not all of them.
class UsedLinks {
 public:
  UsedLinks(std::vector<std::uint32_t>& local, const detail::ExecutionGraph& g, std::size_t num_links) : local_(local) {
    if (local_.size() != num_links) local_.assign(num_links, kNone);
    for (models::LinkId id : g.path_links) {
      if (local_[id] == kNone) {
        ids.push_back(id);
        local_[id] = 0;
      }
    }
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size(); ++i) local_[ids[i]] = static_cast<std::uint32_t>(i);
  }
  ~UsedLinks() {
    for (models::LinkId id : ids) local_[id] = kNone;
  }
  UsedLinks(const UsedLinks&) = delete;
  UsedLinks& operator=(const UsedLinks&) = delete;
  std::uint32_t local(models::LinkId id) const { return local_[id]; }

  std::vector<models::LinkId> ids;  ///< by local index

 private:
  std::vector<std::uint32_t>& local_;
};

/// Resources: the used links, 0 .. nlinks − 1 in link id order, then (with a rate cap) one per
/// connection. Flow t is transfer t over its path's links, then its connection's cap.
MaxMinProblem sharing_system(const Plan& plan, const models::Topology& topo, const detail::ExecutionGraph& g,
                             const UsedLinks& links) {
  const bool capped = !g.connection_rate.empty() &&
                      std::any_of(g.connection_rate.begin(), g.connection_rate.end(), [](double r) { return r < kInf; });
  const std::size_t nlinks = links.ids.size();
  MaxMinProblem system;
  system.capacity.assign(nlinks, 0.0);
  if (capped) system.capacity.insert(system.capacity.end(), g.connection_rate.begin(), g.connection_rate.end());
  for (std::size_t i = 0; i < nlinks; ++i) system.capacity[i] = detail::link_capacity(topo.link(links.ids[i]), plan.cost);
  system.offsets.reserve(g.transfers.size() + 1);
  system.resources.reserve(g.path_links.size() + (capped ? g.transfers.size() : 0));
  std::vector<std::uint32_t> flow_res;
  for (const Transfer& tr : g.transfers) {
    flow_res.clear();
    for (std::uint32_t k = 0; k < tr.path_count; ++k) flow_res.push_back(links.local(g.path_links[tr.path_begin + k]));
    if (capped) flow_res.push_back(static_cast<std::uint32_t>(nlinks + tr.connection));
    system.add_flow(flow_res);
  }
  return system;
}

class IncrementalLoop final : public detail::AnalyticRun, private IncrementalSharing::RateListener {
 public:
  IncrementalLoop(const Plan& plan, models::Router& router, std::vector<std::uint32_t>& link_local)
      : AnalyticRun(plan, router),
        links_(link_local, g_, topo_.num_links()),
        nlinks_(links_.ids.size()),
        sharing_(sharing_system(plan, topo_, g_, links_)),
        link_bytes_(nlinks_, 0.0),
        link_busy_(nlinks_, 0.0),
        link_peak_(nlinks_, 0.0),
        busy_since_(nlinks_, 0.0),
        link_used_(nlinks_, 0),
        since_(g_.transfers.size(), 0.0) {}

  Timeline run();

 private:
  void start_bytes(std::uint32_t t) override;
  void rate_changed(std::uint32_t t, double old_rate, bool all) override;
  void resolve();
  double finish_time(std::uint32_t t) const {
    const double rate = sharing_.rate(t);
    return rate == kInf ? since_[t] : since_[t] + remaining_[t] / rate;
  }
  void rebuild_finishes();
  double next_finish();
  void take_finished();

  UsedLinks links_;
  std::size_t nlinks_;
  IncrementalSharing sharing_;
  // Per used link: wire bytes carried, seconds busy, peak fraction of capacity in use, since
  // when it has been busy, and whether any transfer used it.
  std::vector<double> link_bytes_, link_busy_, link_peak_, busy_since_;
  std::vector<char> link_used_;
  // Lazy progress: transfer t has remaining_[t] bytes left at time since_[t], moving at its rate.
  std::vector<double> since_;
  detail::BatchQueue<Finish> finishes_;
  std::vector<std::uint32_t> finished_;
};

Timeline IncrementalLoop::run() {
  start_dag();
  while (true) {
    if (sharing_.dirty()) resolve();
    // Stale heap entries (flows re-rated or done) are dropped lazily; when they outnumber the
    // live ones the heap is rebuilt, so it stays O(flowing) however often rates change.
    if (finishes_.size() > 2 * sharing_.active().size() + 1024) rebuild_finishes();
    const double next = std::min(next_finish(), next_latency());
    if (next == kInf) break;
    now_ = next;
    take_finished();
    handle();
    expire_latencies();
  }
  Timeline tl = timeline();
  const IncrementalSharing::Work& work = sharing_.work();
  tl.solves = work.solves;
  tl.solved_flows = work.solved_flows;
  tl.walked = work.walked;
  for (std::size_t i = 0; i < nlinks_; ++i) {
    if (link_used_[i]) tl.links.push_back({links_.ids[i], link_bytes_[i], link_busy_[i], link_peak_[i]});
  }
  return tl;
}

void IncrementalLoop::start_bytes(std::uint32_t t) {
  since_[t] = now_;
  // The path's links are the flow's first resources.
  const auto res = sharing_.resources(t);
  for (std::uint32_t k = 0; k < g_.transfers[t].path_count; ++k) {
    if (sharing_.users(res[k]) == 0) busy_since_[res[k]] = now_;
    link_used_[res[k]] = 1;
  }
  sharing_.add(t);
}

// A flow whose rate changed: its bytes settled at the old rate, its finish time anew (all at
// once after the re-solve when every flow was re-solved).
void IncrementalLoop::rate_changed(std::uint32_t t, double old_rate, bool all) {
  remaining_[t] = old_rate == kInf ? 0.0 : std::max(0.0, remaining_[t] - old_rate * (now_ - since_[t]));
  since_[t] = now_;
  if (!all) finishes_.push({finish_time(t), t, sharing_.version(t)});
}

void IncrementalLoop::resolve() {
  const IncrementalSharing::Resolution resolution = sharing_.resolve(*this);
  if (resolution.all) rebuild_finishes();
  for (std::uint32_t r : resolution.resources)
    if (r < nlinks_) link_peak_[r] = std::max(link_peak_[r], sharing_.load(r) / sharing_.capacity(r));
}

void IncrementalLoop::rebuild_finishes() {
  std::vector<Finish> live;
  live.reserve(sharing_.active().size());
  for (std::uint32_t t : sharing_.active()) live.push_back({finish_time(t), t, sharing_.version(t)});
  finishes_.rebuild(std::move(live));
}

// The earliest live finish time (not before now), +inf when no flow is due.
double IncrementalLoop::next_finish() {
  while (!finishes_.empty() &&
         (!sharing_.flowing(finishes_.top().transfer) || finishes_.top().version != sharing_.version(finishes_.top().transfer))) {
    finishes_.pop();
  }
  return finishes_.empty() ? kInf : std::max(now_, finishes_.top().time);
}

// Completed flows: due within kCoalesce (relative) of now, or with nothing left up to
// rounding, as in the reference loop. They stop flowing and their ops finish.
void IncrementalLoop::take_finished() {
  finished_.clear();
  while (!finishes_.empty()) {
    const Finish top = finishes_.top();
    const std::uint32_t t = top.transfer;
    if (!sharing_.flowing(t) || top.version != sharing_.version(t)) {
      finishes_.pop();
      continue;
    }
    const double rate = sharing_.rate(t);
    const double left = rate == kInf ? 0.0 : std::max(0.0, remaining_[t] - rate * (now_ - since_[t]));
    const bool done = rate == kInf || top.time <= now_ * (1.0 + detail::kCoalesce) || drained(t, left);
    if (!done) break;
    finishes_.pop();
    finished_.push_back(t);
  }
  std::sort(finished_.begin(), finished_.end());
  for (std::uint32_t t : finished_) {
    const auto res = sharing_.resources(t);
    for (std::uint32_t k = 0; k < g_.transfers[t].path_count; ++k) link_bytes_[res[k]] += g_.transfers[t].bytes;
    for (std::uint32_t r : sharing_.remove(t))
      if (r < nlinks_) link_busy_[r] += now_ - busy_since_[r];
    remaining_[t] = 0.0;
  }
  for (std::uint32_t t : finished_) complete(t);
}

}  // namespace

Timeline AnalyticEngine::run_incremental(const Plan& plan) { return IncrementalLoop(plan, router_, link_local_).run(); }

}  // namespace ccsim::sim
