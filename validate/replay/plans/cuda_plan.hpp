#pragma once
// The device-independent half of the cuda replay backend (validate/replay/backends/cuda_backend.cu):
// where every rank's buffers live, which CUDA stream runs which op, which events each waits on,
// which sends and receives pair into one transfer, and where data is staged. A pure function of
// the Schedule, the GPUs and their peer-access matrix, so that it is tested without a GPU
// (tests/validate/replay/plans/cuda_plan_test.cpp); the backend only turns its steps into CUDA calls.
//
// Execution model (CUDA streams are FIFO queues; cudaStreamWaitEvent orders across streams):
//   * one stream per (rank, channel), on the rank's GPU;
//   * a Step is what one stream does for one or two Schedule ops: wait for the events of
//     other streams' earlier steps, run one or two actions (a copy, an elementwise addition
//     kernel), record its own event;
//   * a matched Send/Recv (or Send/RecvReduce) pair is ONE step on the receiver's stream
//     (the copy, or the kernel, reads the sender's memory: NCCL's P2P read), waiting for the
//     dependencies of both sides; both ops are done when its event is;
//   * steps are issued in one global order that is a topological order of the dependencies, so
//     every event waited on was recorded earlier; stream FIFO order adds edges only from earlier
//     to later steps, so no order of issue can deadlock.
//
//        rank a, channel c stream:  ... [Copy] ............................
//        rank b, channel c stream:  ... wait(a's deps, b's deps) [a.src → b.dst] record ...
//
// In-switch groups (NVLS SwitchSend / SwitchRecv) are emulated: each group has an accumulation
// buffer on the GPU of one of its contributors (group t: the (t mod count)-th, so that the groups
// spread over the GPUs); every SwitchSend of the group runs on that rank's stream (so the
// contributions are serialised: the first copies, the others add); a SwitchRecv copies the
// accumulator to its destination after all contributions.

#include <cstdint>
#include <string>
#include <vector>

#include "models/collective/schedule.hpp"
#include "validate/replay/replay.hpp"

namespace ccsim::validate::replay {

/// Alignment of every region the plan places in a GPU's memory arena, bytes (cudaMalloc's own
/// alignment, CUDA C Programming Guide §5.3.2: 256 bytes).
inline constexpr std::uint64_t kCudaRegionAlign = 256;

/// The GPUs and how they reach each other.
struct CudaPlanDevices {
  /// CUDA device ordinals the ranks run on: rank r on ordinals[r mod size]. Distinct.
  std::vector<int> ordinals;
  /// peer_access[i][j]: a kernel on ordinals[i] can read memory of ordinals[j]
  /// (cudaDeviceCanAccessPeer, then enabled). size × size; the diagonal is ignored. Empty: no
  /// peer access anywhere.
  std::vector<std::vector<bool>> peer_access;
};

/// A byte address: `offset` bytes into the arena of device slot `slot` (an index into
/// CudaPlanDevices::ordinals; each slot has one allocation of CudaPlan::arena_bytes[slot]).
struct CudaAddress {
  std::int32_t slot = 0;
  std::uint64_t offset = 0;
  bool operator==(const CudaAddress&) const = default;
};

/// One thing a stream does: Copy (dst = a; cudaMemcpyAsync, or cudaMemcpyPeerAsync between
/// GPUs) or Add (dst = a + b elementwise in the replay's element type; a kernel on the step's
/// GPU, which reads a and b directly: the plan only emits it when both are on that GPU or
/// reachable by peer access). dst may alias a.
struct CudaAction {
  enum class Kind : std::uint8_t { Copy, Add };
  Kind kind = Kind::Copy;
  CudaAddress dst, a, b;  ///< b: Add only
  std::uint64_t bytes = 0;
};

/// How a step that pairs or reduces across ranks reaches the other side's data.
enum class CudaAccess : std::uint8_t {
  Local,    ///< a local op, or both ranks on one GPU
  Peer,     ///< different GPUs, the kernel or copy engine reads the peer directly (P2P)
  Staged,   ///< different GPUs without peer access: cudaMemcpyPeerAsync into a staging
            ///< region on this GPU first (the runtime routes it through pinned host memory),
            ///< then the kernel (only reductions need it: a plain copy is one cudaMemcpyPeerAsync)
  Copied,   ///< different GPUs without peer access, a plain transfer: one cudaMemcpyPeerAsync
};

/// A Schedule op: rank and index in the rank's RankProgram::ops.
struct CudaOpRef {
  std::int32_t rank = 0;
  std::uint32_t op = 0;
  bool operator==(const CudaOpRef&) const = default;
};

struct CudaStep {
  std::uint32_t stream = 0;           ///< index in CudaPlan::streams
  /// Earlier steps (indices < this one's) of OTHER streams whose events this step waits on
  /// (cudaStreamWaitEvent): every dependency of every op it runs that its own stream's order
  /// does not already cover. Sorted, distinct.
  std::vector<std::uint32_t> waits;
  std::vector<CudaAction> actions;    ///< run in order on the stream
  /// The Schedule ops this step completes: one (a local op, a switch op) or two (the Send and
  /// the Recv / RecvReduce it pairs with, the send first).
  std::vector<CudaOpRef> ops;
  CudaAccess access = CudaAccess::Local;
};

struct CudaStream {
  std::int32_t rank = 0;
  std::uint16_t channel = 0;
  std::int32_t slot = 0;  ///< device slot of the rank
};

/// Where a rank's buffers are: three regions of its slot's arena.
struct CudaRankLayout {
  std::int32_t slot = 0;
  CudaAddress input, output, scratch;
  std::uint64_t input_bytes = 0, output_bytes = 0, scratch_bytes = 0;
};

struct CudaPlan {
  std::vector<int> ordinals;               ///< copy of CudaPlanDevices::ordinals
  std::vector<std::uint64_t> arena_bytes;  ///< per slot, bytes (0: no rank on it)
  std::vector<CudaRankLayout> ranks;       ///< per rank
  std::vector<CudaStream> streams;         ///< one per (rank, channel) the ranks use
  std::vector<CudaStep> steps;             ///< in issue order
  /// step_of[r][i]: the step that runs op i of rank r.
  std::vector<std::vector<std::uint32_t>> step_of;
  std::uint64_t staging_bytes = 0;         ///< all slots together, bytes
  std::uint64_t switch_bytes = 0;          ///< in-switch accumulators, all slots together, bytes
};

/// Plans the replay of `s` on `devices`. `s` must have passed check_replayable (Step
/// granularity, slices inside buffers, sends and receives that pair up). Throws ReplayError
/// when `devices` is empty or lists an ordinal twice, when the peer matrix is not size × size,
/// when the ops' dependencies and message pairings form a cycle (the schedule deadlocks; names
/// an op that never becomes ready), or when an in-switch group's slices differ in size.
CudaPlan plan_cuda_replay(const models::Schedule& s, const CudaPlanDevices& devices);

/// "rank 2 op 17" — for messages.
std::string describe(const CudaOpRef& op);

}  // namespace ccsim::validate::replay
