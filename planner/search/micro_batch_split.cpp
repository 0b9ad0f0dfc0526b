#include "planner/search/micro_batch_split.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <limits>
#include <numeric>

#include "models/workload/layout_rules.hpp"

namespace ccsim::planner {
namespace {

/// Moves units between pairs of entries of `c` while `cost` falls: a move gives entry i
/// scale·n[j]/g and takes scale·n[i]/g from entry j (g = gcd(n[i], n[j]): Σ n_k·c_k is kept),
/// each entry staying ≥ 1; scales 8, 4, 2, 1, the best move of a scale first. `now` is cost(c)
/// on entry and the lowest cost found on return.
template <class Cost>
void descend(std::vector<int>& c, const std::vector<int>& n, double& now, Cost&& cost) {
  const std::size_t k = c.size();
  for (int scale : {8, 4, 2, 1}) {
    for (bool moved = true; moved;) {
      moved = false;
      std::vector<int> pick;
      double pick_time = now;
      for (std::size_t i = 0; i < k; ++i) {
        for (std::size_t j = 0; j < k; ++j) {
          if (i == j) continue;
          const int g = std::gcd(n[i], n[j]);
          std::vector<int> t = c;
          t[i] += scale * (n[j] / g);
          t[j] -= scale * (n[i] / g);
          if (t[j] < 1) continue;
          const double x = cost(t);
          if (x < pick_time) {
            pick_time = x;
            pick = t;
          }
        }
      }
      if (!pick.empty()) {
        c = pick;
        now = pick_time;
        moved = true;
      }
    }
  }
}

/// A training step of `sc` on `cluster`, StepOnly; +inf when it does not fit.
double step_of(const models::Scenario& sc, const models::Cluster& cluster, const CostModel& costs, const ComputeCalibration& compute,
               const std::shared_ptr<CommCostCache>& shared) {
  WorkloadRunner runner(sc, cluster, costs, compute, models::EngineKind::Analytic);
  if (shared) runner.set_shared_costs(shared);
  runner.set_detail(WorkloadRunner::Detail::StepOnly);
  const WorkloadResult r = runner.run();
  return r.feasible ? r.step_time : std::numeric_limits<double>::infinity();
}

}  // namespace

std::optional<MicroBatchSplit> best_micro_batch_split(const models::Scenario& scenario, const models::Cluster& cluster,
                                                      const CostModel& costs, const ComputeCalibration& compute,
                                                      const std::shared_ptr<CommCostCache>& shared) {
  if (!scenario.workload || !scenario.strategy || scenario.workload->phase != models::WorkloadPhase::TrainingStep) return std::nullopt;
  const models::WorkloadSpec& w = *scenario.workload;
  models::StrategySpec s = *scenario.strategy;
  if (w.global_batch_size <= 0 || w.global_batch_size % w.micro_batch_size != 0) return std::nullopt;
  // The cases the scenario rules keep even (ZeRO-3, interleaved) and EP groups across replicas.
  if (s.zero_stage == 3 || s.pipeline_schedule == "interleaved" || s.ep > s.cp) return std::nullopt;
  const Placement placement(s, static_cast<int>(cluster.topology.gpus().size()));
  const std::vector<ReplicaClass> classes = replica_classes(placement, s, cluster);
  if (classes.size() < 2) return std::nullopt;
  const std::int64_t total = w.global_batch_size / w.micro_batch_size;
  const std::size_t k = classes.size();
  std::vector<int> n(k);
  for (std::size_t i = 0; i < k; ++i) n[i] = static_cast<int>(classes[i].replicas.size());
  if (total < s.dp) return std::nullopt;

  MicroBatchSplit best;
  std::map<std::vector<int>, double> seen;
  const auto per_replica = [&](const std::vector<int>& c) {
    std::vector<int> out(static_cast<std::size_t>(s.dp));
    for (std::size_t i = 0; i < k; ++i)
      for (int d : classes[i].replicas) out[static_cast<std::size_t>(d)] = c[i];
    return out;
  };
  const auto step = [&](const std::vector<int>& c) {
    const auto it = seen.find(c);
    if (it != seen.end()) return it->second;
    models::Scenario sc = scenario;
    sc.strategy->dp_micro_batches = per_replica(c);
    sc.strategy->dp_micro_batches_proportional = false;
    ++best.runs;
    const double t = step_of(sc, cluster, costs, compute, shared);
    seen.emplace(c, t);
    return t;
  };

  // Start: in proportion to speed (one count per class: its replicas are alike).
  s.dp_micro_batches_proportional = true;
  const std::vector<int> prop = replica_micro_batches(placement, s, w, cluster);
  std::vector<int> c(k);
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < k; ++i) {
    c[i] = prop[static_cast<std::size_t>(classes[i].replicas.front())];
    sum += static_cast<std::int64_t>(c[i]) * n[i];
  }
  // Rounding per replica may leave a class's replicas unequal: move the difference onto the
  // classes one replica at a time where the sizes allow, else fall back to the even split.
  for (std::size_t i = 0; i < k && sum != total; ++i) {
    while (sum + n[i] <= total) {
      ++c[i];
      sum += n[i];
    }
    while (sum > total && c[i] > 1) {
      --c[i];
      sum -= n[i];
    }
  }
  if (sum != total) {
    if (total % s.dp != 0) return std::nullopt;
    std::fill(c.begin(), c.end(), static_cast<int>(total / s.dp));
  }
  double now = step(c);
  descend(c, n, now, step);
  best.per_class = c;
  best.per_replica = per_replica(c);
  best.step_time = now;
  if (total % s.dp == 0) best.even_step_time = step(std::vector<int>(k, static_cast<int>(total / s.dp)));
  return best;
}

