#pragma once
// What the collective planner is asked (CollectiveOptions) and what it answers for one size
// (CollectiveResult).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/collective/nccl_settings.hpp"
#include "models/collective/schedule.hpp"
#include "models/hardware/topology.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/nccl_names.hpp"
#include "planner/algorithms/protocol.hpp"
#include "sim/engine.hpp"
#include "sim/execution/plan_merge.hpp"

namespace ccsim::planner {


struct CollectiveOptions {
  models::Collective collective = models::Collective::AllReduce;
  std::optional<Algorithm> algorithm;   ///< nullopt: auto
  std::optional<Protocol> protocol;     ///< nullopt: auto
  /// With `algorithm` unset: the algorithms the automatic choice may take, as NCCL_ALGO lists
  /// them ("Ring,Tree", "^NVLS"; nccl_names.hpp); nullopt: every algorithm NCCL considers.
  std::optional<AlgorithmFilter> algorithms;
  /// With `protocol` unset: the protocols the automatic choice may take, as NCCL_PROTO lists
  /// them ("LL,LL128", "^LL"), among those NCCL's rules enable; nullopt: no restriction.
  std::optional<EnumSet<Protocol>> protocols;
  std::vector<models::DeviceId> gpus;   ///< GPU of each rank, in rank order
  int root = 0;
  std::uint32_t element_size = 4;
  /// 0: auto (one per NIC rail across nodes, one per link stride in a mesh). SendRecv: the
  /// channels of each peer instead (NCCL's p2pnChannelsPerPeer; auto: NCCL's rule for `nccl`,
  /// planner/tuning/p2p_channels.hpp).
  int channels = 0;
  /// The NCCL release and settings whose rules apply (today: SendRecv's channels per peer).
  models::NcclSettings nccl;
  /// Launched from a CUDA graph (nccl-tests -G, simulation.launch: graph): the fixed cost per
  /// collective is the table's launch.graph_latency for the GPUs' family (unchanged where the
  /// table has none). false: eager, one kernel launch per collective (NCCL's baseLat).
  bool graph_launch = false;
  /// Symmetric-memory buffers (nccl-tests -R 2, simulation.symmetric_memory): an AllReduce whose
  /// ranks are all NVLink peers may run NCCL 2.27+'s one-shot LL kernel (collective_runner.cpp).
  bool symmetric = false;
  /// Collectives per launch (nccl-tests -m, agg_iters: that many collectives in one NCCL group,
  /// one kernel): the fixed cost per collective is paid once per group, 1/agg_iters each.
  int agg_iters = 1;
  /// Step or Phase; nullopt: auto, the planner's choice per candidate (planner/tuning/nccl_policy.hpp
  /// prefers_phase). The command line and the scenario loader parse the text into it.
  std::optional<models::Granularity> granularity;
  models::EngineKind engine = models::EngineKind::Analytic;
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
  /// Ready-time skew (`ccsim collective --skew`): seconds after the first arrival at which
  /// rank r calls the collective, one entry per rank of `gpus` (concurrent groups arrive alike);
  /// empty: no skew. The algorithm is chosen as without skew (NCCL's tuner does not see it),
  /// then run once more with these arrivals: CollectiveResult::skew.
  std::vector<double> rank_ready;
  /// Keep the chosen run's Schedule, GPUs and cost parameters (CollectiveResult::plan), for a
  /// later run together with other collectives (cross-dimension contention). Off: not kept.
  bool keep_plan = false;
};

/// The chosen algorithm run with CollectiveOptions::rank_ready.
struct SkewResult {
  double from_first = 0;  ///< seconds from the first arrival to the last op's end
  double from_last = 0;   ///< seconds from the last arrival to the last op's end
  /// Per rank: seconds from its own arrival to the end of its last op (what the rank's own
  /// timer would read).
  std::vector<double> rank_time;
  /// Per rank: the same without skew (every rank at 0); rank_time − rank_time_unskewed is what
  /// the skew cost the rank (its wait).
  std::vector<double> rank_time_unskewed;
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
  /// Set when CollectiveOptions::symmetric made NCCL's symmetric-memory kernel the choice: its
  /// name ("symmetric-ll", NCCL's AllReduce_AGxLL_R); `algorithm` is then the schedule's shape
  /// (vllm-oneshot: every rank reads every peer's input and reduces it). Empty otherwise.
  std::string kernel;
  /// Candidates skipped because their schedule was over kMaxScheduleOps ("ring/Simple skipped: ...").
  std::vector<std::string> notes;
  /// Candidates the analytic engine simulated for this size (the others were pruned).
  int simulated = 0;
  /// Set when --granularity phase was asked for and the chosen algorithm has none, so it ran
  /// at step granularity: the reason ("ring chains have no phase granularity"). Empty otherwise.
  std::string granularity_note;
  /// With CollectiveOptions::rank_ready: the chosen algorithm under that skew.
  std::optional<SkewResult> skew;
  /// With CollectiveOptions::keep_plan: the chosen run (its schedule, every concurrent group's GPUs, its costs).
  std::shared_ptr<const sim::PlanPart> plan;
};

}  // namespace ccsim::planner
