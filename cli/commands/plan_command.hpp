#pragma once
// `ccsim plan SCENARIO [--fix KNOB=V]... [--space KNOB=VALUES]... [--objective O] [--top N]
// [--rerank flow] [--synthesize DIMS] [--max-tpot T] [--max-ttft T] [--exact] [--jobs N] [--out DIR]`: searches the
// parallel layouts of the scenario's workload on its cluster (planner/search/layout_plan.hpp) and
// prints the best. Exit codes: 0 a layout was found, 2 bad input, 3 no layout is feasible.

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct PlanCliOptions {
  std::string scenario;
  std::vector<std::string> fix;    ///< KNOB=VALUE
  std::vector<std::string> space;  ///< KNOB=VALUES
  std::string objective = "step-time";
  double price_per_gpu_hour = 0;
  int top = 10;
  std::string rerank;
  std::optional<std::string> synthesize;  ///< comma-separated dimensions (tp, cp, dp); nullopt: not given
  std::string max_tpot, max_ttft;  ///< times with units (50ms) or seconds
  bool exact = false;
  int jobs = 0;
  std::string out;
  std::string format = "text";
  std::string calibration;
  std::string compute_calibration;
  std::string serving_calibration;
  std::string catalog;
};

CLI::App* add_plan_command(CLI::App& app, PlanCliOptions& options);
/// Throws support::InputError on bad input, support::OutputError when --out cannot be written.
int run_plan(const PlanCliOptions& options);

}  // namespace ccsim::cli
