// The host backend: every rank is a thread of this process with its buffers in host memory. A
// matched Send/Recv pair is a rendezvous, as NCCL's peer-to-peer read: the sender publishes its
// source slice when its Send is ready; the receiver, once its Recv is ready too, copies (or, for
// RecvReduce, adds) straight from the sender's buffer into its own and releases the sender. The
// in-switch ops of NVLS schedules reduce into a shared group buffer under a lock (the switch).
// It measures this host's memory system and thread scheduling: with more ranks than cores the
// threads time-share the cores and times grow accordingly.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "validate/replay/backends/backends.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/rank_loop.hpp"

namespace ccsim::validate::replay {

namespace {

/// A reusable barrier that every waiting thread leaves with an error once one thread failed.
class AbortableBarrier {
 public:
  explicit AbortableBarrier(int parties) : parties_(parties) {}
  /// Returns when all parties arrived; `last` runs in the last thread to arrive before release.
  template <class F>
  void arrive_and_wait(F&& last) {
    const int generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      last();
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == generation) {
      if (aborted_.load(std::memory_order_acquire)) throw ReplayError("aborted: another rank failed");
      std::this_thread::yield();
    }
  }
  void abort() { aborted_.store(true, std::memory_order_release); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

 private:
  int parties_;
  std::atomic<int> arrived_{0};
  std::atomic<int> generation_{0};
  std::atomic<bool> aborted_{false};
};

/// Bytes of memory this host can give a process now: /proc/meminfo's MemAvailable (free memory
/// plus reclaimable caches, Linux ≥ 3.14), else the physical memory (sysconf).
std::uint64_t available_host_memory() {
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
        found = true;
        break;
      }
    }
    std::fclose(f);
    if (found) return static_cast<std::uint64_t>(kib) * 1024;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : UINT64_MAX;
}

/// The CPUs this process may run on (sched_getaffinity), in increasing order; empty when unknown.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

/// Pins `thread` to `cpu`; false when the system refuses (the thread then floats).
bool pin(std::thread& thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread.native_handle(), sizeof set, &set) == 0;
}

struct RankState {
  std::vector<std::byte> input, output, scratch;
  RankMemory memory() { return {input.data(), output.data(), scratch.data()}; }
};

/// What all rank threads of one run share.
struct Shared {
  const models::Schedule& schedule;
  DataType type;
  std::vector<RankState> ranks;
  std::vector<std::vector<Partner>> partner;
  /// Per send op: 0 = not ready, 1 = source published, 2 = delivered (one flag per op, reset
  /// before each iteration).
  std::vector<std::unique_ptr<std::atomic<std::uint8_t>[]>> sent;
  struct Group {
    std::mutex lock;
    std::vector<std::byte> sum;
    std::atomic<int> contributed{0};
  };
  std::vector<std::unique_ptr<Group>> groups;
  AbortableBarrier barrier;
  Clock::time_point t0{};
  explicit Shared(const models::Schedule& s, DataType t) : schedule(s), type(t), barrier(s.nranks) {}
};

class HostTransport final : public Transport {
 public:
  HostTransport(Shared& shared, int rank) : s_(shared), rank_(rank), ops_(shared.schedule.ranks[static_cast<std::size_t>(rank)].ops) {}

  bool start(std::uint32_t i) override {
    const models::Op& op = ops_[i];
    switch (op.kind) {
      case models::OpKind::Send:
        s_.sent[static_cast<std::size_t>(rank_)][i].store(1, std::memory_order_release);
        return false;
      case models::OpKind::SwitchSend: {
        auto& g = *s_.groups[op.tag];
        const std::lock_guard<std::mutex> hold(g.lock);
        const std::byte* src = memory().at(op.src);
        if (g.contributed.load(std::memory_order_relaxed) == 0) {
          if (op.src.bytes > 0) std::memcpy(g.sum.data(), src, op.src.bytes);  // empty slices may have null buffers
        } else {
          add(s_.type, g.sum.data(), g.sum.data(), src, op.src.bytes / size_of(s_.type));
        }
        g.contributed.fetch_add(1, std::memory_order_release);
        return true;
      }
      default: return test(i);
    }
  }

