// The execution graph both engines run (sim/execution/execution_graph.hpp): how sends and
// receives pair into transfers, what a transfer costs before its bytes flow, and the message of
// every plan it refuses; and the deadlock message of both engines.

#include <catch2/catch.hpp>

#include <cmath>

#include "models/hardware/router.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/execution/execution_graph.hpp"
#include "sim/flow/flow_engine.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::OpKind;
using sim::detail::ExecutionGraph;
using sim::detail::kNoOp;

namespace {

models::Schedule empty_schedule(int nranks) {
  models::Schedule s;
  s.collective = models::Collective::SendRecv;
  s.algorithm = "hand-written";
  s.nranks = nranks;
  s.bytes = 1001;
  s.ranks.resize(static_cast<std::size_t>(nranks));
  return s;
}

models::Op op_of(OpKind kind, int peer, std::uint64_t bytes, std::uint16_t channel = 0) {
  models::Op op;
  op.kind = kind;
  op.peer = peer;
  op.channel = channel;
  op.src = {models::BufferKind::Input, 0, bytes};
  op.dst = {models::BufferKind::Output, 0, bytes};
  return op;
}

sim::Plan plan_on(const models::Cluster& c, const models::Schedule& s, std::initializer_list<int> gpus) {
  sim::Plan p;
  p.schedule = &s;
  for (int g : gpus) p.rank_gpu.push_back(c.topology.gpus()[static_cast<std::size_t>(g)]);
  return p;
}

}  // namespace

TEST_CASE("execution graph: messages of one connection in order, whole wire bytes, per-step latency", "[engine][graph]") {
  // Rank 0 sends 1001 bytes (2 steps), then 2000 bytes (1 step) to rank 1 on channel 0; rank 1
  // receives both. Two transfers on one connection: the second waits for the first. With wire
  // factor 1.5 the wire bytes are round(1001 × 1.5) = round(1501.5) = 1502 and 3000; with every
  // step latency σ = 1 µs a transfer of n steps over a path of latency p waits n (p + σ).
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  models::Schedule s = empty_schedule(2);
  models::Op first = op_of(OpKind::Send, 1, 1001);
  first.steps = 2;
  s.ranks[0].add(first);
  s.ranks[0].add(op_of(OpKind::Send, 1, 2000));
  s.ranks[1].add(op_of(OpKind::Recv, 0, 1001));
  s.ranks[1].add(op_of(OpKind::Recv, 0, 2000));
  sim::Plan plan = plan_on(c, s, {0, 1});
  plan.cost.wire_factor = 1.5;
  plan.cost.step_latency = {1e-6, 1e-6, 1e-6, 1e-6};
  models::Router router(c);
  const double p = router.route(plan.rank_gpu[0], plan.rank_gpu[1]).latency;
  const ExecutionGraph g(plan, router);
  REQUIRE(g.transfers.size() == 2);
  CHECK(g.op_count() == 4);
  CHECK(g.transfers[0].bytes == 1502.0);
  CHECK(g.transfers[1].bytes == 3000.0);
  CHECK(g.transfers[0].latency == Approx(2 * (p + 1e-6)).epsilon(1e-12));
  CHECK(g.transfers[1].latency == Approx(p + 1e-6).epsilon(1e-12));
  CHECK(g.transfers[0].next_on_connection == 1);
  CHECK(g.transfers[1].next_on_connection == kNoOp);
  CHECK_FALSE(g.transfers[0].waits_for_previous);
  CHECK(g.transfers[1].waits_for_previous);
  // Global op ids rank by rank: rank 0's ops are 0 and 1, rank 1's are 2 and 3.
  CHECK(g.transfers[0].send_op == 0);
  CHECK(g.transfers[0].recv_op == 2);
  CHECK(g.transfers[1].send_op == 1);
  CHECK(g.transfers[1].recv_op == 3);
  CHECK(g.rank_of(3) == 1);
  CHECK(g.local_index(3) == 1);
}

