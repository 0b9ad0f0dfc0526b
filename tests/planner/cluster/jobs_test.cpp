// Several jobs on one fabric (planner/cluster/jobs.hpp): no slowdown where no link carries two
// jobs, the max-min share of an oversubscribed uplink in closed form, placements by policy, the
// best placement of a new job, start offsets that leave steps alone, and a one-job list equal
// to the one-job shorthand.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"
#include "planner/cluster/jobs.hpp"
#include "planner/planner_test_support.hpp"
#include "planner/workload/workload_runner.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

struct Loaded {
  models::Scenario scenario;
  models::Cluster cluster;
};

Loaded load(const std::string& path) {
  Loaded l{models::load_scenario(test::source_path(path), test::shipped_catalog()), {}};
  l.cluster = models::build_scenario_cluster(l.scenario);
  return l;
}

planner::CoRunOptions options(const models::Cluster& c) {
  planner::CoRunOptions o;
  o.costs = &test::shipped_costs(c);
  o.compute = planner::ComputeCalibration::load_for_cluster(planner::ComputeCalibration::default_path(), c);
  return o;
}

const planner::DimensionContention& dim(const planner::JobOutcome& j, const std::string& name) {
  const auto it = std::find_if(j.comm.begin(), j.comm.end(), [&](const auto& d) { return d.dim == name; });
  REQUIRE(it != j.comm.end());
  return *it;
}

std::vector<int> range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i <= b; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("jobs: two jobs on disjoint leaves of a non-blocking fat tree run exactly as alone", "[jobs]") {
  const Loaded l = load("tests/data/jobs/h100x1-4node-nonblocking-disjoint.yaml");
  const planner::CoRunResult r = planner::run_jobs(l.scenario, l.cluster, options(l.cluster));
  REQUIRE(r.jobs.size() == 2);
  CHECK(r.shared.empty());
  CHECK(r.runs == 0);
  CHECK(r.converged);
  for (const auto& j : r.jobs) {
    CHECK(j.step_time.size() == 4);
    for (double t : j.step_time) CHECK(t == j.alone);
    CHECK(j.slowdown == 1.0);
  }
}

TEST_CASE("jobs: two DP rings across one 2:1 uplink each get half of it (max-min)", "[jobs]") {
  // Each leaf has one 50 GB/s uplink (2 x 50 GB/s NICs down, 2:1). Job A's two ranks are on
  // leaves 0 and 1, as are job B's; both all-reduce their gradients at the same time (identical
  // jobs, both starting at 0). A 2-rank ring all-reduce sends 2(n−1)/n · S = S bytes each way
  // over the uplinks; alone the job's ring runs at its own path's rate (slower than the uplink,
  // so the uplink is not its bottleneck), beside the other each flow gets B/2 of it:
  //   T_DP = S / (B/2),  S the bytes each job puts on leaf0 -> spine0 per step, B = 50 GB/s.
  const Loaded l = load("tests/data/jobs/h100x1-4node-2to1-shared.yaml");
  const planner::CoRunResult r = planner::run_jobs(l.scenario, l.cluster, options(l.cluster));
  REQUIRE(r.jobs.size() == 2);
  REQUIRE(r.shared.size() == 4);  // leaf0 <-> spine0 and leaf1 <-> spine0, both directions
  const double B = 50e9;
  for (const auto& s : r.shared) {
    CHECK(s.capacity == Approx(B).epsilon(1e-12));
    CHECK(s.bytes[0] == Approx(s.bytes[1]).epsilon(1e-12));  // an even split
  }
  const double S = r.shared.front().bytes[0];
  // The gradients: S = 4 bytes (FP32 gradient reduction) x parameters.
  CHECK(S == Approx(4 * l.scenario.jobs[0].model.total_params()).epsilon(1e-6));
  for (const auto& j : r.jobs) {
    const auto& dp = dim(j, "DP");
    REQUIRE(dp.ops == j.step_time.size());  // one gradient all-reduce per step
    const double alone = dp.alone / static_cast<double>(dp.ops);
    const double together = dp.contended / static_cast<double>(dp.ops);
    INFO(j.name << ": DP alone " << alone << " s, beside the other " << together << " s, closed form " << S / (B / 2));
    CHECK(alone > S / B);  // alone the uplink is not the bottleneck
    CHECK(together == Approx(S / (B / 2)).epsilon(1e-3));
    CHECK(dp.slowed == dp.ops);
    REQUIRE(dp.to.size() == 1);
    CHECK(dp.to[0].first == (j.name == "A" ? "B" : "A"));
    CHECK(dp.to[0].second == Approx(dp.contended - dp.alone).epsilon(1e-12));
    // The step grows by exactly the DP op's loss (the all-reduce ends the step).
    CHECK(j.mean == Approx(j.alone + together - alone).epsilon(1e-9));
  }
  CHECK(r.jobs[0].slowdown == Approx(r.jobs[1].slowdown).epsilon(1e-12));
}

