#pragma once
// The `simulation` section of a scenario: the engine, the granularity of a workload run and the
// calibration tables the commands use when the command line names none.

#include <string>

#include <optional>

#include "models/collective/nccl_settings.hpp"
#include "models/collective/schedule.hpp"
#include "models/scenario/engine_kind.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// How a scenario is simulated: the engine, the granularity of a workload run, the tables.
struct SimulationSpec {
  EngineKind engine = EngineKind::Analytic;  ///< analytic | flow
  /// `granularity`: step or phase; nullopt for `auto` (the planner chooses per collective).
  std::optional<Granularity> granularity;
  /// `calibration`: the collective cost table (format of scenarios/calibration/nccl.yaml) the
  /// commands use when the command line names none (cli/options.hpp choose_table). The path as
  /// written, joined to the directory of the file that writes the key (an included file's own
  /// directory); an absolute path stays as it is. Empty: the scenario names none.
  std::string calibration;
  /// `compute_calibration`: the compute efficiency table (format of
  /// scenarios/calibration/compute.yaml), resolved as `calibration`. Empty: none named.
  std::string compute_calibration;
  /// `contention`: a workload step runs the communication ops of different dimensions that
  /// overlap in time and share links in one engine run (planner/workload/contention.hpp)
  /// instead of costing each alone, on the scenario's engine. Default false.
  bool contention = false;
  /// `nccl`: the NCCL release and settings whose rules the collectives follow
  /// ({version: "2.20", nchannels_per_net_peer: 4}; models/collective/nccl_settings.hpp).
  /// Unset fields: NCCL's defaults for the release (ccsim's: kDefaultNcclVersion).
  NcclSettings nccl;
  /// `launch`: how the collectives are launched, eager (one kernel launch per collective,
  /// nccl-tests without -G; default) or graph (captured in a CUDA graph and replayed,
  /// nccl-tests -G): a graph replaces the per-collective fixed cost by the calibration table's
  /// `launch.graph_latency` for the GPUs' family (planner/tuning/cost_model.hpp).
  bool graph_launch = false;
  /// `symmetric_memory`: buffers registered as symmetric windows (ncclCommWindowRegister with
  /// NCCL_WIN_COLL_SYMMETRIC; nccl-tests -R 2), so NCCL 2.27+ may run its symmetric-memory
  /// kernels (an AllReduce whose ranks are all NVLink peers). Default false.
  bool symmetric_memory = false;
};

/// Reads the `simulation` section `f`. Throws InputError on a bad key or value, and on a
/// calibration / compute_calibration that is not a path or names no readable regular file (at
/// the key's file, line and column, with the resolved path). The tables' contents are checked
/// where they are loaded (planner::CostModel::load, planner::ComputeCalibration::load).
SimulationSpec parse_simulation(const support::Fields& f);

}  // namespace ccsim::models
