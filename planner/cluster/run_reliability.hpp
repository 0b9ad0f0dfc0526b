#pragma once
// A scenario's `reliability:` section run on its training step: the failure classes counted on
// the job's GPUs, NICs and nodes, the checkpoint's size from the model, the step time at reduced
// DP from the engine, the Monte-Carlo (planner/cluster/reliability.hpp), and its report (the
// `reliability` block of `ccsim run`'s summary and report.json).

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/cluster/reliability.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::planner {

/// Checkpoint bytes per model parameter: bf16 weights (2) plus the fp32 master weights and
/// Adam's two moments (12, the optimizer state "K = 12" of Rajbhandari et al., "ZeRO: Memory
/// Optimizations Toward Training Trillion Parameter Models", SC 2020).
inline constexpr double kCheckpointBytesPerParam = 14.0;

/// One failure class as counted on the job.
struct ClassCount {
  std::string name;
  double per_year = 0;  ///< per unit, after `rates` and `mtbf`
  double units = 0;     ///< GPUs, NICs or nodes of the job
  std::string unit;     ///< "GPU", "NIC", "node"
  bool overridden = false;
};

struct ReliabilityReport {
  ReliabilityResult result;
  RecoverySettings settings;
  std::vector<ClassCount> classes;
  double checkpoint_bytes = 0;
  double step_time = 0;            ///< the full job's step, s
  double tokens_per_step = 0;
  bool interval_searched = false;  ///< checkpoint.interval auto: the best of the search
  std::vector<std::pair<double, double>> curve;  ///< the search's (interval, mean ETTR)
  double young = 0, daly = 0;      ///< Young's and Daly's intervals at the job's MTBF and save time, s
  std::string policy;              ///< "restart" or "shrink"
};

/// Runs `scenario.reliability` for the training step `result` (of `scenario` on `cluster`).
/// `step_time_of` gives the step time of a scenario (the engine, as `ccsim run` runs it); it is
/// called for the DP sizes a shrink reaches, with the scenario's nodes of the dropped replicas
/// removed from their node groups, `strategy.dp` lowered and the global batch lowered with it
/// (each replica keeps its micro-batches); it returns 0 when that job does not fit (in memory),
/// and the shrink then restarts instead. Throws support::InputError for a scenario the section
/// cannot run on (not a training step, at `reliability`), and what step_time_of throws.
/// `progress` (if given) receives (samples done, samples in all) as RecoverySettings::progress.
ReliabilityReport run_reliability(const models::Scenario& scenario, const models::Cluster& cluster, const WorkloadResult& result,
                                  const std::function<double(const models::Scenario&)>& step_time_of,
                                  const std::function<void(long long, long long)>& progress = {});

/// The report's text block (a heading line, the class table, the figures).
std::string reliability_text(const ReliabilityReport& r);
/// The report as report.json's `reliability` object (SI units: seconds, tokens, bytes).
nlohmann::json reliability_json(const ReliabilityReport& r);

}  // namespace ccsim::planner
