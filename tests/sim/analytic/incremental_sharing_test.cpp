// The analytic engine's incremental max-min sharing (the default) against its reference loop,
// which re-solves every flowing transfer at every event: the same times, link bytes, busy
// times and peaks, to 1e-9, on one NVSwitch node, a rail-optimized fat tree and an
// oversubscribed one with ECMP (where flows finish at many distinct times); and a direct
// AlltoAll on one NVSwitch node against its closed form.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "models/hardware/router.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;
using Sharing = sim::AnalyticEngine::Sharing;

namespace {

sim::Plan plan_on(const models::Schedule& s, const std::vector<models::DeviceId>& gpus) {
  sim::Plan p;
  p.schedule = &s;
  p.rank_gpu.assign(gpus.begin(), gpus.begin() + s.nranks);
  return p;
}

/// 8 DGX H100 on a two-tier fat tree with 1 µs switches and NDR spine links.
models::Cluster eight_nodes(const test::TempDir& dir, const std::string& wiring, int nodes_per_leaf, int oversubscription) {
  const std::string file = dir.write(wiring + "-8node.yaml", fmt::format(R"(name: {}-8node
cluster:
  nodes:
    - node: dgx-h100
      count: 8
  fabric:
    kind: fat-tree
    wiring: {}
    nodes_per_leaf: {}
    oversubscription: {}
    leaf: {{latency: 1us}}
    spine: {{link: ib-ndr, latency: 1us}}
)", wiring, wiring, nodes_per_leaf, oversubscription));
  return models::build_cluster(models::load_scenario(file, test::shipped_catalog()).cluster);
}

/// Rail-optimized, 4 nodes per leaf, 2:1 oversubscribed: each rail has two leaves with two
/// spine uplinks each, so cross-leaf flows share uplinks unevenly (ECMP hash).
models::Cluster oversubscribed(const test::TempDir& dir) { return eight_nodes(dir, "rail-optimized", 4, 2); }

/// Both loops agree to `tolerance` (relative) on the makespan, every op's end, and every link's
/// bytes, busy time and peak.
void check_same(const models::Cluster& c, const models::Schedule& s, const std::vector<models::DeviceId>& gpus, double max_rate,
                double tolerance = 1e-9) {
  sim::Plan plan = plan_on(s, gpus);
  plan.cost.max_rate = max_rate;
  plan.cost.step_latency = {0.2e-6, 0.5e-6, 1e-6, 2e-6};
  const auto fast = sim::AnalyticEngine(c, Sharing::Incremental).run(plan);
  const auto slow = sim::AnalyticEngine(c, Sharing::Reference).run(plan);
  CHECK(fast.makespan > 0.0);
  CHECK(fast.makespan == Approx(slow.makespan).epsilon(tolerance));
  REQUIRE(fast.ops.size() == slow.ops.size());
  for (std::size_t i = 0; i < fast.ops.size(); ++i) {
    CHECK(fast.ops[i].end == Approx(slow.ops[i].end).epsilon(tolerance).margin(1e-15));
  }
  REQUIRE(fast.links.size() == slow.links.size());
  for (std::size_t i = 0; i < fast.links.size(); ++i) {
    CHECK(fast.links[i].link == slow.links[i].link);
    CHECK(fast.links[i].bytes == Approx(slow.links[i].bytes).epsilon(1e-9));
    CHECK(fast.links[i].busy == Approx(slow.links[i].busy).epsilon(tolerance).margin(1e-15));
    CHECK(fast.links[i].peak == Approx(slow.links[i].peak).epsilon(tolerance));
  }
}

/// Pairwise AlltoAll across the oversubscribed ECMP spine: 63 dependent exchange steps whose
/// flows contend on uneven uplinks amplify rounding (each loop rounds remaining bytes at
/// different moments: the reference at every event, the incremental one when a rate changes)
/// from 1e-15 at the first differing op to ~3e-9 at the end (1 MiB per pair). The incremental
/// solve itself is not the cause: forcing it to re-solve every flow at every event gives the
/// incremental loop's times to 1e-15 (checked by hand when this was written). Direct AlltoAll
/// on the same fabric agrees to 1e-12.
constexpr double kChaotic = 1e-7;

}  // namespace

TEST_CASE("incremental sharing equals the reference loop", "[engine][incremental]") {
  const test::TempDir dir;
  const models::Cluster h100 = test::shipped_cluster("dgx-h100-1node.yaml");
  const models::Cluster a100 = test::shipped_cluster("dgx-a100-4node-rail.yaml");
  const models::Cluster over = oversubscribed(dir);
  struct Case {
    const models::Cluster* cluster;
    int ranks;
  };
  for (const Case& k : {Case{&h100, 8}, Case{&a100, 32}, Case{&over, 64}}) {
    const std::vector<models::DeviceId>& gpus = k.cluster->topology.gpus();
    for (Algorithm a : planner::all_algorithms()) {
      for (Collective coll : {Collective::AllReduce, Collective::AllGather, Collective::AlltoAll}) {
        for (double cap : {std::numeric_limits<double>::infinity(), 20e9}) {
          planner::AlgorithmRequest req;
          req.collective = coll;
          req.nranks = k.ranks;
          // Uneven blocks make flows of one schedule finish at different times.
          req.bytes = static_cast<std::uint64_t>(k.ranks) * 4 * 12345;
          req.ranks_per_node = 8;
          req.channels = a == Algorithm::Ring ? 2 : 1;
          req.pipeline_chunks = 2;
          if (!planner::unsupported_reason(a, req).empty()) continue;
          if ((a == Algorithm::Nvls || a == Algorithm::NvlsTree) && k.cluster == &a100) continue;  // needs NVLS
          if (a == Algorithm::Nvls && k.cluster != &h100) continue;
          INFO(fmt::format("{} {} on {} ({} ranks), cap {}", planner::to_string(a), models::to_string(coll),
                           k.cluster->spec.name, k.ranks, cap));
          check_same(*k.cluster, planner::generate(a, req), gpus, cap, a == Algorithm::Pairwise && k.cluster == &over ? kChaotic : 1e-9);
        }
      }
    }
  }
}

TEST_CASE("incremental sharing: direct AlltoAll across an oversubscribed spine", "[engine][incremental]") {
  // 64 ranks, one per GPU, every pair at once: 4,032 flows, cross-leaf ones on 2:1 uplinks
  // chosen by an ECMP hash, so they finish at many distinct times and most completions free
  // capacity that only some flows can use.
  const test::TempDir dir;
  const models::Cluster over = oversubscribed(dir);
  for (std::uint64_t per_pair : {std::uint64_t{4096}, std::uint64_t{1} << 20}) {
    planner::AlgorithmRequest req;
    req.collective = Collective::AlltoAll;
    req.nranks = 64;
    req.bytes = 64 * per_pair;
    INFO(per_pair);
    check_same(over, planner::generate(Algorithm::Direct, req), over.topology.gpus(), std::numeric_limits<double>::infinity(), 1e-12);
    check_same(over, planner::generate(Algorithm::Pairwise, req), over.topology.gpus(), std::numeric_limits<double>::infinity(),
               kChaotic);
  }
}

TEST_CASE("direct AlltoAll on one NVSwitch node: alpha + (n-1)/n S/B", "[engine][incremental]") {
  // n = 8 H100 on one NVSwitch, S bytes per rank: every rank sends S/n to each of the n − 1
  // others at once. Each GPU's port to the switch carries its n − 1 outgoing flows (and its
  // receiving port n − 1 incoming ones), so every flow gets B/(n−1) and all finish together:
  //   T = α + (S/n) / (B/(n−1)) = α + (n−1)/n · S/B,
  // α the GPU→switch→GPU path latency, B the GPU-switch link bandwidth.
  const models::Cluster h100 = test::shipped_cluster("dgx-h100-1node.yaml");
  const auto& gpus = h100.topology.gpus();
  models::Router router(h100);
  const models::Path& path = router.route(gpus[0], gpus[1]);
  double bandwidth = std::numeric_limits<double>::infinity();
  for (models::LinkId id : path.links) bandwidth = std::min(bandwidth, h100.topology.link(id).bandwidth);
  const double alpha = path.latency;
  const int n = 8;
  const double S = 8.0 * (1 << 24);
  planner::AlgorithmRequest req;
  req.collective = Collective::AlltoAll;
  req.nranks = n;
  req.bytes = static_cast<std::uint64_t>(S);
  const models::Schedule s = planner::generate(Algorithm::Direct, req);
  for (Sharing sharing : {Sharing::Incremental, Sharing::Reference}) {
    const auto tl = sim::AnalyticEngine(h100, sharing).run(plan_on(s, gpus));
    CHECK(tl.makespan == Approx(alpha + (n - 1.0) / n * S / bandwidth).epsilon(1e-9));
  }
}

namespace {
/// ToR wiring (all 8 NICs of a node on one leaf), 2 nodes per leaf, non-blocking: every
/// cross-leaf hop goes up one of the leaf's 16 uplinks chosen by an ECMP hash, so flows of one
/// ring step collide unevenly and the steps drift apart (flows start at many distinct times).
models::Cluster tor_wired(const test::TempDir& dir) { return eight_nodes(dir, "tor", 2, 1); }
}  // namespace

TEST_CASE("component re-solves equal the reference loop on a ToR-wired fabric", "[engine][incremental][components][heavy]") {
  // Rings, trees and pipelines whose flows start at many distinct times: each start re-solves
  // only its connected component, and each completion only the flows at or above its rate that
  // are connected to it through such flows. The reference loop re-solves everything.
  const test::TempDir dir;
  const models::Cluster tor = tor_wired(dir);
  const std::vector<models::DeviceId>& gpus = tor.topology.gpus();
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Direct, Algorithm::Pairwise}) {
    for (int ranks : {16, 27, 64}) {
      for (double cap : {std::numeric_limits<double>::infinity(), 20e9}) {
        planner::AlgorithmRequest req;
        req.collective = a == Algorithm::Direct || a == Algorithm::Pairwise ? Collective::AlltoAll : Collective::AllReduce;
        req.nranks = ranks;
        req.bytes = static_cast<std::uint64_t>(ranks) * 4 * 54321;
        req.ranks_per_node = 8;
        req.channels = a == Algorithm::Ring ? 4 : 1;
        req.pipeline_chunks = 4;
        if (!planner::unsupported_reason(a, req).empty()) continue;
        INFO(fmt::format("{} on {} ranks, cap {}", planner::to_string(a), ranks, cap));
        check_same(tor, planner::generate(a, req), gpus, cap, a == Algorithm::Pairwise ? kChaotic : 1e-9);
      }
    }
  }
}

