// Megatron's rank grid (planner/workload/placement.hpp): groups of every parallel dimension,
// other rank orders, and the rank that represents each pipeline stage in a mixed cluster.

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"
#include "planner/workload/placement.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::ParallelDim;
using planner::Placement;

namespace {

models::StrategySpec layout(int tp, int cp, int pp, int dp, int ep = 1, const std::string& order = "tp-cp-ep-pp-dp") {
  models::StrategySpec s;
  s.tp = tp;
  s.cp = cp;
  s.pp = pp;
  s.dp = dp;
  s.ep = ep;
  s.order = order;
  return s;
}

/// Checks that the `dim` groups of all ranks partition the world into groups of `size`, each
/// rank in its own group, every member of a group reporting the same group.
void check_partition(const Placement& p, ParallelDim dim, int size) {
  INFO("dim " << models::to_string(dim));
  std::set<std::vector<int>> groups;
  for (int r = 0; r < p.world(); ++r) {
    const auto g = p.group(dim, r);
    CHECK(g.size() == static_cast<std::size_t>(size));
    CHECK(std::find(g.begin(), g.end(), r) != g.end());
    for (int q : g) CHECK(p.group(dim, q) == g);
    groups.insert(g);
  }
  std::set<int> all;
  for (const auto& g : groups) all.insert(g.begin(), g.end());
  CHECK(all.size() == static_cast<std::size_t>(p.world()));
  CHECK(groups.size() == static_cast<std::size_t>(p.world() / size));
}

}  // namespace

TEST_CASE("Placement: tp-cp-ep-pp-dp, tp 2 pp 2 dp 2 on 8 ranks", "[workload]") {
  // Innermost first: rank = tp + 2·(cp = 0) + 2·pp + 4·dp.
  const models::StrategySpec s = layout(2, 1, 2, 2);
  const Placement p(s, 8);
  CHECK(p.group(ParallelDim::TP, 0) == std::vector<int>{0, 1});
  CHECK(p.group(ParallelDim::PP, 0) == std::vector<int>{0, 2});
  CHECK(p.group(ParallelDim::DP, 0) == std::vector<int>{0, 4});
  CHECK(p.group(ParallelDim::CP, 0) == std::vector<int>{0});
  CHECK(p.group(ParallelDim::TP, 6) == std::vector<int>{6, 7});
  CHECK(p.group(ParallelDim::PP, 5) == std::vector<int>{5, 7});
  CHECK(p.group(ParallelDim::DP, 3) == std::vector<int>{3, 7});
  // Rank 6 = tp 0 + 2·pp 1 + 4·dp 1.
  const auto c = p.coords(6);
  CHECK(c.tp == 0);
  CHECK(c.cp == 0);
  CHECK(c.pp == 1);
  CHECK(c.dp == 1);
  for (int r = 0; r < 8; ++r) CHECK(p.rank(p.coords(r)) == r);
  check_partition(p, ParallelDim::TP, 2);
  check_partition(p, ParallelDim::PP, 2);
  check_partition(p, ParallelDim::DP, 2);
}

TEST_CASE("Placement: EP groups are consecutive ranks of the (cp, dp) index", "[workload]") {
  SECTION("ep 2 over dp 2") {
    // EP folds into DP: the EP group of rank 0 is its DP group {0, 4}; rank 3 (tp 1, pp 1) {3, 7}.
    const models::StrategySpec s = layout(2, 1, 2, 2, 2);
    const Placement p(s, 8);
    CHECK(p.group(ParallelDim::EP, 0) == std::vector<int>{0, 4});
    CHECK(p.group(ParallelDim::EP, 3) == std::vector<int>{3, 7});
    check_partition(p, ParallelDim::EP, 2);
  }
  SECTION("cp 2, dp 2: DP spans dp × cp, EP 2 splits it, EP 4 covers it") {
    // tp 2, cp 2, dp 2: rank = tp + 2·cp + 4·dp. DP of rank 0 (gradients over dp × cp):
    // {0, 2, 4, 6} (dp-major); combined index k = dp·cp_size + cp = 0, 1, 2, 3 for those.
    const models::StrategySpec s2 = layout(2, 2, 1, 2, 2);
    const Placement p2(s2, 8);
    CHECK(p2.group(ParallelDim::DP, 0) == std::vector<int>{0, 2, 4, 6});
    CHECK(p2.group(ParallelDim::CP, 0) == std::vector<int>{0, 2});
    CHECK(p2.group(ParallelDim::EP, 0) == std::vector<int>{0, 2});
    CHECK(p2.group(ParallelDim::EP, 4) == std::vector<int>{4, 6});
    CHECK(p2.group(ParallelDim::EP, 5) == std::vector<int>{5, 7});
    check_partition(p2, ParallelDim::EP, 2);
    check_partition(p2, ParallelDim::DP, 4);
    const models::StrategySpec s4 = layout(2, 2, 1, 2, 4);
    const Placement p4(s4, 8);
    CHECK(p4.group(ParallelDim::EP, 0) == std::vector<int>{0, 2, 4, 6});
    check_partition(p4, ParallelDim::EP, 4);
  }
}

