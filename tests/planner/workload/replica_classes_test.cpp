// Execution without the symmetry assumption: what-if perturbations (models/hardware/perturbation.hpp)
// split the DP replicas into classes (planner/workload/placement.hpp), the Program holds one rank
// per (class, stage) and DP collectives wait for every class (models::join_replica_classes). The
// values are checked against runs of the same step computed another way: the unperturbed step,
// the step with every GPU slowed, the compute model's own parts.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/hardware/perturbation.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/compute_model.hpp"
#include "planner/workload/replica_report.hpp"
#include "planner/workload/step_executor.hpp"
#include "planner/workload/workload_runner.hpp"
#include "planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

/// 2 × DGX H100 on a rail-optimized NDR fat tree (one leaf per rail), Llama-3-8B at 8K tokens.
const std::string kTwoNodes =
    "cluster:\n"
    "  nodes: [{node: dgx-h100, count: 2}]\n"
    "  fabric: {kind: fat-tree, wiring: rail-optimized, nodes_per_leaf: 2, leaf: {link: ib-ndr}, spine: {link: ib-ndr}}\n"
    "workload: {model: llama-3-8b, sequence_length: 8192, micro_batch_size: 1, global_batch_size: 16}\n";

struct Run {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::WorkloadResult result;
};

Run run(const std::string& text) {
  test::TempDir dir;
  Run r{models::load_scenario(dir.write("s.yaml", text), test::shipped_catalog()), {}, {}};
  r.cluster = models::build_scenario_cluster(r.scenario);
  const auto compute = planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5");
  planner::WorkloadRunner runner(r.scenario, r.cluster, test::shipped_costs(r.cluster), compute, models::EngineKind::Analytic);
  r.result = runner.run();
  return r;
}

/// Σ over the Program's compute ops of f(estimate).
template <class F>
double sum_compute(const planner::WorkloadResult& r, F f) {
  double s = 0;
  for (std::size_t i = 0; i < r.program.ops.size(); ++i)
    if (r.op_comm[i] < 0 && r.op_compute[i].time > 0) s += f(r.op_compute[i]);
  return s;
}

}  // namespace

TEST_CASE("at_speed: each op kind's part is divided by its speed, the launch overhead stays", "[workload][what-if]") {
  planner::ComputeEstimate e;
  e.math = 2e-3;
  e.memory = 1e-3;
  e.overhead = 1e-4;
  e.time = 2.1e-3;
  e.efficiency = 0.6;
  e.bound = planner::ComputeBound::Math;
  models::ProgramOp gemm;
  gemm.kind = models::ProgramOpKind::Gemm;
  // GEMM at a quarter of its tensor-core speed and half its HBM speed: math 2 ms / 0.25 = 8 ms,
  // memory 1 ms / 0.5 = 2 ms, time = max(8, 2) + 0.1 = 8.1 ms, efficiency 0.6 · 2.1 / 8.1.
  const auto g = planner::at_speed(e, gemm, {0.25, 1.0, 0.5});
  CHECK(g.math == Approx(8e-3));
  CHECK(g.memory == Approx(2e-3));
  CHECK(g.time == Approx(8.1e-3));
  CHECK(g.efficiency == Approx(0.6 * 2.1 / 8.1));
  // A memory-bound op does not care about the tensor cores: memory 1 ms / 0.2 = 5 ms > math 2 ms.
  models::ProgramOp mem;
  mem.kind = models::ProgramOpKind::Memory;
  const auto m = planner::at_speed(e, mem, {0.25, 0.25, 0.2});
  CHECK(m.math == Approx(2e-3));
  CHECK(m.memory == Approx(5e-3));
  CHECK(m.time == Approx(5.1e-3));
  CHECK(m.bound == planner::ComputeBound::Memory);
  // Attention takes the attention speed.
  models::ProgramOp attn;
  attn.kind = models::ProgramOpKind::Attention;
  CHECK(planner::at_speed(e, attn, {1.0, 0.5, 1.0}).math == Approx(4e-3));
  CHECK(planner::at_speed(e, attn, {}).time == e.time);
}

