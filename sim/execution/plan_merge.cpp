#include "sim/execution/plan_merge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::sim {

using models::OpKind;

std::unique_ptr<MergedPlan> merge_plans(std::span<const PlanPart* const> parts, std::span<const double> ready) {
  if (parts.empty()) throw std::invalid_argument("merge_plans: no parts");
  if (ready.size() != parts.size()) {
    throw std::invalid_argument(fmt::format("merge_plans: {} ready times for {} parts", ready.size(), parts.size()));
  }
  std::int64_t total = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const PlanPart& p = *parts[k];
    if (!p.schedule || p.copies < 1) throw std::invalid_argument(fmt::format("merge_plans: part {} has no schedule", k));
    if (!std::isfinite(ready[k]) || ready[k] < 0) throw std::invalid_argument(fmt::format("merge_plans: part {} ready at {}", k, ready[k]));
    const std::int64_t n = static_cast<std::int64_t>(p.schedule->nranks) * p.copies;
    if (static_cast<std::int64_t>(p.rank_gpu.size()) != n) {
      throw std::invalid_argument(fmt::format("merge_plans: part {} maps {} ranks to GPUs, has {}", k, p.rank_gpu.size(), n));
    }
    total += n;
  }
  if (total > std::numeric_limits<std::int32_t>::max()) throw std::invalid_argument("merge_plans: too many ranks");

  auto out = std::make_unique<MergedPlan>();
  models::Schedule& s = out->schedule;
  const models::Schedule& first = *parts.front()->schedule;
  s.collective = first.collective;
  s.algorithm = "merged";
  s.bytes = first.bytes;
  s.element_size = first.element_size;
  s.granularity = first.granularity;
  s.nranks = static_cast<int>(total);
  s.ranks.reserve(static_cast<std::size_t>(total));
  Plan& plan = out->plan;
  plan.cost = parts.front()->cost;
  plan.cost.base_latency = 0;
  plan.rank_ready.reserve(static_cast<std::size_t>(total));
  std::uint32_t pool_base = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const PlanPart& p = *parts[k];
    const models::Schedule& one = *p.schedule;
    std::uint32_t pools = 0;  // latency pools are numbered from 1 on sends; 0 = none
    for (const auto& rank : one.ranks)
      for (const auto& op : rank.ops)
        if (op.kind == OpKind::Send) pools = std::max(pools, op.tag);
    plan.part_first_rank.push_back(static_cast<std::uint32_t>(s.ranks.size()));
    plan.part_cost.push_back(p.cost);
    for (int j = 0; j < p.copies; ++j) {
      const int rank_base = static_cast<int>(s.ranks.size());
      const auto group_base = static_cast<std::uint32_t>(s.switch_groups.size());
      s.switch_groups.insert(s.switch_groups.end(), one.switch_groups.begin(), one.switch_groups.end());
      for (const auto& rank : one.ranks) {
        models::RankProgram copy = rank;
        for (models::Op& op : copy.ops) {
          if (op.peer >= 0) op.peer += rank_base;
          if (op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv) {
            op.tag += group_base;
          } else if (op.kind == OpKind::Send && op.tag > 0) {
            op.tag += pool_base;
          }
        }
        s.ranks.push_back(std::move(copy));
      }
      pool_base += pools;
    }
    plan.rank_gpu.insert(plan.rank_gpu.end(), p.rank_gpu.begin(), p.rank_gpu.end());
    plan.rank_ready.insert(plan.rank_ready.end(), p.rank_gpu.size(), ready[k] + p.cost.base_latency);
  }
  plan.schedule = &s;
  return out;
}

std::vector<double> part_ends(const Plan& plan, const Timeline& tl) {
  const std::size_t parts = std::max<std::size_t>(1, plan.part_first_rank.size());
  std::vector<double> end(parts, 0.0);
  for (const OpRecord& op : tl.ops) {
    std::size_t k = 0;
    if (!plan.part_first_rank.empty()) {
      const auto it = std::upper_bound(plan.part_first_rank.begin(), plan.part_first_rank.end(), static_cast<std::uint32_t>(op.rank));
      k = static_cast<std::size_t>(it - plan.part_first_rank.begin()) - 1;
    }
    end[k] = std::max(end[k], op.end);
  }
  return end;
}

}  // namespace ccsim::sim
