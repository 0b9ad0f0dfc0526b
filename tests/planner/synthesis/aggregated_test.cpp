#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "models/hardware/router.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/synthesis/aggregated.hpp"
#include "planner/synthesis/forest.hpp"
#include "planner/synthesis/synthesis_graph.hpp"
#include "support/hash.hpp"
#include "test_support.hpp"

using namespace ccsim;
using planner::synthesis::AggregatedForest;

namespace {

models::Cluster cluster_of(const std::string& path) {
  return models::build_scenario_cluster(models::load_scenario(path, test::shipped_catalog()));
}

std::vector<models::DeviceId> all_gpus(const models::Cluster& c) { return {c.topology.gpus().begin(), c.topology.gpus().end()}; }

/// ForestColl's exact optimum x* (bytes/s per root) of the same placement (forest.hpp).
double optimum(const models::Cluster& c, const std::vector<models::DeviceId>& gpus, bool reduce_scatter) {
  models::Router router(c);
  const planner::synthesis::SynthesisGraph g = planner::synthesis::synthesis_graph(c, router, gpus);
  planner::synthesis::ForestOptions o;
  o.build_trees = false;
  return planner::synthesis::allgather_forest(reduce_scatter ? g.reversed() : g, o).rate();
}

/// Writes every root's trees out (aggregated_tree), checks that each rank receives its whole
/// block exactly once over them, routes every edge with a fresh router and returns the rate the
/// summed loads allow: an enumeration independent of aggregated_forest's counting.
double enumerated_rate(const models::Cluster& c, const std::vector<models::DeviceId>& gpus, const AggregatedForest& f) {
  models::Router router(c);
  std::vector<double> load(c.topology.num_links(), 0.0);
  for (int root = 0; root < f.ranks; ++root) {
    std::int64_t den = 0;
    const auto edges = planner::synthesis::aggregated_tree(f, root, &den);
    std::vector<std::int64_t> got(static_cast<std::size_t>(f.ranks), 0);
    got[static_cast<std::size_t>(root)] = den;
    for (const auto& e : edges) {
      REQUIRE(got[static_cast<std::size_t>(e.parent)] > 0);  // parents before children
      got[static_cast<std::size_t>(e.child)] += e.weight;
      const models::DeviceId a = gpus[static_cast<std::size_t>(e.parent)], b = gpus[static_cast<std::size_t>(e.child)];
      // The engines' ECMP hash of a connection (source rank, destination rank, channel 0).
      const auto flow = [](int src, int dst) {
        return support::splitmix64((static_cast<std::uint64_t>(src) << 40) | (static_cast<std::uint64_t>(dst) << 16));
      };
      const auto& path = f.reduce_scatter ? router.route(b, a, flow(e.child, e.parent)) : router.route(a, b, flow(e.parent, e.child));
      for (models::LinkId l : path.links) load[l] += static_cast<double>(e.weight) / static_cast<double>(den);
    }
    for (std::int64_t w : got) REQUIRE(w == den);
  }
  double worst = 0;
  for (std::size_t l = 0; l < load.size(); ++l) worst = std::max(worst, load[l] / c.topology.link(static_cast<models::LinkId>(l)).bandwidth);
  return 1.0 / worst;
}

/// The first `ranks` GPUs of the shipped 1,024-GPU fabric (128 DGX H100, rail-optimized, leaves
/// of 32 nodes per rail, 2:1 spine) and their AllGather node-level trees.
struct Shipped1024 {
  models::Cluster cluster;
  std::vector<models::DeviceId> gpus;
  AggregatedForest f;
};
Shipped1024 first_of_1024(int ranks) {
  Shipped1024 s{cluster_of(test::source_path("scenarios/h100-1024gpu-2to1.yaml")), {}, {}};
  s.gpus = all_gpus(s.cluster);
  s.gpus.resize(static_cast<std::size_t>(ranks));
  models::Router router(s.cluster);
  s.f = planner::synthesis::aggregated_forest(s.cluster, router, s.gpus, false);
  return s;
}

}  // namespace

