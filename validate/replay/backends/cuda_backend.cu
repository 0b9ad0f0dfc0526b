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
#include <utility>
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

/// One run() of a Schedule: its plan, the CUDA objects made for it, and the steps of the run.
class CudaRun {
 public:
  CudaRun(const models::Schedule& s, const ReplayConfig& config, CudaPlan plan, bool use_graph)
      : s_(s), config_(config), plan_(std::move(plan)), use_graph_(use_graph), esize_(size_of(config.type)),
        nslots_(plan_.ordinals.size()), nsteps_(plan_.steps.size()) {
    res_.ordinals = plan_.ordinals;
  }

  SizeResult run() {
    allocate_arenas();
    create_streams();
    create_events();
    if (use_graph_ && !plan_.streams.empty()) capture_graph();
    SizeResult result;
    result.bytes = s_.bytes;
    iterate(result);
    check_outputs(result);
    return result;
  }

 private:
  std::byte* ptr(const CudaAddress& a) const { return res_.arena[static_cast<std::size_t>(a.slot)] + a.offset; }

  void allocate_arenas() {
    res_.arena.assign(nslots_, nullptr);
    for (std::size_t slot = 0; slot < nslots_; ++slot) {
      if (plan_.arena_bytes[slot] == 0) continue;
      check(cudaSetDevice(plan_.ordinals[slot]), "cudaSetDevice");
      void* p = nullptr;
      check(cudaMalloc(&p, plan_.arena_bytes[slot]),
            "cudaMalloc of " + std::to_string(plan_.arena_bytes[slot]) + " bytes on device " + std::to_string(plan_.ordinals[slot]));
      res_.arena[slot] = static_cast<std::byte*>(p);
    }
  }

  /// Streams; the first stream of each GPU starts its iteration (t0, then `fork` for the others).
  void create_streams() {
    first_stream_of_slot_.assign(nslots_, -1);
    for (std::size_t i = 0; i < plan_.streams.size(); ++i) {
      const auto slot = static_cast<std::size_t>(plan_.streams[i].slot);
      const int dev = plan_.ordinals[slot];
      check(cudaSetDevice(dev), "cudaSetDevice");
      cudaStream_t st = nullptr;
      check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      res_.streams.push_back(st);
      res_.stream_device.push_back(dev);
      if (first_stream_of_slot_[slot] < 0) first_stream_of_slot_[slot] = static_cast<int>(i);
    }
  }

  /// Per GPU: t0 and fork. Per step: `done` when a later step waits on it; timing events
  /// `start` (record_ops) and `end` (record_ops, or the last step of its stream: the stream's
  /// last end is its latest).
  void create_events() {
    t0_.assign(nslots_, nullptr);
    fork_.assign(nslots_, nullptr);
    for (std::size_t slot = 0; slot < nslots_; ++slot) {
      if (first_stream_of_slot_[slot] < 0) continue;
      t0_[slot] = res_.event(plan_.ordinals[slot], true);
      fork_[slot] = res_.event(plan_.ordinals[slot], false);
    }
    std::vector<bool> waited_on(nsteps_, false), last_of_stream(nsteps_, false);
    for (const auto& step : plan_.steps) {
      for (auto w : step.waits) waited_on[w] = true;
    }
    std::vector<bool> seen(plan_.streams.size(), false);
    for (std::size_t k = nsteps_; k-- > 0;) {
      if (!seen[plan_.steps[k].stream]) last_of_stream[k] = true;
      seen[plan_.steps[k].stream] = true;
    }
    done_.assign(nsteps_, nullptr);
    start_.assign(nsteps_, nullptr);
    end_.assign(nsteps_, nullptr);
    for (std::size_t k = 0; k < nsteps_; ++k) {
      const int dev = res_.stream_device[plan_.steps[k].stream];
      if (waited_on[k]) done_[k] = res_.event(dev, false);
      if (config_.record_ops) start_[k] = res_.event(dev, true);
      if (config_.record_ops || last_of_stream[k]) end_[k] = res_.event(dev, true);
    }
  }

