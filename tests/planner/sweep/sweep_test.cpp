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

TEST_CASE("sweep ties: points that differ in one key and give the same step", "[sweep][ties]") {
  planner::SweepResult r;
  r.axes = {{"cluster.nodes[0].node.nics.link", {"ib-ndr", "ib-xdr"}}, {"strategy.pp", {"1", "2"}}};
  // Point order: the first key is the outer loop (nics, pp) = (ndr,1) (ndr,2) (xdr,1) (xdr,2).
  const auto row = [](double step) {
    planner::SweepRow x;
    x.feasible = true;
    x.gpus = 32;
    x.step_time_s = step;
    return x;
  };
  r.rows = {row(16.0), row(17.0), row(16.0), row(16.5)};
  auto ties = planner::find_ties(r);
  // ndr = xdr at pp 1 only; pp 1 and pp 2 differ at both NICs; no point pairs with itself.
  REQUIRE(ties.size() == 1);
  CHECK(ties[0].axis == 0);
  CHECK(ties[0].points == std::vector<std::size_t>{0, 2});
  // A difference of 1e-9 relative still ties (the same figures along the same path); 1e-6 does not.
  r.rows[3] = row(17.0 * (1 + 1e-10));
  CHECK(planner::find_ties(r).size() == 2);
  r.rows[3] = row(17.0 * (1 + 1e-6));
  CHECK(planner::find_ties(r).size() == 1);
  // Infeasible points never tie, nor do points with other GPU counts.
  r.rows[2].feasible = false;
  CHECK(planner::find_ties(r).empty());
  r.rows[2] = row(16.0);
  r.rows[2].gpus = 64;
  CHECK(planner::find_ties(r).empty());
  // The text names the points, the key's values and the note.
  r.rows[2] = row(16.0);
  r.ties = planner::find_ties(r);
  r.ties[0].note = "why";
  CHECK(planner::sweep_text(r).find("identical results\n  points 0, 2 (cluster.nodes[0].node.nics.link = ib-ndr, ib-xdr): the same "
                                    "step time, 16.000 s; why\n") != std::string::npos);
}

TEST_CASE("sweep ties: NDR and XDR on HGX H200 tie because PCIe Gen5 binds both", "[sweep][ties]") {
  const std::string base = "tests/data/sweep/h200-4node-llama3-70b.yaml";
  const models::Scenario ndr = load_point(base, {{"cluster.nodes[0].node.nics.link", "ib-ndr"}});
  const models::Scenario xdr = load_point(base, {{"cluster.nodes[0].node.nics.link", "ib-xdr"}});
  const planner::PointOptions o;
  const planner::SweepRow a = planner::evaluate_point(ndr, o);
  const planner::SweepRow b = planner::evaluate_point(xdr, o);
  REQUIRE(a.feasible);
  REQUIRE(b.feasible);
  CHECK(*a.step_time_s == *b.step_time_s);
  // nccl.yaml credits PCIe Gen5 at 0.7619 of 63 GB/s = 48.0 GB/s: below NDR's 50 and XDR's 100.
  const std::string note = planner::explain_tie({&ndr, &xdr}, {"ib-ndr", "ib-xdr"}, o);
  CHECK(note ==
        "pcie-gen5 (gpu-pcie-switch and nic-pcie-switch links: 48 GB/s credited of 63 GB/s per link, 1 GPU each) binds at every "
        "point: 48 GB/s per GPU into the fabric (nccl.yaml's link_efficiency), below the NIC line rates (ib-ndr 50 GB/s, ib-xdr "
        "100 GB/s per GPU)");
  // Where the injection differs (HDR 25 GB/s binds below PCIe), the note says so.
  const models::Scenario hdr = load_point(base, {{"cluster.nodes[0].node.nics.link", "ib-hdr"}});
  CHECK(planner::explain_tie({&hdr, &xdr}, {"ib-hdr", "ib-xdr"}, o).find("their injection into the fabric differs (ib-hdr 25 GB/s, "
                                                                          "ib-xdr 48 GB/s per GPU") == 0);
  // The meta the plot's caption reads.
  const planner::SweepMeta m = planner::describe_sweep(ndr, o);
  CHECK(m.name == "llama3-70b-train-32xh200");
  CHECK(m.model == "llama-3-70b");
  CHECK(m.cluster == "4 x hgx-h200 (32 x H200-SXM), fat-tree rail-optimized");
  CHECK(m.calibration == "nccl.yaml (default)");
  REQUIRE(m.node_groups.size() == 1);
  CHECK(m.node_groups[0].gpus_per_node == 8);
}
