#pragma once
// Several jobs on one fabric (`ccsim run` on a scenario with a `jobs:` list): where each job's
// ranks go (explicit GPUs or nodes, or a placement policy over the GPUs the others leave), each
// job's step alone on its GPUs, and the jobs run together over a window of steps so that their
// communication shares the links they have in common.
//
// How the co-run is simulated. Each job's step is first simulated alone on its view of the
// cluster (models::job_view: the same fabric, the job's GPUs), keeping every communication op's
// simulated run (CommCost::plan). Job j's steps then follow each other from its start offset:
// step k starts when step k−1 ends. An op instance (a communication op of job j's step k at its
// start) is run again, in one engine run on the whole cluster (sim::merge_plans), with the
// instances of the other jobs that overlap it in time and use a link it uses, each ready at its
// offset; with simulation.contention also the job's own instances of other parallel dimensions
// (planner/workload/contention.hpp, the same rules: instances of one dimension of one job whose
// GPUs meet count once; a duration is never below its time alone). Each step is re-executed with
// those durations (execute_step), which moves the job's later steps; steps are taken in the order
// they start (Gauss-Seidel), and the pass repeats until no duration moves by more than 1e-9
// relative or no step time by more than 1e-4 (at most 16 passes; the report says when it stopped
// short and by how much the last pass moved a step). Offsets are rounded to 1e-3
// of the instance's time alone so that repeated instances share one run. This is the fluid
// model's max-min sharing on each overlap, not one monolithic engine run of every job's whole
// window: an instance's partners are taken at their own (contended) times, not re-timed inside
// its run.
//
// The window: from 0 to when the last job to finish `steps` steps has finished them; each job
// runs the steps whose middle falls in it, so a fast job's steps all run beside the slow one;
// at most 4,096 steps per job.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::planner {

/// The rules of a scenario with a `jobs:` list beyond what loading checks: no reliability
/// section (failures over a run are modelled for one job; `horizon` says --horizon asked for
/// it), no serving phase (a job's unit is a step), no timed what_if link events (they are timed
/// from one job's step). Throws InputError naming the key.
void check_jobs_scenario(const models::Scenario& scenario, bool horizon = false);

/// Each job's GPUs (global GPU indices, the position in the whole cluster's Topology::gpus();
/// rank r of job j on gpus[j][r]): listed placements as written, then policy placements in list
/// order over the GPUs still free. Packed takes the lowest free GPUs; leaf takes whole free
/// nodes on as few leaf switches as it can (the fullest-fitting leaf when one holds the job,
/// else the leaves with most free nodes first); spread takes whole free nodes one leaf at a time
/// in turn. A node's leaf is the tier-1 switch of its first GPU's NIC (nodes without a network:
/// one leaf). Leaf and spread end on part of a node when the job is not a whole number of
/// nodes. `override_policy[j]`, where given (not Best), replaces job j's Best; a Best job
/// without one is placed as packed. Throws RuleError at the job's placement when the free GPUs
/// cannot hold it (naming the job, the GPUs it needs and those free).
std::vector<std::vector<int>> resolve_placements(const models::Scenario& scenario, const models::Cluster& cluster,
                                                 const std::vector<models::PlacementPolicy>& override_policy = {});

/// "0-63", "0-7,16-23": GPU indices as ranges.
std::string format_index_ranges(const std::vector<int>& indices);

struct JobOutcome {
  std::string name;
  std::string placement;           ///< the policy it was placed by ("gpus", "nodes", "packed", ...)
  std::vector<int> gpus;           ///< global GPU indices, by rank
  double start = 0;                ///< seconds (the job's start offset)
  double alone = 0;                ///< seconds: the step alone on its GPUs
  double mfu_alone = 0;
  std::vector<double> step_start;  ///< seconds from the co-run's start, per co-run step
  std::vector<double> step_time;   ///< seconds, per co-run step
  double mean = 0, min = 0, p50 = 0, max = 0;  ///< over step_time
  double slowdown = 1;             ///< mean / alone
  bool truncated = false;          ///< the window needed more than 4,096 steps; stopped there
  double tokens = 0;               ///< tokens per step (Program::tokens)
  /// Per parallel dimension with communication ops: its op instances over every step of the
  /// window, their seconds alone and beside the other jobs, and what was lost to each job
  /// (`to` names jobs; the job's own name where simulation.contention ran its dimensions
  /// together). The loss of an instance beside several jobs is split evenly between them.
  std::vector<DimensionContention> comm;
  WorkloadResult result;           ///< the step alone (links: its per-step link loads)
};