TEST_CASE("component re-solves: a ring on one NVSwitch re-solves each flow once", "[engine][incremental][components]") {
  // One channel, step granularity, 8 GPUs: rank i sends only to rank i+1, over its own port to
  // the switch and the switch's port to GPU i+1, so no two flows share a link: every flow is its
  // own component and is solved exactly once, when it starts (a completion leaves nothing to
  // re-solve). Hence solved_flows = transfers, while the reference loop re-solves all 8 flows of
  // a step at each of its events.
  const models::Cluster h100 = test::shipped_cluster("dgx-h100-1node.yaml");
  planner::AlgorithmRequest req;
  req.collective = Collective::AllReduce;
  req.nranks = 8;
  req.bytes = 8 * (std::uint64_t{1} << 20);
  req.channels = 1;
  const models::Schedule s = planner::generate(Algorithm::Ring, req);
  const auto tl = sim::AnalyticEngine(h100, Sharing::Incremental).run(plan_on(s, h100.topology.gpus()));
  REQUIRE(tl.transfers == 2 * 8 * 7);  // 2(n−1) steps × n hops
  CHECK(tl.solved_flows == tl.transfers);
}

TEST_CASE("component re-solves: work grows with transfers on a ToR-wired fabric", "[engine][incremental][components]") {
  // A ring at step granularity across the ECMP spine: components are the flows that collide on
  // one leaf uplink or one spine downlink, so the flows re-solved per transfer stay bounded as
  // the ring grows (the reference loop's grow with the number of flows in flight).
  const test::TempDir dir;
  const models::Cluster tor = tor_wired(dir);
  std::vector<double> per_transfer;
  for (int ranks : {16, 32, 64}) {
    planner::AlgorithmRequest req;
    req.collective = Collective::AllReduce;
    req.nranks = ranks;
    req.bytes = static_cast<std::uint64_t>(ranks) << 20;
    req.ranks_per_node = 8;
    req.channels = 2;
    const models::Schedule s = planner::generate(Algorithm::Ring, req);
    const auto tl = sim::AnalyticEngine(tor, Sharing::Incremental).run(plan_on(s, tor.topology.gpus()));
    per_transfer.push_back(static_cast<double>(tl.solved_flows) / static_cast<double>(tl.transfers));
    INFO(fmt::format("{} ranks: {} transfers, {} solves, {} flows re-solved", ranks, tl.transfers, tl.solves, tl.solved_flows));
    CHECK(per_transfer.back() <= 8.0);
  }
}