TEST_CASE("join_replica_classes: a DP collective starts when the last class arrives", "[workload][what-if]") {
  // Per class: compute (rank's stream Compute) then a DP AllReduce on the DP stream after it.
  // Class 0's compute takes 1 s, class 1's 3 s; the AllReduce 0.5 s. Alone each would start its
  // AllReduce at its own compute's end; joined, both start at max(1, 3) = 3 s and end at 3.5 s.
  const auto one = [] {
    models::Program p;
    p.ranks.push_back({0, 0, {}});
    models::ProgramOp c;
    c.kind = models::ProgramOpKind::Gemm;
    const std::uint32_t a = p.add(0, c);
    models::ProgramOp dp;
    dp.kind = models::ProgramOpKind::Collective;
    dp.stream = models::Stream::DpComm;
    dp.dim = models::ParallelDim::DP;
    dp.bytes = 1;
    dp.deps = {a};
    p.add(0, dp);
    p.model_flops = 10;
    p.tokens = 4;
    return p;
  }();
  const models::Program joined = models::join_replica_classes({one, one}, {3, 1}, 4);
  REQUIRE(joined.ranks.size() == 2);
  CHECK(joined.ranks[1].replica_class == 1);
  // Shares: 10 · 3/4 + 10 · 1/4 = 10 FLOPs, the same for tokens.
  CHECK(joined.model_flops == Approx(10));
  CHECK(joined.tokens == Approx(4));
  const std::vector<double> duration{1.0, 0.5, 3.0, 0.5};
  const auto t = planner::execute_step(joined, duration);
  CHECK(t[1].start == Approx(3.0));
  CHECK(t[3].start == Approx(3.0));
  CHECK(t[1].end == Approx(3.5));
  CHECK(models::stream_predecessors(joined)[3] == ~0U);
  // A single class comes back unchanged.
  CHECK(models::join_replica_classes({one}, {4}, 4).ops.size() == one.ops.size());
  // Classes whose DP ops differ cannot be one collective.
  models::Program other = one;
  other.ops[1].bytes = 2;
  CHECK_THROWS_AS(models::join_replica_classes({one, other}, {1, 1}, 2), std::invalid_argument);
}

TEST_CASE("one slow GPU in a TP8 group: the step slows by its compute, wherever the GPU is", "[workload][what-if]") {
  // One DGX H100, TP8 DP1. The TP group runs in lock-step (an AllReduce after each row-parallel
  // GEMM), so one GPU at half speed on every op kind makes every compute op of the stage take
  // 2·(t − o) + o, o the launch overhead (host time, not GPU work): Δcompute = Σ (t − o) over
  // the compute ops, and the step grows by the same sum over the compute ops on the unperturbed
  // step's critical path (the path does not move: communication only gets more room to hide).
  const std::string one_node =
      "cluster: {nodes: [{node: dgx-h100}]}\n"
      "workload: {model: llama-3-8b, sequence_length: 8192, micro_batch_size: 1, global_batch_size: 4}\n"
      "strategy: {tp: 8}\n";
  const Run base = run(one_node);
  for (const char* gpu : {"node0/gpu3", "node0/gpu6"}) {
    const Run slow = run(one_node + fmt::format("what_if: {{compute: [{{gpus: {}, speed: 0.5}}]}}\n", gpu));
    REQUIRE(slow.result.classes.size() == 1);
    CHECK(slow.result.classes[0].speed[0].gemm == 0.5);
    const double work = sum_compute(base.result, [](const planner::ComputeEstimate& e) { return e.time - e.overhead; });
    CHECK(slow.result.stages[0].compute == Approx(base.result.stages[0].compute + work).epsilon(1e-9));
    double on_path = 0;
    // The unperturbed run leaves critical_path empty (one class): the same walk on its timing.
    REQUIRE(base.result.critical_path.empty());
    for (std::uint32_t id : planner::critical_path_of(base.result.program, base.result.timing, base.result.sync_wait))
      if (base.result.op_comm[id] < 0) on_path += base.result.op_compute[id].time - base.result.op_compute[id].overhead;
    CHECK(on_path < work);
    CHECK(slow.result.step_time - base.result.step_time == Approx(on_path).epsilon(1e-6));
  }
}

