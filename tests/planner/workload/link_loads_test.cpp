// What one step puts on each link (planner/workload/link_loads.hpp): op instances add their
// costs' traffic; utilisation divides by the link's capacity and the step.

#include <catch2/catch.hpp>

#include <vector>

#include "planner/workload/link_loads.hpp"
#include "test_support.hpp"

using namespace ccsim;

TEST_CASE("link loads: every op instance adds its cost's links; sorted by utilisation", "[workload]") {
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const models::Topology& t = c.topology;
  const models::LinkId a = 0, b = 1;
  REQUIRE(t.link(a).bandwidth > 0);
  REQUIRE(t.link(b).bandwidth > 0);
  // Cost 0 puts 100 bytes on link a (busy 1 s, peak 0.5); cost 1 puts 50 bytes on a (busy 2 s,
  // peak 0.75) and 1e12 bytes on b (busy 3 s, peak 0.25). Ops: cost 0, no communication,
  // cost 0, cost 1. Link a: 100 + 100 + 50 = 250 bytes, busy 1 + 1 + 2 = 4 s, peak 0.75;
  // link b: 1e12 bytes, busy 3 s, peak 0.25. Efficiency 0.5 for every kind, step 2 s:
  // utilisation = bytes / (bandwidth · 0.5 · 2) = bytes / bandwidth.
  std::vector<planner::CommCost> costs(2);
  costs[0].links = {{a, 100, 1, 0.5}};
  costs[1].links = {{a, 50, 2, 0.75}, {b, 1e12, 3, 0.25}};
  const std::vector<int> op_comm = {0, -1, 0, 1};
  const std::vector<double> efficiency(t.link_kinds().size(), 0.5);
  const std::vector<planner::LinkLoad> l = planner::link_loads({t, op_comm, costs, efficiency, 2.0});
  REQUIRE(l.size() == 2);
  CHECK(l[0].link == b);  // 1e12 bytes is far more of any link than 250
  CHECK(l[0].bytes == 1e12);
  CHECK(l[0].busy == 3.0);
  CHECK(l[0].peak == 0.25);
  CHECK(l[0].utilisation == Approx(1e12 / t.link(b).bandwidth).epsilon(1e-15));
  CHECK(l[1].link == a);
  CHECK(l[1].bytes == 250.0);
  CHECK(l[1].busy == 4.0);
  CHECK(l[1].peak == 0.75);
  CHECK(l[1].utilisation == Approx(250.0 / t.link(a).bandwidth).epsilon(1e-15));

  // Without efficiencies a link counts at its full bandwidth: half the utilisation above.
  const std::vector<planner::LinkLoad> full = planner::link_loads({t, op_comm, costs, {}, 2.0});
  CHECK(full[1].utilisation == Approx(250.0 / (2.0 * t.link(a).bandwidth)).epsilon(1e-15));
  // No communication op: no link.
  CHECK(planner::link_loads({t, std::vector<int>{-1, -1}, costs, efficiency, 2.0}).empty());
}

TEST_CASE("link loads: equal utilisation ties by link id", "[workload]") {
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const models::Topology& t = c.topology;
  // Links 3 and 1 carry bytes in proportion to their bandwidths: the same utilisation.
  std::vector<planner::CommCost> costs(1);
  costs[0].links = {{3, t.link(3).bandwidth, 1, 1}, {1, t.link(1).bandwidth, 1, 1}};
  const auto l = planner::link_loads({t, std::vector<int>{0}, costs, {}, 1.0});
  REQUIRE(l.size() == 2);
  CHECK(l[0].utilisation == l[1].utilisation);
  CHECK(l[0].link == 1);
  CHECK(l[1].link == 3);
}