/// A link that carries traffic of two or more jobs.
struct SharedLink {
  models::LinkId link = 0;
  std::string name;                ///< "leaf0 -> spine1"
  double capacity = 0;             ///< bytes/second (bandwidth × efficiency)
  std::vector<double> bytes;       ///< per job: wire bytes per step alone (0: none)
  double utilisation = 0;          ///< Σ_j bytes_j / mean step_j over capacity, in the co-run
};

struct CoRunResult {
  std::vector<JobOutcome> jobs;
  std::vector<SharedLink> shared;  ///< by co-run utilisation, descending
  int steps = 0;                   ///< the steps setting
  models::EngineKind engine = models::EngineKind::Analytic;
  double window = 0;               ///< seconds: the end of the window
  int passes = 0;
  /// The last pass changed no op duration by more than 1e-9 relative, or no step time by more
  /// than 1e-4 relative (offsets are rounded to 1e-3 of an op's time: finer is noise).
  bool converged = false;
  double last_change = 0;          ///< largest relative change of a step time in the last pass
  /// The pairwise co-run left a shared link above its bandwidth, so the passes went on with
  /// chained overlaps (each op's partners' partners in its run).
  bool chained = false;
  /// Shared links whose co-run utilisation is above 100 % (the per-op runs under-count chained
  /// overlaps there: the slowdowns are lower bounds), and the highest utilisation of a shared link.
  std::size_t over_capacity = 0;
  double max_utilisation = 0;
  std::size_t runs = 0;            ///< merged engine runs
  std::size_t fabric_links = 0;    ///< network links that carried any job's traffic
};

/// Options of run_jobs.
struct CoRunOptions {
  const CostModel* costs = nullptr;
  ComputeCalibration compute;
  ServingCalibration serving;
  models::EngineKind engine = models::EngineKind::Analytic;
  int steps = 4;                   ///< steps of the longest job in the window (>= 1)
  /// Called with (what, done, total) while jobs are simulated; may be empty.
  std::function<void(const std::string&, std::size_t, std::size_t)> progress;
};

/// Runs `scenario`'s jobs (scenario.jobs non-empty; placements as resolve_placements gives
/// them, or `placements` when not empty) alone and together. Throws InputError when a job does
/// not fit in its GPUs' memory (naming it), what resolve_placements, WorkloadRunner and the
/// engine throw.
CoRunResult run_jobs(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunOptions& options,
                     const std::vector<std::vector<int>>& placements = {});

/// One placement tried for a job with `placement: best`.
struct PlacementTrial {
  models::PlacementPolicy policy = models::PlacementPolicy::Packed;
  std::vector<int> gpus;           ///< the job's GPUs under it
  std::string same_as;             ///< a policy tried earlier that gave the same GPUs (not rerun), else empty
  double worst_slowdown = 0;       ///< the largest slowdown over every job
  double job_mean = 0;             ///< seconds: the placed job's mean co-run step
  double others_mean_slowdown = 0; ///< mean slowdown of the other jobs
};

/// For the job with `placement: best` (at most one; InputError otherwise): every policy tried
/// (packed, leaf, spread), ranked by worst slowdown, then the job's mean step; the co-run of the
/// first is `best`.
struct BestPlacement {
  std::size_t job = 0;
  std::vector<PlacementTrial> ranking;
  CoRunResult best;
};
BestPlacement place_best(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunOptions& options);

/// What a reader must know about `r`'s figures, one sentence each (empty when none): a co-run
/// that did not converge, shared links above their bandwidth.
std::vector<std::string> jobs_warnings(const CoRunResult& r);

/// The text summary of a co-run (and the placement ranking when `ranking` is given).
std::string jobs_summary(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunResult& r,
                         const BestPlacement* ranking);
/// report.json of a co-run.
std::string jobs_report_json(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunResult& r,
                             const BestPlacement* ranking, models::EngineKind engine);
/// steps.csv: job,step,start_s,time_s,alone_s.
std::string jobs_steps_csv(const CoRunResult& r);

}  // namespace ccsim::planner
