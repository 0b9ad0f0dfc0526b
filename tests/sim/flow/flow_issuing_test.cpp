// The flow engine's two ways of starting Comms (FlowEngine::Issuing): short-lived issuing
// actors putting non-detached Comms into mailboxes whose permanent receiver sits on the sink
// (Actors, the default), against host-to-host Comms that SimGrid 3.32 detaches into maestro's
// activity list (Detached, the reference path). Both must give every op the same start and
// end, every link the same bytes, busy time and peak, and start the same number of Comms:
// same routes (the path's host to the sink), same start instants, same sharing penalties.

#include <catch2/catch.hpp>

#include <limits>

#include "planner/algorithms/algorithms.hpp"
#include "planner/tuning/cost_model.hpp"
#include "sim/flow/flow_engine.hpp"
#include "test_support.hpp"

using namespace ccsim;
using planner::Algorithm;

namespace {

using Issuing = sim::FlowEngine::Issuing;
using Merging = sim::FlowEngine::Merging;

sim::Plan plan_for(const models::Cluster& c, const models::Schedule& s, int ranks) {
  sim::Plan p;
  p.schedule = &s;
  for (int r = 0; r < ranks; ++r) p.rank_gpu.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
  return p;
}

// Runs the plan both ways and compares everything the Timeline reports.
void check_issuing_paths_agree(const models::Cluster& c, const sim::Plan& plan, Merging merging) {
  sim::FlowEngine actors(c, merging, Issuing::Actors);
  sim::FlowEngine detached(c, merging, Issuing::Detached);
  const auto a = actors.run(plan);
  const auto d = detached.run(plan);
  CHECK(actors.last_comms() == detached.last_comms());
  CHECK(actors.last_comms() > 0);
  CHECK(a.makespan == Approx(d.makespan).epsilon(1e-9));
  REQUIRE(a.ops.size() == d.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].start == Approx(d.ops[i].start).epsilon(1e-9).margin(1e-15));
    CHECK(a.ops[i].end == Approx(d.ops[i].end).epsilon(1e-9).margin(1e-15));
  }
  REQUIRE(a.links.size() == d.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    CHECK(a.links[i].link == d.links[i].link);
    CHECK(a.links[i].bytes == d.links[i].bytes);
    CHECK(a.links[i].busy == Approx(d.links[i].busy).epsilon(1e-9).margin(1e-15));
    CHECK(a.links[i].peak == Approx(d.links[i].peak).epsilon(1e-9).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("flow issuing: actors give the detached path's times (ring, channels, caps, merging)", "[flowissue]") {
  const auto c = test::shipped_cluster("h100-2x8-200g.yaml");  // 2 nodes: NVLink inside, shared NICs across
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  // No cap; a cap that binds on NVLink (450 GB/s shared by the channels) but not on the NICs.
  for (const double cap : {std::numeric_limits<double>::infinity(), 40e9}) {
    for (const int channels : {1, 4}) {
      for (const auto granularity : {models::Granularity::Phase, models::Granularity::Step}) {
        for (const auto merging : {Merging::Identical, Merging::None}) {
          CAPTURE(cap, channels, static_cast<int>(granularity), static_cast<int>(merging));
          planner::AlgorithmRequest req;
          req.nranks = 16;
          req.bytes = 48ULL << 20;
          req.channels = channels;
          req.granularity = granularity;
          const auto schedule = planner::generate(Algorithm::Ring, req);
          auto plan = plan_for(c, schedule, 16);
          plan.cost = costs.params(Algorithm::Ring, planner::Protocol::Simple, c.topology);
          plan.cost.max_rate = cap;
          check_issuing_paths_agree(c, plan, merging);
        }
      }
    }
  }
}

TEST_CASE("flow issuing: actors give the detached path's times (tree, all-to-all)", "[flowissue]") {
  const auto c = test::shipped_cluster("h100-2x8-200g.yaml");
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  for (const double cap : {std::numeric_limits<double>::infinity(), 20e9}) {
    CAPTURE(cap);
    {
      // Pipelined double binary tree AllReduce over both nodes, 2 channel pairs.
      planner::AlgorithmRequest req;
      req.nranks = 16;
      req.bytes = 32ULL << 20;
      req.channels = 2;
      req.pipeline_chunks = 4;
      req.ranks_per_node = 8;
      const auto schedule = planner::generate(Algorithm::Tree, req);
      auto plan = plan_for(c, schedule, 16);
      plan.cost = costs.params(Algorithm::Tree, planner::Protocol::Simple, c.topology);
      plan.cost.max_rate = cap;
      check_issuing_paths_agree(c, plan, Merging::Identical);
    }
    {
      // Pairwise all-to-all: many Comms of one source GPU in flight at once over shared links.
      planner::AlgorithmRequest req;
      req.collective = models::Collective::AlltoAll;
      req.nranks = 16;
      req.bytes = 16ULL << 20;
      const auto schedule = planner::generate(Algorithm::Pairwise, req);
      auto plan = plan_for(c, schedule, 16);
      plan.cost = costs.params(Algorithm::Pairwise, planner::Protocol::Simple, c.topology);
      plan.cost.max_rate = cap;
      check_issuing_paths_agree(c, plan, Merging::Identical);
      check_issuing_paths_agree(c, plan, Merging::None);
    }
  }
}

TEST_CASE("flow issuing: several Comms of one path in flight at once", "[flowissue]") {
  // Rank 0 sends three messages of different sizes to rank 8 on three channels at once: they
  // share one path (one host, one mailbox) and finish at different times, so the mailbox holds
  // finished and running Comms together. A fourth, equal to the first, starts with it and merges.
  const auto c = test::shipped_cluster("h100-2x8-200g.yaml");
  models::Schedule s;
  s.collective = models::Collective::SendRecv;
  s.algorithm = "mix";
  s.nranks = 16;
  s.bytes = 64ULL << 20;
  s.ranks.resize(16);
  test::add_send_recv(s, 0, 8, 8ULL << 20, 0);
  test::add_send_recv(s, 0, 8, 16ULL << 20, 1);
  test::add_send_recv(s, 0, 8, 24ULL << 20, 2);
  test::add_send_recv(s, 0, 8, 8ULL << 20, 3);
  const auto plan = plan_for(c, s, 16);
  for (const auto merging : {Merging::Identical, Merging::None}) {
    CAPTURE(static_cast<int>(merging));
    check_issuing_paths_agree(c, plan, merging);
  }
  sim::FlowEngine actors(c, Merging::Identical, Issuing::Actors);
  const auto t = actors.run(plan);
  CHECK(actors.last_comms() == 3);
  // Max-min by hand: the four flows share every link of the one path and start flowing
  // together, so on its bottleneck (capacity B) they run at B/4 until the two 8 MiB ones end,
  // then the 16 and 24 MiB ones at B/2 until 16 MiB more are through (16 MiB / B), then the
  // 24 MiB one alone for its last 8 MiB (8 MiB / B).
  double end[4] = {0, 0, 0, 0};
  for (const auto& op : t.ops)
    if (op.rank == 8 && op.op < 4) end[op.op] = op.end;
  CHECK(end[0] > 0);
  CHECK(end[3] == Approx(end[0]).epsilon(1e-12));
  CHECK((end[2] - end[1]) / (end[1] - end[0]) == Approx(0.5).epsilon(1e-9));
}
