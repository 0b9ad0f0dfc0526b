#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"
#include "validate/measurements/compare.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

using namespace ccsim;

namespace {

struct MeasuredSystem {
  const char* log;        ///< under tests/data/nccl-tests/
  const char* scenario;   ///< under scenarios/
  std::size_t rows;       ///< table rows of the log
  int large;              ///< rows with size ≥ 1 MiB
  double mape_budget;     ///< percent, all sizes
  double large_budget;    ///< percent, sizes ≥ 1 MiB
};

// Error budget: MAPE of the default calibration (scenarios/calibration/nccl.yaml for NVIDIA,
// rccl.yaml for AMD GPUs; analytic engine) against each real log, as measured with
// `build/cli/ccsim compare LOG --scenario S` when this test was written, rounded up to the
// next whole percent. A change that makes a prediction worse than this fails here; one that
// improves it should lower the budget. The model measured has NCCL's LL / LL128 throughput caps,
// FIFO connections, ring search over all 7 xGMI links at RCCL's 48 GB/s, RCCL's own constants
// for AMD, NCCL's Tree in place of a hierarchical AllReduce, and host memory
// (each log against that model):
//
//   log                                          scenario               MAPE all   MAPE >= 1 MiB
//   h100-2x8-ethernet-gpudirect-all_reduce.log   h100-2x8-200g.yaml       61.3 %         49.7 %
//     (55.0 / 41.5 % with ccsim's hierarchical AllReduce, whose slower
//     pipeline hid part of the cloud system's unmodelled ~130 us latency floor; NCCL's Tree
//     (phase granularity, the fluid limit of its pipeline) is within -13..-2 % from 1 GiB up and
//     far below the floor at 1-256 MiB)
//   mi300x-1x8-xgmi-all_reduce.log               mi300x-1node.yaml        23.9 %          8.6 %
//     (RCCL's base latencies, 12 / 12 / 17 us, put small sizes above the measured 13.7-15.5 us,
//     as RCCL's own model does: Ring LL 12 + 14 x 0.8 = 23.2 us)
//   rtx2080ti-1x2-pcie3-nop2p-all_reduce.log     pcie-2gpu-nop2p.yaml     20.6 %         32.3 %
//   a100-1x8-nvswitch-sendrecv.log               dgx-a100-1node.yaml      27.80 %        27.80 %
//
// Rows ≥ 1 MiB (2^20 B): H100 1M..8G = 2^20..2^33, 14 rows; MI300X likewise 14; RTX 1M, 2M,
// 4M, 16M, 64M, 256M, 1G = 7; A100 all 4 (128M..1G).
const MeasuredSystem kSystems[] = {
    {"h100-2x8-ethernet-gpudirect-all_reduce.log", "h100-2x8-200g.yaml", 21, 14, 62.0, 50.0},
    {"mi300x-1x8-xgmi-all_reduce.log", "mi300x-1node.yaml", 24, 14, 24.0, 9.0},
    {"rtx2080ti-1x2-pcie3-nop2p-all_reduce.log", "pcie-2gpu-nop2p.yaml", 18, 7, 21.0, 33.0},
    {"a100-1x8-nvswitch-sendrecv.log", "dgx-a100-1node.yaml", 4, 4, 28.0, 28.0},
};


}  // namespace

