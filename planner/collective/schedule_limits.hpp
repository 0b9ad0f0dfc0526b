#pragma once
// The planner's limits on the Schedules it generates: the most ops one Schedule may hold (it
// bounds memory), the pipeline chunk budget (it bounds a step-granularity schedule), and the
// refusal that names the alternatives when a candidate is over the limit.

#include <cstdint>
#include <functional>

#include "models/collective/schedule.hpp"
#include "planner/algorithms/algorithms.hpp"

namespace ccsim::planner {

/// The largest Schedule the planner generates (ops of all ranks and concurrent groups):
/// kMaxScheduleOps ops take about kMaxScheduleGiB GiB to generate and simulate (measured,
/// Release: direct AlltoAll on 1,024 H100 ranks, 2,098,176 ops, 559 MB peak — about 270
/// bytes per op for the Schedule, the engine's transfers, routes and state; 8.4 M ops ≈ 2.2 GB).
/// It bounds memory, not time: how long a run takes depends on how many distinct completion
/// times the fabric produces (see AnalyticEngine). Above it the runner
/// refuses with ScheduleTooLarge (the CLI's exit code 2) naming the alternatives; in auto mode
/// a candidate above it is skipped when another one fits (CollectiveResult::notes).
inline constexpr std::uint64_t kMaxScheduleOps = std::uint64_t{1} << 23;
inline constexpr int kMaxScheduleGiB = 2;

/// Pipelined algorithms (tree, chains, NVLS) get at most this many chunks × ranks per channel
/// (times the entry's AlgorithmEntry::chunk_ops), which bounds a step-granularity schedule to a
/// few hundred thousand ops.
inline constexpr int kChunkBudget = 8192;
/// At most this many pipeline chunks per channel.
inline constexpr int kMaxChunks = 64;

/// Pipeline chunks per channel for `request` of algorithm `a` (its bytes, channels, ranks and
/// ranks per node) with a protocol of `chunk_bytes`-byte chunks: one chunk per chunk_bytes of a
/// channel's data, at least 1, at most kMaxChunks and the chunk budget.
int pipeline_chunks(Algorithm a, const AlgorithmRequest& request, double chunk_bytes);

/// Generates `request` of algorithm `a` for `groups` concurrent copies (the limit holds for all
/// of them together): refuses when the closed-form estimate (estimated_ops) is over
/// kMaxScheduleOps, else generates with AlgorithmRequest::max_ops set to its share. Throws
/// ScheduleTooLarge naming the most ranks that fit (where the estimate has a closed form) and,
/// at step granularity when `has_phase_form()` (asked only then), --granularity phase; and what
/// generate() throws.
models::Schedule generate_within_limit(Algorithm a, AlgorithmRequest request, std::uint64_t groups,
                                       const std::function<bool()>& has_phase_form);

}  // namespace ccsim::planner
