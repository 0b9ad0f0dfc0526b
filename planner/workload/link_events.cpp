#include "planner/workload/link_events.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "support/input_error.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kMaxEvents = 16;


/// The index of the window of `e` that most recently started at or before t (−1: none yet),
/// up to rounding: callers look at its neighbours too.
double window_index(const LinkEvent& e, double t) {
  if (t < e.at) return -1;
  return e.every > 0 ? std::floor((t - e.at) / e.every) : 0;
}

}  // namespace

bool LinkEvent::active(double t) const {
  const double k = window_index(*this, t);
  if (k < 0) return false;
  for (double j = std::max(0.0, k - 1); j <= k + 1; ++j) {
    const double start = at + j * every;
    if (t >= start && t < start + duration) return true;
    if (every <= 0) break;
  }
  return false;
}

double LinkEvent::next_change(double t) const {
  if (t < at) return at;
  if (every <= 0) return t < at + duration ? at + duration : kInf;
  // The first window edge after t (strictly: rounding must not return t itself).
  for (double j = std::max(0.0, window_index(*this, t) - 1);; ++j) {
    const double start = at + j * every;
    if (start > t) return start;
    if (start + duration > t) return start + duration;
  }
}

std::size_t LinkEvent::windows_before(double end) const {
  if (end <= at) return 0;
  if (every <= 0) return 1;
  return static_cast<std::size_t>(std::ceil((end - at) / every));
}

std::string LinkEvent::describe() const {
  models::LinkRule r;
  r.at = at;
  r.duration = duration;
  r.every = every;
  return models::describe_timing(r);
}

std::vector<LinkEvent> link_events(const models::WhatIfSpec& w) {
  std::vector<LinkEvent> out;
  for (std::size_t i = 0; i < w.links.size(); ++i) {
    const auto& r = w.links[i];
    if (!r.timed()) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const LinkEvent& e) { return e.at == r.at && e.duration == r.duration && e.every == r.every; });
    if (it == out.end()) {
      if (out.size() == kMaxEvents) {
        throw support::InputError(r.where, r.key, fmt::format("at most {} distinct event timings (at, for, every) in one scenario", kMaxEvents),
                                  fmt::format("a {}th", kMaxEvents + 1));
      }
      out.push_back({r.at, r.duration, r.every, {}});
      it = out.end() - 1;
    }
    it->rules.push_back(i);
  }
  return out;
}

LinkEventModel::LinkEventModel(const models::Scenario& scenario, const models::Cluster& base, const CostModel& costs,
                               models::EngineKind engine)
    : scenario_(scenario), base_(base), costs_(costs), engine_(engine), events_(link_events(scenario.what_if)) {}

LinkEventModel::State& LinkEventModel::state(unsigned mask) {
  auto it = states_.find(mask);
  if (it != states_.end()) return it->second;
  std::vector<std::size_t> rules;
  for (std::size_t e = 0; e < events_.size(); ++e)
    if ((mask >> e) & 1U) rules.insert(rules.end(), events_[e].rules.begin(), events_[e].rules.end());
  State s;
  s.scenario = scenario_;
  s.scenario.what_if = models::with_timed_rules(scenario_.what_if, rules);
  it = states_.emplace(mask, std::move(s)).first;
  State& st = it->second;
  st.cluster = std::make_unique<models::Cluster>(models::build_scenario_cluster(st.scenario));
  st.lowering = std::make_unique<CommLowering>(st.scenario, *st.cluster, costs_, engine_);
  return st;
}

unsigned LinkEventModel::mask_at(double t) const {
  unsigned m = 0;
  for (std::size_t e = 0; e < events_.size(); ++e)
    if (events_[e].active(t)) m |= 1U << e;
  return m;
}

double LinkEventModel::next_change(double t) const {
  double n = kInf;
  for (const auto& e : events_) n = std::min(n, e.next_change(t));
  return n;
}

void LinkEventModel::begin_pass() {
  event_ops_.assign(events_.size(), 0);
  ops_ = 0;
  lost_ = 0;
}