TEST_CASE("Placement: another order, and a world that does not match", "[workload]") {
  // tp-cp-ep-dp-pp: rank = tp + 2·dp + 4·pp.
  const models::StrategySpec s = layout(2, 1, 2, 2, 1, "tp-cp-ep-dp-pp");
  const Placement p(s, 8);
  CHECK(p.group(ParallelDim::DP, 0) == std::vector<int>{0, 2});
  CHECK(p.group(ParallelDim::PP, 0) == std::vector<int>{0, 4});
  CHECK(p.group(ParallelDim::TP, 2) == std::vector<int>{2, 3});
  // dp innermost: rank = dp + 2·tp + 4·pp.
  const models::StrategySpec d = layout(2, 1, 2, 2, 1, "dp-tp-cp-ep-pp");
  const Placement q(d, 8);
  CHECK(q.group(ParallelDim::DP, 0) == std::vector<int>{0, 1});
  CHECK(q.group(ParallelDim::TP, 0) == std::vector<int>{0, 2});
  CHECK(q.group(ParallelDim::PP, 0) == std::vector<int>{0, 4});
  const models::StrategySpec bad = layout(2, 1, 2, 4);
  CHECK_THROWS_AS(Placement(bad, 8), std::invalid_argument);
}

TEST_CASE("Placement: replicas on different GPU models are classes of their own, each stage represented by TP rank 0", "[workload]") {
  // tp 4 pp 2 dp 2 on two 8-GPU nodes: rank = tp + 4·pp + 8·dp, so DP replica 0 holds node 0's
  // GPUs (ranks 0-7) and replica 1 node 1's (ranks 8-15). The A100 (312 TFLOP/s BF16) is slower
  // than the H100 (989): each stage is represented by the replica on the A100 node, by its TP
  // rank 0 (stage 0: rank 8·dp, stage 1: 4 + 8·dp), and its compute is timed on that GPU.
  const auto reps = [](const std::string& nodes) {
    test::TempDir dir;
    const std::string file = dir.write("mixed.yaml", "cluster:\n  nodes: " + nodes +
                                                         "\n  fabric: {kind: single-switch}\n"
                                                         "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1}\n"
                                                         "strategy: {tp: 4, pp: 2}\n");
    const models::Scenario sc = models::load_scenario(file, test::shipped_catalog());
    const models::Cluster cluster = models::build_cluster(sc.cluster);
    REQUIRE(sc.strategy->dp == 2);
    const Placement p(*sc.strategy, 16);
    const std::vector<planner::ReplicaClass> classes = planner::replica_classes(p, *sc.strategy, cluster);
    const auto& gpus = cluster.topology.gpus();
    // One class per GPU model: each replica is a class of its own.
    REQUIRE(classes.size() == 2);
    std::vector<int> a100_ranks;
    for (const auto& r : classes) {
      REQUIRE(r.compute_gpu.size() == 2);
      REQUIRE(r.replicas.size() == 1);
      for (std::size_t stage = 0; stage < 2; ++stage) CHECK(r.compute_gpu[stage] == gpus[static_cast<std::size_t>(r.rank[stage])]);
      if (planner::gpu_spec(cluster, r.compute_gpu[0]).bf16_flops == Approx(312e12)) a100_ranks = r.rank;
    }
    CHECK(classes[0].replicas == std::vector<int>{0});
    CHECK(classes[1].replicas == std::vector<int>{1});
    return a100_ranks;
  };
  CHECK(reps("[{node: dgx-h100}, {node: dgx-a100}]") == std::vector<int>{8, 12});
  CHECK(reps("[{node: dgx-a100}, {node: dgx-h100}]") == std::vector<int>{0, 4});
}