TEST_CASE("one slow DP replica: the others wait at the DP reduction by exactly the difference", "[workload][what-if]") {
  // TP8 DP2 over 2 × DGX H100, one node at half speed. Both replicas do the same ops; the slow
  // one's step is the step with every GPU slow (S_slow). Without overlap the gradient AllReduce
  // (D, the same everywhere) is followed only by the optimizer (O_slow, O_fast), so a replica is
  // ready for the AllReduce at S − D − O, and the fast one waits
  // (S_slow − O_slow) − (S_fast − O_fast), whichever node is the slow one.
  const std::string layout = "strategy: {tp: 8, dp: 2}\n";
  const Run fast = run(kTwoNodes + layout);
  const Run all_slow = run(kTwoNodes + layout + "what_if: {compute: [{nodes: 'node*', speed: 0.5}]}\n");
  REQUIRE(fast.result.classes.size() == 1);
  REQUIRE(all_slow.result.classes.size() == 1);
  for (const char* node : {"node0", "node1"}) {
    const Run one = run(kTwoNodes + layout + fmt::format("what_if: {{compute: [{{nodes: {}, speed: 0.5}}]}}\n", node));
    const auto& r = one.result;
    REQUIRE(r.classes.size() == 2);
    CHECK(r.step_time == Approx(all_slow.result.step_time).epsilon(1e-9));
    const int slow_class = std::string(node) == "node0" ? 0 : 1;
    const auto figs = planner::class_figures(r);
    const auto optimizer = [](const planner::WorkloadResult& x) {
      double s = 0;
      for (std::size_t i = 0; i < x.program.ops.size(); ++i)
        if (x.program.ops[i].pass == models::Pass::Optimizer && x.op_comm[i] < 0) s += x.op_compute[i].time;
      return s;
    };
    CHECK(optimizer(all_slow.result) > optimizer(fast.result));
    CHECK(figs[static_cast<std::size_t>(1 - slow_class)].sync_wait ==
          Approx((all_slow.result.step_time - optimizer(all_slow.result)) - (fast.result.step_time - optimizer(fast.result))).epsilon(1e-6));
    CHECK(figs[static_cast<std::size_t>(slow_class)].sync_wait == Approx(0).margin(1e-12));
    // The critical path runs on the slow class.
    CHECK(r.program.ranks[static_cast<std::size_t>(planner::path_segments(r).front().rank)].replica_class == slow_class);
  }
}

TEST_CASE("a symmetric cluster has one replica class; a perturbation splits only what it touches", "[workload][what-if]") {
  // TP4 DP4 over 2 × DGX H100: two replicas per node. Unperturbed: one class. A slow GPU in
  // node 1 at local GPU 5 (rank 13 = replica 3): replicas 0-2 stay one class, replica 3 alone.
  const std::string layout = "strategy: {tp: 4, dp: 4}\n";
  CHECK(run(kTwoNodes + layout).result.classes.size() == 1);
  const Run r = run(kTwoNodes + layout + "what_if: {compute: [{gpus: node1/gpu5, slowdown: 1.25, ops: [gemm]}]}\n");
  REQUIRE(r.result.classes.size() == 2);
  CHECK(r.result.classes[0].replicas == std::vector<int>{0, 1, 2});
  CHECK(r.result.classes[1].replicas == std::vector<int>{3});
  CHECK(r.result.classes[1].speed[0].gemm == Approx(0.8));
  CHECK(r.result.classes[1].speed[0].memory == 1.0);
  // A slow NIC on node 1 splits node 1's class: its two replicas (2, 3) become a class of
  // their own each (a GPU's position counts on a perturbed node), node 0's stay together.
  const Run nic = run(kTwoNodes + layout + "what_if: {links: [{device: node1/nic0, factor: 0.585}]}\n");
  REQUIRE(nic.result.classes.size() == 3);
  CHECK(nic.result.classes[0].replicas == std::vector<int>{0, 1});
  CHECK(nic.cluster.topology.node_perturbed(1));
  CHECK_FALSE(nic.cluster.topology.node_perturbed(0));
}