std::optional<LayerSplit> best_layer_split(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                                           const ComputeCalibration& compute, const std::shared_ptr<CommCostCache>& shared) {
  if (!scenario.workload || !scenario.strategy || !scenario.model) return std::nullopt;
  const models::StrategySpec& s = *scenario.strategy;
  if (s.pp < 2 || s.virtual_stages != 1) return std::nullopt;
  const Placement placement(s, static_cast<int>(cluster.topology.gpus().size()));
  // Only when the stages differ: another GPU model or another speed somewhere in the pipeline.
  bool differ = false;
  for (const auto& rc : replica_classes(placement, s, cluster)) {
    for (std::size_t st = 1; st < rc.compute_gpu.size(); ++st) {
      differ = differ || !(gpu_spec(cluster, rc.compute_gpu[st]) == gpu_spec(cluster, rc.compute_gpu[0])) || !(rc.speed[st] == rc.speed[0]);
    }
  }
  if (!differ) return std::nullopt;
  LayerSplit best;
  std::map<std::vector<int>, double> seen;
  const auto step = [&](const std::vector<int>& layers) {
    const auto it = seen.find(layers);
    if (it != seen.end()) return it->second;
    models::Scenario sc = scenario;
    sc.strategy->pipeline_layers = layers;
    sc.strategy->decoder_first_pipeline_num_layers = sc.strategy->decoder_last_pipeline_num_layers = 0;
    ++best.runs;
    const double t = step_of(sc, cluster, costs, compute, shared);
    seen.emplace(layers, t);
    return t;
  };
  std::vector<int> even;
  for (const auto& [first, count] : models::chunk_layers(scenario.model->layers, s.pp)) even.push_back(count);
  std::vector<int> c = even;
  if (!s.pipeline_layers.empty()) c = s.pipeline_layers;
  double now = step(c);
  descend(c, std::vector<int>(c.size(), 1), now, step);
  best.per_stage = c;
  best.step_time = now;
  best.even_step_time = step(even);
  return best;
}

}  // namespace ccsim::planner
