#pragma once
// Plans and simulates one collective at a sweep of sizes: picks the algorithm and protocol
// (`auto`: the least predicted time among NCCL's eligible choices, as NCCL's tuner does),
// places ranks, generates the Schedule at the chosen granularity, runs the engine, and checks
// the result against the lower bound.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/bounds.hpp"
#include "planner/collective/candidate_bound.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/collective/ring_search.hpp"
#include "sim/engine.hpp"

namespace ccsim::planner {

/// The largest Schedule the planner generates (ops of all ranks and concurrent groups):
/// kMaxScheduleOps ops take about kMaxScheduleGiB GiB to generate and simulate (measured,
/// Release: direct AlltoAll on 1,024 H100 ranks, 2,098,176 ops, 559 MB peak — about 270
/// bytes per op for the Schedule, the engine's transfers, routes and state; 8.4 M ops ≈ 2.2 GB).
/// It bounds memory, not time: how long a run takes depends on how many distinct completion
/// times the fabric produces (see AnalyticEngine). Above it the runner
/// refuses with ScheduleTooLarge (the CLI's exit code 2) naming the alternatives; in auto mode
/// a candidate above it is skipped when another one fits (CollectiveResult::notes).
inline constexpr std::uint64_t kMaxScheduleOps = std::uint64_t{1} << 23;
inline constexpr int kMaxScheduleGiB = 2;

struct CollectiveOptions {
  models::Collective collective = models::Collective::AllReduce;
  std::optional<Algorithm> algorithm;   ///< nullopt: auto
  std::optional<Protocol> protocol;     ///< nullopt: auto
  std::vector<models::DeviceId> gpus;   ///< GPU of each rank, in rank order
  int root = 0;
  std::uint32_t element_size = 4;
  int channels = 0;                     ///< 0: auto (one per NIC rail across nodes, one per link stride in a mesh)
  std::string granularity = "auto";     ///< auto | step | phase
  std::string engine = "analytic";      ///< analytic | flow
  /// Other groups running the same collective at the same time (each the same size as
  /// `gpus`, disjoint from it): they are simulated together, so they contend for shared
  /// links; the time reported is the slowest group's.
  std::vector<std::vector<models::DeviceId>> concurrent;
  /// Compute the lower bound (latency, volume, max-flow cut) and fail when a simulated time
  /// is below it. `ccsim run` turns it off: its ops are the same Schedules `ccsim collective`
  /// checks, and the max-flow per group dominated a 16,384-GPU step's run time.
  bool check_bound = true;
  /// Exact pruning in auto mode: candidates are simulated in increasing order of a cheap
  /// lower bound on their engine time (planner/collective/candidate_bound.hpp), and one whose bound is
  /// at least the best simulated time so far is not simulated. The choice (algorithm,
  /// protocol, time, ties to the earlier candidate) is the same as with every candidate
  /// simulated; false simulates them all (the reference the tests compare with).
  bool prune = true;
};

struct CollectiveResult {
  std::uint64_t bytes = 0;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  models::Granularity granularity = models::Granularity::Step;
  double time = 0;    ///< seconds
  double bound = 0;   ///< seconds, lower bound (0 when not checked)
  std::size_t transfers = 0;
  std::vector<sim::LinkRecord> links;  ///< per-link bytes, busy time, peak of the chosen run (all concurrent groups)
  /// Candidates skipped because their schedule was over kMaxScheduleOps ("ring/Simple skipped: ...").
  std::vector<std::string> notes;
  /// Candidates the analytic engine simulated for this size (the others were pruned).
  int simulated = 0;
  /// Set when --granularity phase was asked for and the chosen algorithm has none, so it ran
  /// at step granularity: the reason ("ring chains have no phase granularity"). Empty otherwise.
  std::string granularity_note;
};

class CollectiveRunner {
 public:
  /// Throws std::invalid_argument for options that cannot run (no ranks, explicit algorithm
  /// that does not implement the collective, NVLS without NVSwitch).
  /// `analytic` and `engine` may be engines shared across runners on the same cluster (their
  /// route caches are reused); null: the runner makes its own.
  CollectiveRunner(const models::Cluster& cluster, const CostModel& costs, CollectiveOptions options,
                   sim::Engine* analytic = nullptr, sim::Engine* engine = nullptr);

  /// Simulates size `bytes` (nccl-tests size S). Throws std::logic_error when the simulated
  /// time is below the lower bound.
  CollectiveResult run(std::uint64_t bytes);

  /// Why algorithm `a` cannot run this collective on this placement (empty: it can).
  std::string unsupported(Algorithm a) const;
  /// NCCL's eligible (algorithm, protocol) pairs for this collective and placement.
  std::vector<std::pair<Algorithm, Protocol>> candidates() const;
  const CollectiveOptions& options() const { return options_; }
  int ranks_per_node() const { return ranks_per_node_; }
  int channels() const { return channels_; }
  /// Tree: chain/tree pairs (one per NIC rail across nodes).
  int tree_pairs() const { return tree_pairs_; }
  const std::vector<std::vector<int>>& ring_orders() const { return ring_orders_; }
  /// Rings over the GPUs of one node found by the ring search (local indices), when the
  /// node's GPUs are joined by direct links; empty otherwise.
  const std::vector<std::vector<int>>& node_orders() const { return node_orders_; }