  bool test(std::uint32_t i) override {
    const models::Op& op = ops_[i];
    switch (op.kind) {
      case models::OpKind::Send: return s_.sent[static_cast<std::size_t>(rank_)][i].load(std::memory_order_acquire) == 2;
      case models::OpKind::Recv:
      case models::OpKind::RecvReduce: {
        const Partner& p = s_.partner[static_cast<std::size_t>(rank_)][i];
        auto& flag = s_.sent[static_cast<std::size_t>(p.rank)][p.op];
        if (flag.load(std::memory_order_acquire) != 1) return false;
        const models::Op& send = s_.schedule.ranks[static_cast<std::size_t>(p.rank)].ops[p.op];
        const std::byte* from = s_.ranks[static_cast<std::size_t>(p.rank)].memory().at(send.src);
        if (op.kind == models::OpKind::Recv) {
          if (op.dst.bytes > 0) std::memcpy(memory().at(op.dst), from, op.dst.bytes);
        } else {
          add(s_.type, memory().at(op.dst), memory().at(op.src), from, op.dst.bytes / size_of(s_.type));
        }
        flag.store(2, std::memory_order_release);
        return true;
      }
      case models::OpKind::SwitchRecv: {
        auto& g = *s_.groups[op.tag];
        if (g.contributed.load(std::memory_order_acquire) < s_.schedule.switch_groups[op.tag]) return false;
        if (op.dst.bytes > 0) std::memcpy(memory().at(op.dst), g.sum.data(), op.dst.bytes);
        return true;
      }
      default: return true;
    }
  }

  void idle() override {
    if (s_.barrier.aborted()) throw ReplayError("aborted: another rank failed");
    std::this_thread::yield();
  }

 private:
  RankMemory memory() { return s_.ranks[static_cast<std::size_t>(rank_)].memory(); }
  Shared& s_;
  int rank_;
  const std::vector<models::Op>& ops_;
};

class HostBackend final : public Backend {
 public:
  std::string_view name() const override { return "host"; }

  std::string describe(int nranks) const override {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
    const std::size_t cpus = allowed_cpus().size();
    return fmt::format("{} threads of one process on host {}, rank r pinned to the (r mod {})-th of the {} CPUs it may use", nranks, host,
                       cpus, cpus);
  }