TEST_CASE("engine cost: a completion that leaves only slower flows walks nothing", "[engine][incremental][enginecost]") {
  // One H100 node: rank 0 sends S to rank 1 alone (rate B, the GPU-switch link), ranks 2, 3
  // and 4 send S each to rank 5 (sharing its port: B/3 each). The lone flow finishes first, at
  // α + S/B; every flow left runs below its rate, so by rule 2 all keep their rates and there is
  // nothing to walk or re-solve; the three finish together at α + 3S/B. Before the walk was
  // skipped in this case it looked at the finished flow's flow lists; a direct AlltoAll on
  // 1,024 ranks of the 2:1 fabric has about a thousand such completions, each walking flow
  // lists thousands of entries long.
  const models::Cluster h100 = test::shipped_cluster("dgx-h100-1node.yaml");
  const auto& gpus = h100.topology.gpus();
  models::Router router(h100);
  const models::Path& path = router.route(gpus[0], gpus[1]);
  double bandwidth = std::numeric_limits<double>::infinity();
  for (models::LinkId id : path.links) bandwidth = std::min(bandwidth, h100.topology.link(id).bandwidth);
  const double alpha = path.latency;
  const double S = 1 << 24;
  models::Schedule s;
  s.collective = Collective::SendRecv;
  s.algorithm = "two-fans";
  s.nranks = 6;
  s.bytes = static_cast<std::uint64_t>(S);
  s.ranks.resize(6);
  const models::Slice all{models::BufferKind::Input, 0, s.bytes};
  for (const auto& [from, to] : {std::pair{0, 1}, std::pair{2, 5}, std::pair{3, 5}, std::pair{4, 5}}) {
    models::Op send;
    send.kind = models::OpKind::Send;
    send.peer = to;
    send.src = all;
    s.ranks[static_cast<std::size_t>(from)].add(send);
    models::Op recv;
    recv.kind = models::OpKind::Recv;
    recv.peer = from;
    recv.dst = all;
    s.ranks[static_cast<std::size_t>(to)].add(recv);
  }
  const auto tl = sim::AnalyticEngine(h100, Sharing::Incremental).run(plan_on(s, gpus));
  const auto ref = sim::AnalyticEngine(h100, Sharing::Reference).run(plan_on(s, gpus));
  CHECK(tl.makespan == Approx(alpha + 3.0 * S / bandwidth).epsilon(1e-9));
  CHECK(tl.makespan == Approx(ref.makespan).epsilon(1e-12));
  CHECK(tl.ops[1].end == Approx(alpha + S / bandwidth).epsilon(1e-9));  // rank 1's receive
  CHECK(tl.solves == 1);   // the start; neither completion re-solves
  CHECK(tl.walked == 0);   // and neither walks
}

