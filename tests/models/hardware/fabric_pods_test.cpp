// Three-tier fat trees: pods of leaf groups under a core tier with its own
// oversubscription, the scenario keys and their errors, routing over the core tier, and DP
// rings that cross pods as the communicator's rank order makes them. Expected values are
// computed by hand in the comments from the shipped link kinds (ib-ndr, roce-400g: 400 Gb/s =
// 50 GB/s per direction, 350 ns) and the fabric rules in models/hardware/fabric.hpp.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "support/input_error.hpp"
#include "models/hardware/router.hpp"
#include "models/hardware/topology_summary.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;
using Catch::Matchers::Contains;
using test::TempDir;

namespace {

models::Cluster cluster_from(const TempDir& dir, const std::string& yaml) {
  const std::string file = dir.write("s.yaml", yaml);
  return models::build_cluster(models::load_scenario(file, test::shipped_catalog()).cluster);
}

/// The InputError that loading `yaml` raises (key and message), or "" when it loads.
std::string load_error(const TempDir& dir, const std::string& yaml) {
  const std::string file = dir.write("bad.yaml", yaml);
  try {
    models::load_scenario(file, test::shipped_catalog());
  } catch (const support::InputError& e) {
    return e.key() + ": " + e.what();
  }
  return "";
}

std::string fabric_yaml(int nodes, const std::string& fabric) {
  return "cluster:\n  nodes:\n    - node: dgx-h100\n      count: " + std::to_string(nodes) + "\n  fabric:\n    kind: fat-tree\n" + fabric;
}

const models::PositionSummary& position(const models::TopologySummary& s, const std::string& label) {
  const auto it = std::find_if(s.positions.begin(), s.positions.end(), [&](const auto& p) { return p.position == label; });
  REQUIRE(it != s.positions.end());
  return *it;
}

int switches(const models::Topology& t, int tier) {
  int n = 0;
  for (models::DeviceId d = 0; d < t.num_devices(); ++d)
    n += t.device(d).kind == models::DeviceKind::NetworkSwitch && t.device(d).tier == tier ? 1 : 0;
  return n;
}

const planner::CostModel& nccl() {
  static const planner::CostModel m = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
  return m;
}

/// GPU `local` of every node, in node order: a DP group under Megatron's rank order when TP
/// fills the node (tp innermost, dp outermost: DP rank d is on node d).
std::vector<models::DeviceId> rail_group(const models::Cluster& c, int local) {
  std::vector<models::DeviceId> out;
  for (const auto& node : c.nodes) out.push_back(node.gpus[static_cast<std::size_t>(local)]);
  return out;
}

}  // namespace

TEST_CASE("three-tier fat tree: pods, spines per pod, cores, bandwidth between pods", "[fabric][pods]") {
  TempDir dir;
  // 8 DGX H100, ToR leaves of 2 nodes (16 NIC ports of 50 GB/s each), pods of 4 nodes
  // (2 leaves), non-blocking leaves, pod oversubscription 2:1.
  const models::Cluster c = cluster_from(dir, fabric_yaml(8, "    wiring: tor\n    nodes_per_leaf: 2\n    nodes_per_pod: 4\n"
                                                            "    pod_oversubscription: 2\n"));
  const models::Topology& t = c.topology;
  // Leaves: 8 / 2 = 4. Spines: one per leaf uplink port, 16 / 1 = 16 per pod, x 2 pods = 32.
  // Cores: a spine has 2 leaf ports down (2 leaves x 1 lane), 2 / 2 = 1 port up -> 1 core.
  CHECK(switches(t, 1) == 4);
  CHECK(switches(t, 2) == 32);
  CHECK(switches(t, 3) == 1);
  const models::TopologySummary s = summarize(c);
  CHECK(s.pods == 2);
  // Leaf-spine: 16 x 50 GB/s / 16 spines = 50 GB/s each; a spine has 2 x 50 GB/s down, so
  // 100 / 2 = 50 GB/s up to the core. Out of a pod: 16 spines x 50 GB/s = 800 GB/s for 32
  // GPUs = 25 GB/s per GPU = 50 GB/s / 2.
  CHECK(s.between_pods_per_gpu == Approx(25e9));
  // Bisection nodes 0-3 | 4-7 is pod 0 | pod 1: the core links, 800 GB/s.
  CHECK(s.bisection == Approx(800e9));
  // A GPU of the other pod (rank 32): GPU -> PCIe switch -> NIC -> leaf -> spine -> core ->
  // spine -> leaf -> NIC -> PCIe switch -> GPU: 4 PCIe + 6 network hops; 16 x 1 x 16 = 256
  // equal-cost paths (source pod's spine, core, destination pod's spine). Against a GPU in
  // the other leaf of the same pod (rank 16): two more network links of 350 ns.
  const auto& far = position(s, "other node, same rail, other leaf, other pod");
  const auto& near = position(s, "other node, same rail, other leaf, same pod");
  CHECK(far.rank == 32);
  CHECK(near.rank == 16);
  CHECK(far.hops == near.hops + 2);
  CHECK(far.hops == 10);
  CHECK(far.ecmp_paths == 256.0);
  CHECK(far.latency - near.latency == Approx(2 * 350e-9));
  CHECK(far.bandwidth == Approx(50e9));
  const std::string text = render_text(s);
  CHECK_THAT(text, Contains("2 pods of 4 nodes, 1 cores, pod oversubscription 2:1"));
  CHECK_THAT(text, Contains("spine-core"));

  // The engines' Router takes the same links as Topology::route for a flow between pods: a
  // path of Topology::route's length, through exactly one core.
  models::Router router(c);
  const models::DeviceId g0 = t.gpus()[0];
  const models::DeviceId g32 = t.gpus()[32];
  for (std::uint64_t flow : {0ULL, 1ULL, 12345ULL}) {
    const models::Path& p = router.route(g0, g32, flow);
    CHECK(p.links.size() == 10);
    int through_core = 0;
    for (models::LinkId id : p.links) through_core += t.device(t.link_target(id)).tier == 3 ? 1 : 0;
    CHECK(through_core == 1);
    CHECK(p.latency == Approx(far.latency));
  }
}

