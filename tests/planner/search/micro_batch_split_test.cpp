// The planner's uneven splits for heterogeneous clusters (planner/search/micro_batch_split.hpp):
// the descent's best equals the exhaustive search over every split on small mixed clusters, and
// beats the even split.

#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"
#include "planner/search/micro_batch_split.hpp"
#include "planner/workload/compute_model.hpp"
#include "planner/workload/workload_runner.hpp"
#include "tests/planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

struct Case {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::ComputeCalibration compute;
};

Case load(const std::string& text) {
  test::TempDir dir;
  Case c{models::load_scenario(dir.write("s.yaml", text), test::shipped_catalog()), {}, {}};
  c.cluster = models::build_scenario_cluster(c.scenario);
  c.compute = planner::ComputeCalibration::load_for_cluster(planner::ComputeCalibration::default_path(), c.cluster);
  return c;
}

double step(const Case& c, const models::Scenario& sc) {
  planner::WorkloadRunner runner(sc, c.cluster, test::shipped_costs(c.cluster), c.compute, models::EngineKind::Analytic);
  runner.set_detail(planner::WorkloadRunner::Detail::StepOnly);
  const auto r = runner.run();
  return r.feasible ? r.step_time : std::numeric_limits<double>::infinity();
}

const std::string kMixed =
    "cluster:\n"
    "  nodes: [{node: dgx-a100}, {node: dgx-h100}]\n"
    "  fabric: {kind: single-switch}\n"
    "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1, global_batch_size: 16}\n";

}  // namespace

TEST_CASE("micro-batch split: the descent finds the exhaustive best on 1 DGX A100 + 1 DGX H100", "[plan][what-if]") {
  // TP8 DP2: one replica per node, M = 16 micro-batches; every split (c, 16 − c), c = 1 .. 15.
  const Case c = load(kMixed + "strategy: {tp: 8}\n");
  double brute = std::numeric_limits<double>::infinity();
  int brute_c = 0;
  for (int a = 1; a < 16; ++a) {
    models::Scenario sc = c.scenario;
    sc.strategy->dp_micro_batches = {a, 16 - a};
    const double t = step(c, sc);
    if (t < brute) {
      brute = t;
      brute_c = a;
    }
  }
  const auto split = planner::best_micro_batch_split(c.scenario, c.cluster, test::shipped_costs(c.cluster), c.compute, nullptr);
  REQUIRE(split);
  CHECK(split->step_time == Approx(brute).epsilon(1e-12));
  CHECK(split->per_replica == std::vector<int>{brute_c, 16 - brute_c});
  // The A100 replica (312 vs 989 TFLOP/s) gets fewer, and the split beats the even 8 + 8.
  CHECK(brute_c < 8);
  CHECK(split->even_step_time == Approx(step(c, c.scenario)).epsilon(1e-12));
  CHECK(split->step_time < split->even_step_time);
  CHECK(split->runs < 15);
}

TEST_CASE("layer split: the descent finds the exhaustive best for a pipeline over two GPU models", "[plan][what-if]") {
  // TP8 PP2 DP1: stage 0 on the A100 node, stage 1 on the H100 node; Llama-3-8B's 32 layers as
  // (l, 32 − l), l = 1 .. 31.
  const Case c = load(kMixed + "strategy: {tp: 8, pp: 2}\n");
  double brute = std::numeric_limits<double>::infinity();
  int brute_l = 0;
  for (int l = 1; l < 32; ++l) {
    models::Scenario sc = c.scenario;
    sc.strategy->pipeline_layers = {l, 32 - l};
    const double t = step(c, sc);
    if (t < brute) {
      brute = t;
      brute_l = l;
    }
  }
  const auto split = planner::best_layer_split(c.scenario, c.cluster, test::shipped_costs(c.cluster), c.compute, nullptr);
  REQUIRE(split);
  CHECK(split->step_time == Approx(brute).epsilon(1e-12));
  CHECK(split->per_stage == std::vector<int>{brute_l, 32 - brute_l});
  CHECK(brute_l < 16);
  CHECK(split->step_time < split->even_step_time);
  // Alike stages: nothing to split.
  const Case same = load("cluster: {nodes: [{node: dgx-h100, count: 2}], fabric: {kind: single-switch}}\n"
                         "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1, global_batch_size: 16}\n"
                         "strategy: {tp: 8, pp: 2}\n");
  CHECK_FALSE(planner::best_layer_split(same.scenario, same.cluster, test::shipped_costs(same.cluster), same.compute, nullptr));
  CHECK_FALSE(planner::best_micro_batch_split(same.scenario, same.cluster, test::shipped_costs(same.cluster), same.compute, nullptr));
}
