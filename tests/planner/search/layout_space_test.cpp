// The search space of `ccsim plan` (planner/search/layout_space.hpp): --space / --fix parsing, and the
// enumeration's counts on a small case worked out by hand (Llama-3-8B training on 2 DGX H100,
// tests/data/plan/llama3-8b-train-16xh100.yaml: 16 GPUs, sequence 4096, global batch 64).

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "support/input_error.hpp"
#include "models/scenario/scenario.hpp"
#include "models/workload/program_builder.hpp"
#include "planner/search/layout_space.hpp"
#include "test_support.hpp"

using namespace ccsim;
using planner::SearchSpace;

namespace {

struct Case {
  models::Scenario scenario;
  models::Cluster cluster;
};

const Case& llama8b_16() {
  static const Case c = [] {
    models::Scenario sc = models::load_scenario(test::source_path("tests/data/plan/llama3-8b-train-16xh100.yaml"), test::shipped_catalog());
    models::Cluster cl = models::build_cluster(sc.cluster);
    return Case{std::move(sc), std::move(cl)};
  }();
  return c;
}

/// A space with one value per knob (the narrow start of every test below).
SearchSpace narrow() {
  SearchSpace s;
  s.tp = {1}, s.pp = {1}, s.cp = {1}, s.ep = {1}, s.zero = {1}, s.v = {1};
  s.mbs = {1}, s.batch = {0};
  s.sp = {true}, s.tp_overlap = {false};
  s.recompute = {"none"}, s.order = {"tp-cp-ep-pp-dp"};
  return s;
}

/// Applies `arg` and returns the InputError it throws (fails the test if it does not throw).
support::InputError error_of(const std::string& arg, bool fix) {
  SearchSpace s = narrow();
  try {
    planner::apply_space_option(s, arg, fix);
  } catch (const support::InputError& e) {
    return e;
  }
  FAIL("no InputError for " << (fix ? "--fix " : "--space ") << arg);
  throw;  // unreachable
}

std::size_t pruned(const planner::Enumeration& e, const char* reason) {
  const auto it = e.pruned.find(reason);
  return it == e.pruned.end() ? 0 : it->second;
}

}  // namespace

TEST_CASE("apply_space_option: lists, ranges and aliases", "[plan]") {
  SearchSpace s = narrow();
  planner::apply_space_option(s, "tp=1,2,4", false);
  CHECK(s.tp == std::vector<int>{1, 2, 4});
  planner::apply_space_option(s, "pp=1..4", false);
  CHECK(s.pp == std::vector<int>{1, 2, 3, 4});
  // Items keep their first position; repeats are dropped.
  planner::apply_space_option(s, "cp=4,1..3,2", false);
  CHECK(s.cp == std::vector<int>{4, 1, 2, 3});
  planner::apply_space_option(s, "zero_stage=0,3", false);
  CHECK(s.zero == std::vector<int>{0, 3});
  planner::apply_space_option(s, "micro_batch_size=2,8", false);
  CHECK(s.mbs == std::vector<std::int64_t>{2, 8});
  planner::apply_space_option(s, "virtual_stages=1,2,4", false);
  CHECK(s.v == std::vector<int>{1, 2, 4});
  planner::apply_space_option(s, "sequence_parallel=false", false);
  CHECK(s.sp == std::vector<bool>{false});
  planner::apply_space_option(s, "tp_comm_overlap=true,false", false);
  CHECK(s.tp_overlap == std::vector<bool>{true, false});
  planner::apply_space_option(s, "batch_size=1..3", false);
  CHECK(s.batch == std::vector<std::int64_t>{1, 2, 3});
  planner::apply_space_option(s, "recompute=full,none", false);
  CHECK(s.recompute == std::vector<std::string>{"full", "none"});
  planner::apply_space_option(s, "order=tp-cp-ep-dp-pp,dp-pp-ep-cp-tp", false);
  CHECK(s.order == std::vector<std::string>{"tp-cp-ep-dp-pp", "dp-pp-ep-cp-tp"});
  // The short names are the same knobs.
  planner::apply_space_option(s, "zero=1", true);
  CHECK(s.zero == std::vector<int>{1});
  planner::apply_space_option(s, "mbs=4", true);
  CHECK(s.mbs == std::vector<std::int64_t>{4});
  planner::apply_space_option(s, "sp=true", true);
  CHECK(s.sp == std::vector<bool>{true});
  planner::apply_space_option(s, "order=tp-cp-ep-pp-dp", true);
  CHECK(s.order == std::vector<std::string>{"tp-cp-ep-pp-dp"});
  planner::apply_space_option(s, "v=2", true);
  CHECK(s.v == std::vector<int>{2});
}