double LinkEventModel::duration_at(std::uint32_t i, double s, double d, double alone, const Lower& lower, bool counted) {
  if (alone <= 0 || d <= 0) return d;
  if (mask_at(s) == 0 && next_change(s) >= s + d) return d;
  // Walk the op's run from window to window: `left` is the fraction of its work still to do.
  double t = s, left = 1;
  unsigned seen = 0;
  bool changed = false;
  for (std::size_t guard = 0;; ++guard) {
    if (guard > 10000000) {
      // The fastest flap, named: its windows are far shorter than the op.
      std::size_t fastest = 0;
      for (std::size_t e = 1; e < events_.size(); ++e)
        if (events_[e].every > 0 && (events_[fastest].every <= 0 || events_[e].every < events_[fastest].every)) fastest = e;
      const auto& r = scenario_.what_if.links[events_[fastest].rules.front()];
      throw support::InputError(r.where, r.key,
                                "a flap whose windows an op crosses fewer than 10^7 times (a longer period, or a static rule at its mean factor)",
                                fmt::format("an op of {} crossing more than 10^7 windows of the events", support::format_time(d)));
    }
    const unsigned m = mask_at(t);
    seen |= m;
    double scale = 1;
    if (m != 0) {
      State& st = state(m);
      auto it = st.time.find(i);
      if (it == st.time.end()) it = st.time.emplace(i, lower(*st.lowering, i)).first;
      scale = it->second / alone;
      changed = changed || scale != 1;
    }
    const double need = left * d * scale;
    const double until = next_change(t);
    if (t + need <= until) {
      t += need;
      break;
    }
    left -= (until - t) / (d * scale);
    t = until;
  }
  if (seen == 0) return d;
  if (!counted) return changed ? t - s : d;
  ++ops_;
  for (std::size_t e = 0; e < events_.size(); ++e)
    if ((seen >> e) & 1U) ++event_ops_[e];
  if (!changed) return d;  // its cluster is the same while the events hold
  lost_ += (t - s) - d;
  return t - s;
}

const std::vector<models::LinkId>& LinkEventModel::touched(std::size_t e) {
  auto it = touched_.find(e);
  if (it != touched_.end()) return it->second;
  const State& st = state(1U << e);
  std::vector<models::LinkId> out;
  for (models::LinkId l = 0; l < base_.topology.num_links(); ++l) {
    const auto& a = base_.topology.link(l);
    const auto& b = st.cluster->topology.link(l);
    if (a.bandwidth != b.bandwidth || a.failed != b.failed) out.push_back(l);
  }
  return touched_.emplace(e, std::move(out)).first->second;
}

void LinkEventModel::check_contradictions(double step_time) {
  for (std::size_t a = 0; a < events_.size(); ++a) {
    for (std::size_t b = a + 1; b < events_.size(); ++b) {
      const auto& ra = scenario_.what_if.links[events_[a].rules.front()];
      const auto& rb = scenario_.what_if.links[events_[b].rules.front()];
      double when = 0;
      if (!models::windows_overlap(ra, rb, step_time, when)) continue;
      const auto& ta = touched(a);
      const auto& tb = touched(b);
      std::vector<models::LinkId> common;
      std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::back_inserter(common));
      if (common.empty()) continue;
      const auto& topo = base_.topology;
      const models::LinkId l = common.front();
      throw support::InputError(rb.where, rb.key,
                                fmt::format("a timed rule that does not change a link of {} ({}) while that one holds "
                                            "(give both the same at, for and every to apply them together)",
                                            ra.key, events_[a].describe()),
                                fmt::format("both change {} -> {} at {} s of the step ({})", topo.name(topo.link_source(l)),
                                            topo.name(topo.link_target(l)), when, events_[b].describe()));
    }
  }
}

LinkEventsResult LinkEventModel::report(double step_time) const {
  LinkEventsResult r;
  r.ops = ops_;
  r.lost = lost_;
  for (std::size_t e = 0; e < events_.size(); ++e) {
    LinkEventReport rep;
    for (std::size_t i : events_[e].rules) rep.rules += (rep.rules.empty() ? "" : ", ") + scenario_.what_if.links[i].key;
    rep.timing = events_[e].describe();
    rep.windows = events_[e].windows_before(step_time);
    rep.ops = e < event_ops_.size() ? event_ops_[e] : 0;
    r.events.push_back(std::move(rep));
  }
  return r;
}

}  // namespace ccsim::planner
