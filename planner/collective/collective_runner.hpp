#pragma once
// Plans and simulates one collective at a sweep of sizes: takes the channels of the group
// (channel_plan.hpp), the candidates NCCL's tuner would consider (planner/tuning/nccl_policy.hpp;
// or the algorithm and protocol asked for), generates each candidate's Schedule at its
// granularity within the size limits (schedule_limits.hpp), picks the least simulated time with
// exact pruning (pruned_choice.hpp), reruns the choice on the chosen engine, and checks the
// result against the lower bound.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/bounds.hpp"
#include "planner/collective/candidate_bound.hpp"
#include "planner/collective/channel_plan.hpp"
#include "planner/collective/collective_options.hpp"
#include "planner/collective/pruned_choice.hpp"
#include "planner/collective/ring_search.hpp"
#include "planner/collective/schedule_limits.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/tuning/nccl_policy.hpp"
#include "planner/tuning/p2p_channels.hpp"
#include "sim/engine.hpp"

namespace ccsim::planner {

class CollectiveRunner : private CandidateSource {
 public:
  /// Throws std::invalid_argument for options that cannot run (no ranks, explicit algorithm
  /// whose placement does not hold, NVLS without NVSwitch).
  /// `analytic` and `engine` may be engines shared across runners on the same cluster (their
  /// route caches are reused); null: the runner makes its own.
  CollectiveRunner(const models::Cluster& cluster, const CostModel& costs, CollectiveOptions options,
                   sim::Engine* analytic = nullptr, sim::Engine* engine = nullptr);
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  /// Simulates size `bytes` (nccl-tests size S). Throws std::logic_error when the simulated
  /// time is below the lower bound; what PrunedChoice::choose throws.
  CollectiveResult run(std::uint64_t bytes);

  /// Why algorithm `a` cannot run this collective on this placement (empty: it can).
  std::string unsupported(Algorithm a) const;
  /// The (algorithm, protocol) candidates, in candidate order: NCCL's eligible pairs for this
  /// collective and placement, or those of the algorithm and protocol asked for.
  std::vector<CollectiveCandidate> candidates() const;
  const CollectiveOptions& options() const { return options_; }
  /// The group's channels: rings, node rings, node groups, tree pairs and heads.
  const ChannelPlan& channel_plan() const { return plan_; }
  int ranks_per_node() const { return plan_.ranks_per_node; }
  /// Ring channels; for SendRecv the channels of each peer (p2p_channels().per_peer).
  int channels() const { return options_.collective == models::Collective::SendRecv ? p2p_.per_peer : plan_.channels; }
  /// NCCL's p2p channels for these ranks (SendRecv; per_peer is --channels when given).
  const P2pChannels& p2p_channels() const { return p2p_; }
  /// Tree: chain/tree pairs (one per NIC rail across nodes).
  int tree_pairs() const { return plan_.tree_pairs; }
  const std::vector<std::vector<int>>& ring_orders() const { return plan_.ring_orders; }
  /// Rings over the GPUs of one node found by the ring search (local indices), when the
  /// node's GPUs are joined by direct links; empty otherwise.
  const std::vector<std::vector<int>>& node_orders() const { return plan_.node_orders; }

  /// The request the runner generates for (a, p) at `bytes` and granularity `g`: channels,
  /// ring orders, tree heads and pipeline chunks as planned for this placement (the parts of
  /// the ChannelPlan the algorithm's registry entry reads).
  AlgorithmRequest request(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity g) const override;
  /// Runs a given Schedule of (a, p) for this runner's ranks (and concurrent groups) on
  /// `engine` with this cluster's costs: the same schedule can be timed on a changed cluster.
  /// `skewed`: with CollectiveOptions::rank_ready (repeated for each concurrent group).
  sim::Timeline run_schedule(const models::Schedule& one, Algorithm a, Protocol p, sim::Engine& engine, bool skewed = false) const;
  /// The cost parameters a run of `one` with algorithm `a` and protocol `p` is timed with on
  /// these ranks: the cost table's row, its per-rank latency, NCCL's rate cap.
  sim::CostParams cost_params(Algorithm a, Protocol p, const models::Schedule& one) const;
  /// The cost parameters a run of `one` with algorithm `a` and protocol `p` is timed with on
  /// these ranks (the cost table's row, its per-rank latency, NCCL's rate cap).
  /// The Step-granularity Schedule of (a, p) at `bytes` for one group (no concurrent copies):
  /// data-exact, what `ccsim replay` executes on hardware. Throws what run() throws for that
  /// candidate (ScheduleTooLarge, std::invalid_argument).
  models::Schedule step_schedule(Algorithm a, Protocol p, std::uint64_t bytes) const;
  /// Lower bound, in seconds, on the analytic engine's time for candidate (a, p) at `bytes`
  /// (planner/collective/candidate_bound.hpp), on the schedule run() would simulate. Throws what run()
  /// throws for that candidate (ScheduleTooLarge, std::invalid_argument).
  double candidate_bound(Algorithm a, Protocol p, std::uint64_t bytes);

 private:
  // CandidateSource: what the pruned choice asks of the runner.
  models::Granularity granularity(Algorithm a, Protocol p, std::uint64_t bytes) const override;
  models::Schedule schedule(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity g) const override;
  sim::Plan bound_plan(Algorithm a, Protocol p, const models::Schedule& one) const override;
  /// The analytic engine's router (its cached routes are the ones the simulations use), or one
  /// made on first use when the engine is not an AnalyticEngine.
  models::Router& bound_router() override;
  /// NCCL's fixed cost per collective `eager` (seconds) as launched: the table's graph_latency
  /// with CollectiveOptions::graph_launch (where it has one), over agg_iters collectives per launch.
  double launch_latency(double eager) const;
  /// Whether NCCL's symmetric-memory AllReduce kernel may run (CollectiveOptions::symmetric,
  /// every rank an NVLink peer of every other, one node, no forced algorithm).
  bool symmetric_eligible();
  /// Simulates NCCL's one-shot symmetric LL kernel for `bytes` and makes it `best` when faster.
  void try_symmetric(std::uint64_t bytes, CollectiveResult& best);
  sim::Timeline simulate(const models::Schedule& one, Algorithm a, Protocol p) override;


  const models::Cluster& cluster_;
  const CostModel& costs_;
  CollectiveOptions options_;
  std::unique_ptr<sim::Engine> own_analytic_;
  std::unique_ptr<sim::Engine> own_engine_;
  sim::Engine* analytic_ = nullptr;
  sim::Engine* engine_ = nullptr;  ///< the engine of the final run (null: analytic)
  std::unique_ptr<models::Router> own_bound_router_;
  ChannelPlan plan_;
  P2pChannels p2p_;
  NcclGroup group_;
  ProtocolContext protocol_context_;  ///< what the table's default-protocol rules look at
  std::string arch_;  ///< GPU architecture the ranks are tuned by ("sm90": the lowest compute capability), for per-family constants
  LowerBound bound_;
  PrunedChoice choice_;
  std::optional<std::vector<CollectiveCandidate>> candidates_;  ///< candidates(), once
};

}  // namespace ccsim::planner
