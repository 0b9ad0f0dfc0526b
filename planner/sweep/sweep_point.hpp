#pragma once
// One point of `ccsim sweep`: a scenario in, the row of figures out. The sweep calls
// evaluate_point for every feasible-looking point; `--plan` (the layout search) is meant to
// replace it by "plan the best layout for this point" behind the same signature.

#include <optional>
#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"

namespace ccsim::planner {

/// The command-line choices every point is run with (as `ccsim run` takes them).
struct PointOptions {
  std::optional<models::EngineKind> engine;  ///< nullopt: the scenario's simulation.engine
  std::string calibration;          ///< collective table; empty: the scenario's, else the default
  std::string compute_calibration;  ///< compute table; empty: the scenario's, else the default
  std::string serving_calibration;  ///< serving table (inference); empty: the default
  std::optional<double> price_per_gpu_hour;  ///< USD per GPU-hour, for cost_per_mtok
  /// --plan: each point is the best layout of a search (planner/search/layout_plan.hpp) instead of
  /// the scenario's own strategy; fix / space are `ccsim plan`'s --fix / --space options.
  bool plan = false;
  std::vector<std::string> fix, space;
  std::string objective = "step-time";
  int jobs = 0;  ///< the search's worker threads (0: the machine's)
};

/// The figures of one point. Times in seconds, memory in GiB (2^30 bytes, as `ccsim run`
/// prints it), cost in USD per million tokens.
struct SweepRow {
  bool feasible = false;
  std::string reason;                ///< why not, when !feasible (one line)
  int gpus = 0;                      ///< world size; 0 when the scenario did not load
  std::string phase;                 ///< training_step | prefill | decode | serving; empty when not loaded
  std::optional<double> step_time_s; ///< the step (TTFT for prefill, TPOT for decode, the middle decode step for serving)
  std::optional<double> tokens_per_s;///< tokens of the step / step time (report.json's tokens_per_s)
  std::optional<double> mfu;         ///< model FLOPs / (step time × GPUs × dense peak), 0..1
  std::optional<double> memory_gib;  ///< largest per-GPU footprint over pipeline stages
  std::optional<double> hbm_gib;     ///< HBM of the smallest GPU of the placement
  std::optional<double> ttft_s;      ///< prefill: the step; serving: the request's TTFT
  std::optional<double> tpot_s;      ///< decode: the step; serving: the request's TPOT
  std::optional<double> cost_per_mtok;  ///< price × GPUs / 3600 × step / tokens per step × 1e6
  std::string layout;                ///< --plan: the best layout (planner::layout_name); else empty
  /// With a `reliability:` section (planner/cluster/run_reliability.hpp): the mean ETTR (0..1),
  /// the mean wall time of the run (its duration, or the time to the token budget), s, and the
  /// checkpoint interval simulated (the best one for `auto`), s of compute.
  std::optional<double> ettr, run_wall_s, checkpoint_interval_s;
  /// A scenario with a `jobs:` list (planner/cluster/jobs.hpp): the step columns describe the
  /// last job of the list (the new job of a placement study) in the co-run, gpus and memory
  /// every job's; worst_slowdown is the largest co-run/alone step ratio over the jobs,
  /// slowdowns each job's ("A 1.021x, B 1.027x"), placement the last job's policy (for best:
  /// the one chosen, "best: leaf").
  std::optional<double> worst_slowdown;
  std::string slowdowns, placement;
};

/// One node group of the sweep's base point, for readers that turn a node count into GPUs.
struct SweepNodeGroup {
  std::string node;       ///< template name ("hgx-h200")
  std::string gpu;        ///< GPU model ("H200-SXM")
  int count = 0;          ///< nodes in the group at the base point
  int gpus_per_node = 0;
};

/// What a reader of the results must know besides the figures, from the first point whose
/// scenario loaded (the base point: a swept key may change it at other points).
struct SweepMeta {
  std::string name;                 ///< the scenario's name
  std::string model;                ///< the workload's model ("llama-3-70b", a config.json's folder); empty for jobs
  std::string phase;                ///< training_step | prefill | decode | serving | jobs
  std::string workload;             ///< "sequence 8192, global batch 64" (the figures that set the step)
  std::string cluster;              ///< "4 x hgx-h200 (32 x H200-SXM), fat-tree rail-optimized"
  std::vector<SweepNodeGroup> node_groups;  ///< cluster.nodes[i], in order
  std::string calibration;          ///< collective table: its file name, "(default)" when none was named
  std::string compute_calibration;  ///< compute table, as calibration
  std::string engine;               ///< analytic | flow
  std::string ccsim_version;        ///< the program's version (CMake's PROJECT_VERSION); empty when not set
};

/// The sweep's metadata from its base point's scenario (`ccsim_version` left empty: the CLI
/// knows it): names, the model and its step figures, the cluster in one line, the tables and
/// engine the points run with (as evaluate_point chooses them). Builds the point's cluster once.
SweepMeta describe_sweep(const models::Scenario& scenario, const PointOptions& options);

/// Why swept points tie: `scenarios` are the tied points (one value of the swept key each, in
/// `values`). Compares the injection limit of each point's first node group (its GPUs' way
/// through their NICs into the fabric, with the link efficiencies of the point's collective
/// calibration table, as the simulation charges links): the same limit below different NIC
/// line rates ("pcie-gen5 (...) binds at every point: 48 GB/s per GPU into the fabric
/// (nccl.yaml's link_efficiency), below the NIC line rates (ib-ndr 50 GB/s, ib-xdr 100 GB/s per
/// GPU)"), or different injections (then the fabric is not what sets the step). Empty for
/// points with the same injection and NIC line rates (the key did not touch the way into the
/// fabric), points without a fabric, or with a jobs: list.
std::string explain_tie(const std::vector<const models::Scenario*>& scenarios, const std::vector<std::string>& values,
                        const PointOptions& options);

/// The row of an infeasible point whose scenario broke a rule (support::RuleError): the key, what
/// was expected and what was found, without the file position.
SweepRow rule_row(const support::InputError& e);

/// Runs `scenario` exactly as `ccsim run` would (same tables, engine, serving figures) and
/// returns its row; a layout that does not fit in memory is an infeasible row ("out of memory:
/// stage S needs X GiB per GPU, more than the Y GiB of HBM"). Throws support::InputError for bad
/// calibration tables (as `ccsim run` does). `scenario` must have a workload.
SweepRow evaluate_point(const models::Scenario& scenario, const PointOptions& options);

/// `--plan`: the row of the best layout `ccsim plan` finds for `scenario` (figures of its full
/// run, as `ccsim run` on it gives them), or an infeasible row when every layout is pruned
/// (the reason gives the counts). Throws support::InputError for bad --fix / --space options.
SweepRow plan_point(const models::Scenario& scenario, const PointOptions& options);

}  // namespace ccsim::planner
