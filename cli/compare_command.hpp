#pragma once
// `ccsim compare LOG --scenario S`: simulate the sizes of a real nccl-tests / rccl-tests log on
// the scenario's cluster and report the error per size and the MAPE.

#include <string>

#include <CLI/CLI.hpp>

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

CLI::App* add_compare_command(CLI::App& app, CompareCliOptions& options);
/// Throws models::InputError on bad input.
int run_compare(const CompareCliOptions& options);

}  // namespace ccsim::cli