TEST_CASE("apply_what_if: stragglers, link factors by pattern, NIC failover", "[what-if]") {
  models::Cluster base = test::shipped_cluster("h100-2x8-200g.yaml");
  const models::Topology& t = base.topology;
  SECTION("stragglers are drawn reproducibly from the seed") {
    models::WhatIfSpec w;
    w.stragglers.push_back({3, 0.5, 42, models::kAllOps, {}, "what_if.stragglers"});
    models::Cluster a = base, b = base;
    models::apply_what_if(a, w);
    models::apply_what_if(b, w);
    REQUIRE(a.gpu_speed.size() == t.gpus().size());
    int slow = 0;
    for (std::size_t g = 0; g < a.gpu_speed.size(); ++g) {
      slow += a.gpu_speed[g].gemm == 0.5;
      CHECK(a.gpu_speed[g] == b.gpu_speed[g]);
    }
    CHECK(slow == 3);
    CHECK(a.perturbations.size() == 1);
  }
  SECTION("a link pattern scales one direction; <-> both") {
    models::WhatIfSpec w;
    models::LinkRule one;
    one.from = "node0/nic*";
    one.to = "leaf*";
    one.factor = 0.5;
    one.key = "what_if.links[0]";
    w.links.push_back(one);
    models::Cluster c = base;
    models::apply_what_if(c, w);
    int halved = 0, kept = 0;
    for (models::LinkId id = 0; id < t.num_links(); ++id) {
      const bool up = t.device(t.link_source(id)).kind == models::DeviceKind::Nic && t.device(t.link_source(id)).node == 0 &&
                      t.device(t.link_target(id)).kind == models::DeviceKind::NetworkSwitch;
      if (up) {
        CHECK(c.topology.link(id).bandwidth == Approx(t.link(id).bandwidth / 2));
        ++halved;
      } else {
        kept += c.topology.link(id).bandwidth == t.link(id).bandwidth;
      }
    }
    CHECK(halved == static_cast<int>(base.nodes[0].nics.size()));
    CHECK(kept == static_cast<int>(t.num_links()) - halved);
    w.links[0].both_directions = true;
    models::Cluster d = base;
    models::apply_what_if(d, w);
    int changed = 0;
    for (models::LinkId id = 0; id < t.num_links(); ++id) changed += d.topology.link(id).bandwidth != t.link(id).bandwidth;
    CHECK(changed == 2 * halved);
  }
  SECTION("a failed NIC moves its GPUs to the node's best remaining NIC") {
    models::WhatIfSpec w;
    models::LinkRule fail;
    fail.device = "node0/nic0";
    fail.fail = true;
    fail.key = "what_if.links[0]";
    w.links.push_back(fail);
    models::Cluster c = base;
    const models::DeviceId nic0 = base.nodes[0].nics[0];
    std::vector<models::DeviceId> users;
    for (models::DeviceId g : base.nodes[0].gpus)
      if (t.device(g).nic == nic0) users.push_back(g);
    REQUIRE_FALSE(users.empty());
    models::apply_what_if(c, w);
    for (models::DeviceId g : users) {
      const models::DeviceId now = c.topology.device(g).nic;
      CHECK(now != nic0);
      CHECK(c.topology.device(now).node == 0);
      // No other NIC of the node is reached with a higher path bandwidth.
      for (models::DeviceId other : base.nodes[0].nics) {
        if (other == nic0) continue;
        CHECK(c.topology.route(g, other, 1).path.bandwidth <= c.topology.route(g, now, 1).path.bandwidth);
      }
    }
    CHECK(c.topology.node_perturbed(0));
    CHECK_FALSE(c.topology.node_perturbed(1));
  }
}
