#include "models/workload/program_builder/dp_buckets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace ccsim::models::detail {
namespace {

/// Megatron's default DP gradient bucket: max(40M, 1M · dp) parameters
/// (megatron/core/distributed/distributed_data_parallel_config.py, bucket_size).
std::int64_t default_bucket(int dp) { return std::max<std::int64_t>(40'000'000, 1'000'000LL * dp); }

/// ⌈x / d⌉ · d.
double pad_to(double x, double d) { return std::ceil(x / d - 1e-12) * d; }

}  // namespace

double pad_bucket(double numel, int group, bool distributed_optimizer) {
  if (!distributed_optimizer) return numel;
  return pad_to(numel, static_cast<double>(std::lcm(static_cast<std::int64_t>(group), std::int64_t{128})));
}

std::vector<DpBucket> dp_buckets(const TransformerConfig& m, const StrategySpec& s, const std::vector<std::pair<int, int>>& chunks,
                                 int stage) {
  const int pp = s.pp, v = s.virtual_stages;
  const double limit_default = static_cast<double>(s.bucket_params > 0 ? s.bucket_params : default_bucket(s.dp));
  std::vector<DpBucket> out;
  for (int vc = 0; vc < v; ++vc) {
    const int c = vc * pp + stage;
    const bool bucketing = s.overlap_grad_reduce && stage == 0 && vc == 0;
    const double limit = bucketing ? limit_default : std::numeric_limits<double>::infinity();
    DpBucket dense{0, {}, false, vc}, expert{0, {}, true, vc};
    const auto add = [&](DpBucket& b, int member, double numel) {
      if (numel <= 0) return;
      b.numel += numel;
      b.members.push_back(member);
      if (b.numel >= limit) {
        out.push_back(b);
        b.numel = 0;
        b.members.clear();
      }
    };
    if (c == pp * v - 1) add(dense, kOutput, static_cast<double>(m.output_params()) / s.tp);
    const auto [first, count] = chunks[static_cast<std::size_t>(c)];
    for (int l = first + count - 1; l >= first; --l) {
      double lp = static_cast<double>(m.layer_params(l));
      if (m.is_moe_layer(l) && s.ep > 1) {
        const double experts = static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params());
        lp -= experts;
        add(expert, l, experts / s.ep / s.tp);
      }
      add(dense, l, lp / s.tp);
    }
    if (c == 0) add(dense, kEmbedding, static_cast<double>(m.embedding_params()) / s.tp);
    if (dense.numel > 0) out.push_back(dense);
    if (expert.numel > 0) out.push_back(expert);
  }
  return out;
}

}  // namespace ccsim::models::detail