// 8 DGX H100 (8 GPUs, each with its own 400G NIC, 50 GB/s per direction; NVSwitch 450 GB/s per
// GPU per direction) on a rail-optimized fat tree with two nodes per leaf (4 leaves per rail).
// Per root and unit rate x the node-level trees load
//   a NIC: N − 1 = 7 blocks in and 7 out (every endpoint stands in for 6 / 2 = 3 foreign roots of
//   its leaf's 6, and sends its own block to 3 other leaves and 1 leaf mate): x ≤ 50/7 GB/s;
//   a GPU's NVSwitch port: 8 blocks (its own and 7 from its rail) to 7 peers on the node's optimal
//   intra-node trees (450/7 each): x ≤ 450/56 = 8.04 GB/s;
// so x = 50/7 GB/s, algbw 64·50/7 = 457.14 GB/s, which is ForestColl's optimum: the cut of one
// node, 8 NICs · 50 GB/s into it and 56 blocks to enter, 400/56 = 50/7.
TEST_CASE("aggregated: node-level trees on 8 DGX H100 reach the one-node cut", "[synthesis][aggregated]") {
  test::TempDir dir;
  const models::Cluster c = cluster_of(dir.write("h100x8.yaml", "cluster:\n  nodes: [{node: dgx-h100, count: 8}]\n"
                                                                "  fabric: {kind: fat-tree, wiring: rail-optimized, nodes_per_leaf: 2}\n"));
  const auto gpus = all_gpus(c);
  for (bool rs : {false, true}) {
    INFO((rs ? "ReduceScatter" : "AllGather"));
    models::Router router(c);
    const AggregatedForest f = planner::synthesis::aggregated_forest(c, router, gpus, rs);
    CHECK(f.nodes == 8);
    CHECK(f.ranks_per_node == 8);
    CHECK(f.leaves == 4);
    CHECK(f.intra_classes == 1);
    CHECK(f.rate == Approx(50e9 / 7).epsilon(1e-12));
    CHECK(f.rate == Approx(optimum(c, gpus, rs)).epsilon(1e-9));
    CHECK(c.topology.link(f.bottleneck).link_class == models::LinkClass::Network);
    CHECK(f.bottleneck_load == Approx(7.0));
    // Root to a leaf mate or representative, representative to its leaf mates, then the
    // intra-node trees (ForestColl's trees after switch removal need not be stars).
    CHECK(f.height == 2 + f.intra[0].height());
    CHECK(enumerated_rate(c, gpus, f) == Approx(f.rate).epsilon(1e-12));
  }
}

// ForestColl's 8-node DGX A100 case (arXiv 2402.06787; the test vector): one HDR NIC
// (25 GB/s) per GPU, NVSwitch 300 GB/s. One node's cut: 8 · 25 / 56 = 25/7 GB/s per root,
// algbw 64 · 25/7 = 228.57 GB/s; the trees' NICs carry 7 blocks, their NVSwitch ports
// 56/300: the NICs bind, so the trees reach it.
TEST_CASE("aggregated: ForestColl's 8-node DGX A100 case at 228.57 GB/s", "[synthesis][aggregated]") {
  const models::Cluster c = cluster_of(test::source_path("tests/data/synthesis/dgx-a100-8node-rail.yaml"));
  const auto gpus = all_gpus(c);
  models::Router router(c);
  const AggregatedForest f = planner::synthesis::aggregated_forest(c, router, gpus, false);
  CHECK(f.rate * 64 == Approx(64.0 * 200e9 / 56).epsilon(1e-12));
  CHECK(f.rate == Approx(optimum(c, gpus, false)).epsilon(1e-9));
  CHECK(enumerated_rate(c, gpus, f) == Approx(f.rate).epsilon(1e-12));
}