  void sync_all(const char* when) const {
    for (std::size_t slot = 0; slot < nslots_; ++slot) {
      if (res_.arena[slot] == nullptr && first_stream_of_slot_[slot] < 0) continue;
      check(cudaSetDevice(plan_.ordinals[slot]), "cudaSetDevice");
      check(cudaDeviceSynchronize(), std::string("cudaDeviceSynchronize ") + when + " on device " + std::to_string(plan_.ordinals[slot]));
    }
  }

  /// Inputs filled, outputs poisoned (so that elements never written count as wrong), scratch zeroed.
  void load_buffers() const {
    std::vector<std::byte> host;
    for (std::size_t r = 0; r < plan_.ranks.size(); ++r) {
      const auto& L = plan_.ranks[r];
      check(cudaSetDevice(plan_.ordinals[static_cast<std::size_t>(L.slot)]), "cudaSetDevice");
      host.resize(std::max(L.input_bytes, L.output_bytes));
      if (L.input_bytes > 0) {
        fill_input(config_.type, static_cast<int>(r), host.data(), L.input_bytes / esize_);
        check(cudaMemcpy(ptr(L.input), host.data(), L.input_bytes, cudaMemcpyHostToDevice), "upload of rank " + std::to_string(r) + "'s input");
      }
      if (L.output_bytes > 0) {
        fill_poison(config_.type, host.data(), L.output_bytes / esize_);
        check(cudaMemcpy(ptr(L.output), host.data(), L.output_bytes, cudaMemcpyHostToDevice), "upload of rank " + std::to_string(r) + "'s output");
      }
      if (L.scratch_bytes > 0) check(cudaMemset(ptr(L.scratch), 0, L.scratch_bytes), "cudaMemset of scratch");
    }
  }

  /// A step's copies and reduction kernels on its stream.
  void issue_actions(const CudaStep& step, cudaStream_t st) const {
    for (const auto& a : step.actions) {
      if (a.bytes == 0) continue;
      const auto fail = [&](cudaError_t e, const char* call) {
        if (e != cudaSuccess) check(e, std::string(call) + " for " + replay::describe(step.ops.back()));
      };
      if (a.kind == CudaAction::Kind::Copy) {
        if (a.dst.slot == a.a.slot) {
          fail(cudaMemcpyAsync(ptr(a.dst), ptr(a.a), a.bytes, cudaMemcpyDeviceToDevice, st), "cudaMemcpyAsync");
        } else {
          fail(cudaMemcpyPeerAsync(ptr(a.dst), plan_.ordinals[static_cast<std::size_t>(a.dst.slot)], ptr(a.a),
                                   plan_.ordinals[static_cast<std::size_t>(a.a.slot)], a.bytes, st),
               "cudaMemcpyPeerAsync");
        }
      } else {
        launch_add(config_.type, ptr(a.dst), ptr(a.a), ptr(a.b), a.bytes, st);
      }
    }
  }

