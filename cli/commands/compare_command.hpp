#pragma once
// `ccsim compare LOG --scenario S`: simulate the sizes of a real nccl-tests / rccl-tests log on
// the scenario's cluster and report the error per size and the MAPE.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "validate/measurements/nccl_tests_log.hpp"

namespace ccsim::cli {

struct CompareCliOptions {
  std::string log;
  std::string scenario;
  std::string engine = "analytic";
  int ranks = 0;
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string format = "text";
  std::string calibration;
  std::string catalog;
  std::string op;  ///< the collective, for logs that do not name it (empty: the log's)
};

/// Applies `--op NAME` to the tests of a log: names the collective of tests that do not, and
/// throws support::InputError when NAME is unknown or a test names another collective. No-op
/// for an empty name.
void name_collective(std::vector<validate::LogTest>& tests, const std::string& op_name);

CLI::App* add_compare_command(CLI::App& app, CompareCliOptions& options);
/// Throws support::InputError on bad input.
int run_compare(const CompareCliOptions& options);

}  // namespace ccsim::cli
