// Node classes (Topology::node_class): nodes whose templates are equal share one class, and
// the caches that treat nodes as alike key on it; one link apart, they do not. The cluster is
// tests' 2-node DGX H100 (scenarios/h100-2x8-200g.yaml) split into two groups of one node.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "models/hardware/router.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

/// The two DGX H100 nodes of h100-2x8-200g.yaml as two groups of one node each.
models::ClusterSpec two_groups() {
  models::ClusterSpec spec =
      models::load_scenario(test::source_path("scenarios/h100-2x8-200g.yaml"), test::shipped_catalog()).cluster;
  REQUIRE(spec.groups.size() == 1);
  spec.groups[0].count = 1;
  spec.groups.push_back(spec.groups[0]);
  return spec;
}

/// The first GPU -> NVSwitch link of local GPU 0 on `node`.
models::LinkId first_nvlink(const models::Topology& t, int node) {
  const models::DeviceId gpu0 = t.gpus()[static_cast<std::size_t>(node * 8)];
  for (models::LinkId id : t.out_links(gpu0))
    if (t.link(id).link_class == models::LinkClass::ScaleUp) return id;
  throw std::logic_error("no NVLink");
}

}  // namespace

TEST_CASE("node classes: equal templates share a class, one link kind apart they do not", "[topology][node-class]") {
  const models::Cluster same = models::build_cluster(two_groups());
  CHECK(same.node_group == std::vector<int>{0, 1});
  CHECK(same.topology.num_node_classes() == 1);
  CHECK(same.topology.node_class(0) == same.topology.node_class(1));
  CHECK(same.topology.class_representative(0) == 0);

  models::ClusterSpec spec = two_groups();
  spec.groups[1].node.gpu.scaleup_link->bandwidth /= 2;  // nvlink4 at half its 25 GB/s per link
  const models::Cluster apart = models::build_cluster(spec);
  CHECK(apart.topology.num_node_classes() == 2);
  CHECK(apart.topology.node_class(0) == 0);
  CHECK(apart.topology.node_class(1) == 1);
  CHECK(apart.topology.class_representative(1) == 1);

  // The router's cached routes inside a node are per class: node 1's GPU 0 -> GPU 1 route has
  // its own (half) bandwidth, not node 0's, and each equals the uncached Topology::route.
  models::Router router(apart);
  const auto& g = apart.topology.gpus();
  const double b0 = router.route(g[0], g[1]).bandwidth;
  const double b1 = router.route(g[8], g[9]).bandwidth;
  CHECK(b0 == apart.topology.route(g[0], g[1], 1).path.bandwidth);
  CHECK(b1 == apart.topology.route(g[8], g[9], 1).path.bandwidth);
  CHECK(b1 == b0 / 2);
}

TEST_CASE("node classes: a perturbed link splits its node's class, ids never reused", "[topology][node-class]") {
  models::Cluster c = models::build_cluster(two_groups());
  models::Topology& t = c.topology;
  models::Router router(c);
  const auto& g = t.gpus();
  // Fill the router's cache for class 0 through node 0, then halve one NVLink of node 1.
  const double before = router.route(g[0], g[1]).bandwidth;
  REQUIRE(router.route(g[8], g[9]).bandwidth == before);
  const models::LinkId link = first_nvlink(t, 1);
  t.set_bandwidth(link, t.link(link).bandwidth / 2);
  CHECK(t.node_class(0) == 0);
  CHECK(t.node_class(1) == 1);
  CHECK(t.num_node_classes() == 2);
  // A router made after the change sees it on node 1 only (GPU 0's NVLinks to the switch are
  // parallel, so the route takes the first: the halved one).
  models::Router fresh(c);
  CHECK(fresh.route(g[8], g[9]).bandwidth == t.route(g[8], g[9], 1).path.bandwidth);
  CHECK(fresh.route(g[8], g[9]).bandwidth == before / 2);
  CHECK(fresh.route(g[0], g[1]).bandwidth == before);
  // The router made before: its cached class-0 routes are node 0's, still right for node 0,
  // and node 1 (now class 1) is routed afresh.
  CHECK(router.route(g[0], g[1]).bandwidth == before);
  CHECK(router.route(g[8], g[9]).bandwidth == before / 2);

  // Perturbing node 1 again gives it another fresh id: nothing cached under id 1 is served.
  t.set_bandwidth(link, t.link(link).bandwidth / 2);
  CHECK(t.node_class(1) == 2);
  CHECK_THROWS_AS(t.class_representative(1), std::out_of_range);
  // Splitting the representative: the class passes to its next node.
  models::Cluster d = models::build_cluster(two_groups());
  CHECK(d.topology.split_node_class(0) == 1);
  CHECK(d.topology.class_representative(0) == 1);
  CHECK(d.topology.class_representative(1) == 0);
  CHECK_THROWS_AS(d.topology.set_node_classes({0}), std::invalid_argument);
  CHECK_THROWS_AS(d.topology.set_node_classes({0, 2}), std::invalid_argument);
}
