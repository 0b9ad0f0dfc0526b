// The layout search of `ccsim plan` (planner/search/layout_plan.hpp): its best against brute force
// (every candidate run as `ccsim run` runs it), the screen from two short steps against full
// runs, the shared communication cache, the objectives and the latency targets, and its errors.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "support/input_error.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program_builder.hpp"
#include "planner/search/layout_plan.hpp"
#include "planner/workload/workload_runner.hpp"
#include "test_support.hpp"
#include "tests/planner/planner_test_support.hpp"

using namespace ccsim;
using planner::SearchSpace;

namespace {

struct Setup {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::ComputeCalibration compute;
  planner::ServingCalibration serving;
  const planner::CostModel& costs() const { return test::shipped_costs(cluster); }
};

Setup load(const std::string& relative) {
  models::Scenario sc = models::load_scenario(test::source_path(relative), test::shipped_catalog());
  models::Cluster cl = models::build_cluster(sc.cluster);
  const std::string gpu = cl.spec.groups.front().node.gpu.name;
  return Setup{std::move(sc), std::move(cl), planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), gpu),
               planner::ServingCalibration::load(planner::ServingCalibration::default_path(), gpu)};
}

const Setup& llama8b_16() {
  static const Setup s = load("tests/data/plan/llama3-8b-train-16xh100.yaml");
  return s;
}

const Setup& decode_tp2() {
  static const Setup s = load("scenarios/workloads/llama31-8b-decode-tp2.yaml");
  return s;
}

/// The brute-force space: TP 1, 2, 4, 8 × PP 1, 2, 4 × mbs 1, 2 × 1F1B / interleaved ×2, ZeRO-1,
/// selective recomputation, SP, no TP overlap, Megatron-Core's order.
SearchSpace small_space(const Setup& s) {
  SearchSpace sp = planner::default_space(s.scenario, s.cluster);
  for (const char* a : {"tp=1,2,4,8", "pp=1,2,4", "mbs=1,2", "v=1,2"}) planner::apply_space_option(sp, a, false);
  for (const char* a : {"zero=1", "recompute=selective", "sp=true", "tp_overlap=false", "order=tp-cp-ep-pp-dp"})
    planner::apply_space_option(sp, a, true);
  return sp;
}

planner::PlanResult plan(const Setup& s, const SearchSpace& space, const planner::PlanOptions& o) {
  return planner::plan_layouts(s.scenario, s.cluster, s.costs(), s.compute, s.serving, space, o);
}

/// One candidate as `ccsim run` simulates it: its own runner, no shared cache, analytic engine.
planner::WorkloadResult run_alone(const Setup& s, const planner::Candidate& c) {
  const models::Scenario scenario = planner::with_layout(s.scenario, c);  // the runner keeps a reference
  planner::WorkloadRunner runner(scenario, s.cluster, s.costs(), s.compute, models::EngineKind::Analytic);
  if (c.workload.phase != models::WorkloadPhase::TrainingStep) runner.set_serving(s.serving);
  return runner.run();
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(a), std::abs(b)); }

}  // namespace