  SizeResult run(const models::Schedule& schedule, const ReplayConfig& config) override {
    check_replayable(schedule, config.type);
    const int n = schedule.nranks;
    // Every rank's buffers live in this process: refuse what the host cannot hold rather than
    // be killed by the OOM killer while filling them.
    std::uint64_t needed = 0;
    for (int r = 0; r < n; ++r) {
      const RankBufferBytes b = rank_buffer_bytes(schedule, r);
      needed += b.input + b.output + b.scratch;
    }
    if (const std::uint64_t available = available_host_memory(); needed > available) {
      throw ReplayError(fmt::format("the host backend needs {:.2f} GiB of host memory for {} ranks at {} bytes (input, output and scratch "
                                    "of every rank); this host has {:.2f} GiB available: use fewer ranks (--ranks) or a smaller -e",
                                    static_cast<double>(needed) / (1 << 30), n, schedule.bytes, static_cast<double>(available) / (1 << 30)));
    }
    Shared shared(schedule, config.type);
    shared.partner = match_messages(schedule);
    shared.ranks.resize(static_cast<std::size_t>(n));
    const std::uint32_t e = size_of(config.type);
    for (int r = 0; r < n; ++r) {
      const RankBufferBytes b = rank_buffer_bytes(schedule, r);
      RankState& st = shared.ranks[static_cast<std::size_t>(r)];
      st.input.resize(b.input);
      st.output.resize(b.output);
      st.scratch.resize(b.scratch);
      fill_input(config.type, r, st.input.data(), b.input / e);
      fill_poison(config.type, st.output.data(), b.output / e);
      fill_poison(config.type, st.scratch.data(), b.scratch / e);
      shared.sent.push_back(std::make_unique<std::atomic<std::uint8_t>[]>(schedule.ranks[static_cast<std::size_t>(r)].ops.size()));
    }
    std::vector<std::uint64_t> group_bytes(schedule.switch_groups.size(), 0);
    for (const auto& rank : schedule.ranks)
      for (const auto& op : rank.ops)
        if (op.kind == models::OpKind::SwitchSend) group_bytes[op.tag] = std::max(group_bytes[op.tag], op.src.bytes);
    for (std::uint64_t bytes : group_bytes) {
      shared.groups.push_back(std::make_unique<Shared::Group>());
      shared.groups.back()->sum.resize(bytes);
    }

    const int total = config.warmup + config.iters;
    std::vector<std::vector<double>> rank_end(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(config.iters), 0.0));
    std::vector<std::vector<std::vector<MeasuredOp>>> rank_ops(static_cast<std::size_t>(n));
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    const auto reset = [&] {
      for (int r = 0; r < n; ++r) {
        const std::size_t ops = schedule.ranks[static_cast<std::size_t>(r)].ops.size();
        for (std::size_t i = 0; i < ops; ++i) shared.sent[static_cast<std::size_t>(r)][i].store(0, std::memory_order_relaxed);
      }
      for (auto& g : shared.groups) g->contributed.store(0, std::memory_order_relaxed);
    };
    const auto body = [&](int r) {
      try {
        RankLoop loop(schedule.ranks[static_cast<std::size_t>(r)], r, config.type);
        HostTransport transport(shared, r);
        auto& mine = rank_ops[static_cast<std::size_t>(r)];
        if (config.record_ops) mine.resize(static_cast<std::size_t>(config.iters));
        for (int it = 0; it < total; ++it) {
          // Two barriers: the flags are reset while every rank waits, then all start together.
          shared.barrier.arrive_and_wait(reset);
          shared.barrier.arrive_and_wait([&] { shared.t0 = Clock::now(); });
          const int timed = it - config.warmup;
          std::vector<MeasuredOp>* record = timed >= 0 && config.record_ops ? &mine[static_cast<std::size_t>(timed)] : nullptr;
          if (record != nullptr) record->reserve(schedule.ranks[static_cast<std::size_t>(r)].ops.size());
          loop.run(shared.ranks[static_cast<std::size_t>(r)].memory(), transport, shared.t0, record);
          if (timed >= 0) rank_end[static_cast<std::size_t>(r)][static_cast<std::size_t>(timed)] = std::chrono::duration<double>(Clock::now() - shared.t0).count();
        }
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        shared.barrier.abort();
      }
    };
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    // Rank r on the (r mod C)-th allowed CPU, as MPI launchers bind ranks to cores: placement that
    // the scheduler would otherwise choose anew for every size (measured: on 2 cores, two
    // unpinned ranks alternated between about 3 and 7 us per small AllReduce from one size to the next).
    const std::vector<int> cpus = allowed_cpus();
    for (int r = 0; r < n; ++r) {
      threads.emplace_back(body, r);
      if (!cpus.empty()) pin(threads.back(), cpus[static_cast<std::size_t>(r) % cpus.size()]);
    }
    for (auto& t : threads) t.join();
    // The first failure is the cause; the others are "aborted" echoes of it.
    for (const auto& e : errors) {
      if (!e) continue;
      try {
        std::rethrow_exception(e);
      } catch (const ReplayError& err) {
        if (std::string_view(err.what()).rfind("aborted:", 0) == 0) continue;
        throw;
      }
    }
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);

    SizeResult result;
    result.bytes = schedule.bytes;
    result.iteration_times.assign(static_cast<std::size_t>(config.iters), 0.0);
    for (int it = 0; it < config.iters; ++it)
      for (int r = 0; r < n; ++r)
        result.iteration_times[static_cast<std::size_t>(it)] = std::max(result.iteration_times[static_cast<std::size_t>(it)], rank_end[static_cast<std::size_t>(r)][static_cast<std::size_t>(it)]);
    if (config.record_ops) {
      result.ops.resize(static_cast<std::size_t>(config.iters));
      for (int it = 0; it < config.iters; ++it)
        for (int r = 0; r < n; ++r) {
          auto& src = rank_ops[static_cast<std::size_t>(r)][static_cast<std::size_t>(it)];
          result.ops[static_cast<std::size_t>(it)].insert(result.ops[static_cast<std::size_t>(it)].end(), src.begin(), src.end());
        }
    }
    for (int r = 0; r < n; ++r) {
      const RankState& st = shared.ranks[static_cast<std::size_t>(r)];
      result.wrong += count_wrong(config.type, schedule.collective, schedule.root, r, n, st.output.data(), st.output.size() / e, result.first_wrong);
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const BackendOptions&) { return std::make_unique<HostBackend>(); }

}  // namespace ccsim::validate::replay
