// The cuda replay backend: ranks are GPUs of this node (or disjoint buffers of one GPU), one
// process. validate/replay/cuda_plan.hpp decides everything that does not need a GPU (buffer
// placement, streams, pairing, event waits, staging); this file turns the plan's steps into CUDA
// calls, times them with CUDA events and checks the result.
//
// Timing: before each iteration every GPU is synchronised (cudaDeviceSynchronize), an event t0
// is recorded on one stream per GPU and every other stream of that GPU waits for it; each step
// records an event when its stream reaches it (start, after its waits) and one when its actions
// are done (end). Times are cudaEventElapsedTime against its GPU's t0 (events of two GPUs cannot
// be compared; the t0 of all GPUs are recorded back to back after the synchronisation). The ops
// are issued from one host thread while the GPUs already run: host issue time (a few µs per
// step) is part of what is measured, as NCCL's own launch is part of nccl-tests' times.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "validate/replay/backends.hpp"
#include "validate/replay/cuda_plan.hpp"
#include "validate/replay/data.hpp"

namespace ccsim::validate::replay {

namespace {

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) {
    throw ReplayError("cuda backend: " + what + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
  }
}

/// dst[i] = a[i] + b[i] (grid-stride). Integers add modulo 2^bits (through the unsigned type, as
/// data.hpp's add does), floating point with IEEE addition.
template <typename T>
__global__ void add_kernel(T* dst, const T* a, const T* b, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      dst[i] = static_cast<T>(static_cast<U>(static_cast<U>(a[i]) + static_cast<U>(b[i])));
    } else {
      dst[i] = a[i] + b[i];
    }
  }
}

template <typename T>
void launch_add(void* dst, const void* a, const void* b, std::uint64_t bytes, cudaStream_t stream) {
  const std::uint64_t n = bytes / sizeof(T);
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  // Enough blocks to fill any current GPU (132 SMs × 16 resident blocks on H100 / H200 is
  // 2112); the grid-stride loop covers the rest.
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>((n + kThreads - 1) / kThreads, 2048));
  add_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n);
}

void launch_add(DataType t, void* dst, const void* a, const void* b, std::uint64_t bytes, cudaStream_t stream) {
  switch (t) {
    case DataType::Int8: launch_add<std::int8_t>(dst, a, b, bytes, stream); break;
    case DataType::Uint8: launch_add<std::uint8_t>(dst, a, b, bytes, stream); break;
    case DataType::Int32: launch_add<std::int32_t>(dst, a, b, bytes, stream); break;
    case DataType::Uint32: launch_add<std::uint32_t>(dst, a, b, bytes, stream); break;
    case DataType::Int64: launch_add<std::int64_t>(dst, a, b, bytes, stream); break;
    case DataType::Uint64: launch_add<std::uint64_t>(dst, a, b, bytes, stream); break;
    case DataType::Float: launch_add<float>(dst, a, b, bytes, stream); break;
    case DataType::Double: launch_add<double>(dst, a, b, bytes, stream); break;
  }
  check(cudaGetLastError(), "reduction kernel launch");
}

/// The CUDA objects of one run(): released (errors ignored) when it ends, thrown or not.
struct Resources {
  std::vector<int> ordinals;
  std::vector<std::byte*> arena;         ///< per slot (nullptr: unused)
  std::vector<cudaStream_t> streams;     ///< per plan stream
  std::vector<int> stream_device;
  std::vector<cudaEvent_t> start, end;   ///< per step (start: when record_ops)
  std::vector<cudaEvent_t> t0;           ///< per slot
  std::vector<int> event_device;         ///< device of start/end events, per step