TEST_CASE("plan: the screened search finds the brute-force best, figures bit for bit", "[plan]") {
  const Setup& s = llama8b_16();
  const SearchSpace space = small_space(s);
  const planner::Enumeration en = planner::enumerate_layouts(s.scenario, s.cluster, space);
  REQUIRE(en.candidates.size() >= 20);
  // Brute force: every candidate in full, the lowest step time (ties: the first enumerated).
  std::size_t best = 0;
  std::vector<planner::WorkloadResult> all;
  for (std::size_t i = 0; i < en.candidates.size(); ++i) {
    all.push_back(run_alone(s, en.candidates[i]));
    REQUIRE(all.back().feasible);
    if (all[i].step_time < all[best].step_time) best = i;
  }
  planner::PlanOptions o;
  o.jobs = 2;
  const planner::PlanResult r = plan(s, space, o);
  CHECK(r.enumerated == en.total);
  CHECK(r.evaluated == en.candidates.size());
  REQUIRE(r.ranked.size() == en.candidates.size());
  const planner::CandidateResult& top = r.ranked.front();
  INFO("planner: " << planner::layout_name(top.candidate.layout, models::WorkloadPhase::TrainingStep) << ", brute force: "
                   << planner::layout_name(en.candidates[best].layout, models::WorkloadPhase::TrainingStep));
  CHECK(top.index == best);
  CHECK(top.exact);
  CHECK(top.step_time == all[best].step_time);
  CHECK(top.mfu == all[best].mfu);
  CHECK(top.tokens_per_s == all[best].program.tokens / all[best].step_time);
  // The best max(2 · top, 20) = 20 of the screen are run in full and ranked by those runs; every
  // full run the planner reports (there and beyond) is `ccsim run`'s figure.
  for (std::size_t k = 0; k < r.ranked.size(); ++k) {
    const auto& x = r.ranked[k];
    INFO("rank " << k + 1 << ": " << planner::layout_name(x.candidate.layout, models::WorkloadPhase::TrainingStep));
    if (k < 20) CHECK(x.exact);
    if (k > 0 && k < 20) CHECK(r.ranked[k - 1].step_time <= x.step_time);
    if (x.exact) CHECK(x.step_time == all[x.index].step_time);
  }
  // --exact gives the same ranking head.
  o.exact = true;
  const planner::PlanResult ex = plan(s, space, o);
  CHECK(ex.ranked.front().index == best);
  CHECK(ex.ranked.front().step_time == all[best].step_time);
  CHECK(ex.exact_runs == en.candidates.size());
}

TEST_CASE("plan: the screen from two short steps is affine in micro-batches (1F1B, interleaved)", "[plan]") {
  // A training step of m micro-batches screened from m_a and m_b (file comment of
  // planner/search/layout_plan.hpp): f(m) = f(m_b) + (m − m_b)/g · (f(m_b) − f(m_a)). The claim: exact
  // for the step time up to rounding. Global batch 256 gives m = 16 .. 128 micro-batches here.
  Setup s = load("tests/data/plan/llama3-8b-train-16xh100.yaml");
  s.scenario.workload->global_batch_size = 256;
  SearchSpace space = small_space(s);
  planner::apply_space_option(space, "v=1,2,4", false);
  const planner::Enumeration en = planner::enumerate_layouts(s.scenario, s.cluster, space);
  int one_f_one_b = 0, interleaved = 0;
  double worst = 0;
  for (const auto& c : en.candidates) {
    if (c.layout.pp == 1) continue;
    const int m = models::micro_batches(c.workload, c.strategy);
    const planner::CandidateResult screened =
        planner::evaluate_candidate(s.scenario, s.cluster, s.costs(), s.compute, s.serving, c, false, models::EngineKind::Analytic, nullptr);
    const planner::CandidateResult full =
        planner::evaluate_candidate(s.scenario, s.cluster, s.costs(), s.compute, s.serving, c, true, models::EngineKind::Analytic, nullptr);
    INFO(planner::layout_name(c.layout, models::WorkloadPhase::TrainingStep) << ", " << m << " micro-batches: screened " << screened.step_time
                                                         << " s, full " << full.step_time << " s");
    CHECK_FALSE(screened.exact);
    CHECK(full.exact);
    (c.layout.v > 1 ? interleaved : one_f_one_b) += 1;
    worst = std::max(worst, rel(screened.step_time, full.step_time));
    CHECK(rel(screened.step_time, full.step_time) <= 1e-6);
    CHECK(rel(screened.tokens_per_s, full.tokens_per_s) <= 1e-6);
    CHECK(rel(screened.mfu, full.mfu) <= 1e-6);
    // The screen's short steps run with WorkloadRunner::Detail::StepOnly (no per-stage
    // breakdown), so a screened candidate's compute / exposed / bubble are not extrapolated
    // (they are 0); the candidates the planner prints are all full runs.
  }
  CHECK(one_f_one_b >= 4);
  CHECK(interleaved >= 4);
  WARN("screen vs full run, largest relative step-time error: " << worst);
}

