#pragma once
// Where a workload's ranks run: Megatron-LM's rank grid on the cluster's GPUs, and the rank
// that stands for each pipeline stage.

#include <array>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"

namespace ccsim::planner {

/// Megatron-LM's rank grid. Ranks are numbered with the strategy's `order` (innermost first;
/// default tp-cp-ep-pp-dp); EP does not add ranks: an EP group is `ep` consecutive ranks of
/// the combined (cp, dp) index with the same tp and pp coordinates, as in Megatron-Core.
/// Rank r runs on the cluster's r-th GPU (nodes in order, GPUs in node order), so TP, the
/// innermost dimension, stays inside a node and local GPU index = NIC rail.
class Placement {
 public:
  struct Coords {
    int tp = 0, cp = 0, dp = 0, pp = 0;
  };
  /// Throws std::invalid_argument when tp·cp·dp·pp differs from `world`. Keeps a reference to
  /// `s`, which must outlive the Placement.
  Placement(const models::StrategySpec& s, int world);
  int world() const { return world_; }
  Coords coords(int rank) const;
  int rank(const Coords& c) const;
  /// Ranks of the `dim` group that contains `rank`, in group order (PP: all stages).
  std::vector<int> group(models::ParallelDim dim, int rank) const;
  /// The expert-data-parallel group of `rank`: ranks holding the same experts (same tp, pp
  /// and position in their EP group), dp·cp/ep of them.
  std::vector<int> expert_dp_group(int rank) const;

 private:
  const models::StrategySpec& s_;
  int world_;
  std::vector<char> order_;           // 't', 'c', 'd', 'p' innermost first
  std::array<int, 4> stride_{};       // by t, c, d, p
};

/// The GPU model of `gpu`: its node group's (every GPU of a node group is of one model).
const models::GpuSpec& gpu_spec(const models::Cluster& c, models::DeviceId gpu);

/// Data-parallel replicas that run alike: the unit of the Program's symmetry. A replica is the
/// ranks of one DP index (all TP, CP and PP coordinates); replicas joined by an EP group (when
/// ep > cp an EP group spans several) form one block, and blocks whose ranks have the same GPU
/// models, the same what-if compute speeds and the same node classes (Topology::node_class: the
/// same hardware and perturbations), at the same local GPUs where a node is perturbed
/// (Topology::node_perturbed), form one class. The Program
/// holds one representative replica per class; a perturbation splits only the classes it
/// touches, so a symmetric cluster has one class and today's single representative.
///
/// Inside a replica the ranks of one stage are taken to run in lock-step (TP and CP collectives
/// every layer, EP AlltoAll every MoE layer): the stage's compute is timed on the slowest GPU
/// model among them and at the elementwise lowest speed of their GPUs. This is exact when one
/// GPU is the slowest on every op kind (a straggler, a slow node) and an upper bound otherwise.
struct ReplicaClass {
  std::vector<int> replicas;                  ///< DP indices of the class, ascending
  /// Per stage: TP/CP rank 0 of the class's first replica; communication is lowered on its groups.
  std::vector<int> rank;
  /// Per stage: the GPU whose model times the stage's compute: the lowest dense BF16 peak, then
  /// the lowest HBM bandwidth, among the class's first block's ranks of that stage (the first such).
  std::vector<models::DeviceId> compute_gpu;
  /// Per stage: the lowest speed per op kind over those ranks (Cluster::gpu_speed).
  std::vector<models::ComputeSpeed> speed;
  /// Per stage: the GPU of the first block with the lowest what-if GEMM speed (then attention,
  /// then memory), the one a report names; the first rank's GPU when every one is nominal.
  std::vector<models::DeviceId> slowest_gpu;
  /// Micro-batches each replica of the class runs per step; 0: the even split (micro_batches()).
  int micro_batches = 0;
};

/// The replica classes of `p` on `c`, ordered by their first replica (rank r on the cluster's
/// r-th GPU). Class 0 holds replica 0. `micro_batches`: per DP replica (replica_micro_batches),
/// part of the class key; empty: every replica runs the even split.
std::vector<ReplicaClass> replica_classes(const Placement& p, const models::StrategySpec& s, const models::Cluster& c,
                                          const std::vector<int>& micro_batches = {});

/// The micro-batches of each DP replica under `s` (StrategySpec::dp_micro_batches): the list as
/// given; for `proportional`, the global batch's M = global_batch / micro_batch micro-batches in
/// proportion to each replica's speed — the lowest dense BF16 peak × what-if GEMM speed among its
/// GPUs — by largest remainder, each at least 1 (Σ = M); empty when the strategy sets neither.
std::vector<int> replica_micro_batches(const Placement& p, const models::StrategySpec& s, const models::WorkloadSpec& w,
                                       const models::Cluster& c);

}  // namespace ccsim::planner
