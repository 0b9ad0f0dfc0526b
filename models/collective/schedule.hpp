#pragma once
// Schedule: the chunk-level plan of one collective (DESIGN.md: the one intermediate
// representation). For every rank, ordered ops — send, recv, recv-reduce, copy, local
// reduce — on input, output and scratch buffers, with explicit dependencies. Planning
// produces Schedules, engines execute them, the replay harness runs them on GPUs, and
// verify() executes them on integers to prove they compute the collective.
//
// Matching: the k-th Send from rank a to rank b on channel c pairs with the k-th Recv (or
// RecvReduce) on b from a on channel c (FIFO, in op order), as NCCL and MPI match messages.
//
// In-switch reduction (NVLS): ops with peer kSwitch talk to the NVSwitch of the ranks'
// NVLink domain. A SwitchSend contributes its slice to reduction group `tag`; a SwitchRecv
// receives the sum of all contributions to group `tag` once all `Schedule::switch_groups[tag]`
// contributors have sent (one contributor = multicast of that rank's data).
//
// Granularity: at Step granularity every op is one pipeline step (exact, verifiable). At
// Phase granularity a pipelined algorithm is folded into one op per (rank, peer, channel,
// phase) carrying the phase's bytes; `steps` says how many step latencies it pays. Phase
// Schedules have O(ranks × phases) ops and are timed, not verified.

#include <span>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"

namespace ccsim::models {

enum class BufferKind : std::uint8_t { Input, Output, Scratch };

/// A byte range of one of a rank's buffers.
struct Slice {
  BufferKind buffer = BufferKind::Input;
  std::uint64_t offset = 0;  ///< bytes
  std::uint64_t bytes = 0;
};

enum class OpKind : std::uint8_t {
  Send,        ///< send src to peer
  Recv,        ///< receive from peer into dst
  RecvReduce,  ///< dst = src (local) + data received from peer
  Copy,        ///< dst = src, locally
  Reduce,      ///< dst = dst + src, locally
  SwitchSend,  ///< contribute src to in-switch group `tag` (NVLS)
  SwitchRecv,  ///< dst = reduction of in-switch group `tag` (NVLS multicast)
};

inline constexpr int kSwitch = -2;  ///< peer of SwitchSend / SwitchRecv

struct Op {
  OpKind kind = OpKind::Copy;
  std::int32_t peer = -1;        ///< other rank for Send/Recv/RecvReduce; kSwitch for switch ops
  std::uint16_t channel = 0;
  std::uint32_t steps = 1;       ///< pipeline steps folded into this op (latency multiplier)
  /// SwitchSend / SwitchRecv: the in-switch group. Phase-granularity Send: its latency pool
  /// (0 = none): the per-step latency of every transfer in a pool is the mean over the pool,
  /// because a pipelined ring's critical path goes around every hop of the ring once per n
  /// steps (NCCL's ring latency sums hop latencies around the ring).
  std::uint32_t tag = 0;
  Slice src;
  Slice dst;
  std::uint32_t dep_begin = 0;  ///< this op's dependencies: RankProgram::dep_pool[dep_begin, +dep_count)
  std::uint32_t dep_count = 0;

  /// Bytes moved by this op: src bytes for sends, dst bytes for receives and local ops.
  std::uint64_t bytes() const;
  bool is_send() const { return kind == OpKind::Send || kind == OpKind::SwitchSend; }
  bool is_recv() const { return kind == OpKind::Recv || kind == OpKind::RecvReduce || kind == OpKind::SwitchRecv; }
};

enum class Granularity : std::uint8_t { Step, Phase };

struct RankProgram {
  std::vector<Op> ops;
  std::vector<std::uint32_t> dep_pool;  ///< indices of earlier ops of this rank, op by op
  std::uint64_t scratch_bytes = 0;

  /// Appends `op` depending on the earlier ops `deps` of this rank; returns its index.
  /// Throws std::logic_error when a dependency is not an earlier op.
  std::uint32_t add(Op op, std::span<const std::uint32_t> deps = {});
  std::span<const std::uint32_t> deps(std::size_t op) const {
    return {dep_pool.data() + ops[op].dep_begin, ops[op].dep_count};
  }
};

struct Schedule {
  Collective collective = Collective::AllReduce;
  std::string algorithm;                ///< "ring", "tree", ...
  int nranks = 1;
  int root = 0;
  std::uint64_t bytes = 0;              ///< nccl-tests size S of the collective
  std::uint32_t element_size = 4;       ///< bytes per element (float32 as nccl-tests' default)
  int channels = 1;
  Granularity granularity = Granularity::Step;
  std::vector<RankProgram> ranks;       ///< one per rank
  std::vector<int> switch_groups;       ///< contributors per in-switch group (NVLS)

  std::size_t op_count() const;
  /// Bytes each rank sends (to peers and to the switch), summed over its send ops.
  std::vector<std::uint64_t> bytes_sent() const;
};

std::string_view to_string(Granularity g);  ///< "step", "phase"
/// The granularity to_string() names `s`; nullopt for any other text ("auto" included).
std::optional<Granularity> parse_granularity(std::string_view s);
/// "send", "recv", "recv-reduce", "copy", "reduce", "switch-send", "switch-recv".
std::string_view to_string(OpKind k);

/// `copies` disjoint copies of `s` side by side, as when the same collective runs at the same
/// time in several groups (all TP groups of a pipeline stage, all DP groups sharing nodes).
/// Rank r of copy j becomes rank j·n + r; peers, in-switch groups and latency pools are
/// renumbered per copy so copies never match or pool with each other. Throws
/// std::invalid_argument when copies < 1 or the result would exceed 2^31 ranks.
Schedule replicate(const Schedule& s, int copies);

/// Result of verify(): ok, or the first problem found.
struct VerifyResult {
  bool ok = true;
  std::string error;
};

/// Executes a Step-granularity schedule on integer buffers (one 64-bit integer per element,
/// distinct values per rank and element, sums modulo 2^64) and checks that every rank ends
/// with the collective's defined result: AllReduce (all ranks hold the sum), ReduceScatter
/// (rank r holds the sum of block r), AllGather (all hold the concatenation), Broadcast (all
/// hold the root's input), Reduce (the root holds the sum), AlltoAll (block j of rank r is
/// block r of rank j), SendRecv (rank r holds rank r−1's input). Also checks: slices inside
/// their buffers and element-aligned, matching message sizes, no deadlock, no message left
/// unreceived. Phase-granularity schedules are rejected (they are not data-exact).
VerifyResult verify(const Schedule& schedule);

}  // namespace ccsim::models
