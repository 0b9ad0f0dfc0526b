#pragma once
// What `ccsim replay` writes: the nccl-tests log of the measured sizes (read unchanged by
// `ccsim compare` and `ccsim calibrate`), the per-op Chrome trace of one size with the measured
// and the simulated timeline side by side (same op ids), ops.csv with every op of every size,
// and the per-op comparison (measured vs simulated start and duration, largest deviations first).

#include <cstdint>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/collective/schedule.hpp"
#include "sim/engine.hpp"
#include "validate/replay/replay.hpp"

namespace ccsim::validate::replay {

/// One replayed size: the Schedule executed, its simulated timeline and the measurement.
struct ReplayedSize {
  std::uint64_t bytes = 0;     ///< nccl-tests size S
  std::string algorithm;       ///< "ring"
  std::string protocol;        ///< "Simple" (the cost model's protocol; the replay moves plain data)
  models::Schedule schedule;   ///< Step granularity
  sim::Timeline simulated;     ///< analytic engine, seconds from the collective's start
  SizeResult measured;
};

/// Header facts of the log.
struct LogInfo {
  std::string test;            ///< "all_reduce_perf"
  models::Collective collective = models::Collective::AllReduce;
  int nranks = 0;
  std::string type = "float";
  int root = -1;               ///< -1 for collectives without one
  std::string command;         ///< the ccsim command line
  std::string backend;         ///< "host"
  std::string where;           ///< Backend::describe()
  std::string scenario;        ///< scenario file the schedules were lowered for
  std::uint64_t min_bytes = 0, max_bytes = 0;
  int factor = 2, warmup = 0, iters = 0;
  /// The time column: the median iteration (default: robust to an iteration descheduled on a
  /// shared host) or the mean (nccl-tests' own: total loop time / iterations).
  bool median = true;
};

/// The time the log reports for `r` under `info` (median or mean), seconds.
double reported_time(const LogInfo& info, const SizeResult& r);

/// nccl-tests' perf binary name of a collective ("all_reduce_perf").
std::string perf_test_name(models::Collective c);

/// The log in nccl-tests' layout: header comments (with one "#  Rank" line per rank, so the
/// rank count is read back), the out-of-place table (size, count, type, redop, root, time in
/// us, algbw and busbw in GB/s, #wrong), "# Out of bounds values", "# Avg bus bandwidth", then
/// comment lines with the schedule and the simulated time of each size.
std::string nccl_tests_log(const LogInfo& info, const std::vector<ReplayedSize>& sizes);

/// Each op's median start and median end over the timed iterations (ops of every rank, in
/// rank then op order); empty when ops were not recorded.
std::vector<MeasuredOp> median_ops(const SizeResult& r);

struct OpComparison {
  std::int32_t rank = 0;
  std::uint32_t op = 0;
  models::OpKind kind = models::OpKind::Copy;
  std::int32_t peer = -1;
  std::uint16_t channel = 0;
  std::uint64_t bytes = 0;
  /// Seconds (median over iterations). A send's or receive's start is when both sides were ready
  /// (the later of the two issues), as the engines start a transfer; a local op's when it was issued.
  double measured_start = 0, measured_duration = 0;
  double simulated_start = 0, simulated_duration = 0;  ///< seconds
  /// max(|Δ start|, |Δ duration|), seconds: how far the op is from its simulated place.
  double deviation() const;
};

/// Every op of `s` with its measured (median) and simulated times, largest deviation first
/// (ties: rank, op). Throws std::invalid_argument when the timelines do not cover the schedule.
std::vector<OpComparison> compare_ops(const ReplayedSize& s);

/// The first `top` rows of `rows` as a text table (times in us), with a title line.
std::string comparison_table(const std::vector<OpComparison>& rows, std::size_t top);

/// Chrome trace event format (opens in Perfetto / chrome://tracing), ops placed as compare_ops()
/// places them: process 1 "measured
/// (<backend>)", process 2 "simulated (analytic engine)", one thread per rank in each; every op
/// an "X" event named by kind and peer, args {op, kind, peer, channel, bytes}. Times in us.
std::string trace_json(const ReplayedSize& s, const std::string& backend);

/// ops.csv: size_B,rank,op,kind,peer,channel,bytes,measured_start_us,measured_duration_us,
/// simulated_start_us,simulated_duration_us — the header line, then every op of every size
/// (ops_csv_rows of each; a size without per-op records has no rows).
std::string ops_csv(const std::vector<ReplayedSize>& sizes);
/// The rows of ops.csv for one size, in rank then op order, without the header: one per op
/// (median measured times), times in us.
std::string ops_csv_rows(const ReplayedSize& s);

std::string_view op_kind_name(models::OpKind k);

}  // namespace ccsim::validate::replay