TEST_CASE("engine cost: balanced ECMP equals the reference loop and needs fewer re-solves than hash", "[engine][incremental][enginecost][ecmp]") {
  // Direct AlltoAll over a non-blocking rail-optimized fabric: with hashed ECMP connections
  // collide on uplinks and finish at many distinct times; with the balanced spread they do not,
  // so a completion has almost nothing to re-solve. Both are exact against the reference loop.
  const test::TempDir dir;
  std::map<std::string, std::uint64_t> direct_solves;
  for (const std::string ecmp : {"hash", "balanced"}) {
    const std::string file = dir.write(ecmp + "-rail.yaml", fmt::format(R"(name: {}-rail
cluster:
  nodes:
    - node: dgx-h100
      count: 8
  fabric:
    kind: fat-tree
    wiring: rail-optimized
    nodes_per_leaf: 4
    ecmp: {}
)", ecmp, ecmp));
    const models::Cluster c = models::build_cluster(models::load_scenario(file, test::shipped_catalog()).cluster);
    for (Algorithm a : {Algorithm::Direct, Algorithm::Pairwise}) {
      planner::AlgorithmRequest req;
      req.collective = Collective::AlltoAll;
      req.nranks = 64;
      req.bytes = 64 * 4 * 12345;
      INFO(fmt::format("{} ECMP, {}", ecmp, planner::to_string(a)));
      const models::Schedule sched = planner::generate(a, req);
      check_same(c, sched, c.topology.gpus(), std::numeric_limits<double>::infinity(), a == Algorithm::Pairwise ? kChaotic : 1e-12);
      if (a == Algorithm::Direct) direct_solves[ecmp] = sim::AnalyticEngine(c).run(plan_on(sched, c.topology.gpus())).solves;
    }
  }
  INFO(fmt::format("direct AlltoAll solves: hash {}, balanced {}", direct_solves["hash"], direct_solves["balanced"]));
  CHECK(direct_solves["balanced"] < direct_solves["hash"]);
  // Eight ToR-wired nodes, 2 per leaf, 2:1 oversubscribed with 2 channels: the channel enters
  // the balanced rotation.
  for (const std::string ecmp : {"hash", "balanced"}) {
    const std::string file = dir.write(ecmp + "-tor.yaml", fmt::format(R"(name: {}-tor
cluster:
  nodes:
    - node: dgx-h100
      count: 8
  fabric:
    kind: fat-tree
    wiring: tor
    nodes_per_leaf: 2
    oversubscription: 2
    ecmp: {}
)", ecmp, ecmp));
    const models::Cluster c = models::build_cluster(models::load_scenario(file, test::shipped_catalog()).cluster);
    planner::AlgorithmRequest req;
    req.collective = Collective::AllReduce;
    req.nranks = 64;
    req.bytes = 64 * 4 * 54321;
    req.ranks_per_node = 8;
    req.channels = 2;
    INFO(fmt::format("{} ECMP, ring on ToR", ecmp));
    check_same(c, planner::generate(Algorithm::Ring, req), c.topology.gpus(), 20e9);
  }
}
