// The cuda replay backend: ranks are GPUs of this node (or disjoint buffers of one GPU), one
// process. validate/replay/plans/cuda_plan.hpp decides everything that does not need a GPU (buffer
// placement, streams, pairing, event waits, staging); this file turns the plan's steps into CUDA
// calls, times them with CUDA events and checks the result.
//
// Issue: one iteration is the plan's steps in issue order — per step cudaStreamWaitEvent on the
// events it waits for, its copies (cudaMemcpyAsync, cudaMemcpyPeerAsync) and reduction kernels,
// cudaEventRecord. By default that sequence is captured once per Schedule into a CUDA graph
// (stream capture across the streams of every GPU) and each iteration is one cudaGraphLaunch,
// so that the host's issue time (a few µs per API call: seconds for the 10^5 steps of a
// pipelined ring at 256 MB) is not measured; CCSIM_CUDA_GRAPH=0 issues the steps directly every
// iteration instead (host issue time is then part of the times).
//
// Timing: before each iteration every GPU is synchronised (cudaDeviceSynchronize); the iteration
// begins by recording an event t0 on one stream per GPU, which every other stream of that GPU
// waits for; each step records a timing event when its stream reaches it (start: its waits are
// done) and one when its actions are done (end). Times are cudaEventElapsedTime against its
// GPU's t0 (events of two GPUs cannot be compared; the t0 of all GPUs start together, right
// after the synchronisation). Timing events are separate from the events steps wait on (in a
// graph a measured event record is an external event node, not a dependency inside the graph).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "validate/replay/backends/backends.hpp"
#include "validate/replay/plans/cuda_plan.hpp"
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
  std::vector<std::byte*> arena;            ///< per slot (nullptr: unused)
  std::vector<cudaStream_t> streams;        ///< per plan stream
  std::vector<int> stream_device;
  std::vector<std::pair<cudaEvent_t, int>> events;  ///< every event created, with its device
  cudaStream_t capturing = nullptr;         ///< the origin stream of a capture still open
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;

  /// A new event on `device`: timing (measured) or not (only waited on: cheaper).
  cudaEvent_t event(int device, bool timing) {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreateWithFlags");
    events.emplace_back(e, device);
    return e;
  }

  ~Resources() {
    if (capturing != nullptr) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(capturing, &g);
      if (g != nullptr) cudaGraphDestroy(g);
    }
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    for (auto [e, device] : events) {
      cudaSetDevice(device);
      cudaEventDestroy(e);
    }
    for (std::size_t i = 0; i < streams.size(); ++i) {
      cudaSetDevice(stream_device[i]);
      cudaStreamDestroy(streams[i]);
    }
    for (std::size_t s = 0; s < arena.size(); ++s) {
      if (arena[s] == nullptr) continue;
      cudaSetDevice(ordinals[s]);
      cudaFree(arena[s]);
    }
    cudaGetLastError();  // leave no error of the clean-up to the next run
  }
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options) {
    const char* graph = std::getenv("CCSIM_CUDA_GRAPH");
    use_graph_ = graph == nullptr || std::string(graph) != "0";
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
          cudaGetLastError();  // clears the (non-sticky) error the call left
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
    s += use_graph_ ? "; each iteration one CUDA graph launch" : "; ops issued directly (CCSIM_CUDA_GRAPH=0)";
    return s;
  }

  SizeResult run(const models::Schedule& schedule, const ReplayConfig& config) override;

 private:
  std::vector<int> ordinals_;
  std::vector<std::vector<bool>> peer_;
  std::vector<std::string> names_;
  bool use_graph_ = true;  ///< capture each Schedule into a CUDA graph (CCSIM_CUDA_GRAPH unset or not "0")
};

