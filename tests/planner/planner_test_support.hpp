#pragma once
// Helpers shared by the planner tests.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "models/hardware/cluster.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::test {

/// The shipped cost model for `c` (CostModel::default_path), loaded once per path, warnings
/// silenced.
inline const planner::CostModel& shipped_costs(const models::Cluster& c) {
  static std::map<std::string, planner::CostModel> models_by_path;
  const std::string path = planner::CostModel::default_path(c);
  auto it = models_by_path.find(path);
  if (it == models_by_path.end()) {
    it = models_by_path.emplace(path, planner::CostModel::load(path)).first;
    it->second.set_warning_sink([](const std::string&) {});
  }
  return it->second;
}

/// A placement the planner tests sweep: the first `ranks` GPUs of `cluster`.
struct Placement {
  std::string name;
  std::shared_ptr<models::Cluster> cluster;
  int ranks;
};

/// Options for `coll` on placement `c`: its GPUs, a middle root where the collective has one,
/// the simulated-vs-bound check off (the tests compare times themselves).
inline planner::CollectiveOptions placement_options(const Placement& c, models::Collective coll) {
  planner::CollectiveOptions o;
  o.collective = coll;
  const auto gpus = c.cluster->topology.gpus();
  o.gpus.assign(gpus.begin(), gpus.begin() + c.ranks);
  o.root = models::has_root(coll) ? c.ranks / 2 : 0;
  o.check_bound = false;
  return o;
}

/// nccl-tests sizes of 4-byte elements: whole elements, and a whole number per rank where the
/// collective splits (ReduceScatter, AllGather, AlltoAll); bytes.
inline std::uint64_t nccl_tests_bytes(models::Collective coll, int ranks, std::uint64_t size) {
  const bool per_rank = coll == models::Collective::ReduceScatter || coll == models::Collective::AllGather ||
                        coll == models::Collective::AlltoAll;
  const std::uint64_t unit = 4ULL * (per_rank ? static_cast<std::uint64_t>(ranks) : 1ULL);
  return size / unit * unit;
}

}  // namespace ccsim::test
