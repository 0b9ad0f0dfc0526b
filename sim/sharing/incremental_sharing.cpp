#include "sim/sharing/incremental_sharing.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace ccsim::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Flows whose old rate is below lowest stopped rate × (1 − kKeepMargin) keep their rate;
/// the margin covers the solver's relative tie tolerance (10^-12) many times over.
constexpr double kKeepMargin = 1e-9;
/// A walk of the stopped flows' components stops after looking at about this many entries of
/// the resources' flow lists beyond what rule 2 alone would cost (rule 2 alone then).
constexpr std::size_t kWalkBudget = 256;
/// After a walk runs out of budget the next walks are skipped (rule 2 alone, exact as well):
/// 1, then 2, 4 … up to this many after consecutive failures; a walk that completes resets it.
constexpr std::uint32_t kMaxWalkBackoff = 64;
constexpr std::uint32_t kNone = ~0U;
constexpr std::uint32_t kNotStarted = ~0U;
constexpr std::uint32_t kStopped = ~0U - 1;

/// Tells no one.
class NoListener final : public IncrementalSharing::RateListener {
 public:
  void rate_changed(std::uint32_t, double, bool) override {}
};

}  // namespace

IncrementalSharing::IncrementalSharing(MaxMinProblem system)
    : system_(std::move(system)),
      load_(system_.capacity.size(), 0.0),
      users_(system_.capacity.size()),
      live_(system_.capacity.size(), 0),
      rate_(system_.flows(), 0.0),
      version_(system_.flows(), 0),
      flowing_(system_.flows(), 0),
      active_pos_(system_.flows(), kNotStarted),
      res_mark_(system_.capacity.size(), 0),
      flow_mark_(system_.flows(), 0),
      local_index_(system_.capacity.size(), kNone) {}

void IncrementalSharing::add(std::uint32_t f) {
  if (active_pos_[f] != kNotStarted) throw std::logic_error("incremental sharing: flow " + std::to_string(f) + " started twice");
  flowing_[f] = 1;
  rate_[f] = 0.0;
  active_pos_[f] = static_cast<std::uint32_t>(active_.size());
  active_.push_back(f);
  active_incidences_ += count(f);
  started_ = true;
  by_rate_valid_ = false;
  if (count(f) == 0) unbound_.push_back(f);
  for (const std::uint32_t r : resources(f)) {
    users_[r].push_back(f);
    ++live_[r];
    seeds_.push_back(r);
  }
}

std::span<const std::uint32_t> IncrementalSharing::remove(std::uint32_t f) {
  if (!flowing_[f]) throw std::logic_error("incremental sharing: flow " + std::to_string(f) + " stopped while not flowing");
  lowest_stopped_ = std::min(lowest_stopped_, rate_[f]);
  stopped_ = true;
  flowing_[f] = 0;
  const std::uint32_t p = active_pos_[f];
  active_[p] = active_.back();
  active_pos_[active_[p]] = p;
  active_.pop_back();
  active_pos_[f] = kStopped;
  active_incidences_ -= count(f);
  idle_.clear();
  for (const std::uint32_t r : resources(f)) {
    std::vector<std::uint32_t>& users = users_[r];
    if (rate_[f] != kInf) load_[r] -= rate_[f];
    if (--live_[r] == 0) {
      users.clear();
      load_[r] = 0.0;  // no drift carried into the next flows
      idle_.push_back(r);
    } else if (users.size() > 32 && 2 * static_cast<std::size_t>(live_[r]) < users.size()) {
      users.erase(std::remove_if(users.begin(), users.end(), [&](std::uint32_t u) { return !flowing_[u]; }), users.end());
    }
    seeds_.push_back(r);
  }
  return idle_;
}

IncrementalSharing::Resolution IncrementalSharing::resolve() {
  NoListener none;
  return resolve(none);
}

IncrementalSharing::Resolution IncrementalSharing::resolve(RateListener& listener) {
  if (!dirty()) return {};
  choose();
  const bool all = !solve_set_.empty() && solve(listener);
  seeds_.clear();
  unbound_.clear();
  started_ = false;
  stopped_ = false;
  lowest_stopped_ = kInf;
  // Stale heap entries (flows re-rated or stopped) are dropped lazily; when they outnumber the
  // live ones the heap is rebuilt, so it stays O(flowing) however often rates change.
  if (top_rates_.size() > 2 * active_.size() + 1024) rebuild_rate_heap();
  return {all, touched_};
}

void IncrementalSharing::next_epoch() {
  if (++epoch_ == 0) {  // wrapped: reset the marks
    std::fill(res_mark_.begin(), res_mark_.end(), 0);
    std::fill(flow_mark_.begin(), flow_mark_.end(), 0);
    epoch_ = 1;
  }
}

void IncrementalSharing::mark_solve_set() {
  next_epoch();
  for (const std::uint32_t f : solve_set_) flow_mark_[f] = epoch_;
}