TEST_CASE("apply_space_option: errors name the option and the knob", "[plan]") {
  struct Bad {
    std::string arg;
    bool fix;
    std::string key, expected_part, found;
  };
  const std::vector<Bad> cases = {
      {"tpp=2", false, "--space tpp", "a knob: tp, pp", "'tpp'"},
      {"dp=2", false, "--space dp", "dp follows from the GPUs", "'dp'"},
      {"tp", false, "--space ", "KNOB=VALUES", "'tp'"},
      {"=4", false, "--space ", "KNOB=VALUES", "'=4'"},
      {"tp=", true, "--fix ", "KNOB=VALUES", "'tp='"},
      {"tp=4..2", false, "--space tp", "A ≤ B", "'4..2'"},
      {"tp=1..5000", false, "--space tp", "at most 4,096 values", "'1..5000'"},
      {"tp=two", false, "--space tp", "an integer", "'two'"},
      {"tp=1,,2", false, "--space tp", "an integer", "''"},
      {"tp=0", false, "--space tp", "an integer in [1,", "'0'"},
      {"zero_stage=4", false, "--space zero", "an integer in [0, 3]", "'4'"},
      {"v=65", false, "--space v", "an integer in [1, 64]", "'65'"},
      {"sp=yes", false, "--space sp", "one of true, false", "'yes'"},
      {"recompute=partial", false, "--space recompute", "one of none, selective, full", "'partial'"},
      {"order=tp-pp-dp", false, "--space order", "an order of tp, cp, ep, pp, dp", "'tp-pp-dp'"},
      {"order=tp-tp-ep-pp-dp", false, "--space order", "an order of tp, cp, ep, pp, dp", "'tp-tp-ep-pp-dp'"},
      // --fix pins one value.
      {"tp=1,2", true, "--fix tp", "one value (use --space for several)", "'1,2'"},
      {"pp=1..2", true, "--fix pp", "one value (use --space for several)", "'1..2'"},
      {"recompute=none,full", true, "--fix recompute", "one value", "'none,full'"},
      {"order=tp-cp-ep-pp-dp,tp-cp-ep-dp-pp", true, "--fix order", "one value", "'tp-cp-ep-pp-dp,tp-cp-ep-dp-pp'"},
  };
  for (const Bad& b : cases) {
    INFO((b.fix ? "--fix " : "--space ") << b.arg);
    const support::InputError e = error_of(b.arg, b.fix);
    CHECK(e.where().file == "<command line>");
    CHECK(e.key() == b.key);
    CHECK(e.expected().find(b.expected_part) != std::string::npos);
    CHECK(e.found() == b.found);
  }
  // A failed option leaves the space as it was.
  SearchSpace s = narrow();
  CHECK_THROWS_AS(planner::apply_space_option(s, "tp=1,x", false), support::InputError);
  CHECK(s.tp == std::vector<int>{1});
}

