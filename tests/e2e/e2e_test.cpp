// The end-to-end validation table's arithmetic (tests/e2e/e2e_table.hpp) and its data
// (tests/data/e2e/results.csv, families.csv, the row scenarios), checked against values worked
// out by hand in the comments.

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <stdexcept>

#include "e2e/e2e_table.hpp"
#include "models/hardware/catalog.hpp"
#include "models/scenario/scenario.hpp"
#include "test_support.hpp"

using namespace ccsim::e2e;

TEST_CASE("fractional ranks share the mean rank among ties") {
  // {5, 6, 7, 8, 7}: 5 is 1st, 6 2nd, the two 7s take 3rd and 4th -> 3.5 each, 8 is 5th.
  const auto r = fractional_ranks({5, 6, 7, 8, 7});
  CHECK(r == std::vector<double>{1, 2, 3.5, 5, 3.5});
}

TEST_CASE("spearman: hand-computed correlations") {
  // No ties: rho = 1 - 6 sum d^2 / (n (n^2 - 1)). y ranks {2, 1, 4, 3} against {1, 2, 3, 4}:
  // d = {1, -1, 1, -1}, sum d^2 = 4 -> 1 - 24 / (4 * 15) = 0.6.
  CHECK(spearman({10, 20, 30, 40}, {2, 1, 4, 3}) == Approx(0.6).epsilon(1e-12));
  // Reversed order: -1.
  CHECK(spearman({1, 2, 3}, {30, 20, 10}) == Approx(-1.0).epsilon(1e-12));
  // With ties, Pearson on fractional ranks: rx = {1..5}, ry = {1, 2, 3.5, 5, 3.5}, both means 3;
  // deviations {-2,-1,0,1,2} and {-2,-1,0.5,2,0.5}: sxy = 4+1+0+2+1 = 8, sxx = 10,
  // syy = 4+1+0.25+4+0.25 = 9.5 -> 8 / sqrt(95) = 0.8207826817...
  CHECK(spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}) == Approx(0.8207826817).epsilon(1e-9));
  // Only the order counts: a monotone transform of one series changes nothing.
  CHECK(spearman({1, 2, 3, 4, 5}, {25, 36, 49, 64, 49}) == Approx(0.8207826817).epsilon(1e-9));
  CHECK_THROWS_AS(spearman({1, 2, 3}, {4, 4, 4}), std::invalid_argument);
  CHECK_THROWS_AS(spearman({1, 2}, {1, 2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(spearman({1}, {1}), std::invalid_argument);
}

TEST_CASE("simulated throughput scales the published one by the simulated speed") {
  Row time{"a", "f", "a.yaml", "step_time_s", 10.0, 140.0, "TFLOP/s", 0.5, ""};
  // Simulated 8 s against a published 10 s: 10/8 = 1.25 x faster -> 140 * 1.25 = 175 TFLOP/s;
  // error 8/10 - 1 = -20 %.
  CHECK(simulated_throughput(time, 8.0) == Approx(175.0));
  CHECK(relative_error(8.0, 10.0) == Approx(-0.2));
  Row mfu{"b", "f", "b.yaml", "mfu", 0.40, 0.40, "MFU", 0.5, ""};
  CHECK(simulated_throughput(mfu, 0.30) == Approx(0.30));
}

TEST_CASE("results.csv: rows, conversions and scenarios") {
  const auto rows = read_rows(ccsim::test::source_path("tests/data/e2e/results.csv"));
  const auto families = read_families(ccsim::test::source_path("tests/data/e2e/families.csv"));
  std::set<std::string> family_names;
  for (const auto& f : families) family_names.insert(f.name);
  std::set<std::string> ids;
  const auto& catalog = ccsim::test::shipped_catalog();
  for (const Row& r : rows) {
    INFO(r.id);
    CHECK(ids.insert(r.id).second);
    CHECK(family_names.count(r.family) == 1);
    const std::string path = ccsim::test::source_path("tests/data/e2e/" + r.scenario);
    REQUIRE(std::filesystem::exists(path));
    const auto sc = ccsim::models::load_scenario(path, catalog);
    CHECK(sc.name == r.id);
    CHECK(sc.workload->phase == ccsim::models::WorkloadPhase::TrainingStep);
  }
  CHECK(rows.size() >= 20);
  const auto find = [&](const std::string& id) {
    for (const Row& r : rows) {
      if (r.id == id) return r;
    }
    FAIL("no row " << id);
    return Row{};
  };
  // SC'21 Eq. 3 with B = 512, s = 2048, l = 24, h = 2304, V = 51200 (Table 1 row 1.7B):
  // 96*512*2048*24*2304^2 = 1.28247e16; 1 + 2048/13824 + 51200/884736 = 1.206019 -> F = 1.54668e16
  // FLOPs; / (137 TFLOP/s * 32 GPUs = 4.384e15 FLOP/s) = 3.528 s.
  const double h = 2304, l = 24, s = 2048, B = 512, V = 51200;
  const double F = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(find("sc21-1.7b").published == Approx(F / (137e12 * 32)).epsilon(1e-4));
  CHECK(find("sc21-1.7b").published == Approx(3.528).epsilon(1e-3));
  // NeMo 24.12, LLAMA3-8B on 8 GPUs: GBS 128 x 8192 tokens / (12273 tokens/s/GPU x 8) = 10.680 s.
  CHECK(find("nemo-llama3-8b-8").published == Approx(128.0 * 8192 / (12273.0 * 8)).epsilon(1e-4));
  // Llama 3 405B on 16,384 GPUs (TP8 PP16 DP128): BF16 MFU 41 %.
  CHECK(find("llama3-405b-16k").published == Approx(0.41));
}
