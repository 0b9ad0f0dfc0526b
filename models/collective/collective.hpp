#pragma once
// Collective operations and nccl-tests' definitions of size and bus bandwidth
// (nccl-tests doc/PERFORMANCE.md; shared/reference/nccl-model.md).

#include <cstdint>
#include <optional>
#include <string_view>

namespace ccsim::models {

/// The largest collective size ccsim accepts anywhere (command line, nccl-tests logs): 4 TiB,
/// above any GPU's memory (the largest, B300/MI355X, hold 288 GB), so larger is a typo or a
/// corrupt log rather than a measurement.
inline constexpr std::uint64_t kMaxCollectiveBytes = 1ull << 42;

enum class Collective : std::uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AlltoAll, SendRecv };

std::string_view to_string(Collective c);  ///< "AllReduce", ...
/// Accepts "allreduce", "all_reduce", "AllReduce" (case-insensitive, '_' and '-' ignored).
std::optional<Collective> parse_collective(std::string_view s);
/// nccl-tests' binary name stem: "all_reduce", "reduce_scatter", "sendrecv", ...
std::string_view nccl_tests_name(Collective c);

/// busbw = algbw × factor (nccl-tests): AllReduce 2(n−1)/n; ReduceScatter, AllGather,
/// AlltoAll (n−1)/n; Broadcast, Reduce, SendRecv 1.
double busbw_factor(Collective c, int nranks);

/// Per-rank buffer sizes, bytes, for a collective of nccl-tests size S over n ranks. S is
/// count × type size for AllReduce, Broadcast, Reduce and SendRecv, and the total buffer
/// (per-rank count × type size × n) for ReduceScatter, AllGather and AlltoAll.
struct BufferSizes {
  std::uint64_t input = 0;
  std::uint64_t output = 0;
};
BufferSizes buffer_sizes(Collective c, std::uint64_t bytes, int nranks);

/// True when the collective has a root rank (Broadcast, Reduce).
bool has_root(Collective c);

/// Whether nccl-tests sizes collective `c` per rank: ReduceScatter, AllGather and AlltoAll move
/// one block per rank, so their sizes are a whole number of elements per rank and their count
/// column holds one rank's elements; every other collective's sizes are whole elements and its
/// count column holds them all.
bool sized_per_rank(Collective c);

/// The granule of nccl-tests' sizes of `c`, bytes: `element_bytes` × `nranks` when
/// sized_per_rank(c), else `element_bytes`. A size as nccl-tests makes it is a multiple of it.
std::uint64_t size_granule(Collective c, std::uint32_t element_bytes, int nranks);

}  // namespace ccsim::models
