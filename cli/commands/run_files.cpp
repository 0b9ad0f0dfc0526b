#include "cli/commands/run_files.hpp"

#include <fmt/format.h>

#include "models/scenario/effective_yaml.hpp"
#include "planner/workload/run_trace.hpp"
#include "support/input_error.hpp"

namespace ccsim::cli {

namespace {

/// Bytes per row of ops.csv, measured on docs/performance.md's 256-GPU step (113.7 MB for
/// 649,772 ops); for the notice's estimate only.
constexpr double kOpsCsvBytesPerRow = 175.0;

std::string megabytes(double bytes) { return fmt::format("{:.0f} MB", bytes / 1e6); }

/// 1,234,567.
std::string grouped(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

}  // namespace

void check_trace_format(const std::string& format) {
  if (format != "json" && format != "perfetto") {
    throw support::InputError({"<command line>", 0, 0}, "--trace-format", kTraceFormats, "'" + format + "'");
  }
}

std::string trace_file_name(const std::string& format) { return format == "perfetto" ? "trace.perfetto-trace" : "trace.json"; }

std::string out_cost_notice(const planner::RunContext& ctx, const RunFilesOptions& options) {
  if (options.report_only || !ctx.result.feasible) return {};
  const planner::TraceSize size = planner::trace_size(ctx);
  const double ops_bytes = kOpsCsvBytesPerRow * static_cast<double>(ctx.result.program.ops.size());
  const bool perfetto = options.trace_format == "perfetto";
  const double trace_bytes = perfetto ? size.perfetto_bytes : size.json_bytes;
  if (ops_bytes + trace_bytes < 100e6 && size.slices < 1000000) return {};
  std::string s = fmt::format("ccsim run: --out writes about {} (ops.csv {}, {} {} for {} slices)", megabytes(ops_bytes + trace_bytes),
                              megabytes(ops_bytes), trace_file_name(options.trace_format), megabytes(trace_bytes), grouped(size.slices));
  if (!perfetto) s += fmt::format("; --trace-format perfetto writes the trace in about {}", megabytes(size.perfetto_bytes));
  s += "; --report-only writes report.json and effective.yaml alone\n";
  return s;
}

void write_run_files(const planner::RunContext& ctx, const std::string& report, const RunFilesOptions& options,
                     const support::OutputDir& out, support::Progress& progress) {
  // report.json last: when it is there, the rest is complete (an old one goes first; a
  // symbolic link, device or FIFO in its place stays and is written through at the end).
  out.remove_stale("report.json", support::Stale::RemoveIfRegular);
  progress.update("writing effective.yaml");
  out.write("effective.yaml", models::effective_yaml(ctx.scenario));
  if (!options.report_only) {
    progress.update("writing ops.csv");
    out.write("ops.csv", planner::ops_csv(ctx));
    progress.update("writing links.csv");
    out.write("links.csv", planner::links_csv(ctx));
    const std::string name = trace_file_name(options.trace_format);
    // The other format's file of an earlier run goes: the files in DIR belong together.
    out.remove_stale(trace_file_name(options.trace_format == "perfetto" ? "json" : "perfetto"), support::Stale::RemoveIfRegular);
    const auto counter = progress.counter("writing " + name + ", slices");
    out.write(name, options.trace_format == "perfetto" ? planner::trace_perfetto(ctx, counter) : planner::trace_json(ctx, counter));
  }
  progress.update("writing report.json");
  out.write("report.json", report);
  progress.finish();
}

}  // namespace ccsim::cli