TEST_CASE("jobs: a job that starts later leaves the other's first steps alone", "[jobs]") {
  Loaded l = load("tests/data/jobs/h100x1-4node-2to1-shared.yaml");
  // B starts after A's first two steps have ended (A's step alone is about 0.2 s).
  l.scenario.jobs[1].start = 0.5;
  const planner::CoRunResult r = planner::run_jobs(l.scenario, l.cluster, options(l.cluster));
  const auto& a = r.jobs[0];
  const auto& b = r.jobs[1];
  REQUIRE(a.step_time.size() >= 4);
  CHECK(a.step_time[0] == a.alone);
  CHECK(a.step_time[1] == a.alone);
  CHECK(a.max > a.alone);
  CHECK(a.min == a.alone);
  // Every B step runs beside A (A's steps cover the window).
  CHECK(b.step_time.size() == 4);
  CHECK(b.step_start.front() == 0.5);
  CHECK(b.min > b.alone);
  CHECK(a.step_start.back() + 0.5 * a.step_time.back() < r.window);
  CHECK(b.step_start.back() + b.step_time.back() == Approx(r.window).epsilon(1e-12));
}

TEST_CASE("jobs: placement policies take the free GPUs they promise", "[jobs]") {
  // 24 DGX A100, 4 nodes per leaf group (6 groups). A lists GPUs 0-15 (nodes 0 and 1); then:
  //   B leaf 32 GPUs: the fullest leaf that holds it whole: group 1 (nodes 4-7), GPUs 32-63;
  //   C spread 32 GPUs: one free whole node per group in turn: nodes 2, 8, 12, 16;
  //   D packed 8 GPUs: the lowest free GPUs: node 3, GPUs 24-31.
  const Loaded l = load("tests/data/jobs/a100-24node-2to1-policies.yaml");
  const auto p = planner::resolve_placements(l.scenario, l.cluster);
  REQUIRE(p.size() == 4);
  CHECK(p[0] == range(0, 15));
  CHECK(p[1] == range(32, 63));
  std::vector<int> c = range(16, 23);
  for (int n : {8, 12, 16})
    for (int g = 8 * n; g < 8 * n + 8; ++g) c.push_back(g);
  CHECK(p[2] == c);
  CHECK(p[3] == range(24, 31));
  CHECK(planner::format_index_ranges(p[2]) == "16-23,64-71,96-103,128-135");

  SECTION("a policy that cannot fit names the job and what is free") {
    Loaded big = l;
    big.scenario.jobs[3].strategy.dp = 20;  // 8 x 20 = 160 GPUs; 192 - 16 - 32 - 32 = 112 free
    try {
      planner::resolve_placements(big.scenario, big.cluster);
      FAIL("expected an InputError");
    } catch (const support::InputError& e) {
      const std::string m = e.what();
      CHECK(m.find("jobs[3].placement") != std::string::npos);
      CHECK(m.find("160 free GPUs for job 'D'") != std::string::npos);
      CHECK(m.find("112 GPUs left") != std::string::npos);
    }
  }
  SECTION("whole-node policies refuse when only part nodes are free") {
    Loaded odd = l;
    // B packed over 20 GPUs takes 16-35 (node 4 in part): 156 GPUs free, 152 on whole nodes
    // (nodes 5-23); C spread over 154 needs whole nodes.
    odd.scenario.jobs[1].placement.policy = models::PlacementPolicy::Packed;
    odd.scenario.jobs[1].strategy.tp = 4;
    odd.scenario.jobs[1].strategy.dp = 5;
    odd.scenario.jobs[2].strategy.tp = 2;
    odd.scenario.jobs[2].strategy.dp = 77;
    try {
      planner::resolve_placements(odd.scenario, odd.cluster);
      FAIL("expected an InputError");
    } catch (const support::InputError& e) {
      const std::string m = e.what();
      CHECK(m.find("jobs[2].placement") != std::string::npos);
      CHECK(m.find("154 GPUs on whole free nodes for job 'C'") != std::string::npos);
      CHECK(m.find("found 152 GPUs on whole free nodes (156 free GPUs in all") != std::string::npos);
    }
  }
}