  ~Resources() {
    for (std::size_t i = 0; i < end.size(); ++i) {
      cudaSetDevice(event_device[i]);
      if (end[i] != nullptr) cudaEventDestroy(end[i]);
      if (i < start.size() && start[i] != nullptr) cudaEventDestroy(start[i]);
    }
    for (std::size_t s = 0; s < t0.size(); ++s) {
      if (t0[s] == nullptr) continue;
      cudaSetDevice(ordinals[s]);
      cudaEventDestroy(t0[s]);
    }
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (streams[i] == nullptr) continue;
      cudaSetDevice(stream_device[i]);
      cudaStreamDestroy(streams[i]);
    }
    for (std::size_t s = 0; s < arena.size(); ++s) {
      if (arena[s] == nullptr) continue;
      cudaSetDevice(ordinals[s]);
      cudaFree(arena[s]);
    }
  }
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      throw ReplayError(std::string("cuda backend: no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")");
    }
    if (count == 0) {
      throw ReplayError("cuda backend: no CUDA device (cudaGetDeviceCount found 0; check the driver and CUDA_VISIBLE_DEVICES)");
    }
    if (options.devices.empty()) {
      for (int d = 0; d < count; ++d) ordinals_.push_back(d);
    } else {
      for (int d : options.devices) {
        if (d < 0 || d >= count) {
          throw ReplayError("cuda backend: --devices names device " + std::to_string(d) + ", expected 0.." +
                            std::to_string(count - 1) + " (" + std::to_string(count) + " visible)");
        }
        if (std::count(ordinals_.begin(), ordinals_.end(), d) > 0) {
          throw ReplayError("cuda backend: --devices names device " + std::to_string(d) + " twice (expected distinct devices)");
        }
        ordinals_.push_back(d);
      }
    }
    const std::size_t n = ordinals_.size();
    peer_.assign(n, std::vector<bool>(n, false));
    for (std::size_t i = 0; i < n; ++i) {
      cudaDeviceProp prop{};
      check(cudaGetDeviceProperties(&prop, ordinals_[i]), "cudaGetDeviceProperties(" + std::to_string(ordinals_[i]) + ")");
      names_.emplace_back(prop.name);
      for (std::size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        int can = 0;
        check(cudaDeviceCanAccessPeer(&can, ordinals_[i], ordinals_[j]), "cudaDeviceCanAccessPeer");
        if (can == 0) continue;
        check(cudaSetDevice(ordinals_[i]), "cudaSetDevice");
        const cudaError_t pe = cudaDeviceEnablePeerAccess(ordinals_[j], 0);
        if (pe == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();  // clears the sticky-free error state the call left
        } else {
          check(pe, "cudaDeviceEnablePeerAccess(" + std::to_string(ordinals_[i]) + " -> " + std::to_string(ordinals_[j]) + ")");
        }
        peer_[i][j] = true;
      }
    }
  }

  std::string_view name() const override { return "cuda"; }

  std::string describe(int nranks) const override {
    const int gpus = std::min<int>(nranks, static_cast<int>(ordinals_.size()));
    std::string s = std::to_string(nranks) + " ranks on " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " of this node (";
    for (int i = 0; i < gpus; ++i) s += (i ? ", " : "") + std::to_string(ordinals_[static_cast<std::size_t>(i)]) + ": " + names_[static_cast<std::size_t>(i)];
    s += ")";
    if (nranks > gpus) s += ", up to " + std::to_string((nranks + gpus - 1) / gpus) + " ranks per GPU on disjoint buffers";
    int pairs = 0, p2p = 0;
    for (int i = 0; i < gpus; ++i) {
      for (int j = 0; j < gpus; ++j) {
        if (i == j) continue;
        ++pairs;
        p2p += peer_[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] ? 1 : 0;
      }
    }
    if (pairs > 0) s += ", peer access on " + std::to_string(p2p) + " of " + std::to_string(pairs) + " directed GPU pairs";
    return s;
  }

  SizeResult run(const models::Schedule& schedule, const ReplayConfig& config) override;

 private:
  std::vector<int> ordinals_;
  std::vector<std::vector<bool>> peer_;
  std::vector<std::string> names_;
};