TEST_CASE("a partly filled last pod is cabled as a full one", "[fabric][pods]") {
  TempDir dir;
  // 10 nodes in pods of 4: pods of 4, 4 and 2 nodes. ToR leaves of 2 nodes, 16 spines per pod;
  // every spine of the third pod (one leaf) still gets the uplink of a full pod's spine
  // (2 leaves x 50 GB/s / 2 = 50 GB/s), not half of it.
  const models::Cluster c = cluster_from(dir, fabric_yaml(10, "    wiring: tor\n    nodes_per_leaf: 2\n    nodes_per_pod: 4\n"
                                                             "    pod_oversubscription: 2\n"));
  const models::Topology& t = c.topology;
  CHECK(switches(t, 2) == 48);
  int up_links = 0;
  for (models::LinkId id = 0; id < t.num_links(); ++id) {
    if (t.device(t.link_source(id)).tier == 2 && t.device(t.link_target(id)).tier == 3) {
      ++up_links;
      CHECK(t.link(id).bandwidth == Approx(50e9));
    }
  }
  CHECK(up_links == 48);
}

TEST_CASE("three-tier fabric keys: errors", "[fabric][pods][input]") {
  TempDir dir;
  // Pods are made of whole leaf groups.
  CHECK_THAT(load_error(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    nodes_per_pod: 3\n")),
             Contains("cluster.fabric.nodes_per_pod") && Contains("a multiple of nodes_per_leaf (2)"));
  CHECK_THAT(load_error(dir, fabric_yaml(8, "    nodes_per_pod: 4\n")),
             Contains("no 'nodes_per_pod' without 'nodes_per_leaf'"));
  // One pod needs no core tier.
  CHECK_THAT(load_error(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    nodes_per_pod: 8\n")),
             Contains("fewer nodes per pod than the cluster's 8 nodes"));
  // Core keys need pods.
  for (const std::string key : {"cores: 2", "pod_oversubscription: 7", "core: {latency: 1us}"}) {
    CHECK_THAT(load_error(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    " + key + "\n")),
               Contains("without 'nodes_per_pod'"));
  }
  // The ratio's range is the leaf tier's: 1 to 1000.
  for (const std::string ratio : {"0.5", "1001", "seven"}) {
    CHECK_THAT(load_error(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    nodes_per_pod: 4\n    pod_oversubscription: " + ratio + "\n")),
               Contains("cluster.fabric.pod_oversubscription") && Contains("from 1 to 1000"));
  }
  CHECK_THAT(load_error(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    nodes_per_pod: 4\n    cores: 0\n")),
             Contains("cluster.fabric.cores"));
  // A single switch has no tiers to add.
  CHECK_THAT(load_error(dir, "cluster:\n  nodes:\n    - node: dgx-h100\n      count: 2\n  fabric:\n    kind: single-switch\n"
                             "    nodes_per_pod: 1\n"),
             Contains("no 'nodes_per_pod' key for a single-switch fabric"));
  // Spine-core links are bounded like leaf-spine links (2^18): 1,024 pods x 16 spines x
  // 4,096 cores.
  CHECK_THAT(load_error(dir, fabric_yaml(2048, "    wiring: tor\n    nodes_per_leaf: 2\n    nodes_per_pod: 2\n    cores: 4096\n")),
             Contains("spine-core links"));
  // And a good one loads.
  CHECK(load_error(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    nodes_per_pod: 4\n    pod_oversubscription: 7:1\n    cores: 2\n"
                                       "    core: {link: roce-400g, latency: 1us}\n")) == "");
}

TEST_CASE("a DP ring crosses pods as its rank order makes it", "[fabric][pods][ring]") {
  TempDir dir;
  // 4 pods of 2 DGX H100 (rail-optimized, one leaf group of 2 nodes per pod: 8 leaves of 2
  // NIC ports), one spine per pod, one core. Leaf-spine: 2 x 50 GB/s = 100 GB/s; a spine has
  // 8 x 100 = 800 GB/s down and 800 / 4 = 200 GB/s up to the core (pod oversubscription 4).
  const models::Cluster c = cluster_from(dir, fabric_yaml(8, "    nodes_per_leaf: 2\n    nodes_per_pod: 2\n    spines: 1\n"
                                                            "    cores: 1\n    pod_oversubscription: 4\n"));
  // DP group (TP 8 fills each node; Megatron's order tp-cp-ep-pp-dp puts DP rank d on node d):
  // GPU 0 of nodes 0..7. NCCL's ring across nodes follows the node order of the ranks
  // (src/graph/connect.cc connectRings: node n receives from node n-1, nodes numbered by
  // first rank), so the ring is 0 -> 1 -> ... -> 7 -> 0 and crosses pods at 1->2, 3->4, 5->6
  // and 7->0: 4 edges. A ring AllReduce of S bytes moves 2 (n - 1) / n S = 1.75 S over every
  // edge, so the spine -> core links carry 4 x 1.75 S.
  planner::CollectiveOptions o;
  o.gpus = rail_group(c, 0);
  o.algorithm = planner::Algorithm::Ring;
  o.protocol = planner::Protocol::Simple;
  o.check_bound = false;
  const std::uint64_t bytes = 1ULL << 30;
  const planner::CollectiveResult one = planner::CollectiveRunner(c, nccl(), o).run(bytes);
  double up = 0;
  for (const auto& l : one.links) {
    const auto& t = c.topology;
    if (t.device(t.link_source(l.link)).tier == 2 && t.device(t.link_target(l.link)).tier == 3) up += l.bytes;
  }
  CHECK(up / (1.75 * static_cast<double>(bytes)) == Approx(4.0).epsilon(1e-6));
}

TEST_CASE("a DP AllReduce across pods is slower by the oversubscription's share", "[fabric][pods][ring]") {
  TempDir dir;
  // 2 pods of 8 DGX H100 (rail-optimized, leaf groups of 2 nodes: 4 groups x 8 rails = 32
  // leaves of 2 x 50 GB/s per pod), one spine per pod, one core, pod oversubscription 16:
  // a spine has 32 x 100 GB/s = 3.2 TB/s down and 3.2 / 16 = 200 GB/s up.
  const models::Cluster c = cluster_from(dir, fabric_yaml(16, "    nodes_per_leaf: 2\n    nodes_per_pod: 8\n    spines: 1\n"
                                                             "    cores: 1\n    pod_oversubscription: 16\n"));
  // Inside pod 0: GPU g of nodes 0..7, one group per GPU index g (the 8 DP groups of a TP-8
  // layout run at once). Every ring edge runs at the NIC's 50 GB/s (a leaf uplink of 100 GB/s
  // carries one edge of each rail's ring).
  // Across the pods: GPU g of nodes 0-3 and 8-11; each ring crosses pods twice (3 -> 8,
  // 11 -> 0), so 8 rings send 8 edges out of pod 0 over its one 200 GB/s core link: 25 GB/s
  // each, half the NIC rate. The bandwidth term 2 (n - 1) / n S / B doubles; the latency
  // terms (16 steps of a few us against 1.75 GiB / 25 GB/s = 75 ms) are below 0.1 %.
  const auto groups = [&](const std::vector<int>& nodes) {
    std::vector<std::vector<models::DeviceId>> out(8);
    for (int g = 0; g < 8; ++g)
      for (int n : nodes) out[static_cast<std::size_t>(g)].push_back(c.nodes[static_cast<std::size_t>(n)].gpus[static_cast<std::size_t>(g)]);
    return out;
  };
  const auto time = [&](const std::vector<int>& nodes, const std::string& engine) {
    auto all = groups(nodes);
    planner::CollectiveOptions o;
    o.gpus = all[0];
    o.concurrent.assign(all.begin() + 1, all.end());
    o.algorithm = planner::Algorithm::Ring;
    o.protocol = planner::Protocol::Simple;
    o.engine = *models::parse_engine_kind(engine);
    o.check_bound = false;
    return planner::CollectiveRunner(c, nccl(), o).run(1ULL << 30).time;
  };
  for (const std::string engine : {"analytic", "flow"}) {
    INFO(engine);
    const double inside = time({0, 1, 2, 3, 4, 5, 6, 7}, engine);
    const double across = time({0, 1, 2, 3, 8, 9, 10, 11}, engine);
    CAPTURE(inside, across);
    // Bandwidth terms: 1.75 x 2^30 B / 25 GB/s = 75.16 ms across, / 50 GB/s = 37.58 ms inside.
    // Across, the 25 GB/s core share dominates: within 0.5 %. Inside, the per-chunk latencies
    // of the step-level ring add 1.8 ms (4.7 %) at the NIC's full rate (measured: 39.36 ms),
    // so the ratio is 1.91 rather than the bandwidth terms' 2.
    const double s = 1.75 * static_cast<double>(1ULL << 30);
    CHECK(across == Approx(s / 25e9).epsilon(0.005));
    CHECK(inside == Approx(s / 50e9).epsilon(0.05));
    CHECK(inside > s / 50e9);
    CHECK(across / inside > 1.9);
    CHECK(across / inside < 2.0);
  }
}