// Chooses the flows to re-solve into solve_set_ (see the rules in the header) and what the kept
// flows use of each of their resources (kept_, by local resource index, set up in touched_).
void IncrementalSharing::choose() {
  solve_set_.clear();
  next_epoch();
  const double keep_below = started_ ? 0.0 : lowest_stopped_ * (1.0 - kKeepMargin);
  if (!started_ && keep_below > 0.0 && highest_rate() < keep_below) {
    // Only stops, and every flow left runs below them: all keep their rates (rule 3), and
    // walking the stopped flows' components would find nothing to re-solve. (Missing entries
    // in top_rates_ are flows at rate 0, below keep_below.)
  } else if (started_ && 2 * seeds_.size() >= active_incidences_) {
    // Most flows just started (a direct AlltoAll's million at once): the walk would visit
    // them all; solve everything.
    solve_set_ = active_;
    mark_solve_set();
    by_rate_valid_ = false;
  } else {
    // Walk the components of the seeds (unbounded when a flow started).
    walk_.clear();
    for (const std::uint32_t r : seeds_) {
      if (res_mark_[r] != epoch_) {
        res_mark_[r] = epoch_;
        walk_.push_back(r);
      }
    }
    const std::size_t budget = walk_budget(keep_below);
    const bool skip_walk = !started_ && walks_to_skip_ > 0;
    bool complete = false;
    if (skip_walk) {
      // Recent walks ran out of budget (the flows at or above L are one component, as under
      // hashed ECMP in a direct AlltoAll): go to rule 2 alone without trying.
      --walks_to_skip_;
    } else {
      complete = walk(keep_below, budget);
    }
    if (!started_ && !skip_walk) {
      // Back off after a walk that ran out of budget: skip the next 1, 2, 4 … 64 walks.
      walk_backoff_ = complete ? 0 : std::min<std::uint32_t>(kMaxWalkBackoff, std::max<std::uint32_t>(1, 2 * walk_backoff_));
      walks_to_skip_ = walk_backoff_;
    }
    if (complete) {
      by_rate_valid_ = by_rate_valid_ && solve_set_.empty();
    } else {
      pick_by_rate(keep_below);
    }
  }
  measure_kept();
}

// The walk's budget when flows only stopped: what rule 2 alone would cost — the flows at or
// above the lowest stopped rate when the sorted list is at hand, else a sort of all.
std::size_t IncrementalSharing::walk_budget(double keep_below) const {
  if (started_) return std::numeric_limits<std::size_t>::max();
  if (by_rate_valid_) {
    const auto from = std::partition_point(by_rate_.begin(), by_rate_.end(), [&](std::uint32_t f) { return rate_[f] < keep_below; });
    return kWalkBudget + 8 * static_cast<std::size_t>(by_rate_.end() - from);
  }
  return std::max(kWalkBudget, active_.size());
}

// Breadth first from walk_ over the flows at or above keep_below, into solve_set_. Returns false
// when the user-list entries looked at exceed `budget` (solve_set_ is then incomplete).
bool IncrementalSharing::walk(double keep_below, std::size_t budget) {
  std::size_t examined = 0;  // user-list entries looked at
  for (std::size_t i = 0; i < walk_.size(); ++i) {
    const std::vector<std::uint32_t>& users = users_[walk_[i]];
    examined += users.size();
    if (examined > budget) return false;
    work_.walked += users.size();
    for (const std::uint32_t f : users) {
      if (!flowing_[f] || flow_mark_[f] == epoch_ || rate_[f] < keep_below) continue;
      flow_mark_[f] = epoch_;
      solve_set_.push_back(f);
      for (const std::uint32_t q : resources(f)) {
        if (res_mark_[q] != epoch_) {
          res_mark_[q] = epoch_;
          walk_.push_back(q);
        }
      }
    }
  }
  // A flow without resources is a component of its own, which no walk reaches.
  for (const std::uint32_t f : unbound_) {
    if (!flowing_[f] || flow_mark_[f] == epoch_) continue;
    flow_mark_[f] = epoch_;
    solve_set_.push_back(f);
  }
  return true;
}

// Rule 2 alone, over every flow in flight, sorted by rate: the flows at or above keep_below.
void IncrementalSharing::pick_by_rate(double keep_below) {
  const auto rate_order = [this](std::uint32_t a, std::uint32_t b) { return slower(a, b); };
  const auto below = [&](std::uint32_t f) { return rate_[f] < keep_below; };
  if (!by_rate_valid_) {
    by_rate_ = active_;
    std::sort(by_rate_.begin(), by_rate_.end(), rate_order);
    by_rate_valid_ = true;
  } else {
    // Stopped flows sit at or above the lowest stopped rate: drop them from the tail.
    const auto from = std::partition_point(by_rate_.begin(), by_rate_.end(), below);
    by_rate_.erase(std::remove_if(from, by_rate_.end(), [&](std::uint32_t f) { return !flowing_[f]; }), by_rate_.end());
  }
  const auto from = std::partition_point(by_rate_.begin(), by_rate_.end(), below);
  solve_set_.assign(from, by_rate_.end());
  mark_solve_set();
}

