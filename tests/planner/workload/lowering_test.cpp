// Communication ops lowered and simulated (planner/workload/lowering.hpp): the groups an op
// runs on, the memo, and the cache shared between lowerings of one cluster.

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "models/scenario/scenario.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/lowering.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::ParallelDim;

namespace {

/// Two DGX H100 nodes on one switch, Llama-3-8B with tp 4 (dp 4): rank = tp + 4·dp, so the
/// TP group of rank 0 is {0, 1, 2, 3} and its DP group {0, 4, 8, 12}.
struct Setup {
  test::TempDir dir;
  models::Scenario scenario;
  models::Cluster cluster;
  planner::CostModel costs;
  Setup()
      : scenario(models::load_scenario(dir.write("s.yaml",
                                                 "cluster:\n  nodes: [{node: dgx-h100, count: 2}]\n  fabric: {kind: single-switch}\n"
                                                 "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1}\n"
                                                 "strategy: {tp: 4}\n"),
                                       test::shipped_catalog())),
        cluster(models::build_cluster(scenario.cluster)),
        costs(planner::CostModel::load(planner::CostModel::default_path(cluster))) {}
};

models::ProgramOp allreduce(ParallelDim dim, double bytes) {
  models::ProgramOp op;
  op.kind = models::ProgramOpKind::Collective;
  op.collective = models::Collective::AllReduce;
  op.dim = dim;
  op.bytes = bytes;
  return op;
}

}  // namespace

TEST_CASE("lowering: an op runs beside the groups that share its nodes, memoized per size", "[workload]") {
  Setup s;
  REQUIRE(s.scenario.strategy->dp == 4);
  planner::CommLowering lower(s.scenario, s.cluster, s.costs, models::EngineKind::Analytic);
  // TP of rank 0: {0..3} on node 0, beside the one other TP group there, {4..7}.
  const models::ProgramOp tp = allreduce(ParallelDim::TP, 1 << 20);
  CHECK(lower.cost_index(tp, 0, 0) == 0);
  CHECK(lower.cost_index(tp, 0, 0) == 0);
  REQUIRE(lower.costs().size() == 1);
  CHECK(lower.costs()[0].group_size == 4);
  CHECK(lower.costs()[0].concurrent_groups == 1);
  CHECK(lower.costs()[0].time > 0);
  // DP of rank 0: {0, 4, 8, 12} spans both nodes; the other DP groups {1, 5, 9, 13},
  // {2, 6, 10, 14}, {3, 7, 11, 15} run beside it.
  const models::ProgramOp dp = allreduce(ParallelDim::DP, 1 << 20);
  CHECK(lower.cost_index(dp, 0, 0) == 1);
  CHECK(lower.costs()[1].group_size == 4);
  CHECK(lower.costs()[1].concurrent_groups == 3);
  // Another size is another cost; the first stays where it was.
  CHECK(lower.cost_index(allreduce(ParallelDim::TP, 1 << 21), 0, 0) == 2);
  CHECK(lower.cost_index(tp, 0, 0) == 0);
  CHECK(lower.costs().size() == 3);
}

TEST_CASE("lowering: a shared cache gives a second lowering the first one's costs", "[workload]") {
  Setup s;
  const auto cache = std::make_shared<planner::CommCostCache>();
  planner::CommLowering first(s.scenario, s.cluster, s.costs, models::EngineKind::Analytic);
  planner::CommLowering second(s.scenario, s.cluster, s.costs, models::EngineKind::Analytic);
  first.set_shared(cache);
  second.set_shared(cache);
  const models::ProgramOp tp = allreduce(ParallelDim::TP, 1 << 20);
  first.cost_index(tp, 0, 0);
  CHECK(cache->size() == 1);
  CHECK(cache->hits_misses() == std::pair<std::size_t, std::size_t>{0, 1});
  second.cost_index(tp, 0, 0);
  CHECK(cache->size() == 1);
  CHECK(cache->hits_misses() == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(second.costs()[0].time == first.costs()[0].time);
  CHECK(second.costs()[0].algorithm == first.costs()[0].algorithm);
  // The same op from the TP group on the other node ({8..11}, rep 8) is the same node template
  // and the same local GPUs: found in the cache too.
  planner::CommLowering third(s.scenario, s.cluster, s.costs, models::EngineKind::Analytic);
  third.set_shared(cache);
  third.cost_index(tp, 0, 8);
  CHECK(cache->hits_misses() == std::pair<std::size_t, std::size_t>{2, 1});
}

TEST_CASE("lowering: the shared cache keys ops inside a node on its node class", "[workload][node-class]") {
  // The TP op of rank 8 (node 1) against rank 0's (node 0): found in the cache when the two
  // nodes are one class, whether one group of two or two equal groups of one; simulated afresh
  // when node 1 differs by one link kind's bandwidth (its template's NVLink at half) or by one
  // link (GPU 8's NVLink to the switch halved after the build), and then slower.
  const models::ProgramOp tp = allreduce(ParallelDim::TP, 1 << 20);
  const auto tp_costs = [&](const models::Cluster& cluster, const Setup& s) {
    const auto cache = std::make_shared<planner::CommCostCache>();
    planner::CommLowering node0(s.scenario, cluster, s.costs, models::EngineKind::Analytic);
    planner::CommLowering node1(s.scenario, cluster, s.costs, models::EngineKind::Analytic);
    node0.set_shared(cache);
    node1.set_shared(cache);
    node0.cost_index(tp, 0, 0);
    node1.cost_index(tp, 0, 8);
    return std::make_tuple(cache->hits_misses().first, node0.costs()[0].time, node1.costs()[0].time);
  };
  Setup s;
  models::ClusterSpec split = s.scenario.cluster;
  split.groups[0].count = 1;
  split.groups.push_back(split.groups[0]);
  const auto [hits_split, t0_split, t1_split] = tp_costs(models::build_cluster(split), s);
  CHECK(hits_split == 1);
  CHECK(t1_split == t0_split);

  models::ClusterSpec slower = split;
  slower.groups[1].node.gpu.scaleup_link->bandwidth /= 2;
  const auto [hits_kind, t0_kind, t1_kind] = tp_costs(models::build_cluster(slower), s);
  CHECK(hits_kind == 0);
  CHECK(t0_kind == t0_split);
  CHECK(t1_kind > t0_kind);

  models::Cluster perturbed = models::build_cluster(s.scenario.cluster);
  models::Topology& t = perturbed.topology;
  for (models::LinkId id : t.out_links(t.gpus()[8]))
    if (t.link(id).link_class == models::LinkClass::ScaleUp) t.set_bandwidth(id, t.link(id).bandwidth / 2);
  const auto [hits_link, t0_link, t1_link] = tp_costs(perturbed, s);
  CHECK(hits_link == 0);
  CHECK(t0_link == t0_split);
  CHECK(t1_link > t0_link);
}