  /// One iteration's work, issued (or, while capturing, recorded into the graph) stream by stream.
  void issue(bool capture) const {
    // Measured events become external event nodes of the graph.
    const unsigned timing_flags = capture ? cudaEventRecordExternal : cudaEventRecordDefault;
    for (std::size_t slot = 0; slot < nslots_; ++slot) {
      if (first_stream_of_slot_[slot] < 0) continue;
      cudaStream_t st = res_.streams[static_cast<std::size_t>(first_stream_of_slot_[slot])];
      check(cudaSetDevice(plan_.ordinals[slot]), "cudaSetDevice");
      check(cudaEventRecordWithFlags(t0_[slot], st, timing_flags), "cudaEventRecord (iteration start)");
      check(cudaEventRecord(fork_[slot], st), "cudaEventRecord");
    }
    for (std::size_t i = 0; i < plan_.streams.size(); ++i) {
      const auto slot = static_cast<std::size_t>(plan_.streams[i].slot);
      if (static_cast<int>(i) == first_stream_of_slot_[slot]) continue;
      check(cudaSetDevice(res_.stream_device[i]), "cudaSetDevice");
      check(cudaStreamWaitEvent(res_.streams[i], fork_[slot], 0), "cudaStreamWaitEvent");
    }
    int current = -1;
    for (std::size_t k = 0; k < nsteps_; ++k) {
      const auto& step = plan_.steps[k];
      cudaStream_t st = res_.streams[step.stream];
      if (res_.stream_device[step.stream] != current) {
        current = res_.stream_device[step.stream];
        check(cudaSetDevice(current), "cudaSetDevice");
      }
      for (auto w : step.waits) check(cudaStreamWaitEvent(st, done_[w], 0), "cudaStreamWaitEvent");
      if (start_[k] != nullptr) check(cudaEventRecordWithFlags(start_[k], st, timing_flags), "cudaEventRecord");
      issue_actions(step, st);
      if (end_[k] != nullptr) check(cudaEventRecordWithFlags(end_[k], st, timing_flags), "cudaEventRecord");
      if (done_[k] != nullptr) check(cudaEventRecord(done_[k], st), "cudaEventRecord");
    }
  }