// Resources of the re-solved flows, and what the other flows keep of each: exactly 0 when every
// user is re-solved, the sum of the kept users' rates on short lists, else the running load less
// the re-solved flows' rates.
void IncrementalSharing::measure_kept() {
  for (const std::uint32_t r : touched_) local_index_[r] = kNone;
  touched_.clear();
  kept_.clear();
  solved_on_.clear();
  for (const std::uint32_t f : solve_set_) {
    for (const std::uint32_t r : resources(f)) {
      if (local_index_[r] == kNone) {
        local_index_[r] = static_cast<std::uint32_t>(touched_.size());
        touched_.push_back(r);
        kept_.push_back(0.0);
        solved_on_.push_back(0);
      }
      kept_[local_index_[r]] += rate_[f];
      ++solved_on_[local_index_[r]];
    }
  }
  for (std::size_t i = 0; i < touched_.size(); ++i) {
    const std::vector<std::uint32_t>& users = users_[touched_[i]];
    if (solved_on_[i] == live_[touched_[i]]) {
      kept_[i] = 0.0;
    } else if (users.size() <= 64) {
      double other = 0.0;
      for (const std::uint32_t u : users)
        if (flowing_[u] && flow_mark_[u] != epoch_) other += rate_[u];
      kept_[i] = other;
    } else {
      kept_[i] = std::max(0.0, load_[touched_[i]] - kept_[i]);
    }
  }
}

// Solves solve_set_ over touched_ at the capacity the kept flows leave, telling `listener` of
// every rate changed; returns true when every flowing flow was re-solved.
bool IncrementalSharing::solve(RateListener& listener) {
  problem_.capacity.clear();
  problem_.offsets.assign(1, 0);
  problem_.resources.clear();
  for (std::size_t i = 0; i < touched_.size(); ++i) problem_.capacity.push_back(std::max(0.0, system_.capacity[touched_[i]] - kept_[i]));
  for (const std::uint32_t f : solve_set_) {
    flow_res_.clear();
    for (const std::uint32_t r : resources(f)) flow_res_.push_back(local_index_[r]);
    problem_.add_flow(flow_res_);
  }
  const std::vector<double> rates = solve_max_min(problem_);
  ++work_.solves;
  work_.solved_flows += solve_set_.size();
  const bool bulk = solve_set_.size() == active_.size();
  for (std::size_t i = 0; i < solve_set_.size(); ++i) {
    const std::uint32_t f = solve_set_[i];
    const double old = rate_[f];
    if (old == rates[i]) continue;  // unchanged: its heap entry stands
    set_rate(f, rates[i], bulk);
    listener.rate_changed(f, old, bulk);
  }
  if (bulk) rebuild_rate_heap();
  if (by_rate_valid_) {
    // The re-solved flows (the tail) take rates ≥ the kept ones, up to rounding.
    const auto from = std::partition_point(by_rate_.begin(), by_rate_.end(), [&](std::uint32_t f) { return flow_mark_[f] != epoch_; });
    std::sort(from, by_rate_.end(), [this](std::uint32_t a, std::uint32_t b) { return slower(a, b); });
  }
  return bulk;
}

// With `bulk` (every flow re-solved) the rate heap is rebuilt at once afterwards.
void IncrementalSharing::set_rate(std::uint32_t f, double r, bool bulk) {
  if (r != kInf && rate_[f] != kInf)
    for (const std::uint32_t q : resources(f)) load_[q] += r - rate_[f];
  rate_[f] = r;
  ++version_[f];
  if (!bulk) {
    top_rates_.push_back({r, f, version_[f]});
    std::push_heap(top_rates_.begin(), top_rates_.end(), lower_rate);
  }
}

void IncrementalSharing::rebuild_rate_heap() {
  top_rates_.clear();
  for (const std::uint32_t f : active_) top_rates_.push_back({rate_[f], f, version_[f]});
  std::make_heap(top_rates_.begin(), top_rates_.end(), lower_rate);
}

// The highest rate of a flowing flow (0 when none flows), from the top of top_rates_ (stale
// entries dropped on the way).
double IncrementalSharing::highest_rate() {
  while (!top_rates_.empty() && (!flowing_[top_rates_.front().flow] || top_rates_.front().version != version_[top_rates_.front().flow])) {
    std::pop_heap(top_rates_.begin(), top_rates_.end(), lower_rate);
    top_rates_.pop_back();
  }
  return top_rates_.empty() ? 0.0 : top_rates_.front().rate;
}

}  // namespace ccsim::sim