// No hidden symmetry: one NIC of node 3 at half its rate gives node 3 a class of its own (its
// intra-node forest is found again, not borrowed), and the rail through that NIC now carries its
// 7 blocks at 25 GB/s: x = 25/7 GB/s, below the optimum (which routes around the slow NIC
// through node 3's other NICs: one node's cut 7·50 + 25 = 375 GB/s over 56 blocks), so the
// fraction is reported, not assumed.
TEST_CASE("aggregated: a degraded NIC splits its node's class and sets the rate", "[synthesis][aggregated]") {
  test::TempDir dir;
  const models::Cluster c = cluster_of(dir.write("slow.yaml", "cluster:\n  nodes: [{node: dgx-h100, count: 8}]\n"
                                                              "  fabric: {kind: fat-tree, wiring: rail-optimized}\n"
                                                              "what_if:\n  links:\n    - {device: node3/nic2, factor: 0.5}\n"));
  const auto gpus = all_gpus(c);
  models::Router router(c);
  const AggregatedForest f = planner::synthesis::aggregated_forest(c, router, gpus, false);
  CHECK(f.intra_classes == 2);
  CHECK(f.rate == Approx(25e9 / 7).epsilon(1e-12));
  const std::string ends = c.topology.name(c.topology.link_source(f.bottleneck)) + " " + c.topology.name(c.topology.link_target(f.bottleneck));
  CHECK(ends.find("node3/nic2") != std::string::npos);
  const double opt = optimum(c, gpus, false);
  CHECK(opt == Approx(375e9 / 56).epsilon(1e-9));
  CHECK(f.rate < opt);
  CHECK(enumerated_rate(c, gpus, f) == Approx(f.rate).epsilon(1e-12));
}

// Unequal leaves: 6 nodes in leaves of 4 (A) and 2 (B) per rail. One direct send per root and
// foreign leaf would leave B taking 4 blocks in and sending 2 out, and A's NICs sending 3 + 1 + 1
// while B's send 1 + 1 + 2 ... unevenly; balanced, each of B's 2 roots sends to 2 endpoints of A
// (4 up, 4 down on both leaves), and every NIC sends exactly N − 1 = 5 blocks:
//   A: 3 leaf mates + 1 into B + 1 passed on (B's 2 blocks reach 2 of A's 4 directly, each direct
//   receiver feeds one other); B: 1 leaf mate + 2 into A + 2 passed on (A's 4 blocks, one each).
// Two GPUs per node (local 1 and 5, listed in reverse in one node: the order does not matter):
// one node's cut is 2 · 50 GB/s over 10 blocks = 10 GB/s, the NICs' 50/5.
TEST_CASE("aggregated: unequal leaves balance their NICs, and rank order does not matter", "[synthesis][aggregated]") {
  test::TempDir dir;
  const models::Cluster c = cluster_of(dir.write("six.yaml", "cluster:\n  nodes: [{node: dgx-h100, count: 6}]\n"
                                                             "  fabric: {kind: fat-tree, wiring: rail-optimized, nodes_per_leaf: 4}\n"));
  std::vector<models::DeviceId> gpus;
  for (int node = 0; node < 6; ++node) {
    gpus.push_back(c.topology.gpus()[static_cast<std::size_t>(node * 8 + 1)]);
    gpus.push_back(c.topology.gpus()[static_cast<std::size_t>(node * 8 + 5)]);
  }
  models::Router router(c);
  const AggregatedForest f = planner::synthesis::aggregated_forest(c, router, gpus, false);
  CHECK(f.ranks_per_node == 2);
  CHECK(f.leaves == 2);
  // Rail 0 is local GPU 1 of every node: ranks 0, 2, ..., 10; leaf B holds ranks 8 and 10.
  CHECK(f.direct[0] == std::vector<std::int64_t>{0, 4, 4, 0});
  CHECK(planner::synthesis::aggregated_receivers(f, 8, 0).size() == 2);
  CHECK(planner::synthesis::aggregated_receivers(f, 0, 1).size() == 1);
  CHECK(planner::synthesis::aggregated_receivers(f, 0, 0).empty());
  CHECK(f.rate == Approx(10e9).epsilon(1e-12));
  CHECK(f.rate == Approx(optimum(c, gpus, false)).epsilon(1e-9));
  CHECK(enumerated_rate(c, gpus, f) == Approx(f.rate).epsilon(1e-12));
  // The same GPUs listed in another order: the same rate.
  std::vector<models::DeviceId> shuffled = gpus;
  std::swap(shuffled[0], shuffled[1]);
  std::swap(shuffled[4], shuffled[9]);
  models::Router router2(c);
  CHECK(planner::synthesis::aggregated_forest(c, router2, shuffled, false).rate == Approx(f.rate).epsilon(1e-12));
}

