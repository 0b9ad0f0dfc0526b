#pragma once
// Failures over a whole training run: a seeded Monte-Carlo of a job's interruptions and its
// recovery (checkpoint/restart, hot spares, shrink-and-continue), giving the effective training
// time ratio (ETTR), goodput, the time to a token budget with its confidence interval, the best
// checkpoint interval and what each failure class costs.
//
// Model (docs/reliability.md):
// * Each failure class c (models/hardware/failure_rates.hpp) fails at a constant rate per unit
//   (GPU, NIC, node), so the job sees a Poisson process of rate Σ_c rate_c · units_c. Failures
//   are drawn while the job runs (compute and checkpoint saves), not while it is down.
// * The job computes in steps; every `interval` seconds of compute it saves a checkpoint, which
//   blocks for `save` seconds. A failure during a save loses that checkpoint too.
// * Restart (and every class that does not take a node out, under either policy): the job rolls
//   back to its last checkpoint (the work since is lost) and is down for restart + load seconds.
//   A class that takes a node out (GPU, HBM, NIC, host) needs a replacement: a spare node if one
//   is free (the failed node returns to the spares after `repair`), else the job waits for the
//   first repaired node.
// * Shrink (NCCL ncclCommShrink, 2.27+): a node failure drops the DP replicas with ranks on that
//   node, loses only the step in flight, costs `shrink` seconds, and the job goes on at reduced DP
//   (each replica keeps its micro-batches, so the global batch shrinks) at the step time the
//   engine gives for that DP. The replicas rejoin at the first checkpoint after a spare or the
//   repaired node is there, at the cost of a restart + load (no work lost: the checkpoint is fresh).
//
// Accounting: every second of a sample's wall time is useful compute (at the full job's token
// rate), a checkpoint save, or lost to a class (rework of rolled-back work, downtime, waiting for
// a node, and the throughput lost at reduced DP). They add up to the wall time exactly
// (tests/planner/cluster/reliability_test.cpp).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ccsim::planner {

/// One failure class as the job sees it.
struct JobFailureClass {
  std::string name;
  double rate = 0;            ///< failures per second of the whole job at full DP (per-unit rate × units)
  bool removes_node = false;  ///< the node leaves the job until repaired or replaced
};

/// The job whose run is simulated.
struct ReliabilityJob {
  std::vector<JobFailureClass> classes;
  int nodes = 1;                               ///< nodes of the job
  int dp = 1;                                  ///< DP replicas at full size
  std::vector<std::vector<int>> node_replicas; ///< per node: the DP replicas with ranks on it (shrink); empty: not needed
  std::vector<int> replica_class;              ///< per replica: its class (planner::ReplicaClass index), the step-time cache key
  double tokens_per_step = 0;                  ///< at full DP
  /// Step time in seconds with `dead[c]` replicas of replica class c dropped (all zeros: the
  /// full job); 0 when the job cannot run at that size (it does not fit in memory): a shrink to
  /// it restarts instead. Called at most once per distinct argument (the result is cached).
  std::function<double(const std::vector<int>& dead)> step_time;
};

/// Recovery settings, seconds.
struct RecoverySettings {
  bool shrink = false;
  int spare_nodes = -1;  ///< -1: unlimited
  double interval = 0;   ///< compute seconds between checkpoints (> 0)
  double save = 0, load = 0, restart = 0, repair = 0, shrink_time = 0;
  double duration = 0;   ///< wall seconds to simulate; 0: until the budget
  double tokens = 0;     ///< token budget; 0: none
  int samples = 1000;
  std::uint64_t seed = 1;
  /// Called every 64 samples and at the end with (samples done, samples in all) over the whole
  /// simulate_run or best_interval call; empty: none.
  std::function<void(long long, long long)> progress;
};

/// What one class cost, summed over samples then divided by their count.
struct ClassCost {
  std::string name;
  double events = 0;   ///< interruptions per run
  double rework = 0;   ///< seconds of rolled-back (or in-flight) work redone per run
  double downtime = 0; ///< seconds down (restart + load, shrink, wait for a node) per run
  double reduced = 0;  ///< seconds of throughput lost at reduced DP per run (shrink)
  double lost() const { return rework + downtime + reduced; }
};

/// A statistic over the samples: mean, its 95 % confidence half-width (1.96 · sd / √n), and
/// the 5th and 95th percentiles.
struct SampleStat {
  double mean = 0, half_width = 0, p5 = 0, p95 = 0;
};

struct ReliabilityResult {
  double interval = 0;          ///< the checkpoint interval simulated, s of compute
  double full_rate = 0;         ///< tokens per second of the full job without failures
  double job_rate = 0;          ///< interruptions per second of the full job (Σ classes)
  SampleStat ettr;              ///< useful compute (at the full rate) / wall time
  SampleStat wall;              ///< wall seconds of a sample (the duration, or the time to the budget)
  SampleStat tokens;            ///< tokens trained per sample
  /// Fraction of samples that reached the token budget (1 without a budget). Without a duration
  /// a sample stops, unfinished, at 20 times the budget's failure-free time (at most 100 years).
  double finished = 0;
  double saves = 0;             ///< seconds of checkpoint saves per run
  double useful = 0;            ///< seconds of useful compute per run
  std::vector<ClassCost> classes;
  double step_time_runs = 0;    ///< distinct step times the engine computed (the cache's size)
};

/// Runs the Monte-Carlo at settings.interval. Sample i draws from std::mt19937_64 seeded with
/// seed · 1,000,003 + i, so a run is reproducible byte for byte and runs at other intervals see
/// the same failure stream (common random numbers). Throws std::invalid_argument when the job or
/// settings are malformed (no class, a rate ≤ 0, interval ≤ 0, neither duration nor tokens).
ReliabilityResult simulate_run(const ReliabilityJob& job, const RecoverySettings& settings);

/// The interval search: simulate_run at Young's interval √(2 · save · MTBF) (MTBF = 1 / the
/// job's rate) times 2^(k/4), k = -8..8, and the one with the highest mean ETTR (ties: the
/// shorter). `settings.interval` is ignored. `curve` (if given) receives every (interval, ETTR).
ReliabilityResult best_interval(const ReliabilityJob& job, const RecoverySettings& settings,
                                std::vector<std::pair<double, double>>* curve = nullptr);

/// Young's first-order optimal checkpoint interval √(2 · C · M) (J. W. Young, "A first order
/// approximation to the optimum checkpoint interval", CACM 17(9), 1974), s.
double young_interval(double save, double mtbf);
/// Daly's higher-order estimate √(2 · C · M) − C for C < 2M, else M (J. T. Daly, "A higher order
/// estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3), 2006), s.
double daly_interval(double save, double mtbf);

}  // namespace ccsim::planner