SizeResult CudaBackend::run(const models::Schedule& s, const ReplayConfig& config) {
  check_replayable(s, config.type);
  if (config.warmup < 0 || config.iters < 1) {
    throw ReplayError("cuda backend: expected warmup >= 0 and iters >= 1, got warmup " + std::to_string(config.warmup) +
                      ", iters " + std::to_string(config.iters));
  }
  const auto plan = plan_cuda_replay(s, CudaPlanDevices{ordinals_, peer_});
  const std::uint32_t esize = size_of(config.type);

  Resources res;
  res.ordinals = plan.ordinals;
  const std::size_t nslots = plan.ordinals.size();
  res.arena.assign(nslots, nullptr);
  res.t0.assign(nslots, nullptr);
  for (std::size_t slot = 0; slot < nslots; ++slot) {
    if (plan.arena_bytes[slot] == 0) continue;
    check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
    void* p = nullptr;
    check(cudaMalloc(&p, plan.arena_bytes[slot]),
          "cudaMalloc of " + std::to_string(plan.arena_bytes[slot]) + " bytes on device " + std::to_string(plan.ordinals[slot]));
    res.arena[slot] = static_cast<std::byte*>(p);
    check(cudaEventCreate(&res.t0[slot]), "cudaEventCreate");
  }
  std::vector<int> first_stream_of_slot(nslots, -1);
  for (std::size_t i = 0; i < plan.streams.size(); ++i) {
    const int slot = plan.streams[i].slot;
    const int dev = plan.ordinals[static_cast<std::size_t>(slot)];
    check(cudaSetDevice(dev), "cudaSetDevice");
    cudaStream_t st = nullptr;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    res.streams.push_back(st);
    res.stream_device.push_back(dev);
    if (first_stream_of_slot[static_cast<std::size_t>(slot)] < 0) first_stream_of_slot[static_cast<std::size_t>(slot)] = static_cast<int>(i);
  }
  const std::size_t nsteps = plan.steps.size();
  res.end.assign(nsteps, nullptr);
  if (config.record_ops) res.start.assign(nsteps, nullptr);
  for (std::size_t k = 0; k < nsteps; ++k) {
    const int dev = res.stream_device[plan.steps[k].stream];
    check(cudaSetDevice(dev), "cudaSetDevice");
    res.event_device.push_back(dev);
    check(cudaEventCreate(&res.end[k]), "cudaEventCreate");
    if (config.record_ops) check(cudaEventCreate(&res.start[k]), "cudaEventCreate");
  }

  const auto ptr = [&](const CudaAddress& a) { return res.arena[static_cast<std::size_t>(a.slot)] + a.offset; };
  const auto sync_all = [&](const char* when) {
    for (std::size_t slot = 0; slot < nslots; ++slot) {
      if (res.arena[slot] == nullptr) continue;
      check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
      check(cudaDeviceSynchronize(), std::string("cudaDeviceSynchronize ") + when + " on device " + std::to_string(plan.ordinals[slot]));
    }
  };
  // Inputs filled, outputs poisoned (so that elements never written count as wrong), scratch zeroed.
  const auto load_buffers = [&] {
    std::vector<std::byte> host;
    for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
      const auto& L = plan.ranks[r];
      check(cudaSetDevice(plan.ordinals[static_cast<std::size_t>(L.slot)]), "cudaSetDevice");
      host.resize(std::max(L.input_bytes, L.output_bytes));
      fill_input(config.type, static_cast<int>(r), host.data(), L.input_bytes / esize);
      check(cudaMemcpy(ptr(L.input), host.data(), L.input_bytes, cudaMemcpyHostToDevice), "upload of rank " + std::to_string(r) + "'s input");
      fill_poison(config.type, host.data(), L.output_bytes / esize);
      check(cudaMemcpy(ptr(L.output), host.data(), L.output_bytes, cudaMemcpyHostToDevice), "upload of rank " + std::to_string(r) + "'s output");
      if (L.scratch_bytes > 0) check(cudaMemset(ptr(L.scratch), 0, L.scratch_bytes), "cudaMemset of scratch");
    }
  };

  SizeResult result;
  result.bytes = s.bytes;
  const int total = config.warmup + config.iters;
  std::vector<double> start_s(nsteps), end_s(nsteps);
  load_buffers();
  for (int it = 0; it < total; ++it) {
    // The last iteration starts from fresh inputs and poisoned outputs: its result is checked.
    if (it == total - 1 && total > 1) load_buffers();
    sync_all("before an iteration");
    for (std::size_t slot = 0; slot < nslots; ++slot) {
      if (first_stream_of_slot[slot] < 0) continue;
      check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
      check(cudaEventRecord(res.t0[slot], res.streams[static_cast<std::size_t>(first_stream_of_slot[slot])]), "cudaEventRecord");
    }
    for (std::size_t i = 0; i < plan.streams.size(); ++i) {
      const auto slot = static_cast<std::size_t>(plan.streams[i].slot);
      if (static_cast<int>(i) == first_stream_of_slot[slot]) continue;
      check(cudaSetDevice(res.stream_device[i]), "cudaSetDevice");
      check(cudaStreamWaitEvent(res.streams[i], res.t0[slot], 0), "cudaStreamWaitEvent");
    }
    int current = -1;
    for (std::size_t k = 0; k < nsteps; ++k) {
      const auto& step = plan.steps[k];
      cudaStream_t st = res.streams[step.stream];
      if (res.stream_device[step.stream] != current) {
        current = res.stream_device[step.stream];
        check(cudaSetDevice(current), "cudaSetDevice");
      }
      for (auto w : step.waits) check(cudaStreamWaitEvent(st, res.end[w], 0), "cudaStreamWaitEvent");
      if (config.record_ops) check(cudaEventRecord(res.start[k], st), "cudaEventRecord");
      for (const auto& a : step.actions) {
        if (a.bytes == 0) continue;
        if (a.kind == CudaAction::Kind::Copy) {
          if (a.dst.slot == a.a.slot) {
            check(cudaMemcpyAsync(ptr(a.dst), ptr(a.a), a.bytes, cudaMemcpyDeviceToDevice, st), "cudaMemcpyAsync for " + replay::describe(step.ops.back()));
          } else {
            check(cudaMemcpyPeerAsync(ptr(a.dst), plan.ordinals[static_cast<std::size_t>(a.dst.slot)], ptr(a.a),
                                      plan.ordinals[static_cast<std::size_t>(a.a.slot)], a.bytes, st),
                  "cudaMemcpyPeerAsync for " + replay::describe(step.ops.back()));
          }
        } else {
          launch_add(config.type, ptr(a.dst), ptr(a.a), ptr(a.b), a.bytes, st);
        }
      }
      check(cudaEventRecord(res.end[k], st), "cudaEventRecord");
    }
    sync_all("after an iteration (an op failed)");
    if (it < config.warmup) continue;
    double last = 0;
    for (std::size_t k = 0; k < nsteps; ++k) {
      const auto slot = static_cast<std::size_t>(plan.streams[plan.steps[k].stream].slot);
      check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, res.t0[slot], res.end[k]), "cudaEventElapsedTime");
      end_s[k] = ms * 1e-3;
      if (config.record_ops) {
        check(cudaEventElapsedTime(&ms, res.t0[slot], res.start[k]), "cudaEventElapsedTime");
        start_s[k] = ms * 1e-3;
      }
      last = std::max(last, end_s[k]);
    }
    result.iteration_times.push_back(last);
    if (config.record_ops) {
      std::vector<MeasuredOp> ops;
      ops.reserve(s.op_count());
      for (std::size_t r = 0; r < plan.step_of.size(); ++r) {
        for (std::uint32_t i = 0; i < plan.step_of[r].size(); ++i) {
          const auto k = plan.step_of[r][i];
          ops.push_back({static_cast<std::int32_t>(r), i, start_s[k], end_s[k]});
        }
      }
      result.ops.push_back(std::move(ops));
    }
  }

  // nccl-tests' check: every rank's output against the collective's definition.
  std::vector<std::byte> host;
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    const auto& L = plan.ranks[r];
    host.resize(L.output_bytes);
    check(cudaSetDevice(plan.ordinals[static_cast<std::size_t>(L.slot)]), "cudaSetDevice");
    check(cudaMemcpy(host.data(), ptr(L.output), L.output_bytes, cudaMemcpyDeviceToHost), "download of rank " + std::to_string(r) + "'s output");
    std::string first;
    result.wrong += count_wrong(config.type, s.collective, s.root, static_cast<int>(r), s.nranks, host.data(), L.output_bytes / esize, first);
    if (result.first_wrong.empty() && !first.empty()) result.first_wrong = "rank " + std::to_string(r) + " " + first;
  }
  return result;
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) { return std::make_unique<CudaBackend>(options); }

}  // namespace ccsim::validate::replay