SizeResult CudaBackend::run(const models::Schedule& s, const ReplayConfig& config) {
  check_replayable(s, config.type);
  if (config.warmup < 0 || config.iters < 1) {
    throw ReplayError("cuda backend: expected warmup >= 0 and iters >= 1, got warmup " + std::to_string(config.warmup) +
                      ", iters " + std::to_string(config.iters));
  }
  const auto plan = plan_cuda_replay(s, CudaPlanDevices{ordinals_, peer_});
  const std::uint32_t esize = size_of(config.type);
  const std::size_t nslots = plan.ordinals.size();
  const std::size_t nsteps = plan.steps.size();

  Resources res;
  res.ordinals = plan.ordinals;
  res.arena.assign(nslots, nullptr);
  for (std::size_t slot = 0; slot < nslots; ++slot) {
    if (plan.arena_bytes[slot] == 0) continue;
    check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
    void* p = nullptr;
    check(cudaMalloc(&p, plan.arena_bytes[slot]),
          "cudaMalloc of " + std::to_string(plan.arena_bytes[slot]) + " bytes on device " + std::to_string(plan.ordinals[slot]));
    res.arena[slot] = static_cast<std::byte*>(p);
  }
  // Streams; the first stream of each GPU starts its iteration (t0, then `fork` for the others).
  std::vector<int> first_stream_of_slot(nslots, -1);
  for (std::size_t i = 0; i < plan.streams.size(); ++i) {
    const auto slot = static_cast<std::size_t>(plan.streams[i].slot);
    const int dev = plan.ordinals[slot];
    check(cudaSetDevice(dev), "cudaSetDevice");
    cudaStream_t st = nullptr;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    res.streams.push_back(st);
    res.stream_device.push_back(dev);
    if (first_stream_of_slot[slot] < 0) first_stream_of_slot[slot] = static_cast<int>(i);
  }
  std::vector<cudaEvent_t> t0(nslots, nullptr), fork(nslots, nullptr);
  for (std::size_t slot = 0; slot < nslots; ++slot) {
    if (first_stream_of_slot[slot] < 0) continue;
    t0[slot] = res.event(plan.ordinals[slot], true);
    fork[slot] = res.event(plan.ordinals[slot], false);
  }
  // Per step: `done` when a later step waits on it; timing events `start` (record_ops) and `end`
  // (record_ops, or the last step of its stream: the stream's last end is its latest).
  std::vector<bool> waited_on(nsteps, false), last_of_stream(nsteps, false);
  for (const auto& step : plan.steps) {
    for (auto w : step.waits) waited_on[w] = true;
  }
  {
    std::vector<bool> seen(plan.streams.size(), false);
    for (std::size_t k = nsteps; k-- > 0;) {
      if (!seen[plan.steps[k].stream]) last_of_stream[k] = true;
      seen[plan.steps[k].stream] = true;
    }
  }
  std::vector<cudaEvent_t> done(nsteps, nullptr), start(nsteps, nullptr), end(nsteps, nullptr);
  for (std::size_t k = 0; k < nsteps; ++k) {
    const int dev = res.stream_device[plan.steps[k].stream];
    if (waited_on[k]) done[k] = res.event(dev, false);
    if (config.record_ops) start[k] = res.event(dev, true);
    if (config.record_ops || last_of_stream[k]) end[k] = res.event(dev, true);
  }

  const auto ptr = [&](const CudaAddress& a) { return res.arena[static_cast<std::size_t>(a.slot)] + a.offset; };
  const auto sync_all = [&](const char* when) {
    for (std::size_t slot = 0; slot < nslots; ++slot) {
      if (res.arena[slot] == nullptr && first_stream_of_slot[slot] < 0) continue;
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
      if (L.input_bytes > 0) {
        fill_input(config.type, static_cast<int>(r), host.data(), L.input_bytes / esize);
        check(cudaMemcpy(ptr(L.input), host.data(), L.input_bytes, cudaMemcpyHostToDevice), "upload of rank " + std::to_string(r) + "'s input");
      }
      if (L.output_bytes > 0) {
        fill_poison(config.type, host.data(), L.output_bytes / esize);
        check(cudaMemcpy(ptr(L.output), host.data(), L.output_bytes, cudaMemcpyHostToDevice), "upload of rank " + std::to_string(r) + "'s output");
      }
      if (L.scratch_bytes > 0) check(cudaMemset(ptr(L.scratch), 0, L.scratch_bytes), "cudaMemset of scratch");
    }
  };

  // One iteration's work, issued (or, while capturing, recorded into the graph) stream by stream.
  const auto issue = [&](bool capture) {
    // Measured events become external event nodes of the graph.
    const unsigned timing_flags = capture ? cudaEventRecordExternal : cudaEventRecordDefault;
    for (std::size_t slot = 0; slot < nslots; ++slot) {
      if (first_stream_of_slot[slot] < 0) continue;
      cudaStream_t st = res.streams[static_cast<std::size_t>(first_stream_of_slot[slot])];
      check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
      check(cudaEventRecordWithFlags(t0[slot], st, timing_flags), "cudaEventRecord (iteration start)");
      check(cudaEventRecord(fork[slot], st), "cudaEventRecord");
    }
    for (std::size_t i = 0; i < plan.streams.size(); ++i) {
      const auto slot = static_cast<std::size_t>(plan.streams[i].slot);
      if (static_cast<int>(i) == first_stream_of_slot[slot]) continue;
      check(cudaSetDevice(res.stream_device[i]), "cudaSetDevice");
      check(cudaStreamWaitEvent(res.streams[i], fork[slot], 0), "cudaStreamWaitEvent");
    }
    int current = -1;
    for (std::size_t k = 0; k < nsteps; ++k) {
      const auto& step = plan.steps[k];
      cudaStream_t st = res.streams[step.stream];
      if (res.stream_device[step.stream] != current) {
        current = res.stream_device[step.stream];
        check(cudaSetDevice(current), "cudaSetDevice");
      }
      for (auto w : step.waits) check(cudaStreamWaitEvent(st, done[w], 0), "cudaStreamWaitEvent");
      if (start[k] != nullptr) check(cudaEventRecordWithFlags(start[k], st, timing_flags), "cudaEventRecord");
      for (const auto& a : step.actions) {
        if (a.bytes == 0) continue;
        const auto fail = [&](cudaError_t e, const char* call) {
          if (e != cudaSuccess) check(e, std::string(call) + " for " + replay::describe(step.ops.back()));
        };
        if (a.kind == CudaAction::Kind::Copy) {
          if (a.dst.slot == a.a.slot) {
            fail(cudaMemcpyAsync(ptr(a.dst), ptr(a.a), a.bytes, cudaMemcpyDeviceToDevice, st), "cudaMemcpyAsync");
          } else {
            fail(cudaMemcpyPeerAsync(ptr(a.dst), plan.ordinals[static_cast<std::size_t>(a.dst.slot)], ptr(a.a),
                                     plan.ordinals[static_cast<std::size_t>(a.a.slot)], a.bytes, st),
                 "cudaMemcpyPeerAsync");
          }
        } else {
          launch_add(config.type, ptr(a.dst), ptr(a.a), ptr(a.b), a.bytes, st);
        }
      }
      if (end[k] != nullptr) check(cudaEventRecordWithFlags(end[k], st, timing_flags), "cudaEventRecord");
      if (done[k] != nullptr) check(cudaEventRecord(done[k], st), "cudaEventRecord");
    }
  };

  // The graph: capture starts on one stream; every other stream joins it through `root`
  // (recorded on the origin, waited on by the others) and is joined back before the end.
  if (use_graph_ && !plan.streams.empty()) {
    cudaStream_t origin = res.streams[0];
    check(cudaSetDevice(res.stream_device[0]), "cudaSetDevice");
    cudaEvent_t root = res.event(res.stream_device[0], false);
    std::vector<cudaEvent_t> join(plan.streams.size(), nullptr);
    for (std::size_t i = 1; i < plan.streams.size(); ++i) join[i] = res.event(res.stream_device[i], false);
    const std::string hint = " (CCSIM_CUDA_GRAPH=0 issues the ops without a graph)";
    check(cudaSetDevice(res.stream_device[0]), "cudaSetDevice");
    check(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture" + hint);
    res.capturing = origin;
    check(cudaEventRecord(root, origin), "cudaEventRecord during capture" + hint);
    for (std::size_t i = 1; i < plan.streams.size(); ++i) {
      check(cudaSetDevice(res.stream_device[i]), "cudaSetDevice");
      check(cudaStreamWaitEvent(res.streams[i], root, 0), "cudaStreamWaitEvent during capture (joining a stream of device " +
                                                              std::to_string(res.stream_device[i]) + ")" + hint);
    }
    issue(true);
    for (std::size_t i = 1; i < plan.streams.size(); ++i) {
      check(cudaSetDevice(res.stream_device[i]), "cudaSetDevice");
      check(cudaEventRecord(join[i], res.streams[i]), "cudaEventRecord during capture" + hint);
      check(cudaSetDevice(res.stream_device[0]), "cudaSetDevice");
      check(cudaStreamWaitEvent(origin, join[i], 0), "cudaStreamWaitEvent during capture" + hint);
    }
    check(cudaSetDevice(res.stream_device[0]), "cudaSetDevice");
    res.capturing = nullptr;
    check(cudaStreamEndCapture(origin, &res.graph), "cudaStreamEndCapture" + hint);
    check(cudaGraphInstantiate(&res.exec, res.graph, 0),
          "cudaGraphInstantiate of " + std::to_string(nsteps) + " steps on " + std::to_string(plan.streams.size()) + " streams" + hint);
  }

  SizeResult result;
  result.bytes = s.bytes;
  const int total = config.warmup + config.iters;
  std::vector<double> start_s(nsteps, 0), end_s(nsteps, 0);
  load_buffers();
  for (int it = 0; it < total; ++it) {
    // The last iteration starts from fresh inputs and poisoned outputs: its result is checked.
    if (it == total - 1 && total > 1) load_buffers();
    sync_all("before an iteration");
    if (res.exec != nullptr) {
      check(cudaSetDevice(res.stream_device[0]), "cudaSetDevice");
      check(cudaGraphLaunch(res.exec, res.streams[0]), "cudaGraphLaunch");
    } else {
      issue(false);
    }
    sync_all("after an iteration (an op failed)");
    if (it < config.warmup) continue;
    double last = 0;
    const auto elapsed = [&](std::size_t k, cudaEvent_t e) {
      const auto slot = static_cast<std::size_t>(plan.streams[plan.steps[k].stream].slot);
      check(cudaSetDevice(plan.ordinals[slot]), "cudaSetDevice");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, t0[slot], e), "cudaEventElapsedTime");
      return static_cast<double>(ms) * 1e-3;
    };
    for (std::size_t k = 0; k < nsteps; ++k) {
      if (end[k] != nullptr) {
        end_s[k] = elapsed(k, end[k]);
        last = std::max(last, end_s[k]);
      }
      if (start[k] != nullptr) start_s[k] = elapsed(k, start[k]);
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
    if (L.output_bytes == 0) continue;
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
