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

/// The rank that represents each pipeline stage, and the GPU its compute is timed on.
struct StageRepresentatives {
  /// Per stage: TP/CP rank 0 of the stage's slowest DP replica (the one holding the GPU with
  /// the lowest dense BF16 peak, then HBM bandwidth; the first such replica): in a mixed
  /// cluster every replica waits for the slowest at the DP reduction. Communication is
  /// lowered on that replica's groups.
  std::vector<int> rank;
  /// Per stage: that slowest GPU, on which the stage's compute ops are timed.
  std::vector<models::DeviceId> compute_gpu;
};

/// The representatives of every stage of `p` on `c` (rank r on the cluster's r-th GPU).
StageRepresentatives stage_representatives(const Placement& p, const models::StrategySpec& s, const models::Cluster& c);

}  // namespace ccsim::planner
