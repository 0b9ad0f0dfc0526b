#pragma once
// Communication ops of a workload Program turned into Schedules and simulated on the engine:
// each op on its stage's groups, together with the other groups that run the same op at the
// same time on the nodes it uses (they contend for the same links). Costs are memoized per
// runner and may be shared between runners of one cluster (CommCostCache).

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/input_error.hpp"

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"
#include "planner/workload/placement.hpp"
#include "planner/workload/serving.hpp"
#include "sim/execution/engine.hpp"
#include "sim/execution/plan_merge.hpp"

namespace ccsim::planner {

class CostModel;

/// A synth:FILE of the op's collective whose rank count is not the group's: a layout with groups
/// of another size cannot run it (`ccsim plan` leaves such layouts out; `ccsim run` exits 2).
class GroupSizeMismatch : public support::InputError {
 public:
  using support::InputError::InputError;
};

/// Ranks a group may have for strategy.algorithms "synthesized": every group synthesizes its own
/// trees (about N^3: 64 DGX A100 ranks take 4.1 s on 2 cores), so larger groups are refused
/// with the advice to synthesize once into a file (synth:FILE).
inline constexpr int kSynthesizedMaxRanks = 128;
namespace synthesis {
class SynthesisRunner;
struct MscclFile;
}  // namespace synthesis

/// What one lowered communication op cost (memoized per stage, dim, collective and size).
struct CommCost {
  double time = 0;                      ///< seconds
  std::string algorithm;                ///< "ring", "direct", ... ("p2p" for PP sends)
  std::string protocol;
  int group_size = 0;
  int concurrent_groups = 0;            ///< other groups simulated alongside
  std::vector<sim::LinkRecord> links;   ///< all simulated groups
  /// The simulated run (schedule, every group's GPUs, costs) when CommLowering::set_keep_plans
  /// asked for it (cross-dimension contention runs it again beside other ops); else null.
  std::shared_ptr<const sim::PlanPart> plan;
};

/// Lowered communication ops shared between WorkloadRunners of one cluster, cost table and
/// compute table (the candidates of `ccsim plan`): the same collective of the same size on the
/// same GPUs, with the same concurrent groups, is simulated once. Thread-safe. Keys are built
/// by CommLowering (op, phase, collective choices, engine, the groups as GPU ids).
class CommCostCache {
 public:
  std::optional<CommCost> find(const std::string& key) const;
  void insert(const std::string& key, const CommCost& cost);
  std::size_t size() const;
  /// Lookups that found a cost, and lookups that did not.
  std::pair<std::size_t, std::size_t> hits_misses() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, CommCost> costs_;
  mutable std::size_t hits_ = 0, misses_ = 0;
};

/// Lowers the communication ops (Collective, SendRecv) of one scenario's Programs. A
/// collective runs on the group of its parallel dimension (the expert-data-parallel group for
/// expert ops; a SendRecv between a rank and the same rank of stage `peer`) through
/// CollectiveRunner (the strategy's algorithm choice or NCCL's), an inference TP AllReduce
/// through vLLM's custom all-reduce when vLLM would pick it, a SendRecv as one-way NCCL p2p.
/// Keeps references to `scenario`, `cluster` and `costs`, which must outlive it.
class CommLowering {
 public:
  /// `scenario` must have a workload and a strategy. Throws std::invalid_argument when the
  /// strategy's tp·cp·dp·pp differs from the cluster's GPUs, and what sim::make_engine throws
  /// for `engine` (the flow engine's plugin missing).
  CommLowering(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs, models::EngineKind engine);
  ~CommLowering();
  CommLowering(const CommLowering&) = delete;
  CommLowering& operator=(const CommLowering&) = delete;

  const Placement& placement() const { return placement_; }
  /// vLLM's custom all-reduce constants (launch and stage latencies) for lowerings from now on.
  void set_serving(const ServingCalibration& serving) { serving_ = serving; }
  /// Keep each lowered op's simulated run (CommCost::plan) from now on.
  void set_keep_plans(bool keep) { keep_plans_ = keep; }
  /// The engine lowerings simulate on: the scenario's (analytic, or the flow engine).
  sim::Engine& simulation_engine() { return engine(); }
  /// Looks lowered ops up in (and adds them to) `cache`; null: none.
  void set_shared(std::shared_ptr<CommCostCache> cache) { shared_ = std::move(cache); }

