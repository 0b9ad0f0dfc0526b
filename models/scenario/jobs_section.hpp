#pragma once
// The `jobs` section of a scenario: several jobs on one cluster, each with its own workload,
// strategy, placement and start time. A single top-level `workload:` (with `strategy:`) is the
// one-job shorthand; a scenario has one or the other.
//
//   jobs:
//     - name: A
//       workload: {model: llama3-8b, phase: training_step, sequence_length: 8192, ...}
//       strategy: {tp: 8, dp: 8}
//       placement: {gpus: "0-63"}      # or {nodes: [0, 1, "4-9"]}, or packed | spread | leaf | best
//       start: 0s                      # when its first step starts (a time: 0s, 150ms)

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"
#include "support/input_error.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// Where a job's ranks run.
enum class PlacementPolicy {
  Gpus,    ///< `gpus:` the listed GPUs (global indices), rank r on the r-th
  Nodes,   ///< `nodes:` every GPU of the listed nodes, in node order
  Packed,  ///< the lowest-numbered free GPUs (a scheduler that fills nodes in order)
  Spread,  ///< whole free nodes taken one leaf at a time in turn (as many leaves as possible)
  Leaf,    ///< whole free nodes on as few leaf switches as possible (a topology-aware scheduler)
  Best,    ///< the policy (packed, leaf, spread) that slows the jobs down least when run together
};

std::string_view to_string(PlacementPolicy p);

struct JobPlacement {
  PlacementPolicy policy = PlacementPolicy::Packed;
  /// Gpus: global GPU indices in rank order; Nodes: node indices (ascending as written).
  std::vector<int> indices;
  support::SourceLocation location;  ///< of the `placement` value
};

/// One job of a `jobs:` list, read and checked as a one-job scenario's workload and strategy
/// are (its strategy against its own GPU count).
struct JobSpec {
  std::string name;            ///< `name`, default "job<i>"
  WorkloadSpec workload;
  StrategySpec strategy;
  TransformerConfig model;
  JobPlacement placement;
  double start = 0;            ///< seconds from the co-run's start to the job's first step (>= 0)
  support::SourceLocation location;  ///< of the list element
  /// GPUs the job runs on: tp·pp·cp·dp (64-bit: parse_jobs refuses a product past the cluster).
  std::int64_t gpus() const {
    return static_cast<std::int64_t>(strategy.tp) * strategy.pp * strategy.cp * strategy.dp;
  }
};

/// Reads `jobs` (the list at key "jobs" of `root`) on `cluster`. Each element's workload and
/// strategy are read as the top-level sections are (parse_workload, parse_strategy against the
/// job's GPU count when its placement lists them, else with an absent dp of 1) and its model
/// loaded. Throws InputError on a bad key or value: an empty list, an element that is not a
/// map, a name used twice, a placement that is neither a policy name nor one map of `gpus` or
/// `nodes`, an index outside the cluster or listed twice, a start that is not a time >= 0;
/// RuleError when a placement's GPU count differs from tp·pp·cp·dp, or two jobs' listed GPUs
/// overlap (naming both jobs and the GPU). A relative model path is relative to the file that
/// names it, or to `scenario_path` where a sweep's --set layer holds the list.
std::vector<JobSpec> parse_jobs(const support::Fields& root, const ClusterSpec& cluster,
                                std::span<const std::string_view> algorithm_names, const std::string& scenario_path);

}  // namespace ccsim::models
