// Cross-dimension contention in a workload step (planner/workload/contention.hpp): ops of
// different dimensions that overlap on shared links are run together, and lose what the fluid
// model says they lose.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "models/hardware/router.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/workload/workload_runner.hpp"
#include "planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

struct Run {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::WorkloadResult result;
};

Run run(const std::string& path, bool contention) {
  Run r{models::load_scenario(path, test::shipped_catalog()), {}, {}};
  r.scenario.simulation.contention = contention;
  r.cluster = models::build_scenario_cluster(r.scenario);
  const auto compute = planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5");
  planner::WorkloadRunner runner(r.scenario, r.cluster, test::shipped_costs(r.cluster), compute, models::EngineKind::Analytic);
  r.result = runner.run();
  return r;
}

const planner::DimensionContention& dim(const planner::ContentionResult& c, const std::string& name) {
  for (const auto& d : c.dims)
    if (d.dim == name) return d;
  FAIL("no dimension " << name);
  return c.dims.front();
}

}  // namespace

TEST_CASE("contention: a PP send beside a DP bucket on one NIC runs at half rate", "[workload][contention]") {
  // tests/data/what-if/dgx-h100-4node-dp-pp-contention.yaml: one PP send of S = 64 MiB (wire
  // bytes S·w) overlaps a DP ring bucket on node k's NIC (effective bandwidth B). The send
  // alone takes T = α + S·w/B. Beside the bucket (which keeps the NIC busy throughout), the
  // send gets B/2: it takes α + 2·S·w/B, losing S·w/B = T − α; the bucket loses the time the
  // NIC spent on the send's bytes, S·w/B too. The step grows by that time at most.
  const std::string path = test::source_path("tests/data/what-if/dgx-h100-4node-dp-pp-contention.yaml");
  const Run alone = run(path, false);
  const Run shared = run(path, true);
  CHECK_FALSE(alone.result.contention.has_value());
  REQUIRE(shared.result.contention.has_value());
  const planner::ContentionResult& c = *shared.result.contention;
  CHECK(c.converged);
  CHECK(c.step_alone == Approx(alone.result.step_time).epsilon(1e-12));
  // The PP send's bandwidth term S·w/B (every PP instance is the same 64 MiB send), from its
  // run's costs and route: B is the slowest link of the path times its efficiency.
  const planner::CommCost* send = nullptr;
  for (const auto& cost : shared.result.comm_costs)
    if (cost.algorithm == "p2p") send = &cost;
  REQUIRE(send != nullptr);
  REQUIRE(send->plan);
  models::Router router(shared.cluster);
  const sim::CostParams& k = send->plan->cost;
  double bw = 1e300;
  for (models::LinkId id : router.route(send->plan->rank_gpu[0], send->plan->rank_gpu[1]).links) {
    const models::Link& l = shared.cluster.topology.link(id);
    bw = std::min(bw, l.bandwidth * (l.kind < k.link_efficiency.size() ? k.link_efficiency[l.kind] : 1.0));
  }
  const double t_pp = 64.0 * 1024 * 1024 * k.wire_factor / bw;
  CHECK(t_pp < send->time);
  CHECK(t_pp > send->time - 50e-6);  // the rest is α: path and step latency
  const auto& pp = dim(c, "PP");
  const auto& dp = dim(c, "DP");
  REQUIRE(pp.slowed >= 1);
  const double lost_pp = pp.contended - pp.alone, lost_dp = dp.contended - dp.alone;
  CHECK(lost_pp == Approx(static_cast<double>(pp.slowed) * t_pp).epsilon(1e-6));
  CHECK(lost_dp == Approx(lost_pp).epsilon(1e-6));
  // All of it lost to the other: PP to DP, DP to PP.
  REQUIRE(pp.to.size() == 1);
  CHECK(pp.to.front().first == "DP");
  CHECK(pp.to.front().second == Approx(lost_pp).epsilon(1e-12));
  REQUIRE(dp.to.size() == 1);
  CHECK(dp.to.front().first == "PP");
  // TP stays on NVLink: nothing to share with the NIC traffic.
  CHECK(dim(c, "TP").slowed == 0);
  // Each op at least as long as alone; the step no shorter, and longer by no more than was lost.
  for (const auto& d : c.dims) CHECK(d.contended >= d.alone);
  CHECK(shared.result.step_time >= alone.result.step_time);
  CHECK(shared.result.step_time <= alone.result.step_time + lost_pp + lost_dp + 1e-9);
}

TEST_CASE("contention: the flow engine runs the merged plans too", "[workload][contention][flow]") {
  // The same PP send beside the DP bucket on SimGrid: the send again loses S·w/B, within the
  // engines' agreement on a lone transfer (their suites compare them to 1e-9 on the closed forms).
  const std::string path = test::source_path("tests/data/what-if/dgx-h100-4node-dp-pp-contention.yaml");
  Run r{models::load_scenario(path, test::shipped_catalog()), {}, {}};
  r.cluster = models::build_scenario_cluster(r.scenario);
  const auto compute = planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5");
  planner::WorkloadRunner flow(r.scenario, r.cluster, test::shipped_costs(r.cluster), compute, models::EngineKind::Flow);
  const planner::WorkloadResult f = flow.run();
  const Run analytic = run(path, true);
  REQUIRE(f.contention.has_value());
  const auto& pf = dim(*f.contention, "PP");
  const auto& pa = dim(*analytic.result.contention, "PP");
  CHECK(pf.slowed == pa.slowed);
  CHECK(pf.contended - pf.alone == Approx(pa.contended - pa.alone).epsilon(1e-6));
  // The step grows by the same on both (their steps alone differ by a few microseconds).
  CHECK(f.step_time - f.contention->step_alone ==
        Approx(analytic.result.step_time - analytic.result.contention->step_alone).epsilon(1e-6));
}