TEST_CASE("jobs: the best placement of a new job keeps it off the running job's uplinks", "[jobs]") {
  const Loaded l = load("tests/data/jobs/h100x1-8node-2to1-best.yaml");
  const planner::BestPlacement b = planner::place_best(l.scenario, l.cluster, options(l.cluster));
  CHECK(b.job == 1);
  REQUIRE(b.ranking.size() == 3);
  CHECK(b.ranking[0].policy == models::PlacementPolicy::Leaf);
  CHECK(b.ranking[0].gpus == std::vector<int>{4, 5});
  CHECK(b.ranking[0].worst_slowdown == 1.0);
  CHECK(b.ranking[1].policy == models::PlacementPolicy::Packed);
  CHECK(b.ranking[1].gpus == std::vector<int>{1, 3});
  CHECK(b.ranking[1].worst_slowdown > 1.5);
  CHECK(b.ranking[2].policy == models::PlacementPolicy::Spread);
  CHECK(b.ranking[2].same_as == "packed");
  CHECK(b.best.jobs[1].gpus == std::vector<int>{4, 5});
  CHECK(b.best.jobs[1].placement == "best: leaf");
}

TEST_CASE("jobs: one job over the whole cluster equals the one-job shorthand", "[jobs]") {
  // The same workload as a `jobs:` list of one (GPUs 0-63 in order) and as `workload:`.
  const Loaded l = load("tests/data/jobs/a100-8node-one-job.yaml");
  const planner::CoRunResult r = planner::run_jobs(l.scenario, l.cluster, options(l.cluster));
  models::Scenario one = models::job_scenario(l.scenario, 0);
  planner::WorkloadRunner runner(one, l.cluster, test::shipped_costs(l.cluster), options(l.cluster).compute, models::EngineKind::Analytic);
  const planner::WorkloadResult w = runner.run();
  REQUIRE(w.feasible);
  CHECK(r.jobs[0].alone == w.step_time);
  for (double t : r.jobs[0].step_time) CHECK(t == w.step_time);
}

TEST_CASE("jobs: jobs on parts of nodes cost their TP inside the node by local GPUs", "[jobs]") {
  // A on GPUs 0-3 and 8-11 (TP 4 x DP 2), B on 4-7 and 12-15: each TP group is half a node.
  const Loaded l = load("tests/data/jobs/a100-2node-half-nodes.yaml");
  const planner::CoRunResult r = planner::run_jobs(l.scenario, l.cluster, options(l.cluster));
  REQUIRE(r.jobs.size() == 2);
  // The two halves of a DGX A100 are alike (NVSwitch, one NIC per GPU): the same step.
  CHECK(r.jobs[0].alone == Approx(r.jobs[1].alone).epsilon(1e-9));
  CHECK(dim(r.jobs[0], "TP").alone == Approx(dim(r.jobs[1], "TP").alone).epsilon(1e-9));
}

TEST_CASE("jobs: steps.csv quotes a job name with a comma or a quote (RFC 4180)", "[jobs]") {
  planner::CoRunResult r;
  planner::JobOutcome a;
  a.name = "a,b";
  a.alone = 1;
  a.step_start = {0};
  a.step_time = {2};
  planner::JobOutcome b = a;
  b.name = "q\"uote";
  r.jobs = {a, b};
  CHECK(planner::jobs_steps_csv(r) == "job,step,start_s,time_s,alone_s\n\"a,b\",0,0,2,1\n\"q\"\"uote\",0,0,2,1\n");
}

TEST_CASE("jobs: warnings name a co-run that did not converge and links above their bandwidth", "[jobs]") {
  planner::CoRunResult r;
  r.passes = 16;
  r.converged = true;
  CHECK(planner::jobs_warnings(r).empty());
  r.converged = false;
  r.last_change = 0.12;
  r.over_capacity = 4;
  r.max_utilisation = 1.043;
  const auto w = planner::jobs_warnings(r);
  REQUIRE(w.size() == 2);
  CHECK(w[0].find("did not converge in 16 passes (the last moved a step by 12 %)") != std::string::npos);
  CHECK(w[1].find("4 shared links carry more than their bandwidth in the co-run (up to 104.3 %)") != std::string::npos);
}
