// Ready-time skew (CollectiveOptions::rank_ready, `ccsim collective --skew`).
#include <catch2/catch.hpp>

#include <algorithm>

#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "tests/planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

planner::CollectiveOptions ring_options(const models::Cluster& c, int n) {
  planner::CollectiveOptions o;
  o.collective = models::Collective::AllReduce;
  o.algorithm = planner::Algorithm::Ring;
  o.protocol = planner::Protocol::Simple;
  o.channels = 1;
  o.gpus.assign(c.topology.gpus().begin(), c.topology.gpus().begin() + n);
  return o;
}

}  // namespace

TEST_CASE("skew: one late rank in a one-channel ring delays the whole ring by its lateness", "[collective][skew]") {
  // A ring AllReduce is 2(n − 1) steps in which every rank's step k waits for its left
  // neighbour's step k − 1 and for its own step k − 1 (one FIFO connection per peer). The late
  // rank L's steps all run after its arrival d and form the ring's one pipeline with the
  // others' (one channel, no contention on NVSwitch), so the last op ends exactly d later:
  // from the first arrival the collective takes T + d, from the last T. Shifting every op by
  // d is a valid schedule, so no rank ends more than d later than without skew (e_k, from a
  // run with every rank at 0): each other rank's own time is at most e_k + d (it waited at
  // most d), L's own time at most e_L. Times to 1 ps (the engines coalesce events within
  // 1e-12 relative).
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const planner::CostModel& costs = test::shipped_costs(c);
  for (int n : {3, 8}) {
    for (int late : {0, n - 1}) {
      INFO("n = " << n << ", late rank " << late);
      planner::CollectiveOptions o = ring_options(c, n);
      o.rank_ready.assign(static_cast<std::size_t>(n), 0.0);
      const planner::CollectiveResult none = planner::CollectiveRunner(c, costs, o).run(64 << 20);
      const double T = none.time;
      const double d = 50e-6;
      o.rank_ready[static_cast<std::size_t>(late)] = d;
      const planner::CollectiveResult r = planner::CollectiveRunner(c, costs, o).run(64 << 20);
      REQUIRE(r.skew);
      CHECK(r.time == Approx(T).epsilon(1e-12));  // the table's time stays the one without skew
      CHECK(none.skew->from_first == Approx(T).epsilon(1e-12));
      CHECK(r.skew->from_first == Approx(T + d).margin(1e-12));
      CHECK(r.skew->from_last == Approx(T).margin(1e-12));
      double last_end = 0;
      for (int k = 0; k < n; ++k) {
        const double e = none.skew->rank_time[static_cast<std::size_t>(k)];
        const double own = r.skew->rank_time[static_cast<std::size_t>(k)];
        CHECK(own <= (k == late ? e : e + d) + 1e-12);
        last_end = std::max(last_end, own + o.rank_ready[static_cast<std::size_t>(k)]);
      }
      CHECK(last_end == Approx(T + d).margin(1e-12));
    }
  }
}

TEST_CASE("skew: all ranks equally late is no skew; a skew of the wrong size is refused", "[collective][skew]") {
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const planner::CostModel& costs = test::shipped_costs(c);
  planner::CollectiveOptions o = ring_options(c, 4);
  const double T = planner::CollectiveRunner(c, costs, o).run(1 << 20).time;
  o.rank_ready.assign(4, 0.0);
  const planner::CollectiveResult r = planner::CollectiveRunner(c, costs, o).run(1 << 20);
  REQUIRE(r.skew);
  CHECK(r.skew->from_first == Approx(T).epsilon(1e-12));
  CHECK(r.skew->from_last == Approx(T).epsilon(1e-12));
  o.rank_ready.assign(3, 0.0);
  CHECK_THROWS_AS(planner::CollectiveRunner(c, costs, o).run(1 << 20), std::invalid_argument);
}

TEST_CASE("skew: no rank finishes an AllReduce before the late rank has arrived, whatever the algorithm", "[collective][skew]") {
  // Every rank's result holds every rank's data, so its last op ends after the late rank's
  // arrival d (plus at least one hop). The phase-granularity tree (the fluid limit of a deep
  // pipeline, with no order between a rank's receive from below and its send down) would let
  // ranks off the late rank's path finish early: under skew the tree runs at step granularity.
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const planner::CostModel& costs = test::shipped_costs(c);
  for (const auto a : {planner::Algorithm::Ring, planner::Algorithm::Tree}) {
    for (const std::uint64_t bytes : {std::uint64_t{8192}, std::uint64_t{1} << 20}) {
      INFO(planner::to_string(a) << " at " << bytes << " B");
      planner::CollectiveOptions o;
      o.collective = models::Collective::AllReduce;
      o.algorithm = a;
      o.gpus.assign(c.topology.gpus().begin(), c.topology.gpus().end());
      const double d = 50e-6;
      o.rank_ready.assign(o.gpus.size(), 0.0);
      o.rank_ready[3] = d;
      const planner::CollectiveResult r = planner::CollectiveRunner(c, costs, o).run(bytes);
      REQUIRE(r.skew);
      for (std::size_t k = 0; k < o.gpus.size(); ++k) CHECK(r.skew->rank_time[k] + o.rank_ready[k] > d);
    }
  }
}
