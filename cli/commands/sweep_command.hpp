#pragma once
// `ccsim sweep SCENARIO --set KEY=V1,V2,... [--set ...] [--out DIR] [--price-per-gpu-hour USD]
// [--engine analytic|flow] [--calibration F] [--compute-calibration F] [--serving-calibration F]
// [--catalog D] [--format text|csv|json]`: the cartesian product of scenario overrides (first
// --set outermost), every point run as `ccsim run` runs a scenario, one row per point.
//
// Bad input (exit 2, before any point is simulated, nothing written): a malformed --set, a key
// the scenario format does not have, a value of the wrong type or out of its range, an unknown
// catalog or model name, an index past the end of a list, a key that does not apply to the
// point's phase (input_len outside serving), a bad table. An infeasible point (a
// row saying why, not a failure): a layout that does not divide the GPUs or the model, a
// global batch that is no multiple of micro_batch_size·dp, a cluster too large or without a
// fabric, a layout that does not fit in GPU memory (support::RuleError, WorkloadResult::feasible).
//
// Exit codes: 0 at least one point simulated; 3 every point infeasible (the rows are still
// printed and written); 2 bad input or an unwritable --out; 1 internal error. Under mpirun
// (cli/commands/sweep_mpi.hpp) the points are dealt round-robin (point i to rank i mod N); rank 0 prints
// and writes exactly what a serial run does, and every rank exits with rank 0's code, an error
// on any rank printed once by rank 0.

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct SweepCliOptions {
  std::string scenario;
  std::vector<std::string> sets;  ///< KEY=V1,V2,... in order
  std::string out;
  std::optional<double> price_per_gpu_hour;
  std::string engine;
  std::string calibration;
  std::string compute_calibration;
  std::string serving_calibration;
  std::string catalog;
  std::string format = "text";
  bool plan = false;               ///< each point: the best layout of a search
  std::vector<std::string> fix, space;
  std::string objective = "step-time";
  int jobs = 0;
};

CLI::App* add_sweep_command(CLI::App& app, SweepCliOptions& options);
/// Prints its own errors (once, on rank 0) and returns the exit code; throws nothing but
/// std::bad_alloc.
int run_sweep(const SweepCliOptions& options);

}  // namespace ccsim::cli