TEST_CASE("plan: the shared communication cache changes no figure", "[plan]") {
  const Setup& s = llama8b_16();
  const planner::Enumeration en = planner::enumerate_layouts(s.scenario, s.cluster, small_space(s));
  const auto shared = std::make_shared<planner::CommCostCache>();
  for (bool exact : {false, true}) {
    for (const auto& c : en.candidates) {
      const auto a = planner::evaluate_candidate(s.scenario, s.cluster, s.costs(), s.compute, s.serving, c, exact, models::EngineKind::Analytic, nullptr);
      const auto b = planner::evaluate_candidate(s.scenario, s.cluster, s.costs(), s.compute, s.serving, c, exact, models::EngineKind::Analytic, shared);
      INFO(planner::layout_name(c.layout, models::WorkloadPhase::TrainingStep) << (exact ? " in full" : " screened"));
      CHECK(a.step_time == b.step_time);
      CHECK(a.mfu == b.mfu);
      CHECK(a.exposed_total == b.exposed_total);
      CHECK(a.bubble == b.bubble);
    }
  }
  const auto [hits, misses] = shared->hits_misses();
  CHECK(hits > misses);  // the candidates share most of their collectives
}

TEST_CASE("plan: objectives tokens-per-s, mfu and cost", "[plan]") {
  const Setup& s = llama8b_16();
  const SearchSpace space = small_space(s);
  planner::PlanOptions o;
  o.jobs = 2;
  const planner::PlanResult by_time = plan(s, space, o);
  const auto full_runs = [](const planner::PlanResult& r) {
    std::vector<planner::CandidateResult> out;
    for (const auto& x : r.ranked)
      if (x.exact) out.push_back(x);
    return out;
  };
  SECTION("tokens-per-s and mfu: the best has the highest figure of the full runs") {
    for (const std::string objective : {"tokens-per-s", "mfu"}) {
      o.objective = objective;
      const planner::PlanResult r = plan(s, space, o);
      const auto runs = full_runs(r);
      REQUIRE(runs.size() >= 2);
      for (const auto& x : runs) {
        CHECK(r.ranked.front().tokens_per_s >= x.tokens_per_s);
        CHECK(r.ranked.front().mfu >= x.mfu);
      }
      // A training step's tokens are fixed (64 × 4096), so every objective picks the same layout.
      CHECK(r.ranked.front().index == by_time.ranked.front().index);
    }
  }
  SECTION("cost per million tokens = price · GPUs / 3600 · step / tokens · 1e6") {
    o.objective = "cost";
    o.price_per_gpu_hour = 2.5;
    const planner::PlanResult r = plan(s, space, o);
    const double tokens = 64.0 * 4096.0;  // global batch × sequence length
    REQUIRE(r.ranked.size() == by_time.ranked.size());
    for (std::size_t k = 0; k < r.ranked.size(); ++k) {
      const auto& x = r.ranked[k];
      const double expected = 2.5 * 16 / 3600.0 * x.step_time / tokens * 1e6;
      CHECK(rel(x.cost_per_mtok, expected) <= 1e-12);
      if (k > 0 && x.exact && r.ranked[k - 1].exact) CHECK(r.ranked[k - 1].cost_per_mtok <= x.cost_per_mtok);
    }
    CHECK(r.ranked.front().index == by_time.ranked.front().index);
    CHECK(r.ranked.front().step_time == by_time.ranked.front().step_time);
  }
}

