#pragma once
// Where a step's time goes on each pipeline stage: compute, communication per parallel
// dimension and the part of it that compute does not hide, and idle time (the pipeline bubble).

#include <array>
#include <span>
#include <vector>

#include "models/workload/program.hpp"
#include "planner/workload/step_executor.hpp"

namespace ccsim::planner {

/// Per pipeline stage figures (one GPU of the stage), seconds.
struct StageBreakdown {
  double compute = 0;                   ///< busy time of the compute stream
  std::array<double, models::kParallelDims> comm{};     ///< communication time per dim (sum of op durations)
  std::array<double, models::kParallelDims> exposed{};  ///< part of it not overlapped by compute
  double exposed_total = 0;             ///< time with communication in flight and no compute (each instant once)
  double idle = 0;                      ///< neither computing nor communicating (pipeline bubble); compute + exposed_total + idle = step
  double end = 0;                       ///< when the stage's last op ends
};

/// One StageBreakdown per rank (stage) of `program`, from the timing of its ops (one per op,
/// execute_step) and the step's length `step_time` (seconds, host overhead included: it counts
/// as idle). A communication op's exposed part is its length minus the compute time inside it;
/// exposed_total is the union of communication intervals minus compute, each instant once.
std::vector<StageBreakdown> stage_breakdown(const models::Program& program, std::span<const OpTiming> timing, double step_time);

}  // namespace ccsim::planner