// A job that does not fill its last leaf: the first 33 nodes of the 1,024-GPU fabric (leaves of
// 32 nodes per rail): leaf B holds one node, whose roots send to all 32 endpoints of leaf A while
// A's roots send one block each to B: every NIC sends 31 + 1 = 32 = N − 1 blocks, the one-node cut
// 8 · 50 GB/s over 256 blocks.
TEST_CASE("aggregated: a job that does not fill its last leaf reaches the one-node cut", "[synthesis][aggregated]") {
  const Shipped1024 s = first_of_1024(264);
  const models::Cluster& c = s.cluster;
  const auto& gpus = s.gpus;
  const AggregatedForest& f = s.f;
  CHECK(f.rate == Approx(400e9 / 256).epsilon(1e-12));
  CHECK(f.rate == Approx(optimum(c, gpus, false)).epsilon(1e-9));
}

TEST_CASE("aggregated: placements the node-level trees do not fit are refused with the reason", "[synthesis][aggregated]") {
  const auto reason = [](const std::string& path, int ranks) {
    const models::Cluster c = cluster_of(test::source_path(path));
    std::vector<models::DeviceId> gpus = all_gpus(c);
    gpus.resize(static_cast<std::size_t>(ranks));
    models::Router router(c);
    try {
      (void)planner::synthesis::aggregated_forest(c, router, gpus, false);
    } catch (const planner::synthesis::NotAggregatable& e) {
      return std::string(e.what());
    }
    return std::string("built");
  };
  CHECK(reason("tests/data/synthesis/unequal-4-6-gpus.yaml", 10).find("as many ranks on every node") != std::string::npos);
  CHECK(reason("scenarios/dgx-h100-1node.yaml", 8).find("one node") != std::string::npos);
  CHECK(reason("tests/data/synthesis/h100-2x8-one-nic.yaml", 16).find("shares its NIC") != std::string::npos);
  CHECK(reason("scenarios/h100-2x8-200g.yaml", 16) == "built");
}

// The shipped 1,024-GPU fabric (128 DGX H100, rail-optimized, 2:1 spine): the node-level trees
// reach ForestColl's optimum, one node's cut 8 · 50 GB/s over 1016 blocks (algbw 403.15 GB/s).
TEST_CASE("aggregated: 1,024 H100 reach the optimum", "[synthesis][aggregated][heavy]") {
  const Shipped1024 s = first_of_1024(1024);
  const models::Cluster& c = s.cluster;
  const auto& gpus = s.gpus;
  const AggregatedForest& f = s.f;
  CHECK(f.rate == Approx(400e9 / 1016).epsilon(1e-12));
  CHECK(f.rate == Approx(optimum(c, gpus, false)).epsilon(1e-9));
  CHECK(f.chained[0] == std::vector<char>{0, 0, 0, 0});
  CHECK(f.height == 2 + f.intra[0].height());
}

// 127 nodes of the 1,024-GPU fabric: leaves of 32, 32, 32 and 31 nodes per rail. The 32-node
// leaves take 95 outside blocks and the 31-node one 96, which their sizes do not divide: they pass
// them on in chains (one send per endpoint and block), so every NIC sends N − 1 or N blocks and
// the trees reach at least (N − 1)/N of the one-node cut (8 · 50 GB/s over 1,008 blocks). With
// the full 128 nodes (the test above) every leaf takes 96 = 3 · 32 and keeps its stars.
TEST_CASE("aggregated: a leaf whose outside blocks its size does not divide passes them on in chains", "[synthesis][aggregated][heavy]") {
  const Shipped1024 s = first_of_1024(1016);
  const models::Cluster& c = s.cluster;
  const auto& gpus = s.gpus;
  const AggregatedForest& f = s.f;
  const double opt = optimum(c, gpus, false);
  CHECK(opt == Approx(400e9 / 1008).epsilon(1e-9));
  CHECK(f.rate >= opt * 126.0 / 127.0 * (1 - 1e-12));
  CHECK(f.rate <= opt * (1 + 1e-9));
  CHECK(f.chained[0] == std::vector<char>{1, 1, 1, 1});
  CHECK(enumerated_rate(c, gpus, f) == Approx(f.rate).epsilon(1e-12));
}
