#include <catch2/catch.hpp>

#include "support/input_error.hpp"
#include "models/scenario/overrides_support.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/sweep/sweep_output.hpp"
#include "planner/sweep/sweep_point.hpp"
#include "test_support.hpp"

using namespace ccsim;
using test::is_rule;
using test::kTrain70b;
using test::load_point;

TEST_CASE("sweep: layout rules make infeasible points, not bad input", "[sweep]") {
  // 3 divides neither the 64 GPUs nor Llama-3-70B's 64 heads.
  CHECK(is_rule(kTrain70b, {{"strategy.tp", "3"}, {"strategy.dp", "auto"}}));
  // tp 16 · pp 2 · dp 4 = 128 ≠ 64 GPUs.
  CHECK(is_rule(kTrain70b, {{"strategy.tp", "16"}}));
  // A global batch of 128 is no multiple of micro_batch_size·dp = 3·4 = 12.
  CHECK(is_rule(kTrain70b, {{"workload.micro_batch_size", "3"}}));
  // Two nodes without a fabric.
  CHECK(is_rule("scenarios/workloads/llama31-8b-decode-tp2.yaml", {{"cluster.nodes[0].count", "2"}, {"strategy.dp", "auto"}}));
  // The row says which key, what was expected and what was found, without the file position.
  try {
    load_point(kTrain70b, {{"strategy.tp", "16"}});
  } catch (const support::RuleError& e) {
    const planner::SweepRow row = planner::rule_row(e);
    CHECK_FALSE(row.feasible);
    CHECK(row.reason == "strategy.dp: expected tp·pp·cp·dp equal to the cluster's 64 GPUs (tp·pp·cp·dp = 16·2·1·4 = 128), found '4'");
  }
}

TEST_CASE("sweep rows: encode / decode is exact", "[sweep]") {
  planner::SweepRow r;
  r.feasible = true;
  r.gpus = 64;
  r.phase = "training_step";
  r.step_time_s = 16.215046871234567;
  r.tokens_per_s = 1.0 / 3.0;
  r.mfu = 0.1 + 0.2;
  r.memory_gib = 57.9;
  r.reason = "a, \"quoted\"\nreason";
  const planner::SweepRow d = planner::decode_row(planner::encode_row(r));
  CHECK(planner::encode_row(d) == planner::encode_row(r));
  CHECK(*d.step_time_s == *r.step_time_s);
  CHECK(*d.tokens_per_s == *r.tokens_per_s);
  CHECK(*d.mfu == *r.mfu);
  CHECK_FALSE(d.ttft_s);
  CHECK(d.reason == r.reason);
  CHECK(planner::encode_row(r).find('\n') == std::string::npos);
}

TEST_CASE("sweep point: cost per million tokens is price × GPUs / 3600 × step / tokens × 1e6", "[sweep]") {
  const models::Scenario s = load_point("scenarios/workloads/llama31-8b-decode-tp2.yaml", {});
  planner::PointOptions o;
  o.price_per_gpu_hour = 2.5;
  const planner::SweepRow row = planner::evaluate_point(s, o);
  REQUIRE(row.feasible);
  REQUIRE(row.step_time_s);
  CHECK(row.gpus == 4);
  CHECK(row.phase == "decode");
  CHECK(*row.tpot_s == *row.step_time_s);
  CHECK_FALSE(row.ttft_s);
  // tokens_per_s = tokens / step, so the cost is price·GPUs/3600 / tokens_per_s · 1e6.
  CHECK(*row.cost_per_mtok == Approx(2.5 * 4 / 3600.0 / *row.tokens_per_s * 1e6).epsilon(1e-12));
  CHECK(*row.memory_gib > 0);
  CHECK(*row.memory_gib < *row.hbm_gib);
}