TEST_CASE("plan: decode with --max-tpot keeps the layouts that meet it, and counts the rest", "[plan]") {
  const Setup& s = decode_tp2();
  const SearchSpace space = planner::default_space(s.scenario, s.cluster);
  planner::PlanOptions o;
  o.jobs = 2;
  const planner::PlanResult all = plan(s, space, o);
  REQUIRE(all.ranked.size() >= 10);
  std::vector<double> tpots;
  for (const auto& x : all.ranked) {
    CHECK(x.exact);  // one decode step each: nothing to screen
    CHECK(x.tpot == x.step_time);
    tpots.push_back(x.tpot);
  }
  std::sort(tpots.begin(), tpots.end());
  const double target = tpots[tpots.size() / 2];  // the median TPOT: about half meet it
  const auto over = static_cast<std::size_t>(std::count_if(tpots.begin(), tpots.end(), [&](double t) { return t > target; }));
  REQUIRE(over > 0);
  o.max_tpot = target;
  const planner::PlanResult kept = plan(s, space, o);
  CHECK(kept.pruned.at(planner::kPruneLatency) == over);
  CHECK(kept.ranked.size() + over == all.ranked.size());
  for (const auto& x : kept.ranked) CHECK(x.tpot <= target);
  CHECK(all.pruned.count(planner::kPruneLatency) == 0);
}

TEST_CASE("plan: option errors are InputErrors", "[plan]") {
  const Setup& train = llama8b_16();
  const Setup& dec = decode_tp2();
  const SearchSpace ts = small_space(train);
  const SearchSpace ds = planner::default_space(dec.scenario, dec.cluster);
  const auto error_of = [](const Setup& s, const SearchSpace& space, const planner::PlanOptions& o) -> std::string {
    try {
      plan(s, space, o);
    } catch (const support::InputError& e) {
      return e.key() + ": expected " + e.expected() + ", found " + e.found();
    }
    return "no error";
  };
  planner::PlanOptions o;
  o.objective = "cost";
  CHECK(error_of(train, ts, o) == "--objective cost: expected --price-per-gpu-hour USD as well (the price of one GPU-hour), found no price");
  o = {};
  o.objective = "throughput";
  CHECK(error_of(train, ts, o) == "--objective: expected step-time, tokens-per-s, mfu or cost, found 'throughput'");
  o = {};
  o.max_tpot = 0.05;
  CHECK(error_of(train, ts, o) == "--max-tpot: expected an inference scenario (phase prefill, decode or serving), found a training step");
  o = {};
  o.max_ttft = 1.0;
  CHECK(error_of(dec, ds, o) == "--max-ttft: expected a prefill or serving scenario, found phase decode");
  o = {};
  o.rerank = "analytic";
  CHECK(error_of(train, ts, o) == "--rerank: expected flow, found 'analytic'");
}

TEST_CASE("plan --synthesize: dimensions kept on synthesized schedules where they shorten the step", "[plan][synthesis]") {
  // 2 x 8 H100 with one NIC per node, TP1 PP1: the DP group's collectives cross the single NIC,
  // where synthesized trees run about twice the ring's bandwidth (synthesized_lowering_test.cpp).
  const Setup s = load("tests/data/synthesis/h100-2x8-one-nic-dp16.yaml");
  SearchSpace space = planner::default_space(s.scenario, s.cluster);
  for (const char* a : {"tp=1", "pp=1", "zero=1", "recompute=full"}) planner::apply_space_option(space, a, true);
  planner::PlanOptions o;
  o.jobs = 2;
  o.top = 3;
  o.synthesize = {"dp", "tp"};
  const planner::PlanResult r = plan(s, space, o);
  REQUIRE(r.ranked.size() >= 3);
  for (std::size_t k = 0; k < 3; ++k) {
    const planner::CandidateResult& x = r.ranked[k];
    INFO("rank " << k + 1 << ": " << planner::layout_name(x.candidate.layout, models::WorkloadPhase::TrainingStep));
    // TP is 1 (nothing to try); DP gains.
    CHECK(x.synthesized == std::vector<std::string>{"dp"});
    REQUIRE(x.library_step_time);
    CHECK(x.step_time < *x.library_step_time * 0.95);
    CHECK(x.candidate.strategy.algorithms.at("dp.allgather") == "synthesized");
    // The figures are `ccsim run`'s on the candidate with its synthesized dimensions.
    CHECK(x.step_time == run_alone(s, x.candidate).step_time);
    if (k > 0) CHECK(r.ranked[k - 1].step_time <= x.step_time);
  }
  // The same search without --synthesize: the library's step times.
  o.synthesize.clear();
  const planner::PlanResult lib = plan(s, space, o);
  CHECK(!lib.ranked.front().library_step_time);
  CHECK(lib.ranked.front().step_time > r.ranked.front().step_time);

  // Only tp, cp and dp, each once.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"pp"}, {"dp", "dp"}, {""}}) {
    o.synthesize = bad;
    CHECK_THROWS_AS(plan(s, space, o), support::InputError);
  }
}

