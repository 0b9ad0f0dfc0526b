#pragma once
// `ccsim synthesize SCENARIO --op allgather [-b 1M -e 1G -f 2] [--ranks N | --group LIST]
// [--method forest|auto] [--out DIR]`: synthesizes the collective's schedule for the ranks'
// fabric (planner/synthesis: ForestColl's throughput-optimal trees), prints per size its time,
// algbw/busbw, its fraction of the lower bound and of the trees' optimum, and NCCL's choice
// beside it; with --out writes the trees (ForestColl's XML) and the schedule (MSCCL XML).

#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct SynthesizeCliOptions {
  std::string scenario;
  std::string op;
  std::string method = "auto";
  std::string min_bytes = "1M";
  std::string max_bytes = "1G";
  int factor = 4;
  std::string engine = "analytic";
  int ranks = 0;
  std::string group;
  int chunks = 0;
  std::string datatype = "float";
  std::string format = "text";
  std::string calibration;
  std::string catalog;
  std::string out;  ///< directory for the tree and schedule files; empty: none written
  int max_tree_ranks = 128;  ///< above, only the optimum (the trees take minutes to hours)
};

CLI::App* add_synthesize_command(CLI::App& app, SynthesizeCliOptions& options);
/// Throws support::InputError on bad input.
int run_synthesize(const SynthesizeCliOptions& options);

}  // namespace ccsim::cli
