// The flow engine's Comm merging (FlowEngine::Merging::Identical) against its reference path
// (Merging::None, one SimGrid Comm per transfer): makespans, every op's start and end, and
// every link's bytes and busy time must agree to 1e-9 relative, while fewer Comms run.
// Why they must: transfers merged into one Comm start at the same instant on the same link
// set with the same payload, so the max-min allocation (unique, and symmetric in them) gives
// them equal rates at all times; one Comm of k × payload with sharing penalty 1/k receives k
// times one flow's share on every link, which is the same allocation.

#include <catch2/catch.hpp>

#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "sim/flow/flow_engine.hpp"
#include "test_support.hpp"

using namespace ccsim;
using planner::Algorithm;

namespace {

sim::Plan plan_for(const models::Cluster& c, const models::Schedule& s, int ranks) {
  sim::Plan p;
  p.schedule = &s;
  for (int r = 0; r < ranks; ++r) p.rank_gpu.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
  return p;
}

struct Pair {
  sim::Timeline merged, reference;
  std::size_t merged_comms = 0, reference_comms = 0;
};

Pair run_both(const models::Cluster& c, const sim::Plan& plan) {
  sim::FlowEngine merged(c, sim::FlowEngine::Merging::Identical);
  sim::FlowEngine reference(c, sim::FlowEngine::Merging::None);
  Pair out;
  out.merged = merged.run(plan);
  out.merged_comms = merged.last_comms();
  out.reference = reference.run(plan);
  out.reference_comms = reference.last_comms();
  return out;
}

void check_equal(const sim::Timeline& a, const sim::Timeline& b) {
  CHECK(a.makespan == Approx(b.makespan).epsilon(1e-9));
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].start == Approx(b.ops[i].start).epsilon(1e-9).margin(1e-15));
    CHECK(a.ops[i].end == Approx(b.ops[i].end).epsilon(1e-9).margin(1e-15));
  }
  REQUIRE(a.links.size() == b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    CHECK(a.links[i].link == b.links[i].link);
    CHECK(a.links[i].bytes == Approx(b.links[i].bytes).epsilon(1e-12));
    CHECK(a.links[i].busy == Approx(b.links[i].busy).epsilon(1e-9).margin(1e-15));
    CHECK(a.links[i].peak == Approx(b.links[i].peak).epsilon(1e-9).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("flow merging: multi-channel rings equal the one-Comm-per-transfer path", "[flowscale]") {
  const auto c = test::shipped_cluster("h100-2x8-200g.yaml");  // 2 nodes: NVLink inside, shared NICs across
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  for (const int channels : {1, 2, 4}) {
    for (const auto granularity : {models::Granularity::Phase, models::Granularity::Step}) {
      CAPTURE(channels, static_cast<int>(granularity));
      planner::AlgorithmRequest req;
      req.nranks = 16;
      req.bytes = 48ULL << 20;
      req.channels = channels;
      req.granularity = granularity;
      req.ranks_per_node = 8;
      const auto schedule = planner::generate(Algorithm::Ring, req);
      auto plan = plan_for(c, schedule, 16);
      plan.cost = costs.params(Algorithm::Ring, planner::Protocol::Simple, c.topology);
      const auto r = run_both(c, plan);
      check_equal(r.merged, r.reference);
      // Link-byte conservation: every transfer's bytes are counted once per link of its path,
      // whatever the Comm it ran in; the reference path starts one Comm per transfer.
      CHECK(r.reference_comms <= r.reference.transfers);
      CHECK(r.merged_comms <= r.reference_comms);
      // With c channels, the c copies of a step start together; those on one path (all inside a
      // node; across nodes, those ECMP hashed onto the same one of the 2 spines) share a Comm.
      if (channels > 1) CHECK(r.merged_comms * 3 <= r.reference_comms * 2);
    }
  }
}

TEST_CASE("flow merging: merged flows share links with unmerged ones exactly", "[flowscale]") {
  // Rank 0 sends two equal messages to rank 8 on two channels (they merge), while rank 0 also sends
  // one message of another size to rank 9 out of the same GPU and NIC (not merged). The
  // merged Comm must count as two flows against the third on every shared link.
  const auto c = test::shipped_cluster("h100-2x8-200g.yaml");
  models::Schedule s;
  s.collective = models::Collective::SendRecv;
  s.algorithm = "mix";
  s.nranks = 16;
  s.bytes = 64ULL << 20;
  s.ranks.resize(16);
  test::add_send_recv(s, 0, 8, 32ULL << 20, 0);
  test::add_send_recv(s, 0, 8, 32ULL << 20, 1);
  test::add_send_recv(s, 0, 9, 48ULL << 20, 0);
  const auto plan = plan_for(c, s, 16);
  const auto r = run_both(c, plan);
  check_equal(r.merged, r.reference);
  CHECK(r.reference_comms == 3);
  CHECK(r.merged_comms == 2);
}

// Capped transfers of several channels merge, and every path has its own host.

namespace {

sim::Plan ring_plan(const models::Cluster& c, const planner::CostModel& costs, const models::Schedule& s, int ranks,
                    planner::Protocol protocol) {
  auto plan = plan_for(c, s, ranks);
  plan.cost = costs.params(Algorithm::Ring, protocol, c.topology);
  return plan;
}

}  // namespace

TEST_CASE("flow merging: capped channels merge exactly (one cap link at k caps)", "[flowscale][flowissue]") {
  // With a per-connection rate cap, the c channels of one ring step are c connections, each with
  // its own cap link: they merge into one Comm over the first connection's cap link raised to
  // c caps. The result must equal one Comm per transfer, each through its own cap link.
  const auto c = test::shipped_cluster("h100-2x8-200g.yaml");
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  // 40 GB/s binds on NVLink (450 GB/s / c channels) but not on a 200 Gb/s NIC shared by c channels.
  for (const double cap : {40e9, 5e9}) {
    for (const int channels : {2, 4}) {
      for (const auto granularity : {models::Granularity::Phase, models::Granularity::Step}) {
        CAPTURE(cap, channels, static_cast<int>(granularity));
        planner::AlgorithmRequest req;
        req.nranks = 16;
        req.bytes = 48ULL << 20;
        req.channels = channels;
        req.granularity = granularity;
        const auto schedule = planner::generate(Algorithm::Ring, req);
        auto plan = ring_plan(c, costs, schedule, 16, planner::Protocol::Simple);
        plan.cost.max_rate = cap;
        const auto r = run_both(c, plan);
        check_equal(r.merged, r.reference);
        CHECK(r.merged_comms * 3 <= r.reference_comms * 2);
        // And the analytic engine (max-min over the same links and caps) agrees.
        const auto analytic = sim::make_engine("analytic", c)->run(plan);
        CHECK(r.merged.makespan == Approx(analytic.makespan).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("flow engine: channels of one device pair on different ECMP spines keep their own paths", "[flowissue]") {
  // Ring Broadcast / Reduce / AllReduce over 26 ranks of the rail-optimized 16K fat tree (4
  // nodes, the last one partial), as the planner lays the rings out. Cross-node ring hops between different rails go through a
  // spine chosen per (source rank, destination rank, channel) by ECMP hashing, so the channels
  // of one device pair take different spines. The flow engine once kept one route per device
  // pair (the first channel's) and put every channel on that spine: 24.2 ms instead of 33.3 ms
  // for the 1 GB 2-channel Broadcast below. Both engines must agree.
  static const auto c = test::shipped_cluster("h100-16k-rail.yaml");
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  for (const auto coll : {models::Collective::Broadcast, models::Collective::Reduce, models::Collective::AllReduce}) {
    for (const int channels : {2, 3}) {
      CAPTURE(static_cast<int>(coll), channels);
      // As `ccsim collective scenarios/h100-16k-rail.yaml --op broadcast --ranks 26 --algo ring
      // --protocol Simple --channels 2 -b 1G -e 1G`: the planner's rings (channel c enters
      // each node on another rail) at its granularity.
      planner::CollectiveOptions opt;
      opt.collective = coll;
      opt.algorithm = Algorithm::Ring;
      opt.protocol = planner::Protocol::Simple;
      opt.channels = channels;
      for (int r = 0; r < 26; ++r) opt.gpus.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
      const auto analytic = planner::CollectiveRunner(c, costs, opt).run(1ULL << 30);
      opt.engine = models::EngineKind::Flow;
      const auto flow = planner::CollectiveRunner(c, costs, opt).run(1ULL << 30);
      // 1e-6: SimGrid's completion times carry its solver's rounding (a few 1e-8 relative here).
      CHECK(flow.time == Approx(analytic.time).epsilon(1e-6));
    }
  }
}