TEST_CASE("enumerate_layouts: counts on Llama-3-8B, 16 H100, worked out by hand", "[plan]") {
  const Case& c = llama8b_16();
  SearchSpace s = narrow();
  s.tp = {1, 2, 3, 4, 8};
  s.pp = {1, 2, 4};
  s.mbs = {1, 2, 4, 8};
  s.zero = {0, 1};
  s.v = {1, 2};
  // Enumerated: v 2 is dropped at PP 1, so (pp, v) takes 5 values (1,1) (2,1) (2,2) (4,1) (4,2);
  // 5 tp × 5 (pp, v) × 4 mbs × 2 zero = 200 layouts, less ZeRO-1 where dp = 1 (nothing to shard:
  // the same layout as ZeRO-0): TP8 PP2 and TP4 PP4, 2 v × 4 mbs each = 16, so 184.
  // GPUs: tp·pp must divide 16: TP3 never (5 × 8 = 40), TP8·PP4 = 32 (2 v × 8 = 16): 56 pruned.
  // Batch: 64 sequences % (mbs · dp) ≠ 0 only for mbs 8 · dp 16 = 128 (TP1 PP1): 2 zero = 2 pruned.
  // Interleaved (group = pp micro-batches, Megatron-Core): m = 64 / (mbs · dp) micro-batches
  // must be a multiple of pp; with powers of two, pruned iff m < pp: TP1 PP2 DP8 mbs 8 (m 1)
  // and TP1 PP4 DP4 mbs 8 (m 2), each at 2 zero stages: 4 pruned.
  // The 184 − 56 − 2 − 4 = 122 left are checked against the memory footprint below.
  const planner::Enumeration e = planner::enumerate_layouts(c.scenario, c.cluster, s);
  CHECK(e.total == 184);
  CHECK(pruned(e, planner::kPruneGpus) == 56);
  CHECK(pruned(e, planner::kPruneBatch) == 2);
  CHECK(pruned(e, planner::kPruneInterleave) == 4);
  CHECK(pruned(e, planner::kPruneModel) == 0);

  // Memory, independently: every (tp, pp, v, mbs, zero) that passed the rules above, its
  // largest stage from models::memory_footprint against the H100's 80 GB.
  const double hbm = c.cluster.spec.groups.front().node.gpu.hbm_capacity;
  using Key = std::tuple<int, int, int, std::int64_t, int>;
  std::set<Key> fit;
  std::size_t too_big = 0;
  for (int tp : {1, 2, 4, 8})
    for (int pp : {1, 2, 4})
      for (int v : {1, 2})
        for (std::int64_t mbs : {1, 2, 4, 8})
          for (int zero : {0, 1}) {
            const int dp = 16 / (tp * pp);
            if (tp * pp > 16 || (pp == 1 && v == 2) || 64 % (mbs * dp) != 0) continue;
            if (v == 2 && 64 / (mbs * dp) < pp) continue;
            if (dp == 1 && zero == 1) continue;  // the ZeRO-0 layout
            models::StrategySpec st = *c.scenario.strategy;
            st.tp = tp, st.pp = pp, st.dp = dp, st.zero_stage = zero, st.sequence_parallel = tp > 1;
            st.virtual_stages = v, st.pipeline_schedule = v > 1 ? "interleaved" : "1f1b";
            models::WorkloadSpec w = *c.scenario.workload;
            w.micro_batch_size = mbs, w.recompute = "none";
            double largest = 0;
            for (const auto& f : models::memory_footprint(*c.scenario.model, w, st)) largest = std::max(largest, f.total());
            if (largest > hbm) ++too_big;
            else fit.insert({tp, pp, v, mbs, zero});
          }
  CHECK(too_big + fit.size() == 122);
  CHECK(too_big > 0);  // TP1 PP1 without ZeRO holds 16 B of weights, gradients and Adam state per parameter
  CHECK(pruned(e, planner::kPruneMemory) == too_big);
  REQUIRE(e.candidates.size() == fit.size());
  std::set<Key> got;
  for (const auto& cand : e.candidates) {
    const auto& l = cand.layout;
    got.insert({l.tp, l.pp, l.v, l.mbs, l.zero});
    CHECK(l.dp * l.tp * l.pp == 16);
    CHECK(cand.strategy.dp == l.dp);
    CHECK(cand.workload.micro_batch_size == l.mbs);
    CHECK(cand.memory <= hbm);
    CHECK(cand.memory > 0);
  }
  CHECK(got == fit);
}

