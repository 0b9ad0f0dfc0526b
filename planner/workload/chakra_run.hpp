#pragma once
// A per-rank Program read from Chakra execution traces (models/workload/chakra) run on a
// scenario's cluster (`ccsim run SCENARIO --chakra DIR`), and a scenario's step Program made
// per rank for writing as Chakra traces (`ccsim run --chakra-out DIR`).
//
// Rank r of the trace runs on the cluster's r-th GPU (nodes in order, GPUs in node order), as
// Megatron's rank r does (placement.hpp). Compute ops with a fixed time take it; the others
// are timed by the compute model (compute_model.hpp) on their GPU at its what-if speed, in the
// `dtype` given. A collective is simulated on the GPUs of its group with NCCL's choice of
// algorithm and protocol (CollectiveRunner, as `ccsim collective` does), alongside the groups
// that run the same op at the same time on the nodes it uses (see run_chakra); a send as NCCL's
// one-way p2p (Simple), alone. The Program's DAG is then executed on its streams
// (step_executor.hpp) and each rank broken down (breakdown.hpp: collectives count as their
// stream's dimension, DP for a foreign trace's; sends and receives as PP).

#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/breakdown.hpp"
#include "planner/workload/compute_model.hpp"
#include "planner/workload/lowering.hpp"
#include "planner/workload/step_executor.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::planner {

struct ChakraRunOptions {
  ComputeCalibration compute;
  models::EngineKind engine = models::EngineKind::Analytic;
  std::string dtype = "bf16";  ///< the dtype compute ops without a fixed time are timed in
};

struct ChakraRunResult {
  std::vector<double> duration;        ///< seconds, per op
  std::vector<OpTiming> timing;        ///< per op
  std::vector<int> op_comm;            ///< per op: index into comm_costs, or -1
  std::vector<CommCost> comm_costs;    ///< each distinct lowered op (group, size, concurrent groups)
  std::vector<StageBreakdown> ranks;   ///< per rank
  double step_time = 0;                ///< seconds: when the last op ends
};

/// Runs `program` (one ProgramRank per GPU, communication ops with explicit groups, as
/// models::chakra::read_chakra_dir returns) on `cluster`. Collectives with the same name, type,
/// size and position in their group's sequence, on disjoint groups that share a node, are taken
/// to run at the same time and are simulated together (the copies of one op in a per-rank trace
/// of a layout; ccsim's own lowering does the same for the groups of one op). Throws
/// support::InputError when the Program's rank count differs from the cluster's GPUs, and
/// std::invalid_argument when an op has no group.
ChakraRunResult run_chakra(const models::Program& program, const models::Cluster& cluster, const CostModel& costs, const ChakraRunOptions& o);

/// The step Program of `r` (a WorkloadRunner result on `scenario`'s cluster, training or an
/// inference step, not serving) with one ProgramRank per GPU: every GPU runs its stage's ops of
/// its replica class, compute ops with the time they took in `r` (ProgramOp::fixed_time),
/// communication ops with their groups on that GPU (ProgramOp::group); a PP send's receiver gets
/// a receive op right before the first op that needs it, on that op's stream (the receive ends
/// with its send, which that op waited for already: the step is unchanged). Other
/// dependencies between ranks (the replica classes' DP synchronisation) are left to the
/// collectives. Throws std::invalid_argument when `r` has no Program.
models::Program world_program(const WorkloadResult& r, const models::Scenario& scenario);

/// The text `ccsim run --chakra` prints: the trace, the step time, per rank compute,
/// communication and exposed communication, and the distinct communication ops.
std::string chakra_summary(const std::string& source, const models::Program& program, const ChakraRunResult& r);

}  // namespace ccsim::planner
