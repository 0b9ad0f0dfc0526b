#pragma once
// Timed link events in a workload step: what_if link rules with `at:` (and `for:`, `every:`)
// hold only during their windows, seconds from the step's start. A communication op that runs
// during a window is costed, for that part of its run, on the cluster as it is then: the
// cluster with the active events' rules applied (its own lowering, so a failed NIC fails over
// and a failed NVLink leaves the rings as a static rule would). The op's progress is piecewise
// linear in time: outside every window it advances at 1/T per second (T: its duration on the
// static cluster, with contention if that is on), inside a set of active events at
// 1/(T · T_events/T_static) (T_events and T_static: its time alone on each cluster). For a
// bandwidth-bound op whose bottleneck the event scales, that is exact in the fluid model; an
// op already in flight keeps its algorithm, as NCCL keeps a communicator's channels.
//
// Events are the timed rules grouped by timing (the same at, for and every are one event, their
// rules applied together); two events that change a common link must not hold at the same
// instant of the step (support::InputError naming both rules and the instant).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"
#include "planner/workload/lowering.hpp"
#include "planner/workload/step_executor.hpp"

namespace ccsim::planner {

class CostModel;

/// One event: the timed rules that share a timing.
struct LinkEvent {
  double at = 0;         ///< seconds from the step's start
  double duration = 0;   ///< seconds (+inf: to the end of the step)
  double every = 0;      ///< seconds between starts (0: once)
  std::vector<std::size_t> rules;  ///< indices into what_if.links
  /// Whether the event holds at t; the next instant after t when that changes (+inf: never).
  bool active(double t) const;
  double next_change(double t) const;
  /// Windows that start before `end`.
  std::size_t windows_before(double end) const;
  /// "at 2.5 s for 500 ms, every 1 s".
  std::string describe() const;
};

/// The events of `w`'s timed link rules, in order of their first rule.
std::vector<LinkEvent> link_events(const models::WhatIfSpec& w);

struct LinkEventReport {
  std::string rules;     ///< "what_if.links[0], what_if.links[2]"
  std::string timing;    ///< LinkEvent::describe()
  std::size_t windows = 0;  ///< windows that start within the step
  std::size_t ops = 0;   ///< communication op instances of the representative ranks that ran during it
};

struct LinkEventsResult {
  std::vector<LinkEventReport> events;
  std::size_t ops = 0;   ///< op instances that ran during any event
  double lost = 0;       ///< seconds: Σ over them of their duration minus their duration without events
  int passes = 0;        ///< step executions to the fixed point (with contention, passes of both)
  bool converged = false;
};

/// The timed events of a scenario, and the clusters while they hold (built when first needed).
class LinkEventModel {
 public:
  /// `scenario`, `base` (its cluster with the static rules) and `costs` must outlive the model.
  /// Throws support::InputError when there are more than 16 distinct timings (at the 17th).
  LinkEventModel(const models::Scenario& scenario, const models::Cluster& base, const CostModel& costs, models::EngineKind engine);
  bool empty() const { return events_.empty(); }
  const std::vector<LinkEvent>& events() const { return events_; }

  /// How to lower Program op `op` on a lowering (the runner's choice of stage and representative).
  using Lower = std::function<double(CommLowering&, std::uint32_t op)>;
  /// Starts a step execution: the report counts the ops of the calls from here on.
  void begin_pass();
  /// The duration with events of communication op `op` that starts at `start` and takes `d`
  /// seconds without them (`alone`: its time alone on the static cluster); `d` when no window
  /// meets its run or its cluster is the same while they hold. Throws what building an event's
  /// cluster throws (support::InputError: a selector that matches nothing, failures that
  /// disconnect). `counted`: whether the report counts it (false for the other classes' copies
  /// of a DP collective joined across replica classes, which are one op).
  double duration_at(std::uint32_t op, double start, double d, double alone, const Lower& lower, bool counted = true);
  /// Throws support::InputError when two events that change a common link hold at one instant
  /// of [0, step_time).
  void check_contradictions(double step_time);
  /// What the calls since begin_pass() did, for a step of `step_time` seconds.
  LinkEventsResult report(double step_time) const;

 private:
  struct State {
    models::Scenario scenario;
    std::unique_ptr<models::Cluster> cluster;
    std::unique_ptr<CommLowering> lowering;
    std::map<std::uint32_t, double> time;  ///< per op: its time alone on this cluster
  };
  State& state(unsigned mask);
  unsigned mask_at(double t) const;
  double next_change(double t) const;
  /// Links whose bandwidth or state event e changes.
  const std::vector<models::LinkId>& touched(std::size_t e);

  const models::Scenario& scenario_;
  const models::Cluster& base_;
  const CostModel& costs_;
  models::EngineKind engine_;
  std::vector<LinkEvent> events_;
  std::map<unsigned, State> states_;
  std::map<std::size_t, std::vector<models::LinkId>> touched_;
  std::vector<std::size_t> event_ops_;  ///< since begin_pass(): op instances per event
  std::size_t ops_ = 0;
  double lost_ = 0;
};

}  // namespace ccsim::planner
