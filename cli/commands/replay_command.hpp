#pragma once
// `ccsim replay SCENARIO --op OP [--algo A --protocol P --channels C --ranks N] -b MIN -e MAX -f F
// --backend host|mpi|cuda|verbs [-n ITERS -w WARMUP] [--out DIR]`: lowers the collective exactly
// as `ccsim collective` does, executes each size's Step Schedule on real hardware
// (validate/replay/replay.hpp), checks the results and prints an nccl-tests log (read unchanged
// by `ccsim compare` and `ccsim calibrate`) followed by the per-op comparison with the simulated
// timeline of the same Schedule. --out DIR also gets the log, trace.json (measured beside
// simulated), ops.csv and replay.json.
// Exit codes: 0 every result correct, 2 bad input, 3 the backend cannot run here (not built,
// no device, no launcher) or failed, 4 some rank's result was wrong (#wrong > 0).

#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct ReplayCliOptions {
  std::string scenario;
  std::string op;
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string min_bytes = "8";
  std::string max_bytes = "32M";
  int factor = 2;
  int ranks = 0;
  std::string group;
  int root = 0;
  int channels = 0;
  std::string datatype = "float";
  std::string backend = "host";
  int iters = 20;
  int warmup = 5;
  std::string out;
  std::string trace_size;      ///< size whose per-op trace and comparison are shown (default: the largest)
  std::string time_stat = "median";  ///< median or mean (nccl-tests')
  int top = 10;                ///< comparison rows printed
  std::string devices;         ///< cuda: 0,1,...
  std::string nics;            ///< verbs: mlx5_0,mlx5_1,...
  std::string calibration;
  std::string catalog;
};

CLI::App* add_replay_command(CLI::App& app, ReplayCliOptions& options);
/// Throws support::InputError on bad input, support::OutputError when --out cannot be written.
int run_replay(const ReplayCliOptions& options);

}  // namespace ccsim::cli
