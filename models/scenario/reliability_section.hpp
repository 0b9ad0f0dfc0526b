#pragma once
// The `reliability:` section of a scenario: failures over a whole training run and how the job
// recovers from them, simulated by planner/cluster/reliability.hpp (`ccsim run` reports it; the
// `--horizon` option of `ccsim run` sets `duration` and turns the section on). Schema and
// defaults: docs/scenario-format.md, "Reliability".

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// How the job recovers from a failure that takes a node out (GPU, HBM, NIC, host).
enum class RecoveryPolicy {
  Restart,  ///< checkpoint/restart: roll back to the last checkpoint, restart on a spare (or wait for the repair)
  Shrink,   ///< shrink-and-continue (NCCL ncclCommShrink, 2.27+): drop the node's DP replicas, go on at reduced DP
};

/// The `reliability:` section, in SI units (seconds, bytes per second).
struct ReliabilitySpec {
  bool enabled = false;    ///< the section is present (or `run --horizon` was given)
  double duration = 0;     ///< `duration`: wall time of the run to simulate, s; 0: until the token budget
  double tokens = 0;       ///< `tokens`: the token budget; 0: none (the run lasts `duration`)
  int samples = 1000;      ///< `samples`: Monte-Carlo runs
  std::uint64_t seed = 1;  ///< `seed`: sample i draws from a generator seeded with (seed, i)
  RecoveryPolicy policy = RecoveryPolicy::Restart;  ///< `policy`: restart | shrink
  int spare_nodes = -1;    ///< `spare_nodes`: healthy nodes standing by; -1 (`unlimited`): a failed node is always replaced
  std::optional<double> checkpoint_interval;  ///< `checkpoint.interval`: compute time between checkpoints; nullopt (`auto`): the best one
  std::optional<double> save_time;            ///< `checkpoint.save`: blocking save, s; nullopt: checkpoint bytes / write bandwidth
  std::optional<double> load_time;            ///< `checkpoint.load`: s; nullopt: checkpoint bytes / read bandwidth
  double write_bandwidth = 1e9;  ///< `checkpoint.write_bandwidth`: storage write bandwidth per node of the job, B/s
  double read_bandwidth = 1e9;   ///< `checkpoint.read_bandwidth`: storage read bandwidth per node, B/s
  double restart_time = 600;     ///< `restart`: detect, reschedule and re-initialise after an interruption, s
  double repair_time = 86400;    ///< `repair`: a failed node out of service, s
  double shrink_time = 60;       ///< `shrink`: shrink the communicators and go on (policy shrink), s
  std::optional<double> job_mtbf;  ///< `mtbf`: the job's mean time between interruptions; scales every class's rate to it
  /// `rates`: failures per unit and year by class name (models/hardware/failure_rates.hpp),
  /// overriding the defaults, in file order.
  std::vector<std::pair<std::string, double>> rates;
};

/// Reads the `reliability` section `f`. Throws InputError (file:line:column, key, expected,
/// found) on an unknown key, a class name that is not one of failure_classes(), a rate that is not
/// a finite number > 0, a duration or bandwidth out of range, and samples outside 1..1,000,000.
/// A section with neither `duration` nor `tokens` is refused where the run is simulated
/// (planner::run_reliability), so that `ccsim run --horizon` can supply the duration.
ReliabilitySpec parse_reliability(const support::Fields& f);

}  // namespace ccsim::models
