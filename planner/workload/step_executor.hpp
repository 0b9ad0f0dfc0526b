#pragma once
// One step of a workload Program executed on its streams with fixed op durations: an op
// starts when its dependencies and its stream predecessor have ended (sim's DAG schedule,
// sim/execution/dag.hpp).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "models/workload/program.hpp"
#include "sim/execution/dag.hpp"

namespace ccsim::planner {

/// Timing of one Program op: start and end, seconds from the step's start.
using OpTiming = sim::NodeTiming;

/// The earliest-start timing of every op of `program` (one entry per op, by global id): an op
/// starts when the ops it names in ProgramOp::deps and the previous op of its rank on the same
/// stream (its stream predecessor) have ended, and takes duration[op] seconds. Throws
/// std::invalid_argument when duration has not one entry per op, std::logic_error when the
/// program deadlocks (a cycle between streams and dependencies).
std::vector<OpTiming> execute_step(const models::Program& program, std::span<const double> duration);
/// The same with each op's duration chosen when it starts: duration(op, start) seconds.
std::vector<OpTiming> execute_step(const models::Program& program, const std::function<double(std::uint32_t, double)>& duration);

}  // namespace ccsim::planner
