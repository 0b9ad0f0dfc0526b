// A scenario's reliability section on its training step (planner/cluster/run_reliability.hpp):
// the classes counted on the job's units, the checkpoint's size from the model, and the reduced
// job shrink asks the engine for.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/hardware/failure_rates.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/cluster/run_reliability.hpp"
#include "planner/planner_test_support.hpp"
#include "planner/workload/workload_runner.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

struct Step {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::WorkloadResult result;
};

Step step(const std::string& path) {
  Step s{models::load_scenario(test::source_path(path), test::shipped_catalog()), {}, {}};
  s.cluster = models::build_scenario_cluster(s.scenario);
  const auto compute = planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5");
  planner::WorkloadRunner runner(s.scenario, s.cluster, test::shipped_costs(s.cluster), compute, models::EngineKind::Analytic);
  s.result = runner.run();
  return s;
}

}  // namespace

TEST_CASE("reliability: Meta's counts over the 54-day snapshot give the default rates", "[reliability]") {
  // Table 5 of arXiv 2407.21783: 419 unexpected + 47 planned interruptions on 16,384 GPUs
  // (= NICs) and 2,048 nodes over 54 days. Summing count over the classes recovers 466, and the
  // rate of a class times its units on that job over 54 days recovers its count.
  int total = 0;
  for (const auto& c : models::failure_classes()) {
    total += c.count;
    const double units = c.unit == models::FailureUnit::Node ? 2048 : 16384;
    CHECK(c.per_year * units * 54.0 / 365.0 == Approx(c.count).epsilon(1e-12));
  }
  CHECK(total == 466);
  CHECK(models::find_failure_class("hbm")->removes_node);
  CHECK_FALSE(models::find_failure_class("software")->removes_node);
}

TEST_CASE("reliability on Llama 3 70B over 64 H100: units, checkpoint, shrink's reduced jobs", "[reliability]") {
  Step s = step("tests/data/reliability/llama3-70b-64-shrink.yaml");
  REQUIRE(s.result.feasible);
  s.scenario.reliability.samples = 50;
  std::vector<std::pair<int, int>> asked;  // (dp, nodes) of each reduced job
  const auto step_time_of = [&](const models::Scenario& sc) {
    asked.emplace_back(sc.strategy->dp, sc.cluster.total_nodes());
    // Each replica keeps its micro-batches: global batch = 128 / 4 per replica × dp'.
    CHECK(sc.workload->global_batch_size == 32 * sc.strategy->dp);
    CHECK_FALSE(sc.reliability.enabled);
    return sc.strategy->dp >= 2 ? s.result.step_time : 0.0;  // DP 1 "does not fit"
  };
  const planner::ReliabilityReport r = planner::run_reliability(s.scenario, s.cluster, s.result, step_time_of);
  // Units: 64 GPUs, 64 NICs (8 per DGX H100), 8 nodes.
  for (const auto& c : r.classes) CHECK(c.units == (c.unit == "node" ? 8 : 64));
  // mtbf: 1d scales the classes so the job's rate is 1 / 86,400 s.
  double rate = 0;
  for (const auto& c : r.classes) rate += c.per_year * c.units / (365 * 86400.0);
  CHECK(rate == Approx(1 / 86400.0).epsilon(1e-12));
  CHECK(r.result.job_rate == Approx(1 / 86400.0).epsilon(1e-12));
  // Checkpoint: 14 bytes per parameter; save = bytes / (1 GB/s × 8 nodes).
  CHECK(r.checkpoint_bytes == Approx(14.0 * s.scenario.model->total_params()).epsilon(1e-15));
  CHECK(r.settings.save == Approx(r.checkpoint_bytes / 8e9).epsilon(1e-12));
  // TP8 PP2 DP4: a replica is 16 GPUs = 2 nodes, so DP d runs on 2d nodes.
  REQUIRE(!asked.empty());
  for (const auto& [dp, nodes] : asked) {
    CHECK(nodes == 2 * dp);
    CHECK(dp < 4);
  }
  CHECK(r.result.ettr.mean > 0);
  CHECK(r.result.ettr.mean < 1);
}

TEST_CASE("reliability needs a training step", "[reliability]") {
  Step s = step("scenarios/workloads/llama31-8b-decode-tp8.yaml");
  s.scenario.reliability.enabled = true;
  s.scenario.reliability.duration = 86400;
  CHECK_THROWS_AS(planner::run_reliability(s.scenario, s.cluster, s.result, [](const models::Scenario&) { return 1.0; }),
                  support::InputError);
}
