#pragma once
// Data of a replay, shared by every backend: the input each rank starts with, the output the
// collective defines, and the element arithmetic of the Schedule's local ops.
//
// Input values are small integers, distinct in pattern per rank and element:
//   in(r, i) = 1 + (r·29 + i·7 + ⌊i/61⌋) mod 61
// so that a sum over up to 2^16 ranks is exact in float (< 2^24) and in every integer type wider
// than 8 bits, and a block taken from the wrong rank or offset shows as wrong elements. 8-bit
// types sum modulo 2^8 (unsigned wrap-around; the expected value is computed the same way).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "validate/replay/replay.hpp"

namespace ccsim::validate::replay {

/// Input value of element `i` of rank `r` (before conversion to the element type).
std::int64_t input_value(int rank, std::uint64_t element);

/// Fills `count` elements of type `t` at `dst` with rank `rank`'s input.
void fill_input(DataType t, int rank, void* dst, std::uint64_t count);
/// Fills `count` elements with a value no correct output holds (-1 / max), so that elements
/// never written are counted wrong.
void fill_poison(DataType t, void* dst, std::uint64_t count);

/// dst[k] = a[k] + b[k] for k < count (the element type's addition; `dst` may alias `a` or `b`).
void add(DataType t, void* dst, const void* a, const void* b, std::uint64_t count);

/// Wrong output elements of rank `rank` of `nranks` for `collective` (root for Broadcast /
/// Reduce; a Reduce's non-root ranks have no defined output and count 0). `out` holds
/// `count` elements. `first` gets the first wrong one described ("element 17: expected 12,
/// found 0") when it is empty and one is found.
std::uint64_t count_wrong(DataType t, models::Collective collective, int root, int rank, int nranks, const void* out,
                          std::uint64_t count, std::string& first);

/// Byte sizes of a rank's input and output buffers for nccl-tests size `bytes`
/// (models::buffer_sizes), and its scratch from the Schedule.
struct RankBufferBytes {
  std::uint64_t input = 0, output = 0, scratch = 0;
};
RankBufferBytes rank_buffer_bytes(const models::Schedule& s, int rank);

/// Throws ReplayError when `s` cannot be replayed with type `t`: Phase granularity, rank
/// programs missing, slices outside their buffers or not whole elements of `t`, sends and
/// receives that do not pair up (the checks models::verify makes before executing).
void check_replayable(const models::Schedule& s, DataType t);

/// Bytes each in-switch group (NVLS) moves: every SwitchSend and SwitchRecv of a group moves the
/// same slice size. Throws ReplayError when a group's ops differ or name an unknown group.
std::vector<std::uint64_t> switch_group_bytes(const models::Schedule& s);

/// The partner of every Send / Recv / RecvReduce: for op i of rank r, the (rank, op) it
/// pairs with under the FIFO rule per (source, destination, channel), and the message's
/// sequence number on that connection. Local and switch ops have partner rank -1.
struct Partner {
  std::int32_t rank = -1;
  std::uint32_t op = 0;
  std::uint32_t sequence = 0;  ///< k: the k-th message from source to destination on the channel
};
std::vector<std::vector<Partner>> match_messages(const models::Schedule& s);

}  // namespace ccsim::validate::replay
