#pragma once
// The parts of `ccsim run`'s report that exist when the replicas do not all run alike (a mixed
// cluster, a what-if perturbation): each replica class's time, the step's critical path by class
// and stage, the perturbations applied and the step next to the unperturbed one.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/workload/workload_report.hpp"

namespace ccsim::planner {

/// One replica class's figures: the mean over its stages (one GPU each), seconds.
struct ClassFigures {
  double compute = 0;    ///< compute stream busy
  double exposed = 0;    ///< communication not hidden by compute
  double sync_wait = 0;  ///< DP collectives waiting for the other classes
  double idle = 0;       ///< neither computing, communicating nor waiting for another class (the bubble)
  double end = 0;        ///< when its last op ends (the latest stage)
};

/// Per class of `r` (WorkloadResult::classes), from its Program ranks' breakdowns.
std::vector<ClassFigures> class_figures(const WorkloadResult& r);

/// A run of consecutive critical-path ops on one Program rank.
struct PathSegment {
  int rank = 0;           ///< Program rank (class · pp + stage)
  double start = 0, end = 0;
  double compute = 0;     ///< seconds of compute ops in it
  double comm = 0;        ///< seconds of communication ops in it
  std::string last_op;    ///< the name of its last op
};

/// WorkloadResult::critical_path cut into segments by Program rank, first to last.
std::vector<PathSegment> path_segments(const WorkloadResult& r);

/// The text block (ends with a blank line) `ccsim run` prints after its head table when the
/// result has several replica classes, the scenario perturbations or `unperturbed` is set
/// (> 0: the same step without what_if, seconds); empty otherwise.
std::string replica_summary(const RunContext& c);

/// The same as JSON members (replica_classes, critical_path, perturbations,
/// unperturbed_step_time_s, slowdown) merged into `j`; nothing when replica_summary is empty.
void add_replica_json(const RunContext& c, nlohmann::ordered_json& j);

}  // namespace ccsim::planner
