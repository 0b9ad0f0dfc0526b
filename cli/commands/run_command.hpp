#pragma once
// `ccsim run SCENARIO [--engine analytic|flow] [--out DIR [--report-only]] [--horizon 30d]`: simulate one
// step of the scenario's LLM workload (training step, prefill or decode) and report where the time
// goes; with a `reliability:` section or --horizon, also the whole run under failures
// (planner/cluster/run_reliability.hpp).
// Exit codes: 0 simulated, 2 bad input, 3 the layout does not fit in GPU memory (reported,
// not simulated).

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct RunCliOptions {
  std::string scenario;
  std::string engine;  ///< empty: the scenario's simulation.engine
  std::string out;
  bool report_only = false;  ///< --out writes report.json and effective.yaml only (no ops.csv, links.csv, trace.json)
  std::string trace_format = "json";  ///< --trace-format: json (trace.json) or perfetto (trace.perfetto-trace)
  std::string calibration;
  std::string compute_calibration;
  std::string serving_calibration;  ///< empty: scenarios/calibration/serving.yaml (inference phases)
  std::string catalog;
  std::string chakra;      ///< --chakra DIR: Chakra traces run instead of the scenario's workload
  std::string chakra_out;  ///< --chakra-out DIR: the step written as Chakra traces
  std::optional<int> steps;  ///< --steps: the co-run window of a jobs: scenario (default 4)
  std::optional<std::string> horizon;  ///< --horizon (given empty: an error): a duration (30d); turns on the reliability simulation for that wall time
};

CLI::App* add_run_command(CLI::App& app, RunCliOptions& options);
/// Throws support::InputError on bad input, support::OutputError when --out cannot be written.
int run_run(const RunCliOptions& options);

}  // namespace ccsim::cli
