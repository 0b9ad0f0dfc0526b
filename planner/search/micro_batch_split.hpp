#pragma once
// The micro-batch split of a heterogeneous layout: how many micro-batches each class of DP
// replicas (planner/workload/placement.hpp: replicas on other GPU models or at other what-if
// speeds) runs per step so that the synchronous gradient reduction waits least, as
// heterogeneity-aware planners do (HexGen, Metis, FlashFlex, Cephalo: uneven batch shares per
// DP replica). `ccsim plan` reports it for its best layout beside the even split.

#include <memory>
#include <optional>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/serving.hpp"
#include "planner/workload/workload_runner.hpp"

namespace ccsim::planner {

struct MicroBatchSplit {
  std::vector<int> per_replica;  ///< micro-batches of each DP replica (StrategySpec::dp_micro_batches)
  std::vector<int> per_class;    ///< the same per replica class (ReplicaClass order)
  double step_time = 0;          ///< seconds, with that split
  double even_step_time = 0;     ///< seconds, with the even split; 0 when M does not divide by dp
  int runs = 0;                  ///< full steps the search simulated
};

/// The split of M = global_batch / micro_batch micro-batches over the replica classes of
/// `scenario`'s layout on `cluster` (c_k ≥ 1 per replica of class k, Σ n_k·c_k = M) with the
/// shortest step: from the split in proportion to each class's speed (replica_micro_batches),
/// a descent that moves micro-batches between two classes (the smallest move that keeps the sum:
/// n_j/g to class i for n_i/g from class j, g = gcd(n_i, n_j)), in steps of 8, 4, 2 and 1 such
/// moves, while the step shortens; each candidate split a full run (memoized). nullopt when the
/// layout has one replica class, the phase is not a training step or the global batch is unset.
/// Exact (equal to trying every split) when the step is unimodal in each pair's move, which
/// holds while each class's time grows with its micro-batches (tests check it against the
/// exhaustive search on a small case).
std::optional<MicroBatchSplit> best_micro_batch_split(const models::Scenario& scenario, const models::Cluster& cluster,
                                                      const CostModel& costs, const ComputeCalibration& compute,
                                                      const std::shared_ptr<CommCostCache>& shared);

struct LayerSplit {
  std::vector<int> per_stage;   ///< layers of each pipeline stage (StrategySpec::pipeline_layers)
  double step_time = 0;         ///< seconds, with that split
  double even_step_time = 0;    ///< seconds, with the even split (chunk_layers)
  int runs = 0;                 ///< full steps the search simulated
};

/// The layers per pipeline stage (1F1B, pp ≥ 2) with the shortest step when the stages of a
/// replica run on other GPU models or at other what-if speeds (Megatron-Core's uneven
/// pipelines; Metis, FlashFlex): from the scenario's split (pipeline_layers) or the even one,
/// the descent of best_micro_batch_split moving whole layers between two stages. nullopt when
/// every stage is alike, pp < 2 or the schedule is interleaved.
std::optional<LayerSplit> best_layer_split(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                                           const ComputeCalibration& compute, const std::shared_ptr<CommCostCache>& shared);

}  // namespace ccsim::planner
