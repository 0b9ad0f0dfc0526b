// The flow engine's Comm merging (FlowEngine::Merging::Identical) against its reference path
// (Merging::None, one SimGrid Comm per transfer): makespans, every op's start and end, and
// every link's bytes and busy time must agree to 1e-9 relative, while fewer Comms run.
// Why they must: transfers merged into one Comm start at the same instant on the same link
// set with the same payload, so the max-min allocation (unique, and symmetric in them) gives
// them equal rates at all times; one Comm of k × payload with sharing penalty 1/k receives k
// times one flow's share on every link, which is the same allocation.

#include <catch2/catch.hpp>

#include "planner/algorithms/algorithms.hpp"
#include "planner/cost_model.hpp"
#include "sim/flow_engine.hpp"
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
      // With c channels, the c copies of a step start together on one route: c-fold fewer Comms.
      if (channels > 1) CHECK(r.merged_comms * static_cast<std::size_t>(channels) <= r.reference_comms);
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
  const auto add_pair = [&](int from, int to, std::uint64_t bytes, int channel) {
    models::Op send;
    send.kind = models::OpKind::Send;
    send.peer = to;
    send.channel = channel;
    send.src = {models::BufferKind::Input, 0, bytes};
    s.ranks[static_cast<std::size_t>(from)].add(send);
    models::Op recv;
    recv.kind = models::OpKind::Recv;
    recv.peer = from;
    recv.channel = channel;
    recv.dst = {models::BufferKind::Output, 0, bytes};
    s.ranks[static_cast<std::size_t>(to)].add(recv);
  };
  add_pair(0, 8, 32ULL << 20, 0);
  add_pair(0, 8, 32ULL << 20, 1);
  add_pair(0, 9, 48ULL << 20, 0);
  const auto plan = plan_for(c, s, 16);
  const auto r = run_both(c, plan);
  check_equal(r.merged, r.reference);
  CHECK(r.reference_comms == 3);
  CHECK(r.merged_comms == 2);
}
