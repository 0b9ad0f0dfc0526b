#pragma once
// vLLM's tensor-parallel AllReduce: its own custom all-reduce kernels inside a node for small
// messages, NCCL (PyNccl) otherwise.
//
// The choice, as vLLM makes it (vllm/distributed/device_communicators/custom_all_reduce.py,
// class CustomAllreduce: __init__ and should_custom_ar; csrc/custom_all_reduce.cuh,
// CustomAllreduce::allreduce):
//   * custom all-reduce is disabled when the group spans nodes (in_the_same_node_as), when the
//     world size is not 2, 4, 6 or 8 (_SUPPORTED_WORLD_SIZES), when more than two GPUs are not
//     all NVLink-connected (is_fully_connected: "not supported on more than two PCIe-only
//     GPUs"), when the GPUs cannot do peer-to-peer (_can_p2p), or by the engine argument
//     disable_custom_all_reduce;
//   * otherwise it is used for inputs of fewer than max_size = 8 MiB (the constructor's
//     default 8192·1024) whose byte size is a multiple of 16, and NCCL above;
//   * the kernel is one-stage (one-shot) for 2 GPUs, and on fully connected GPUs when
//     (world ≤ 4 and bytes < 512 KiB) or (world ≤ 8 and bytes < 256 KiB); two-stage (two-shot)
//     otherwise.
// The two Schedules (data movement as the kernels do it, with loads over NVLink / P2P
// modelled as transfers from the buffer's owner to the reader):
//   one-shot: every rank reads the whole input of every peer ((n−1)·S bytes in per rank) and
//             sums it locally; one synchronisation stage.
//   two-shot: rank r reads block r (S/n) from every peer and reduces it (a ReduceScatter),
//             then reads every peer's reduced block (an AllGather): 2·(n−1)/n·S bytes in per
//             rank; two synchronisation stages.
// Each transfer of a stage carries one Op step, so the engine charges the stage's latency
// (path latency + CostParams::step_latency) once per stage on the critical path; the kernel
// launch is CostParams::base_latency (constants in scenarios/calibration/serving.yaml).

#include <cstdint>
#include <optional>
#include <string_view>

#include "models/collective/schedule.hpp"
#include "planner/algorithms/algorithms.hpp"

namespace ccsim::planner {

enum class VllmAllReduce : std::uint8_t { Nccl, OneShot, TwoShot };

/// "nccl", "vllm-oneshot", "vllm-twoshot" (the kernels' registry names).
std::string_view to_string(VllmAllReduce a);
/// The registry's entry of a custom kernel: Algorithm::VllmOneShot or VllmTwoShot; nullopt for
/// Nccl (the choice then goes to the NCCL policy). generate(*vllm_algorithm(kind), request)
/// with request {AllReduce, world size, bytes, element size} builds vllm_custom_allreduce's Schedule.
std::optional<Algorithm> vllm_algorithm(VllmAllReduce a);

/// vLLM's custom all-reduce buffer size (CustomAllreduce.__init__ max_size default 8192·1024
/// bytes); inputs of this size or more go to NCCL.
inline constexpr std::uint64_t kVllmCustomAllReduceMaxSize = 8192ULL * 1024ULL;

/// What vLLM knows about a TP group when it sets up its communicators.
struct VllmGroup {
  int world_size = 1;
  bool same_node = true;        ///< all ranks on one node
  bool fully_connected = false; ///< every pair of GPUs joined by NVLink (directly or via NVSwitch)
  bool p2p = false;             ///< every pair can do peer-to-peer (NVLink, or PCIe P2P)
  bool disabled = false;        ///< disable_custom_all_reduce
};

/// Whether vLLM's custom all-reduce is enabled for the group (CustomAllreduce.__init__).
bool vllm_custom_allreduce_enabled(const VllmGroup& g);

/// The kernel vLLM runs for an AllReduce of `bytes` bytes on `g` (see the file comment).
VllmAllReduce vllm_allreduce_choice(const VllmGroup& g, std::uint64_t bytes);

/// The Schedule of vLLM's one-shot or two-shot kernel on `nranks` ranks for `bytes` bytes
/// of elements of `element_size` bytes. Step granularity (verify() checks it). Throws
/// std::invalid_argument for Nccl, nranks < 1, or a size that is not whole elements.
models::Schedule vllm_custom_allreduce(VllmAllReduce kind, int nranks, std::uint64_t bytes, std::uint32_t element_size);

}  // namespace ccsim::planner