  /// The request the runner generates for (a, p) at `bytes` and granularity `g`: channels,
  /// ring orders, tree heads and pipeline chunks as planned for this placement.
  AlgorithmRequest request(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity g) const;
  /// Runs a given Schedule of (a, p) for this runner's ranks (and concurrent groups) on
  /// `engine` with this cluster's costs: the same schedule can be timed on a changed cluster.
  sim::Timeline run_schedule(const models::Schedule& one, Algorithm a, Protocol p, sim::Engine& engine) const;
  /// The Step-granularity Schedule of (a, p) at `bytes` for one group (no concurrent copies):
  /// data-exact, what `ccsim replay` executes on hardware. Throws what run() throws for that
  /// candidate (ScheduleTooLarge, std::invalid_argument).
  models::Schedule step_schedule(Algorithm a, Protocol p, std::uint64_t bytes) const;
  /// Lower bound, in seconds, on the analytic engine's time for candidate (a, p) at `bytes`
  /// (planner/collective/candidate_bound.hpp), on the schedule run() would simulate. Throws what run()
  /// throws for that candidate (ScheduleTooLarge, std::invalid_argument).
  double candidate_bound(Algorithm a, Protocol p, std::uint64_t bytes);

 private:
  sim::Timeline simulate(Algorithm a, Protocol p, std::uint64_t bytes, sim::Engine& engine, models::Granularity& g);
  /// The Schedule simulate() runs for (a, p) at `bytes` (one group), and its granularity.
  models::Schedule prepare(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity& g) const;
  models::Schedule prepare_at(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity g) const;
  sim::CostParams cost_params(Algorithm a, Protocol p, const models::Schedule& one) const;
  /// The granularity prepare() generates (a, p) at for `bytes`.
  models::Granularity granularity_for(Algorithm a, Protocol p, std::uint64_t bytes) const;
  /// A lower bound on (a, p)'s engine time for request `req` without generating its schedule:
  /// the bound computed at a smaller or equal size of the same shape (run() explains why it
  /// holds), or null.
  const double* kept_bound(Algorithm a, Protocol p, const AlgorithmRequest& req) const;
  void remember_bound(Algorithm a, Protocol p, const AlgorithmRequest& req, double bound);
  double schedule_bound(const models::Schedule& one, Algorithm a, Protocol p);
  void plan_rings();

  const models::Cluster& cluster_;
  const CostModel& costs_;
  CollectiveOptions options_;
  std::unique_ptr<sim::Engine> own_analytic_;
  std::unique_ptr<sim::Engine> own_engine_;
  sim::Engine* analytic_ = nullptr;
  sim::Engine* engine_ = nullptr;  ///< the engine of the final run (null: analytic)
  LowerBound bound_;
  /// Routes for candidate bounds: the analytic engine's router (its cached routes are the
  /// ones the simulations use), or one made on first use when the engine is not an AnalyticEngine.
  models::Router& bound_router();
  std::unique_ptr<models::Router> own_bound_router_;
  /// Candidate bounds built so far, reused for the same schedule at other sizes (a sweep).
  struct CachedBound {
    Algorithm a;
    Protocol p;
    std::unique_ptr<ScheduleBound> bound;
  };
  std::vector<CachedBound> bound_cache_;
  std::size_t bound_cache_ops_ = 0;  ///< ops of the schedules the cache holds
  /// The latest bound computed on each candidate's own schedule, with the request it was generated from.
  struct KnownBound {
    Algorithm a;
    Protocol p;
    AlgorithmRequest request;
    double bound;  ///< seconds
  };
  std::vector<KnownBound> known_bounds_;
  std::optional<std::pair<Algorithm, Protocol>> last_choice_;  ///< the last size's choice, simulated first
  std::optional<std::vector<std::pair<Algorithm, Protocol>>> candidates_;  ///< candidates(), once
  int ranks_per_node_ = 0;
  bool one_nvls_domain_ = false;
  bool all_nodes_nvls_ = false;
  int channels_ = 1;
  int nodes_ = 1;           ///< nodes the ranks span
  std::string arch_;        ///< GPU architecture the ranks are tuned by ("sm90": the lowest compute capability), for per-family constants
  ProtocolContext protocol_context_;  ///< what the table's default-protocol rules look at
  std::vector<std::vector<int>> ring_orders_;
  std::vector<std::vector<int>> node_orders_;  ///< searched rings of a direct-link node (local indices)
  std::vector<std::vector<int>> node_groups_;  ///< ranks of each node when nodes hold different numbers of ranks
  int tree_pairs_ = 1;                         ///< Tree: chain/tree pairs (channels 2c, 2c+1)
  std::vector<int> tree_heads_;                ///< Tree: local index of each pair's head (one per NIC rail)
};

}  // namespace ccsim::planner
