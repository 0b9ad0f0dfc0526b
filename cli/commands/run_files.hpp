#pragma once
// The files of `ccsim run --out DIR` for one step: effective.yaml, ops.csv, links.csv, the
// trace (trace.json or trace.perfetto-trace, --trace-format) and report.json last, with a
// progress line while they are written (support/progress.hpp) and, before a large set, a
// notice on standard error of what it will cost (slices, estimated MB) and how to make it
// smaller.

#include <string>

#include "planner/workload/workload_report.hpp"
#include "support/output_dir.hpp"
#include "support/progress.hpp"

namespace ccsim::cli {

/// The trace formats of --trace-format: "json" (default, trace.json) and "perfetto"
/// (trace.perfetto-trace).
inline constexpr const char* kTraceFormats = "json or perfetto";

struct RunFilesOptions {
  bool report_only = false;          ///< report.json and effective.yaml only
  std::string trace_format = "json"; ///< "json" or "perfetto" (checked by check_trace_format)
};

/// Throws support::InputError (--trace-format, "json or perfetto") for any other value.
void check_trace_format(const std::string& format);

/// The name of the trace file for a format: "trace.json" or "trace.perfetto-trace".
std::string trace_file_name(const std::string& format);

/// The notice printed before writing, when the estimated size of ops.csv and the trace
/// together reaches 100 MB or the trace 1,000,000 slices; empty otherwise. Says the slices, the
/// estimated MB of each file, and the smaller choices (--trace-format perfetto, --report-only).
std::string out_cost_notice(const planner::RunContext& ctx, const RunFilesOptions& options);

/// Writes the files into `out` (report.json, already rendered, last: when it is there the rest
/// is complete; an old one goes first). Throws support::OutputError when a file cannot be
/// written.
void write_run_files(const planner::RunContext& ctx, const std::string& report, const RunFilesOptions& options,
                     const support::OutputDir& out, support::Progress& progress);

}  // namespace ccsim::cli
