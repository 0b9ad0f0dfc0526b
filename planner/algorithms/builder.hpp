#pragma once
// Helpers for algorithm generators: a Schedule under construction and even data splits.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "models/collective/schedule.hpp"
#include "planner/algorithms/algorithms.hpp"

namespace ccsim::planner::detail {

using models::BufferKind;
using models::Op;
using models::OpKind;
using models::Slice;

/// A byte range of the collective's vector.
struct Range {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// Latency multiplier of pipeline chunk k: the first chunk through a hop pays the hop's
/// latency, later chunks stream behind it and pay only bandwidth (T = depth·α + (K + depth − 1)·c/B).
inline std::uint32_t chunk_steps(int k) { return k == 0 ? 1 : 0; }

/// Part i of n near-equal parts of `range` in whole elements (the first parts get one more).
Range part(Range range, std::uint32_t element_size, int n, int i);

inline Slice in(Range r) { return {BufferKind::Input, r.offset, r.bytes}; }
inline Slice out(Range r) { return {BufferKind::Output, r.offset, r.bytes}; }
inline Slice scratch(Range r) { return {BufferKind::Scratch, r.offset, r.bytes}; }

constexpr std::uint32_t kNone = ~0U;  ///< "no dependency" in dep lists

class Builder {
 public:
  Builder(const AlgorithmRequest& request, std::string algorithm);

  int nranks() const { return schedule_.nranks; }
  std::uint32_t element_size() const { return schedule_.element_size; }
  models::Granularity granularity() const { return schedule_.granularity; }
  const AlgorithmRequest& request() const { return request_; }

  /// Each returns the new op's index in `rank`'s program. Dependencies equal to kNone are skipped.
  std::uint32_t send(int rank, int peer, Slice src, int channel, std::initializer_list<std::uint32_t> deps = {},
                     std::uint32_t steps = 1, std::uint32_t pool = 0);
  std::uint32_t recv(int rank, int peer, Slice dst, int channel, std::initializer_list<std::uint32_t> deps = {},
                     std::uint32_t steps = 1);
  std::uint32_t recv_reduce(int rank, int peer, Slice local, Slice dst, int channel,
                            std::initializer_list<std::uint32_t> deps = {});
  std::uint32_t copy(int rank, Slice src, Slice dst, std::initializer_list<std::uint32_t> deps = {});
  std::uint32_t reduce(int rank, Slice src, Slice dst, std::initializer_list<std::uint32_t> deps = {});
  std::uint32_t switch_send(int rank, std::uint32_t group, Slice src, int channel,
                            std::initializer_list<std::uint32_t> deps = {}, std::uint32_t steps = 1);
  std::uint32_t switch_recv(int rank, std::uint32_t group, Slice dst, int channel,
                            std::initializer_list<std::uint32_t> deps = {}, std::uint32_t steps = 1);
  /// A zero-byte local op that completes when all `deps` have: orders the next step of an
  /// exchange after both its send and its receive.
  std::uint32_t join(int rank, std::initializer_list<std::uint32_t> deps) { return copy(rank, out({0, 0}), out({0, 0}), deps); }
  /// A new latency pool for the phase-granularity sends of one ring (see Op::tag).
  std::uint32_t latency_pool() { return ++pools_; }
  /// A new in-switch group with `contributors` senders; returns its tag.
  std::uint32_t switch_group(int contributors);
  void need_scratch(int rank, std::uint64_t bytes);

  models::Schedule take() { return std::move(schedule_); }

 private:
  std::uint32_t add(int rank, Op op, std::initializer_list<std::uint32_t> deps);

  AlgorithmRequest request_;
  models::Schedule schedule_;
  std::uint32_t pools_ = 0;
  std::uint64_t ops_ = 0;  ///< ops added so far (all ranks), against request_.max_ops
};

/// Ring building blocks shared by ring and hierarchical. `members` are ranks in ring order;
/// `entry[i]` is the op member i must wait for first (kNone for none); the returned vector
/// holds each member's last op. All work on `region` of the output buffer.
///
/// AllReduce-style ring ReduceScatter: afterwards member i holds the sum over members of
/// chunk (i + 1) mod L of `region` in its output. The first send and the reductions read
/// `local` (Input for a fresh collective, Output when the data is already there).
std::vector<std::uint32_t> ring_reduce_scatter(Builder& b, const std::vector<int>& members, Range region,
                                               BufferKind local, int channel, const std::vector<std::uint32_t>& entry);
/// Ring AllGather of the chunks left by ring_reduce_scatter: afterwards every member holds
/// all of `region` in its output.
std::vector<std::uint32_t> ring_all_gather(Builder& b, const std::vector<int>& members, Range region, int channel,
                                           const std::vector<std::uint32_t>& entry);
/// Double binary tree AllReduce of `region` among `members` (tree positions → ranks), chunked;
/// the data starts in `local` (Input, or Output when already there) and ends in the output.
/// Uses channels channel_base and channel_base + 1. `first_chunk` is the index of its first
/// chunk in a longer pipeline (only chunk 0 of a pipeline pays the hop latency). Returns each
/// member's last op.
std::vector<std::uint32_t> tree_all_reduce(Builder& b, const std::vector<int>& members, Range region, BufferKind local,
                                           int channel_base, int chunks, const std::vector<std::uint32_t>& entry,
                                           int first_chunk);

}  // namespace ccsim::planner::detail
