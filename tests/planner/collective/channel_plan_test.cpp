// The channel plan (planner/collective/channel_plan.hpp): the rings, node rings, node groups and
// tree pairs planned for small clusters, each expectation worked out by hand from the rules in
// the header.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "planner/collective/channel_plan.hpp"
#include "test_support.hpp"

using namespace ccsim;
using Rings = std::vector<std::vector<int>>;

namespace {

models::Cluster cluster_of(const std::string& yaml) {
  const test::TempDir dir;
  const std::string path = dir.write("scenario.yaml", yaml);
  return models::build_cluster(models::load_scenario(path, test::shipped_catalog()).cluster);
}

/// The counts of a plan: ranks, nodes, ranks per node, ring channels, tree pairs.
struct Counts {
  int ranks, nodes, ranks_per_node, channels, tree_pairs;
  bool operator==(const Counts&) const = default;
};
Counts counts(const planner::ChannelPlan& p) { return {p.ranks, p.nodes, p.ranks_per_node, p.channels, p.tree_pairs}; }

std::vector<models::DeviceId> gpus_of(const models::Cluster& c, const std::vector<int>& indices) {
  std::vector<models::DeviceId> out;
  for (int i : indices) out.push_back(c.topology.gpus()[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace

TEST_CASE("2 nodes x 8 GPUs on NVSwitch, rail-optimized: one ring per rail, every other node backwards", "[channels]") {
  // Ranks 0-7 on node 0, 8-15 on node 1; no direct GPU links (NVSwitch). Channel c walks node 0
  // from local c+1 round to local c, then node 1 the same way backwards:
  //   c = 0: 1 2 3 4 5 6 7 0 | 8 15 14 13 12 11 10 9
  //   c = 3: 4 5 6 7 0 1 2 3 | 11 10 9 8 15 14 13 12
  // so the hop between the nodes (0 -> 8, 3 -> 11) and the wrap-around (9 -> 1, 12 -> 4) join
  // GPUs of one local index: one NIC rail. One tree pair per rail, headed by local rank r.
  const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  const planner::ChannelPlan plan = planner::plan_channels(c, c.topology.gpus());
  CHECK(counts(plan) == Counts{16, 2, 8, 8, 8});
  CHECK(plan.node_orders.empty());
  CHECK(plan.node_groups.empty());
  REQUIRE(plan.ring_orders.size() == 8);
  CHECK(plan.ring_orders[0] == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 0, 8, 15, 14, 13, 12, 11, 10, 9});
  CHECK(plan.ring_orders[3] == std::vector<int>{4, 5, 6, 7, 0, 1, 2, 3, 11, 10, 9, 8, 15, 14, 13, 12});
  for (int ch = 0; ch < 8; ++ch) {
    const std::vector<int>& ring = plan.ring_orders[static_cast<std::size_t>(ch)];
    CHECK(ring[7] == ch);       // node 0 left at local c ...
    CHECK(ring[8] == 8 + ch);   // ... node 1 entered at local c
    CHECK(ring[15] % 8 == ring[0]);  // the wrap-around stays on one rail too
  }
  CHECK(plan.tree_heads == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});

  // --channels 4: four ring channels (the first four orders) and four tree pairs.
  const planner::ChannelPlan four = planner::plan_channels(c, c.topology.gpus(), 4);
  CHECK(counts(four) == Counts{16, 2, 8, 4, 4});
  CHECK(four.ring_orders == plan.ring_orders);
}

TEST_CASE("one NVSwitch node: NCCL's ring channel count in rank order, one tree pair", "[channels]") {
  // NCCL's search (ring_search.hpp, nccl_nvswitch_ring_search) over each GPU's NVLinks to the
  // switch as nccl.yaml credits them: 18 × 25 GB/s × 0.824 = 370.8 GB/s, 6 × 60 duplicated to
  // 12 channels. Without a table the raw 450 GB/s gives 9 × 50 = 450, duplicated to 18, at
  // most kMaxRingChannels = 16.
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  const planner::ChannelPlan plan = planner::plan_channels(c, c.topology.gpus(), 0, &costs);
  CHECK(counts(plan) == Counts{8, 1, 8, 12, 1});
  CHECK(counts(planner::plan_channels(c, c.topology.gpus())) == Counts{8, 1, 8, 16, 1});
  CHECK(plan.ring_orders.empty());  // every ring is 0, 1, ..., 7
  CHECK(plan.node_orders.empty());
  CHECK(plan.tree_heads.empty());
}

TEST_CASE("4-GPU NVLink mesh: the six directed Hamiltonian rings use every link twice", "[channels]") {
  // 4 GPUs joined pairwise by equal links (B per direction). A ring uses 4 of the 12 directed
  // links; K rings give K × B / (most rings on one link). The 3 undirected Hamiltonian cycles of
  // K4 (0-1-2-3, 0-1-3-2, 0-2-1-3) each hold 4 of the 6 pairs, so every pair is in exactly 2;
  // walked both ways they are 6 rings with every directed link in exactly 2: 6 × B/2 = 3B, each
  // GPU's whole outgoing capacity, the upper bound. Fewer rings cannot reach it (K = 2: 2B;
  // K = 3, 4, 5: some link carries 2, at most 2.5B), so the search keeps these 6.
  const models::Cluster c = cluster_of("cluster:\n  nodes:\n    - node: hgx-h100-4gpu\n");
  const planner::ChannelPlan plan = planner::plan_channels(c, c.topology.gpus());
  CHECK(counts(plan) == Counts{4, 1, 4, 6, 6});
  REQUIRE(plan.node_orders.size() == 6);
  std::map<std::pair<int, int>, int> uses;
  std::set<std::vector<int>> distinct;
  for (const std::vector<int>& ring : plan.node_orders) {
    REQUIRE(ring.size() == 4);
    CHECK(ring.front() == 0);  // listed from GPU 0
    std::vector<int> sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<int>{0, 1, 2, 3});
    for (std::size_t i = 0; i < 4; ++i) ++uses[{ring[i], ring[(i + 1) % 4]}];
    distinct.insert(ring);
  }
  CHECK(distinct.size() == 6);
  CHECK(uses.size() == 12);
  for (const auto& [link, n] : uses) CHECK(n == 2);
  // One node: the rings are the searched ones, one channel and one tree pair each.
  CHECK(plan.ring_orders == plan.node_orders);
  CHECK(plan.tree_heads.empty());
}

TEST_CASE("unequal nodes (4 + 6 GPUs): rings walk each node's ranks, one per rank of the smaller", "[channels]") {
  // Node 0 holds ranks 0-3, node 1 ranks 4-9 (g1 = 4 5 6 7 8 9). Channel c walks node 0 from its
  // local c+1 round to local c, node 1 from its local c+1 round to local c backwards; 4 channels:
  //   c = 0: 1 2 3 0 | (5 6 7 8 9 4 reversed) 4 9 8 7 6 5
  //   c = 1: 2 3 0 1 | (6 7 8 9 4 5 reversed) 5 4 9 8 7 6
  //   c = 3: 0 1 2 3 | (8 9 4 5 6 7 reversed) 7 6 5 4 9 8
  // so the first node-to-node hops stay on one rail (local c to local c). Tree: one pair per
  // rail of node 0's GPUs (one NIC each), headed by local ranks 0-3.
  const models::Cluster c = test::cluster_at("tests/data/real-cases/h100-4plus6-gpus.yaml");
  REQUIRE(c.topology.gpus().size() == 10);
  const planner::ChannelPlan plan = planner::plan_channels(c, c.topology.gpus());
  CHECK(counts(plan) == Counts{10, 2, 0, 4, 4});
  CHECK(plan.node_groups == Rings{{0, 1, 2, 3}, {4, 5, 6, 7, 8, 9}});
  REQUIRE(plan.ring_orders.size() == 4);
  CHECK(plan.ring_orders[0] == std::vector<int>{1, 2, 3, 0, 4, 9, 8, 7, 6, 5});
  CHECK(plan.ring_orders[1] == std::vector<int>{2, 3, 0, 1, 5, 4, 9, 8, 7, 6});
  CHECK(plan.ring_orders[3] == std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4, 9, 8});
  CHECK(plan.tree_heads == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("ranks not in node order: each node's ranks as they come", "[channels]") {
  // GPUs 0, 8, 1, 9 of 2 x 8: rank 0 and 2 on node 0, ranks 1 and 3 on node 1. Two channels
  // (the smaller node holds 2 ranks): c = 0: node 0 "2 0", node 1 "3 1" backwards -> 2 0 1 3;
  // c = 1: node 0 "0 2", node 1 "1 3" backwards -> 0 2 3 1. Tree heads: the first ranks on
  // node 0 before another node's rank: rank 0 alone (rail 0), one pair.
  const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  const planner::ChannelPlan plan = planner::plan_channels(c, gpus_of(c, {0, 8, 1, 9}));
  CHECK(counts(plan) == Counts{4, 2, 0, 2, 1});
  CHECK(plan.node_groups == Rings{{0, 2}, {1, 3}});
  CHECK(plan.ring_orders == Rings{{2, 0, 1, 3}, {0, 2, 3, 1}});
  CHECK(plan.tree_heads == std::vector<int>{0});
  CHECK_THROWS_AS(planner::plan_channels(c, {}), std::invalid_argument);
}

TEST_CASE("channel plan: nodes of one class with other local GPUs are read each (DGX-1 x 2)", "[channels][node-class]") {
  // DGX-1's hybrid cube-mesh: local GPUs 0-3 are all NVLinked, but of 0, 1, 4, 5 only the pairs
  // 0-1, 0-4, 1-5 and 4-5 are. A group of GPUs 0-3 of node 0 and 0, 1, 4, 5 of node 1 (ranks
  // 8, 9, 12, 13) must get rings whose every hop inside a node is an NVLink on both nodes, and
  // the same rings whichever node comes first.
  const models::Cluster c = cluster_of("cluster:\n  nodes: [{node: dgx1-v100, count: 2}]\n  fabric: {kind: single-switch}\n");
  const models::Topology& t = c.topology;
  const auto nvlinked = [&](int a, int b) {
    for (models::LinkId id : t.out_links(t.gpus()[static_cast<std::size_t>(a)]))
      if (t.link_target(id) == t.gpus()[static_cast<std::size_t>(b)] && t.link(id).link_class == models::LinkClass::ScaleUp) return true;
    return false;
  };
  const std::vector<int> node0 = {0, 1, 2, 3}, node1 = {8, 9, 12, 13};
  std::vector<int> first = node0, second = node1;
  first.insert(first.end(), node1.begin(), node1.end());
  second.insert(second.end(), node0.begin(), node0.end());
  const planner::ChannelPlan a = planner::plan_channels(c, gpus_of(c, first), 0);
  const planner::ChannelPlan b = planner::plan_channels(c, gpus_of(c, second), 0);
  REQUIRE(a.ranks_per_node == 4);
  REQUIRE_FALSE(a.node_orders.empty());
  CHECK(a.node_orders == b.node_orders);
  for (const auto& ring : a.node_orders)
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int u = ring[i], v = ring[(i + 1) % ring.size()];
      CHECK(nvlinked(node0[static_cast<std::size_t>(u)], node0[static_cast<std::size_t>(v)]));
      CHECK(nvlinked(node1[static_cast<std::size_t>(u)], node1[static_cast<std::size_t>(v)]));
    }
}
