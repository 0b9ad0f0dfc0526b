// One test suite, run against every engine (as ns-3 runs one scheduler test against all its
// event lists). Expected values are closed-form α-β times computed by hand in the comments.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "planner/algorithms/algorithms.hpp"
#include "sim/engine.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;

namespace {

sim::Plan plan_for(const models::Cluster& c, const models::Schedule& s) {
  sim::Plan p;
  p.schedule = &s;
  for (int r = 0; r < s.nranks; ++r) p.rank_gpu.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
  return p;
}

double simulate(const char* engine, const models::Cluster& c, Algorithm a, planner::AlgorithmRequest req) {
  const auto schedule = planner::generate(a, req);
  return sim::make_engine(engine, c)->run(plan_for(c, schedule)).makespan;
}

const models::Cluster& h100_node() {
  static const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  return c;
}

/// Ranks 1 and 2 each send `bytes` to rank 0 (a hand-written SendRecv pattern).
models::Schedule fan_in(std::uint64_t bytes) {
  models::Schedule s;
  s.collective = Collective::SendRecv;
  s.algorithm = "fan-in";
  s.nranks = 3;
  s.bytes = bytes;
  s.ranks.resize(3);
  const models::Slice all{models::BufferKind::Input, 0, s.bytes};
  models::Op send;
  send.kind = models::OpKind::Send;
  send.peer = 0;
  send.src = all;
  s.ranks[1].add(send);
  s.ranks[2].add(send);
  models::Op recv;
  recv.kind = models::OpKind::Recv;
  recv.dst = all;
  recv.peer = 1;
  s.ranks[0].add(recv);
  recv.peer = 2;
  s.ranks[0].add(recv);
  return s;
}

}  // namespace

TEST_CASE("engines: ring AllReduce matches 2(N-1)(alpha + S/(N B))", "[engine]") {
  // 8 × H100 on NVSwitch: every ring hop is GPU -> NVSwitch -> GPU, α = 2 × 0.3 us, and
  // B = 450 GB/s per direction; each GPU sends one flow and receives one, so nothing contends.
  // S = 8 MiB = 8,388,608 bytes: T = 14 × (0.6e-6 + 8388608 / (8 × 450e9)) = 14 × 2.930...e-6.
  const double alpha = 0.6e-6, bw = 450e9, n = 8, s = 8388608;
  const double expected = 2 * (n - 1) * (alpha + s / (n * bw));
  planner::AlgorithmRequest req;
  req.nranks = 8;
  req.bytes = 8388608;
  for (const char* engine : {"analytic", "flow"}) {
    INFO(engine);
    CHECK(simulate(engine, h100_node(), Algorithm::Ring, req) == Approx(expected).epsilon(1e-9));
    req.granularity = models::Granularity::Phase;
    CHECK(simulate(engine, h100_node(), Algorithm::Ring, req) == Approx(expected).epsilon(1e-9));
    req.granularity = models::Granularity::Step;
  }
}

TEST_CASE("engines: two flows into one port each get half", "[engine]") {
  // SendRecv-like pattern by hand: ranks 1 and 2 both send S to rank 0. Rank 0's NVSwitch
  // downlink (450 GB/s) is shared: each flow gets 225 GB/s, T = α + S / 225e9.
  const models::Schedule s = fan_in(450000000);
  const double expected = 0.6e-6 + 450e6 / 225e9;
  for (const char* engine : {"analytic", "flow"}) {
    INFO(engine);
    const auto tl = sim::make_engine(engine, h100_node())->run(plan_for(h100_node(), s));
    CHECK(tl.makespan == Approx(expected).epsilon(1e-9));
    // Links: each sender's uplink carries S at half its capacity; rank 0's downlink carries
    // 2S at full capacity. All are busy while the data flows: S / 225e9 = 2 ms.
    REQUIRE(tl.links.size() == 3);  // two uplinks and one downlink, nothing else
    int full = 0, half = 0;
    for (const auto& l : tl.links) {
      INFO(h100_node().topology.name(h100_node().topology.link_source(l.link)));
      CHECK(l.busy == Approx(450e6 / 225e9).epsilon(1e-9));
      if (l.bytes == Approx(2 * 450e6)) {
        ++full;
        CHECK(l.peak == Approx(1.0).epsilon(1e-9));
      } else {
        ++half;
        CHECK(l.bytes == Approx(450e6));
        CHECK(l.peak == Approx(0.5).epsilon(1e-9));
      }
    }
    CHECK(full == 1);
    CHECK(half == 2);
  }
}

