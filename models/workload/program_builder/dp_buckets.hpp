#pragma once
// Megatron-Core's data-parallel gradient buckets of one pipeline stage
// (megatron/core/distributed/): which layers' gradients are reduced together, in which order,
// and the padding the distributed optimizer adds. Sizes in elements (parameters) of this rank.

#include <utility>
#include <vector>

#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

namespace ccsim::models::detail {

/// Megatron-Core's distributed-optimizer bucket padding (param_and_grad_buffer.py,
/// _ParamAndGradBuffer.__init__, _pad_end_of_bucket_if_needed): with use_distributed_optimizer
/// each bucket's end (and so the buffer) is padded to a multiple of lcm(data-parallel size,
/// 128) elements, so that every rank's shard is whole and 256-byte aligned
/// (pad_buckets_for_high_nccl_busbw, default False, would add 2^16). Without the distributed
/// optimizer buckets are not padded. `numel` elements, `group` ranks; returns elements.
double pad_bucket(double numel, int group, bool distributed_optimizer);

/// A DP bucket of one model chunk's gradient buffer (dense or expert), Megatron-Core's
/// _ParamAndGradBuffer: parameters in reverse order (the buffer is filled from the last layer,
/// "to roughly follow backprop order"), closed when it holds at least bucket_size elements.
struct DpBucket {
  double numel = 0;           ///< local elements, unpadded
  std::vector<int> members;   ///< layers; kOutput (LM head + final norm) and kEmbedding
  bool expert = false;        ///< expert buffer: reduced over the expert-data-parallel group
  int chunk = 0;              ///< local model chunk (0 ≤ chunk < v)
};
inline constexpr int kOutput = -1, kEmbedding = -2;

/// The DP buckets of one stage, per local model chunk in creation order (the order gradients
/// become ready). Megatron-Core rules (distributed_data_parallel.py, DistributedDataParallel
/// .__init__): bucket_size defaults to max(40M, 1M·dp) parameters; it is None (one bucket per
/// buffer) when overlap_grad_reduce is False, on pipeline stages other than the first
/// ("data-parallel communication on these stages is not on the critical path"), and for model
/// chunks after the first (megatron/training/training.py, get_model: disable_bucketing =
/// model_chunk_idx > 0). Buckets hold whole layers here (Megatron closes them at parameter
/// granularity).
std::vector<DpBucket> dp_buckets(const TransformerConfig& m, const StrategySpec& s, const std::vector<std::pair<int, int>>& chunks,
                                 int stage);

}  // namespace ccsim::models::detail
