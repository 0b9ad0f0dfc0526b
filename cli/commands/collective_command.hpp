#pragma once
// `ccsim collective SCENARIO --op allreduce [--algo auto|ring|...] -b 8 -e 8G -f 2 ...`:
// nccl-tests' table for a simulated collective, with the chosen algorithm and protocol and the
// lower bound per size.

#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct CollectiveCliOptions {
  std::string scenario;
  std::string op;
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string min_bytes = "8";
  std::string max_bytes = "128M";
  int factor = 2;
  std::string engine = "analytic";
  int ranks = 0;
  std::string group;
  int root = 0;
  int channels = 0;
  std::string granularity = "auto";
  std::string ecmp;  ///< empty: the scenario's fabric.ecmp; hash or balanced overrides it
  std::string datatype = "float";
  std::string format = "text";
  std::string calibration;
  std::string catalog;
  bool dump_channels = false;  ///< print the channel plan and exit, without simulating
};

CLI::App* add_collective_command(CLI::App& app, CollectiveCliOptions& options);
/// Throws support::InputError on bad input.
int run_collective(const CollectiveCliOptions& options);

/// nccl-tests' time column: 2 decimals below 100 us, 1 below 10,000 us, none above.
std::string format_time_us(double us);

}  // namespace ccsim::cli
