#pragma once
// Measured against simulated: replay the sizes of an nccl-tests log on a scenario's cluster
// and report each size's error and the mean absolute percentage error (MAPE).

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "planner/collective/collective_runner.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

namespace ccsim::validate {

struct CompareOptions {
  models::EngineKind engine = models::EngineKind::Analytic;
  std::optional<int> nranks;  ///< overrides the log's rank count
  std::optional<planner::Algorithm> algorithm;
  std::optional<planner::Protocol> protocol;
  /// NCCL_ALGO / NCCL_PROTO lists the log was taken with ("Ring,Tree", "^NVLS";
  /// planner/algorithms/nccl_names.hpp), applied to each test's collective; empty: none.
  /// Checked by the caller (compare() throws std::invalid_argument for a bad one).
  std::string nccl_algo;
  std::string nccl_proto;
};

struct CompareRow {
  std::uint64_t size = 0;
  double measured_us = 0;
  double simulated_us = 0;
  double error_pct = 0;  ///< (simulated − measured) / measured × 100
  planner::Algorithm algorithm = planner::Algorithm::Ring;
  planner::Protocol protocol = planner::Protocol::Simple;
};

struct CompareResult {
  std::string test;
  models::Collective collective = models::Collective::AllReduce;
  int nranks = 0;
  std::vector<CompareRow> rows;
  double mape = 0;        ///< over all sizes, percent
  double mape_large = 0;  ///< over sizes ≥ 1 MiB, percent (0 when there are none)
  int large = 0;          ///< number of sizes ≥ 1 MiB
};

/// Compares the tests of one log (or several) with one cluster, calibration and options.
/// Each distinct (collective, ranks, element size, size) is simulated once per Comparer: a
/// log that repeats sizes (several runs of nccl-tests in one file, `-n`/`-w` sweeps printed
/// twice) costs one simulation per distinct size, and equal rows get identical results.
/// `cluster` and `costs` must outlive the Comparer.
class Comparer {
 public:
  Comparer(const models::Cluster& cluster, const planner::CostModel& costs, CompareOptions options);
  ~Comparer();
  Comparer(const Comparer&) = delete;
  Comparer& operator=(const Comparer&) = delete;

  /// Simulates the test's sizes on the first n GPUs of the cluster (rank order). Throws
  /// std::invalid_argument when the log lacks the collective or rank count, names an unknown
  /// data type, or the cluster has too few GPUs.
  CompareResult compare(const LogTest& test);

  /// Collective simulations run so far (distinct sizes, not rows).
  std::size_t simulations() const { return simulations_; }

 private:
  using RunnerKey = std::tuple<models::Collective, int, std::uint32_t>;                 // collective, ranks, element bytes
  using ResultKey = std::tuple<models::Collective, int, std::uint32_t, std::uint64_t>;  // ... and size in bytes

  const models::Cluster& cluster_;
  const planner::CostModel& costs_;
  CompareOptions options_;
  std::map<RunnerKey, std::unique_ptr<planner::CollectiveRunner>> runners_;
  std::map<ResultKey, planner::CollectiveResult> results_;
  std::size_t simulations_ = 0;
};

/// One test on its own: `Comparer(cluster, costs, options).compare(test)`.
CompareResult compare(const LogTest& test, const models::Cluster& cluster, const planner::CostModel& costs,
                      const CompareOptions& options);

}  // namespace ccsim::validate