TEST_CASE("enumerate_layouts: settings that do not change the layout are enumerated once", "[plan]") {
  const Case& c = llama8b_16();
  SECTION("sequence parallelism and TP overlap at TP 1") {
    // TP1: SP and overlap mean nothing, one layout; TP2: SP on/off × overlap on/off, but overlap
    // needs SP: (SP, no overlap), (SP, overlap), (no SP, no overlap) = 3. Total 4.
    SearchSpace s = narrow();
    s.tp = {1, 2};
    s.sp = {true, false};
    s.tp_overlap = {false, true};
    const planner::Enumeration e = planner::enumerate_layouts(c.scenario, c.cluster, s);
    CHECK(e.total == 4);
    REQUIRE(e.candidates.size() == 4);
    int tp1 = 0;
    for (const auto& cand : e.candidates) {
      if (cand.layout.tp == 1) {
        ++tp1;
        CHECK_FALSE(cand.strategy.sequence_parallel);
        CHECK_FALSE(cand.strategy.tp_comm_overlap);
      }
      CHECK((!cand.strategy.tp_comm_overlap || cand.strategy.sequence_parallel));
    }
    CHECK(tp1 == 1);
  }
  SECTION("chunks per stage at PP 1") {
    // PP1: v 1 only; PP2: v 1, 2, 4. Total 4 (TP2 DP8 / DP4, mbs 1: m = 8 / 16, multiples of 2).
    SearchSpace s = narrow();
    s.tp = {2};
    s.pp = {1, 2};
    s.v = {1, 2, 4};
    const planner::Enumeration e = planner::enumerate_layouts(c.scenario, c.cluster, s);
    CHECK(e.total == 4);
    CHECK(e.candidates.size() == 4);
    for (const auto& cand : e.candidates) {
      CHECK((cand.layout.pp > 1 || cand.layout.v == 1));
      CHECK(cand.strategy.pipeline_schedule == (cand.layout.v > 1 ? "interleaved" : "1f1b"));
    }
  }
  SECTION("rank orders that place ranks alike") {
    // Orders tp-cp-ep-pp-dp and tp-cp-ep-dp-pp (and cp-tp-ep-pp-dp, which differs only in CP 1's
    // place) differ only where both PP and DP exceed 1: TP8 PP1 DP2 → 1, TP8 PP2 DP1 → 1,
    // TP4 PP2 DP2 → 2, TP4 PP1 DP4 → 1, TP4 PP4 DP1 → 1. Total 6.
    SearchSpace s = narrow();
    s.tp = {4, 8};
    s.pp = {1, 2, 4};
    s.order = {"tp-cp-ep-pp-dp", "tp-cp-ep-dp-pp", "cp-tp-ep-pp-dp"};
    const planner::Enumeration e = planner::enumerate_layouts(c.scenario, c.cluster, s);
    CHECK(e.total == 6 + 1);  // + TP8 PP4, enumerated once (not once per order) and pruned (32 GPUs)
    CHECK(pruned(e, planner::kPruneGpus) == 1);
    REQUIRE(e.candidates.size() == 6);
    std::set<std::string> names;
    for (const auto& cand : e.candidates) names.insert(planner::layout_name(cand.layout, models::WorkloadPhase::TrainingStep));
    CHECK(names.size() == 6);
    CHECK(names.count("TP4 PP2 DP2 mbs1 SP ZeRO-1 1F1B rc:none order:tp-cp-ep-dp-pp") == 1);
    CHECK(names.count("TP4 PP2 DP2 mbs1 SP ZeRO-1 1F1B rc:none") == 1);
  }
}

TEST_CASE("default_space: Llama-3-8B training on 16 H100 and decode on a 4-GPU board", "[plan]") {
  const Case& c = llama8b_16();
  const SearchSpace s = planner::default_space(c.scenario, c.cluster);
  // TP up to the node's 8 GPUs, PP powers of two up to 16 GPUs (32 layers), no CP (sequence
  // 4096 ≤ 16,384), no EP (dense model).
  CHECK(s.tp == std::vector<int>{1, 2, 4, 8});
  CHECK(s.pp == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(s.cp == std::vector<int>{1});
  CHECK(s.ep == std::vector<int>{1});
  CHECK(s.mbs == std::vector<std::int64_t>{1, 2, 4});
  CHECK(s.zero == std::vector<int>{0, 1, 3});
  CHECK(s.v == std::vector<int>{1, 2, 4});
  CHECK(s.recompute == std::vector<std::string>{"none", "selective", "full"});

  const models::Scenario dec =
      models::load_scenario(test::source_path("scenarios/workloads/llama31-8b-decode-tp2.yaml"), test::shipped_catalog());
  const models::Cluster board = models::build_cluster(dec.cluster);
  const SearchSpace d = planner::default_space(dec, board);
  CHECK(d.tp == std::vector<int>{1, 2, 4});
  CHECK(d.pp == std::vector<int>{1, 2, 4});
  CHECK(d.batch == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256});
  CHECK(d.zero == std::vector<int>{0});
  CHECK(d.recompute == std::vector<std::string>{"none"});
  // 3 tp × 3 pp × 9 batches = 81 layouts; tp·pp of 8 (TP2 PP4, TP4 PP2) and 16 (TP4 PP4) do
  // not divide 4 GPUs: 3 × 9 = 27 pruned.
  const planner::Enumeration e = planner::enumerate_layouts(dec, board, d);
  CHECK(e.total == 81);
  CHECK(pruned(e, planner::kPruneGpus) == 27);
}