TEST_CASE("compare: simulated against measured nccl-tests logs stays within the error budget", "[validate][compare]") {
  for (const MeasuredSystem& sys : kSystems) {
    INFO(fmt::format("{} on {}", sys.log, sys.scenario));
    const std::string path = test::source_path(std::string("tests/data/nccl-tests/") + sys.log);
    std::ifstream in(path);
    REQUIRE(in);
    const auto tests = validate::parse_nccl_tests_log(in, path);
    REQUIRE(tests.size() == 1);
    const validate::LogTest& log = tests[0];
    const models::Cluster cluster = test::shipped_cluster(sys.scenario);

    validate::CompareOptions options;  // analytic engine, auto algorithm and protocol
    REQUIRE(options.engine == models::EngineKind::Analytic);
    // The table `ccsim compare` picks for this cluster's GPU vendor.
    const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path(cluster));
    const validate::CompareResult r = validate::compare(log, cluster, costs, options);

    CHECK(r.test == log.name);
    CHECK(r.collective == *log.collective);
    CHECK(r.nranks == *log.nranks);
    REQUIRE(r.rows.size() == sys.rows);
    REQUIRE(r.rows.size() == log.rows.size());

    // Each row: measured is the log's out-of-place time; error = (sim − meas) / meas × 100,
    // recomputed here. MAPE = mean |error| over all rows, and over the rows ≥ 1 MiB.
    double abs_sum = 0, abs_large = 0;
    int large = 0;
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
      const validate::CompareRow& row = r.rows[i];
      INFO(fmt::format("size {}", row.size));
      CHECK(row.size == log.rows[i].size);
      CHECK(row.measured_us == log.rows[i].time_us);
      CHECK(row.simulated_us > 0.0);
      const double error = (row.simulated_us - row.measured_us) / row.measured_us * 100.0;
      CHECK(row.error_pct == Approx(error));
      abs_sum += std::fabs(error);
      if (row.size >= (1ULL << 20)) {
        abs_large += std::fabs(error);
        ++large;
      }
    }
    CHECK(large == sys.large);
    CHECK(r.large == sys.large);
    CHECK(r.mape == Approx(abs_sum / static_cast<double>(r.rows.size())));
    CHECK(r.mape_large == Approx(abs_large / large));

    CHECK(r.mape <= sys.mape_budget);
    CHECK(r.mape_large <= sys.large_budget);
  }
}

// A log whose sizes repeat (91 rows of 21 sizes must not take 6x as long as 21 rows)
// simulates each distinct (collective, ranks, element size, size) once; repeated rows get the
// first one's simulated time, algorithm and protocol, and the simulation count is the number of
// distinct sizes. The count is the Comparer's own (no timing).
TEST_CASE("compare: repeated sizes are simulated once and give identical rows", "[validate][compare]") {
  const models::Cluster cluster = test::shipped_cluster("mi300x-1node.yaml");
  const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path(cluster));
  validate::LogTest log;
  log.name = "all_reduce_perf";
  log.collective = models::Collective::AllReduce;
  log.nranks = 8;
  // Sizes 1K, 1M, 64M three times over (distinct measured times), plus 1M as half: 4 distinct.
  const std::uint64_t sizes[] = {1024, 1 << 20, 64 << 20};
  for (int pass = 0; pass < 3; ++pass) {
    for (const std::uint64_t s : sizes) {
      validate::LogRow row;
      row.line = static_cast<int>(log.rows.size()) + 10;
      row.size = s;
      row.count = s / 4;
      row.type = "float";
      row.redop = "sum";
      row.time_us = 10.0 + pass + static_cast<double>(s) / 1e5;
      log.rows.push_back(row);
    }
  }
  validate::LogRow half = log.rows[1];
  half.type = "half";
  half.count = half.size / 2;
  log.rows.push_back(half);

  validate::Comparer comparer(cluster, costs, {});
  const validate::CompareResult r = comparer.compare(log);
  CHECK(comparer.simulations() == 4);
  REQUIRE(r.rows.size() == 10);
  for (std::size_t i = 3; i < 9; ++i) {
    INFO("row " << i);
    const validate::CompareRow& first = r.rows[i % 3];
    CHECK(r.rows[i].size == first.size);
    CHECK(r.rows[i].simulated_us == first.simulated_us);  // exactly: the same simulation
    CHECK(r.rows[i].algorithm == first.algorithm);
    CHECK(r.rows[i].protocol == first.protocol);
    CHECK(r.rows[i].measured_us == log.rows[i].time_us);  // each row keeps its own measurement
  }

  // The memo gives what a fresh simulation of each size gives.
  for (std::size_t i = 0; i < 3; ++i) {
    validate::LogTest one = log;
    one.rows = {log.rows[i]};
    CHECK(validate::compare(one, cluster, costs, {}).rows.at(0).simulated_us == r.rows[i].simulated_us);
  }

  // A second test of the same collective in the same log costs nothing more; another rank
  // count is another simulation.
  comparer.compare(log);
  CHECK(comparer.simulations() == 4);
  validate::LogTest four = log;
  four.nranks = 4;
  four.rows.resize(1);
  comparer.compare(four);
  CHECK(comparer.simulations() == 5);
}