  /// Index into costs() of communication op `op` of pipeline stage `stage`, whose
  /// representative is rank `rep` (ReplicaClass::rank): lowered and simulated the first
  /// time, then memoized per (dim, stage, rep, collective, peer, expert, bytes). Throws
  /// support::InputError when the strategy's explicit algorithm cannot run on the op's group.
  int cost_index(const models::ProgramOp& op, int stage, int rep);
  /// Every cost lowered so far, in the order they were first needed.
  const std::vector<CommCost>& costs() const { return costs_list_; }

 private:
  /// The groups one communication op runs on: its own, and the others beside it.
  struct Groups {
    std::vector<int> group;                  ///< ranks of the representative's group, in group order
    std::vector<std::vector<int>> others;    ///< disjoint groups of the same stage on the same nodes
    std::set<int> nodes;                     ///< nodes of `group`
  };
  CommCost lower(const models::ProgramOp& op, int stage, int rep);
  /// The GPU of each rank of `ranks` (a rank runs on the GPU of its index).
  std::vector<models::DeviceId> gpus_of(const std::vector<int>& ranks) const;
  /// The group of `op` that contains `rank`.
  std::vector<int> group_of(const models::ProgramOp& op, int rank) const;
  /// `rep`'s group of `op`, and the groups that run the same op at the same time and share a node with it.
  Groups concurrent_groups(const models::ProgramOp& op, int stage, int rep);
  /// The key of `g` in the shared cache.
  std::string shared_key(const models::ProgramOp& op, const Groups& g) const;
  /// Simulates one communication op of `group` with the `others` running beside it.
  CommCost simulate(const models::ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others);
  /// A collective on the library's algorithms (NCCL's choice, or the strategy's explicit one).
  CommCost simulate_library(const models::ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others);
  /// One-way point-to-point: rank 2i sends to rank 2i+1 in every pair (NCCL p2p, Simple).
  CommCost simulate_p2p(const models::ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others);
  /// A collective the strategy asks to run on a synthesized schedule (`value` "synthesized" or
  /// "synth:PATH", from strategy.algorithms key `key`): "synthesized" synthesizes every group's
  /// own schedule (the forest's or the greedy's, whichever is faster alone; the groups' runners
  /// are kept per collective and GPUs: no group is assumed alike another) and runs them
  /// together; a file's schedule runs on every group. Throws support::InputError at the key
  /// when the groups cannot take it (a file of another collective or rank count, ranks the
  /// synthesis cannot join).
  CommCost simulate_synthesized(const models::ProgramOp& op, const std::string& key, const std::string& value, const std::vector<int>& group,
                                const std::vector<std::vector<int>>& others);
  /// The synthesis runner of `collective` on `gpus` (made on first use).
  synthesis::SynthesisRunner& synthesis_runner(models::Collective collective, const std::vector<models::DeviceId>& gpus);
  /// vLLM's custom all-reduce for an inference TP AllReduce when vLLM would pick it, else
  /// nullopt; `as_auto`: as if the strategy's value were auto (synthesized-or-nccl's NCCL side).
  std::optional<CommCost> lower_vllm_allreduce(const models::ProgramOp& op, const std::vector<int>& group,
                                               const std::vector<std::vector<int>>& others, bool as_auto = false);
  sim::Engine& engine() { return chosen_ ? *chosen_ : *analytic_; }

  const models::Scenario& scenario_;
  const models::Cluster& cluster_;
  const CostModel& costs_;
  models::EngineKind engine_;
  ServingCalibration serving_;
  Placement placement_;
  std::unique_ptr<sim::Engine> analytic_;  ///< shared by every lowering (its route cache too)
  std::unique_ptr<sim::Engine> chosen_;    ///< the scenario's engine when it is not analytic
  std::map<std::tuple<int, int, int, int, int, bool, double>, int> memo_;  // (dim, stage, rep, collective, peer, expert, bytes) -> cost index
  std::vector<CommCost> costs_list_;
  std::vector<std::vector<int>> node_ranks_;  ///< ranks on each node, ascending (built by the first lowering)
  std::shared_ptr<CommCostCache> shared_;  ///< costs shared with other runners (ccsim plan), or null
  bool keep_plans_ = false;
  std::map<std::pair<int, std::vector<models::DeviceId>>, std::unique_ptr<synthesis::SynthesisRunner>> synthesis_runners_;
  /// synth:PATH files read so far: their text and header.
  std::map<std::string, std::shared_ptr<const synthesis::MscclFile>> synth_files_;
};

}  // namespace ccsim::planner