TEST_CASE("plan: a synth:FILE for groups of one size leaves out the layouts with groups of another", "[plan][synthesis]") {
  // The file is AllGather on 4 ranks: TP4 layouts run it, TP2 and TP8 layouts cannot and are
  // counted under their own reason instead of stopping the search.
  test::TempDir dir;
  const std::string file = test::source_path("tests/data/synthesis/dgx-h100-4ranks-allgather.msccl.xml");
  const std::string path = dir.write("s.yaml", "cluster: {nodes: [{node: dgx-h100, count: 1}]}\n"
                                               "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1, global_batch_size: 8}\n"
                                               "strategy: {tp: 2, sequence_parallel: true, algorithms: {tp: {allgather: 'synth:" + file + "'}}}\n");
  models::Scenario sc = models::load_scenario(path, test::shipped_catalog());
  models::Cluster cl = models::build_cluster(sc.cluster);
  const std::string gpu = cl.spec.groups.front().node.gpu.name;
  const Setup s{std::move(sc), std::move(cl), planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), gpu),
                planner::ServingCalibration::load(planner::ServingCalibration::default_path(), gpu)};
  SearchSpace space = planner::default_space(s.scenario, s.cluster);
  planner::apply_space_option(space, "tp=2,4,8", false);
  for (const char* a : {"pp=1", "sp=true"}) planner::apply_space_option(space, a, true);
  planner::PlanOptions o;
  o.jobs = 1;
  const planner::PlanResult r = plan(s, space, o);
  REQUIRE(!r.ranked.empty());
  for (const auto& x : r.ranked) CHECK(x.candidate.strategy.tp == 4);
  REQUIRE(r.pruned.count(planner::kPruneAlgorithm) == 1);
  CHECK(r.pruned.at(planner::kPruneAlgorithm) >= 2);
  // The scenario's own layout (TP2) is among those left out, and the reason names the file.
  CHECK(r.scenario_dropped.find("AllGather on 4 ranks") != std::string::npos);

  // Any other fault of the file stops the search (as ccsim run would): a missing file, a file of
  // another collective.
  const auto search_with = [&](const std::string& algorithms) {
    const std::string bad = dir.write("bad.yaml", "cluster: {nodes: [{node: dgx-h100, count: 1}]}\n"
                                                  "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1, global_batch_size: 8}\n"
                                                  "strategy: {tp: 4, sequence_parallel: true, algorithms: " + algorithms + "}\n");
    models::Scenario bsc = models::load_scenario(bad, test::shipped_catalog());
    models::Cluster bcl = models::build_cluster(bsc.cluster);
    const Setup b{std::move(bsc), std::move(bcl), s.compute, s.serving};
    (void)plan(b, space, o);
  };
  CHECK_THROWS_AS(search_with("{tp: {allgather: 'synth:" + (dir.path / "nowhere.msccl.xml").string() + "'}}"), support::InputError);
  CHECK_THROWS_AS(search_with("{tp: {reducescatter: 'synth:" + file + "'}}"), support::InputError);
}
