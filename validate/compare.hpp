#pragma once
// Measured against simulated: replay the sizes of an nccl-tests log on a scenario's cluster
// and report each size's error and the mean absolute percentage error (MAPE).

#include <optional>
#include <string>
#include <vector>

#include "models/cluster.hpp"
#include "planner/collective_runner.hpp"
#include "validate/nccl_tests_log.hpp"

namespace ccsim::validate {

struct CompareOptions {
  std::string engine = "analytic";
  std::optional<int> nranks;  ///< overrides the log's rank count
  std::optional<planner::Algorithm> algorithm;
  std::optional<planner::Protocol> protocol;
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

/// Simulates the test's sizes on the first n GPUs of `cluster` (rank order). Throws
/// std::invalid_argument when the log lacks the collective or rank count, or the cluster
/// has too few GPUs.
CompareResult compare(const LogTest& test, const models::Cluster& cluster, const planner::CostModel& costs,
                      const CompareOptions& options);

}  // namespace ccsim::validate
