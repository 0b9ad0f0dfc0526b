// The analytic engine's reference loop (AnalyticEngine::Sharing::Reference): every flowing
// transfer is re-solved at every event, kept for the tests that prove the incremental loop
// gives the same times.

#include <algorithm>
#include <limits>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/analytic/detail/analytic_run.hpp"
#include "sim/sharing/maxmin.hpp"

namespace ccsim::sim {

namespace {

using detail::Transfer;

using detail::kInf;

class ReferenceLoop final : public detail::AnalyticRun {
 public:
  ReferenceLoop(const Plan& plan, models::Router& router)
      : AnalyticRun(plan, router),
        link_bytes_(topo_.num_links(), 0.0),
        link_busy_(topo_.num_links(), 0.0),
        link_peak_(topo_.num_links(), 0.0),
        link_used_(topo_.num_links(), 0),
        rate_(g_.transfers.size(), 0.0),
        local_index_(topo_.num_links(), ~0U),
        connection_index_(g_.connections, ~0U) {}

  Timeline run();

 private:
  void start_bytes(std::uint32_t t) override {
    active_.push_back(t);
    dirty_ = true;
  }
  void solve();
  void add_links();
  void add_caps();
  double next_finish() const;
  void advance(double next);
  void take_finished();

  // Per link of the topology: wire bytes carried, seconds busy, peak fraction of capacity in
  // use, and whether any transfer used it.
  std::vector<double> link_bytes_, link_busy_, link_peak_;
  std::vector<char> link_used_;
  std::vector<double> rate_;           // bytes per second of each flowing transfer
  std::vector<std::uint32_t> active_;  // transfers whose bytes are flowing
  bool dirty_ = false;                 // the set of flowing transfers changed
  // The last solve's problem: links (resources 0 .. touched − 1) and, with a rate cap, one
  // private resource per connection after them.
  std::vector<std::uint32_t> local_index_, connection_index_, capped_connections_;
  std::vector<models::LinkId> touched_;
  MaxMinProblem problem_;
  std::vector<std::uint32_t> flow_res_, finished_, still_;
};

Timeline ReferenceLoop::run() {
  start_dag();
  while (true) {
    if (dirty_) {
      solve();
      dirty_ = false;
    }
    // Next flow completion and next latency expiry.
    const double next = std::min(next_finish(), next_latency());
    if (next == kInf) break;
    advance(next);
    now_ = next;
    take_finished();
    handle();
    // Transfers whose latency has elapsed start flowing (or finish, when empty).
    expire_latencies();
  }
  Timeline tl = timeline();
  for (models::LinkId id = 0; id < topo_.num_links(); ++id) {
    if (link_used_[id]) tl.links.push_back({id, link_bytes_[id], link_busy_[id], link_peak_[id]});
  }
  return tl;
}

// Rates of every flowing transfer, and the links' peaks under them.
void ReferenceLoop::solve() {
  add_links();
  if (std::any_of(g_.connection_rate.begin(), g_.connection_rate.end(), [](double r) { return r < kInf; })) add_caps();
  const std::vector<double> rates = solve_max_min(problem_);
  std::vector<double> load(touched_.size(), 0.0);
  for (std::size_t f = 0; f < active_.size(); ++f) {
    rate_[active_[f]] = rates[f];
    for (std::uint32_t k = problem_.offsets[f]; k < problem_.offsets[f + 1]; ++k)
      if (problem_.resources[k] < load.size()) load[problem_.resources[k]] += rates[f];
  }
  for (std::size_t i = 0; i < touched_.size(); ++i) {
    link_used_[touched_[i]] = 1;
    link_peak_[touched_[i]] = std::max(link_peak_[touched_[i]], load[i] / problem_.capacity[i]);
  }
}

// The flowing transfers over their links: links are resources 0 .. touched − 1.
void ReferenceLoop::add_links() {
  problem_.capacity.clear();
  problem_.offsets.assign(1, 0);
  problem_.resources.clear();
  for (models::LinkId id : touched_) local_index_[id] = ~0U;
  touched_.clear();
  for (std::uint32_t t : active_) {
    const Transfer& tr = g_.transfers[t];
    flow_res_.clear();
    for (std::uint32_t k = 0; k < tr.path_count; ++k) {
      const models::LinkId id = g_.path_links[tr.path_begin + k];
      if (local_index_[id] == ~0U) {
        local_index_[id] = static_cast<std::uint32_t>(problem_.capacity.size());
        problem_.capacity.push_back(detail::link_capacity(topo_.link(id), plan_.cost));
        touched_.push_back(id);
      }
      flow_res_.push_back(local_index_[id]);
    }
    problem_.add_flow(flow_res_);
  }
}

// With a rate cap, one private resource per connection after the links (a second pass, so link
// indices stay contiguous).
void ReferenceLoop::add_caps() {
  for (std::uint32_t c : capped_connections_) connection_index_[c] = ~0U;
  capped_connections_.clear();
  MaxMinProblem with_caps;
  with_caps.capacity = problem_.capacity;
  for (std::size_t f = 0; f < active_.size(); ++f) {
    const Transfer& tr = g_.transfers[active_[f]];
    flow_res_.assign(problem_.resources.begin() + problem_.offsets[f], problem_.resources.begin() + problem_.offsets[f + 1]);
    if (connection_index_[tr.connection] == ~0U) {
      connection_index_[tr.connection] = static_cast<std::uint32_t>(with_caps.capacity.size());
      with_caps.capacity.push_back(g_.connection_rate[tr.connection]);
      capped_connections_.push_back(tr.connection);
    }
    flow_res_.push_back(connection_index_[tr.connection]);
    with_caps.add_flow(flow_res_);
  }
  problem_ = std::move(with_caps);
}

double ReferenceLoop::next_finish() const {
  double next = kInf;
  for (std::uint32_t t : active_) next = std::min(next, rate_[t] == kInf ? now_ : now_ + remaining_[t] / rate_[t]);
  return next;
}

// Moves the flowing transfers' bytes on to `next`.
void ReferenceLoop::advance(double next) {
  const double dt = next - now_;
  if (dt <= 0) return;
  for (std::uint32_t t : active_) {
    const double moved = rate_[t] == kInf ? remaining_[t] : std::min(remaining_[t], rate_[t] * dt);
    remaining_[t] -= moved;
    const Transfer& tr = g_.transfers[t];
    for (std::uint32_t k = 0; k < tr.path_count; ++k) link_bytes_[g_.path_links[tr.path_begin + k]] += moved;
  }
  for (models::LinkId id : touched_) link_busy_[id] += dt;
}

// Completed flows: those that reach zero now (relative tolerance for rounding).
void ReferenceLoop::take_finished() {
  finished_.clear();
  still_.clear();
  still_.reserve(active_.size());
  for (std::uint32_t t : active_) {
    // Done when nothing is left up to rounding, or when what is left would finish within
    // the clock's resolution at this time (now + rem/rate == now), which would stall time.
    // Flows due within kCoalesce (relative) of now finish together: symmetric flows that
    // differ only by rounding would otherwise cost one re-solve each.
    const bool done = rate_[t] == kInf || drained(t, remaining_[t]) || remaining_[t] / rate_[t] <= now_ * detail::kCoalesce;
    (done ? finished_ : still_).push_back(t);
  }
  active_.swap(still_);
  if (!finished_.empty()) dirty_ = true;
  for (std::uint32_t t : finished_) {
    // Bytes not yet counted (rounding) go to the links now.
    const Transfer& tr = g_.transfers[t];
    if (remaining_[t] > 0 && rate_[t] != kInf)
      for (std::uint32_t k = 0; k < tr.path_count; ++k) link_bytes_[g_.path_links[tr.path_begin + k]] += remaining_[t];
    remaining_[t] = 0;
    complete(t);
  }
}

}  // namespace

Timeline AnalyticEngine::run_reference(const Plan& plan) { return ReferenceLoop(plan, router_).run(); }

}  // namespace ccsim::sim