TEST_CASE("execution graph: a latency pool pays its mean per-step latency", "[engine][graph]") {
  // Rank 0 sends to rank 1 (same node: NVLink path, latency p_a) with 2 steps and to rank 8
  // (other node: network path, latency p_b) with 4 steps, both in pool 1. Each pays its steps
  // times the pool's mean per-step latency, m = ((p_a + σ) + (p_b + σ)) / 2: 2m and 4m.
  const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  models::Schedule s = empty_schedule(9);
  models::Op to_a = op_of(OpKind::Send, 1, 4096);
  to_a.steps = 2;
  to_a.tag = 1;
  models::Op to_b = op_of(OpKind::Send, 8, 4096);
  to_b.steps = 4;
  to_b.tag = 1;
  s.ranks[0].add(to_a);
  s.ranks[0].add(to_b);
  s.ranks[1].add(op_of(OpKind::Recv, 0, 4096));
  s.ranks[8].add(op_of(OpKind::Recv, 0, 4096));
  sim::Plan plan = plan_on(c, s, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  plan.cost.step_latency = {1e-6, 1e-6, 1e-6, 1e-6};
  models::Router router(c);
  const double pa = router.route(plan.rank_gpu[0], plan.rank_gpu[1]).latency;
  const double pb = router.route(plan.rank_gpu[0], plan.rank_gpu[8]).latency;
  REQUIRE(pa != Approx(pb));  // the two paths differ, so pooling changes both
  const double m = ((pa + 1e-6) + (pb + 1e-6)) / 2;
  const ExecutionGraph g(plan, router);
  REQUIRE(g.transfers.size() == 2);
  CHECK(g.transfers[0].latency == Approx(2 * m).epsilon(1e-12));
  CHECK(g.transfers[1].latency == Approx(4 * m).epsilon(1e-12));
}

TEST_CASE("execution graph: plans that do not fit are refused with a precise message", "[engine][graph]") {
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  models::Router router(c);
  SECTION("ranks without a GPU") {
    const models::Schedule s = empty_schedule(2);
    const sim::Plan plan = plan_on(c, s, {0});
    CHECK_THROWS_WITH(ExecutionGraph(plan, router), "plan maps 1 ranks to GPUs, schedule has 2");
  }
  SECTION("a receive nothing is sent for") {
    models::Schedule s = empty_schedule(2);
    s.ranks[0].add(op_of(OpKind::Recv, 1, 64));
    const sim::Plan plan = plan_on(c, s, {0, 1});
    CHECK_THROWS_WITH(ExecutionGraph(plan, router), "rank 0 op 0 receives from rank 1 but nothing is sent");
  }
  SECTION("sends nobody receives: the smallest (source, destination, channel) is named") {
    models::Schedule s = empty_schedule(3);
    s.ranks[2].add(op_of(OpKind::Send, 0, 64, 0));
    s.ranks[1].add(op_of(OpKind::Send, 0, 64, 5));
    const sim::Plan plan = plan_on(c, s, {0, 1, 2});
    CHECK_THROWS_WITH(ExecutionGraph(plan, router), "rank 1 sends to rank 0 on channel 5 with no matching receive");
  }
  SECTION("an in-switch op on a GPU without NVSwitch") {
    const models::Cluster pcie = test::shipped_cluster("pcie-2gpu-nop2p.yaml");
    models::Router pcie_router(pcie);
    models::Schedule s = empty_schedule(1);
    s.switch_groups = {1};
    models::Op up = op_of(OpKind::SwitchSend, models::kSwitch, 64);
    s.ranks[0].add(up);
    const sim::Plan plan = plan_on(pcie, s, {0});
    CHECK_THROWS_WITH(ExecutionGraph(plan, pcie_router), Catch::StartsWith("NVLS: rank 0 (") && Catch::EndsWith(") has no NVSwitch"));
  }
}

TEST_CASE("engines: a schedule that deadlocks is reported with the ops that never ran", "[engine][graph]") {
  // Each of two ranks receives from the other before it sends: neither send can start, so all
  // 4 ops never run.
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  models::Schedule s = empty_schedule(2);
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t recv = s.ranks[static_cast<std::size_t>(r)].add(op_of(OpKind::Recv, 1 - r, 64));
    const std::uint32_t deps[] = {recv};
    s.ranks[static_cast<std::size_t>(r)].add(op_of(OpKind::Send, 1 - r, 64), deps);
  }
  const sim::Plan plan = plan_on(c, s, {0, 1});
  for (auto sharing : {sim::AnalyticEngine::Sharing::Incremental, sim::AnalyticEngine::Sharing::Reference}) {
    CHECK_THROWS_WITH(sim::AnalyticEngine(c, sharing).run(plan), "schedule hand-written deadlocks: 4 of 4 ops never ran");
  }
  CHECK_THROWS_WITH(sim::FlowEngine(c).run(plan), "flow engine: schedule deadlocks: 4 ops never ran");
}