TEST_CASE("engines agree on contention-free schedules of every algorithm", "[engine]") {
  // Three topologies: one DGX H100 (NVSwitch), one MI300X node (xGMI mesh), 4 × DGX A100 on
  // a rail-optimized fat tree. Every algorithm, every collective it supports, 8 ranks (32 on
  // the fat tree for the ring): both engines must give the same time to 1e-9.
  const models::Cluster a100 = test::shipped_cluster("dgx-a100-4node-rail.yaml");
  const models::Cluster mi300x = test::shipped_cluster("mi300x-1node.yaml");
  for (const models::Cluster* c : {&h100_node(), &mi300x, &a100}) {
    for (Algorithm a : planner::all_algorithms()) {
      for (Collective coll : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                              Collective::Broadcast, Collective::Reduce, Collective::AlltoAll, Collective::SendRecv}) {
        planner::AlgorithmRequest req;
        req.collective = coll;
        req.nranks = 8;
        req.bytes = 8 * 4 * 4096;
        req.pipeline_chunks = 2;
        req.ranks_per_node = 4;
        if (!planner::unsupported_reason(a, req).empty()) continue;
        if ((a == Algorithm::Nvls || a == Algorithm::NvlsTree) && c != &h100_node()) continue;  // needs NVLS
        const auto schedule = planner::generate(a, req);
        const auto analytic_tl = sim::make_engine("analytic", *c)->run(plan_for(*c, schedule));
        const auto flow_tl = sim::make_engine("flow", *c)->run(plan_for(*c, schedule));
        const double analytic = analytic_tl.makespan, flow = flow_tl.makespan;
        INFO(fmt::format("{} {} on {}", planner::to_string(a), models::to_string(coll), c->spec.name));
        CHECK(flow == Approx(analytic).epsilon(1e-9));
        CHECK(analytic > 0.0);
        // Per-link statistics agree too: same links, bytes, busy time and peak utilisation.
        REQUIRE(flow_tl.links.size() == analytic_tl.links.size());
        for (std::size_t i = 0; i < flow_tl.links.size(); ++i) {
          const auto& f = flow_tl.links[i];
          const auto& n = analytic_tl.links[i];
          CHECK(f.link == n.link);
          CHECK(f.bytes == Approx(n.bytes).epsilon(1e-9));
          CHECK(f.busy == Approx(n.busy).epsilon(1e-6).margin(1e-15));
          CHECK(f.peak == Approx(n.peak).epsilon(1e-6));
        }
      }
    }
  }
}

TEST_CASE("phase and step granularity agree on uniform links", "[engine]") {
  // Ring AllReduce on 32 A100 GPUs of 4 nodes: the inter-node hops are the bottleneck, and
  // every hop of one ring phase repeats the same per-step time, so the folded phase equals
  // the sum of its steps.
  const models::Cluster a100 = test::shipped_cluster("dgx-a100-4node-rail.yaml");
  planner::AlgorithmRequest req;
  req.nranks = 8;
  req.bytes = 8 * 4 * 100000;
  const double step = simulate("analytic", h100_node(), Algorithm::Ring, req);
  req.granularity = models::Granularity::Phase;
  const double phase = simulate("analytic", h100_node(), Algorithm::Ring, req);
  CHECK(phase == Approx(step).epsilon(1e-9));
}