  /// The graph: capture starts on one stream; every other stream joins it through `root`
  /// (recorded on the origin, waited on by the others) and is joined back before the end.
  void capture_graph() {
    cudaStream_t origin = res_.streams[0];
    check(cudaSetDevice(res_.stream_device[0]), "cudaSetDevice");
    cudaEvent_t root = res_.event(res_.stream_device[0], false);
    std::vector<cudaEvent_t> join(plan_.streams.size(), nullptr);
    for (std::size_t i = 1; i < plan_.streams.size(); ++i) join[i] = res_.event(res_.stream_device[i], false);
    const std::string hint = " (CCSIM_CUDA_GRAPH=0 issues the ops without a graph)";
    check(cudaSetDevice(res_.stream_device[0]), "cudaSetDevice");
    check(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture" + hint);
    res_.capturing = origin;
    check(cudaEventRecord(root, origin), "cudaEventRecord during capture" + hint);
    for (std::size_t i = 1; i < plan_.streams.size(); ++i) {
      check(cudaSetDevice(res_.stream_device[i]), "cudaSetDevice");
      check(cudaStreamWaitEvent(res_.streams[i], root, 0), "cudaStreamWaitEvent during capture (joining a stream of device " +
                                                               std::to_string(res_.stream_device[i]) + ")" + hint);
    }
    issue(true);
    for (std::size_t i = 1; i < plan_.streams.size(); ++i) {
      check(cudaSetDevice(res_.stream_device[i]), "cudaSetDevice");
      check(cudaEventRecord(join[i], res_.streams[i]), "cudaEventRecord during capture" + hint);
      check(cudaSetDevice(res_.stream_device[0]), "cudaSetDevice");
      check(cudaStreamWaitEvent(origin, join[i], 0), "cudaStreamWaitEvent during capture" + hint);
    }
    check(cudaSetDevice(res_.stream_device[0]), "cudaSetDevice");
    res_.capturing = nullptr;
    check(cudaStreamEndCapture(origin, &res_.graph), "cudaStreamEndCapture" + hint);
    check(cudaGraphInstantiate(&res_.exec, res_.graph, 0),
          "cudaGraphInstantiate of " + std::to_string(nsteps_) + " steps on " + std::to_string(plan_.streams.size()) + " streams" + hint);
  }

  /// Seconds from step k's GPU's t0 to event `e`.
  double elapsed(std::size_t k, cudaEvent_t e) const {
    const auto slot = static_cast<std::size_t>(plan_.streams[plan_.steps[k].stream].slot);
    check(cudaSetDevice(plan_.ordinals[slot]), "cudaSetDevice");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, t0_[slot], e), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

  /// The warm-up and timed iterations: each timed one's time and (record_ops) op records.
  void iterate(SizeResult& result) const {
    const int total = config_.warmup + config_.iters;
    std::vector<double> start_s(nsteps_, 0), end_s(nsteps_, 0);
    load_buffers();
    for (int it = 0; it < total; ++it) {
      // The last iteration starts from fresh inputs and poisoned outputs: its result is checked.
      if (it == total - 1 && total > 1) load_buffers();
      sync_all("before an iteration");
      if (res_.exec != nullptr) {
        check(cudaSetDevice(res_.stream_device[0]), "cudaSetDevice");
        check(cudaGraphLaunch(res_.exec, res_.streams[0]), "cudaGraphLaunch");
      } else {
        issue(false);
      }
      sync_all("after an iteration (an op failed)");
      if (it < config_.warmup) continue;
      double last = 0;
      for (std::size_t k = 0; k < nsteps_; ++k) {
        if (end_[k] != nullptr) {
          end_s[k] = elapsed(k, end_[k]);
          last = std::max(last, end_s[k]);
        }
        if (start_[k] != nullptr) start_s[k] = elapsed(k, start_[k]);
      }
      result.iteration_times.push_back(last);
      if (config_.record_ops) {
        std::vector<MeasuredOp> ops;
        ops.reserve(s_.op_count());
        for (std::size_t r = 0; r < plan_.step_of.size(); ++r) {
          for (std::uint32_t i = 0; i < plan_.step_of[r].size(); ++i) {
            const auto k = plan_.step_of[r][i];
            ops.push_back({static_cast<std::int32_t>(r), i, start_s[k], end_s[k]});
          }
        }
        result.ops.push_back(std::move(ops));
      }
    }
  }

  /// nccl-tests' check: every rank's output against the collective's definition.
  void check_outputs(SizeResult& result) const {
    std::vector<std::byte> host;
    for (std::size_t r = 0; r < plan_.ranks.size(); ++r) {
      const auto& L = plan_.ranks[r];
      if (L.output_bytes == 0) continue;
      host.resize(L.output_bytes);
      check(cudaSetDevice(plan_.ordinals[static_cast<std::size_t>(L.slot)]), "cudaSetDevice");
      check(cudaMemcpy(host.data(), ptr(L.output), L.output_bytes, cudaMemcpyDeviceToHost), "download of rank " + std::to_string(r) + "'s output");
      std::string first;
      result.wrong += count_wrong(config_.type, s_.collective, s_.root, static_cast<int>(r), s_.nranks, host.data(), L.output_bytes / esize_, first);
      if (result.first_wrong.empty() && !first.empty()) result.first_wrong = "rank " + std::to_string(r) + " " + first;
    }
  }

  const models::Schedule& s_;
  const ReplayConfig& config_;
  const CudaPlan plan_;
  const bool use_graph_;
  const std::uint32_t esize_;
  const std::size_t nslots_;
  const std::size_t nsteps_;
  Resources res_;  ///< released when the run ends, thrown or not
  std::vector<int> first_stream_of_slot_;
  std::vector<cudaEvent_t> t0_, fork_;             ///< per slot
  std::vector<cudaEvent_t> done_, start_, end_;    ///< per step (nullptr: not needed)
};

SizeResult CudaBackend::run(const models::Schedule& s, const ReplayConfig& config) {
  check_replayable(s, config.type);
  if (config.warmup < 0 || config.iters < 1) {
    throw ReplayError("cuda backend: expected warmup >= 0 and iters >= 1, got warmup " + std::to_string(config.warmup) +
                      ", iters " + std::to_string(config.iters));
  }
  return CudaRun(s, config, plan_cuda_replay(s, CudaPlanDevices{ordinals_, peer_}), use_graph_).run();
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) { return std::make_unique<CudaBackend>(options); }

}  // namespace ccsim::validate::replay
