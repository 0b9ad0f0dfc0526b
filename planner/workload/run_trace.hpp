#pragma once
// The timeline of `ccsim run --out`, in two formats a trace viewer opens:
//  * trace.json: Chrome's trace event format (JSON; "X" complete events, "M" metadata), read
//    by ui.perfetto.dev and chrome://tracing;
//  * trace.perfetto-trace: Perfetto's protobuf trace (TracePacket / TrackDescriptor /
//    TrackEvent with interned strings; perfetto_trace.proto), read by ui.perfetto.dev and
//    trace_processor; smaller than the JSON and faster to open.
// Both hold the same tracks and slices: one process per node ("node N (TEMPLATE)"), one thread
// per (GPU, stream) of the one GPU per pipeline stage that is shown (its TP/CP/DP peers run the
// same timeline), one slice per op that takes time, named as in ops.csv ("qkv mb3"), with its
// pass as category and its pass, micro-batch, layer, FLOPs, bytes, algorithm and protocol as
// arguments. Timestamps are simulated time: nanoseconds rounded to the nearest, from 0 at the
// step's start (microseconds with 3 decimals in the JSON). Both are written directly into one
// buffer, without a document tree in memory; pure functions of the run: same input, same bytes.

#include <cstddef>
#include <functional>
#include <string>

#include "planner/workload/workload_report.hpp"

namespace ccsim::planner {

/// What a trace of this run holds and what it will cost to write.
struct TraceSize {
  std::size_t slices = 0;     ///< ops that take time (one slice each)
  std::size_t tracks = 0;     ///< thread tracks (GPU, stream) plus process tracks (nodes)
  double json_bytes = 0;      ///< estimated size of trace.json, bytes
  double perfetto_bytes = 0;  ///< estimated size of trace.perfetto-trace, bytes
};

/// Counts slices and tracks; the sizes are estimates from the bytes per slice measured on the
/// 256-GPU Llama-3-70B step of docs/performance.md (JSON 200 bytes, Perfetto 96 bytes per
/// slice, name lengths of ccsim's op names) and are meant for the "about N MB" notice only.
TraceSize trace_size(const RunContext& c);

/// trace.json (format above). `progress(done, total)`, when set, is called every 65,536 slices.
std::string trace_json(const RunContext& c, const std::function<void(std::size_t, std::size_t)>& progress = {});

/// trace.perfetto-trace: a serialized perfetto.protos.Trace (one TracePacket per track
/// descriptor, and a TYPE_SLICE_BEGIN and a TYPE_SLICE_END packet per slice, on one packet
/// sequence), written one packet at a time. Event names, categories and argument names are
/// interned (sent once in the packet that first uses them, then named by iid), as Perfetto's
/// own SDK writes them. Process pids are node + 1 and thread tids (node + 1) × 100,000 + the JSON's tid + 1:
/// Perfetto reserves pid and tid 0 for the kernel's idle task, and tids are unique in a trace.
/// `progress` as for trace_json.
std::string trace_perfetto(const RunContext& c, const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace ccsim::planner