TEST_CASE("protocol costs: wire factor, step latency, base latency", "[engine]") {
  // Ring AllReduce, 8 ranks, S = 8 MB, with LL-like costs: wire bytes × 2, 1 us extra per
  // NVLink step, 5 us base: T = 5e-6 + 14 × (0.6e-6 + 1e-6 + 2 × S / (8 × 450e9)).
  planner::AlgorithmRequest req;
  req.nranks = 8;
  req.bytes = 8000000;
  const auto schedule = planner::generate(Algorithm::Ring, req);
  sim::Plan p = plan_for(h100_node(), schedule);
  p.cost.wire_factor = 2.0;
  p.cost.step_latency[static_cast<std::size_t>(models::LinkClass::ScaleUp)] = 1e-6;
  p.cost.base_latency = 5e-6;
  const double expected = 5e-6 + 14 * (0.6e-6 + 1e-6 + 2 * 8e6 / (8 * 450e9));
  for (const char* engine : {"analytic", "flow"}) {
    INFO(engine);
    CHECK(sim::make_engine(engine, h100_node())->run(p).makespan == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("engines: recursive doubling AllGather, NVLS and hierarchical closed forms", "[engine]") {
  const double alpha_nvl = 0.6e-6, b_h100 = 450e9;
  SECTION("recursive doubling AllGather on 8 H100") {
    // log2 8 = 3 exchanges; step k moves 2^k blocks of S/8 to one partner (no contention on
    // the NVSwitch): T = Σ_k (α + 2^k S/(8B)) = 3α + 7S/(8B). S = 8 × 4 × 10^6 bytes.
    const double s = 32e6;
    planner::AlgorithmRequest req;
    req.collective = Collective::AllGather;
    req.nranks = 8;
    req.bytes = 32000000;
    const double expected = 3 * alpha_nvl + 7 * s / (8 * b_h100);
    for (const char* engine : {"analytic", "flow"}) {
      INFO(engine);
      CHECK(simulate(engine, h100_node(), Algorithm::RecursiveDoubling, req) == Approx(expected).epsilon(1e-9));
    }
  }
  SECTION("NVLS AllReduce on 8 H100, one chunk") {
    // Each GPU <-> NVSwitch leg has α = 0.3 us. (1) every GPU sends its 8 parts of S/8 to the
    // switch at once: its uplink carries S: 0.3 us + S/B. (2) rank p receives the reduced
    // part p: 0.3 us + S/(8B). (3) rank p multicasts it: 0.3 us + S/(8B) up. (4) every GPU
    // receives the 7 other parts at once on its downlink: 0.3 us + 7S/(8B).
    // T = 1.2 us + (1 + 1/8 + 1/8 + 7/8) S/B = 1.2 us + 2.125 S/B.
    const double s = 32e6;
    planner::AlgorithmRequest req;
    req.nranks = 8;
    req.bytes = 32000000;
    const double expected = 1.2e-6 + 2.125 * s / b_h100;
    for (const char* engine : {"analytic", "flow"}) {
      INFO(engine);
      CHECK(simulate(engine, h100_node(), Algorithm::Nvls, req) == Approx(expected).epsilon(1e-9));
    }
  }
  SECTION("hierarchical AllReduce on 4 x DGX A100, one chunk") {
    // L = 8 GPUs per node, M = 4 nodes. (1) intra-node ring ReduceScatter: 7 (α_nvl + S/(8 B_nvl))
    // with B_nvl = 300 GB/s. (2) per rail, a ring AllReduce of S/8 over the 4 nodes:
    // 2·3 (α_net + (S/8)/(4 B_nic)) with α_net = 4 PCIe × 0.5 us + 2 × 0.35 us = 2.7 us and
    // B_nic = 25 GB/s; the 8 rails run in parallel on their own NICs. (3) intra-node AllGather:
    // 7 (α_nvl + S/(8 B_nvl)). S = 32 × 4 × 10^5 bytes.
    const models::Cluster a100 = test::shipped_cluster("dgx-a100-4node-rail.yaml");
    const double s = 12.8e6;
    planner::AlgorithmRequest req;
    req.nranks = 32;
    req.bytes = 12800000;
    req.ranks_per_node = 8;
    const double intra = 7 * (alpha_nvl + s / (8 * 300e9));
    const double inter = 6 * (2.7e-6 + (s / 8) / (4 * 25e9));
    const double expected = 2 * intra + inter;
    for (const char* engine : {"analytic", "flow"}) {
      INFO(engine);
      CHECK(simulate(engine, a100, Algorithm::Hierarchical, req) == Approx(expected).epsilon(1e-9));
    }
  }
}

TEST_CASE("engines: a per-transfer rate cap bounds a lone transfer", "[engine]") {
  // Rank 1 sends S = 450 MB to rank 0 over NVLink (450 GB/s) with a cap of 45 GB/s (as NCCL's
  // LL throughput cap): T = α + S / 45e9 = 0.6 us + 10 ms. Two such transfers into one port
  // stay at 45 GB/s each (90 GB/s < 450 GB/s).
  const models::Schedule s = fan_in(450000000);
  for (const char* engine : {"analytic", "flow"}) {
    INFO(engine);
    sim::Plan plan = plan_for(h100_node(), s);
    plan.cost.max_rate = 45e9;
    const auto tl = sim::make_engine(engine, h100_node())->run(plan);
    CHECK(tl.makespan == Approx(0.6e-6 + 450e6 / 45e9).epsilon(1e-9));
  }
}

TEST_CASE("engines: a late rank starts at its ready time and the shared port stays work-conserving", "[engine][skew]") {
  // fan_in: ranks 1 and 2 each send S = 450 MB to rank 0 through its NVSwitch downlink
  // (B = 450 GB/s, α = 0.6 us). Rank 2 calls the collective d = 0.5 ms late.
  //   rank 1's flow: alone from α to d + α at B (moves B·d = 225 MB), then shares the
  //     downlink at B/2 for its other 225 MB: 1 ms; it ends at d + α + 1 ms = 1.5006 ms;
  //   rank 2's send starts at d; its flow moves 225 MB at B/2 meanwhile, then 225 MB alone at
  //     B: 0.5 ms; it ends at α + 2S/B = 2.0006 ms (the downlink is busy from α to the end).
  const models::Schedule s = fan_in(450000000);
  const double alpha = 0.6e-6, bw = 450e9, d = 0.5e-3, S = 450e6;
  for (const char* engine : {"analytic", "flow"}) {
    INFO(engine);
    sim::Plan plan = plan_for(h100_node(), s);
    plan.rank_ready = {0.0, 0.0, d};
    const auto tl = sim::make_engine(engine, h100_node())->run(plan);
    CHECK(tl.makespan == Approx(alpha + 2 * S / bw).epsilon(1e-9));
    for (const auto& op : tl.ops) {
      if (op.rank == 2) CHECK(op.start == Approx(d).epsilon(1e-9));
      if (op.rank == 1) CHECK(op.end == Approx(d + alpha + S / bw).epsilon(1e-9));
    }
    // Zero skew is no skew.
    plan.rank_ready = {0.0, 0.0, 0.0};
    CHECK(sim::make_engine(engine, h100_node())->run(plan).makespan == Approx(alpha + 2 * S / bw).epsilon(1e-12));
    // One entry per rank, each finite and >= 0.
    plan.rank_ready = {0.0, 0.0};
    CHECK_THROWS_AS(sim::make_engine(engine, h100_node())->run(plan), std::invalid_argument);
    plan.rank_ready = {0.0, -1e-6, 0.0};
    CHECK_THROWS_AS(sim::make_engine(engine, h100_node())->run(plan), std::invalid_argument);
  }
}
