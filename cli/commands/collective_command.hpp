#pragma once
// `ccsim collective SCENARIO --op allreduce [--algo auto|ring|...] -b 8 -e 8G -f 2 ...`:
// nccl-tests' table for a simulated collective, with the chosen algorithm and protocol and the
// lower bound per size.

#include <optional>
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
  std::optional<std::string> skew;  ///< --skew: ready-time skew (parse_skew); nullopt: none
};

CLI::App* add_collective_command(CLI::App& app, CollectiveCliOptions& options);
/// Throws support::InputError on bad input.
int run_collective(const CollectiveCliOptions& options);

/// Per-rank ready times (seconds after the first arrival, the earliest 0) for `ranks` ranks from
/// --skew's text:
///   "R:TIME[,R:TIME...]"   rank R calls the collective TIME late (the others at 0): "3:50us";
///   "uniform:MAX[:SEED]"   every rank late by a time drawn uniformly from [0, MAX];
///   "exponential:MEAN[:SEED]"  every rank late by an exponential time of mean MEAN
/// (std::mt19937_64 with SEED, default 1, the same on every machine; drawn times are shifted
/// so that the earliest rank is at 0). TIME is a duration with its unit (50us, 1.5ms).
/// Throws support::InputError (key --skew) naming what is wrong: a rank out of range or named
/// twice, a time below 0 or without a unit, an unknown form.
std::vector<double> parse_skew(const std::string& text, int ranks);

/// nccl-tests' time column: 2 decimals below 100 us, 1 below 10,000 us, none above.
std::string format_time_us(double us);

}  // namespace ccsim::cli
