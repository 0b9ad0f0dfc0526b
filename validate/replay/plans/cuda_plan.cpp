#include "validate/replay/plans/cuda_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "validate/replay/data.hpp"

namespace ccsim::validate::replay {

namespace {

using models::OpKind;

std::uint64_t align_up(std::uint64_t v) { return (v + kCudaRegionAlign - 1) / kCudaRegionAlign * kCudaRegionAlign; }

std::string_view kind_name(OpKind k) {
  switch (k) {
    case OpKind::Send: return "Send";
    case OpKind::Recv: return "Recv";
    case OpKind::RecvReduce: return "RecvReduce";
    case OpKind::Copy: return "Copy";
    case OpKind::Reduce: return "Reduce";
    case OpKind::SwitchSend: return "SwitchSend";
    case OpKind::SwitchRecv: return "SwitchRecv";
  }
  return "?";
}

/// Bump allocator over the arenas of the device slots.
class Arenas {
 public:
  explicit Arenas(std::size_t slots) : size_(slots, 0) {}
  CudaAddress take(int slot, std::uint64_t bytes) {
    CudaAddress a{slot, size_[slot]};
    size_[slot] = align_up(size_[slot] + bytes);
    return a;
  }
  const std::vector<std::uint64_t>& sizes() const { return size_; }

 private:
  std::vector<std::uint64_t> size_;
};

/// An in-switch group: its accumulator and its contributions.
struct SwitchGroup {
  int home_rank = -1;  ///< the contributor whose GPU holds the accumulator
  std::vector<std::pair<int, std::uint16_t>> contributors;  ///< (rank, channel) of each SwitchSend, rank order
  std::uint16_t home_channel = 0;
  std::uint64_t bytes = 0;
  bool sized = false;
  CudaAddress accumulator;
  std::vector<std::uint32_t> send_units;
  bool first_issued = false;  ///< while emitting: the first contribution (a copy) is issued
};

/// A step before ordering: its ops and the steps it depends on.
struct Unit {
  std::vector<CudaOpRef> ops;
  std::uint32_t stream = 0;
  std::vector<std::uint32_t> deps;  ///< other units
};

constexpr std::uint32_t kNone = ~0U;

/// Throws ReplayError for devices or a schedule the plan cannot place.
void check_devices(const models::Schedule& s, const CudaPlanDevices& devices) {
  const std::size_t ndev = devices.ordinals.size();
  if (ndev == 0) throw ReplayError("cuda backend: no CUDA device to place the ranks on (the device list is empty)");
  for (std::size_t i = 0; i < ndev; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (devices.ordinals[i] == devices.ordinals[j]) {
        throw ReplayError(fmt::format("cuda backend: device {} is listed twice (expected distinct device ordinals)",
                                      devices.ordinals[i]));
      }
    }
  }
  if (!devices.peer_access.empty()) {
    bool square = devices.peer_access.size() == ndev;
    for (const auto& row : devices.peer_access) square = square && row.size() == ndev;
    if (!square) {
      throw ReplayError(fmt::format("cuda backend: the peer-access matrix must be {0} x {0} (one row and column per device)", ndev));
    }
  }
  if (static_cast<int>(s.ranks.size()) != s.nranks) {
    throw ReplayError(fmt::format("cuda backend: the schedule has {} rank programs for {} ranks", s.ranks.size(), s.nranks));
  }
}

/// One plan being built, step by step (the order of the steps is the order of the arena
/// allocations: buffers, in-switch accumulators, then staging in issue order).
class Planner {
 public:
  Planner(const models::Schedule& s, const CudaPlanDevices& devices)
      : s_(s), devices_(devices), n_(s.nranks), arenas_(devices.ordinals.size()) {
    plan_.ordinals = devices.ordinals;
  }

  CudaPlan build() && {
    place_buffers();
    assign_streams();
    place_switch_groups();
    make_units();
    link_units();
    const std::vector<std::uint32_t> order = issue_order();
    std::vector<std::uint32_t> position(units_.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    for (auto& row : plan_.step_of) {
      for (auto& st : row) st = position[st];
    }
    emit_steps(order, position);
    plan_.arena_bytes = arenas_.sizes();
    return std::move(plan_);
  }

 private:
  const models::Op& op_at(const CudaOpRef& o) const { return s_.ranks[static_cast<std::size_t>(o.rank)].ops[o.op]; }
  bool peer(int from, int to) const {
    return !devices_.peer_access.empty() && devices_.peer_access[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
  }

  CudaAddress address(int rank, const models::Slice& slice) const {
    const auto& L = plan_.ranks[static_cast<std::size_t>(rank)];
    CudaAddress a;
    switch (slice.buffer) {
      case models::BufferKind::Input: a = L.input; break;
      case models::BufferKind::Output: a = L.output; break;
      case models::BufferKind::Scratch: a = L.scratch; break;
    }
    a.offset += slice.offset;
    return a;
  }

  /// Buffers: rank after rank in each slot's arena (input, output, scratch; 256-byte aligned).
  void place_buffers() {
    const std::size_t ndev = devices_.ordinals.size();
    plan_.ranks.resize(static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      auto& L = plan_.ranks[static_cast<std::size_t>(r)];
      const auto bytes = rank_buffer_bytes(s_, r);
      L.slot = static_cast<int>(static_cast<std::size_t>(r) % ndev);
      L.input_bytes = bytes.input;
      L.output_bytes = bytes.output;
      L.scratch_bytes = bytes.scratch;
      L.input = arenas_.take(L.slot, bytes.input);
      L.output = arenas_.take(L.slot, bytes.output);
      L.scratch = arenas_.take(L.slot, bytes.scratch);
    }
  }

  /// Streams: one per (rank, channel) the rank has ops on, rank-major.
  void assign_streams() {
    for (int r = 0; r < n_; ++r) {
      std::set<int> channels;
      for (const auto& op : s_.ranks[static_cast<std::size_t>(r)].ops) channels.insert(op.channel);
      for (int c : channels) {
        stream_of_[{r, c}] = static_cast<std::uint32_t>(plan_.streams.size());
        plan_.streams.push_back({r, static_cast<std::uint16_t>(c), plan_.ranks[static_cast<std::size_t>(r)].slot});
      }
    }
  }

  /// The in-switch group op `i` of `rank` names, sized by it. Throws ReplayError for an unknown
  /// group or a size other than its other ops'.
  SwitchGroup& group_of(int rank, std::uint32_t i, const models::Op& op) {
    if (op.tag >= groups_.size()) {
      throw ReplayError(fmt::format("cuda backend: {} ({}) names in-switch group {}, but the schedule has {}",
                                    describe(CudaOpRef{rank, i}), kind_name(op.kind), op.tag, groups_.size()));
    }
    auto& g = groups_[op.tag];
    const std::uint64_t bytes = op.kind == OpKind::SwitchSend ? op.src.bytes : op.dst.bytes;
    if (g.sized && g.bytes != bytes) {
      throw ReplayError(fmt::format("cuda backend: {} ({}) moves {} bytes in in-switch group {}, expected {} as its other ops",
                                    describe(CudaOpRef{rank, i}), kind_name(op.kind), bytes, op.tag, g.bytes));
    }
    g.sized = true;
    g.bytes = bytes;
    return g;
  }

  /// In-switch groups: contributors, home rank, size and accumulator.
  void place_switch_groups() {
    groups_.resize(s_.switch_groups.size());
    for (int r = 0; r < n_; ++r) {
      const auto& ops = s_.ranks[static_cast<std::size_t>(r)].ops;
      for (std::uint32_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind != OpKind::SwitchSend && ops[i].kind != OpKind::SwitchRecv) continue;
        auto& g = group_of(r, i, ops[i]);
        if (ops[i].kind == OpKind::SwitchSend) g.contributors.emplace_back(r, ops[i].channel);
      }
    }
    // Group t's home is its (t mod contributors)-th contributor: the groups of an NVLS collective
    // (one per chunk, every rank contributing) spread their reductions over all GPUs and streams,
    // as the switch serves every port at once.
    for (std::size_t t = 0; t < groups_.size(); ++t) {
      auto& g = groups_[t];
      if (g.contributors.empty()) continue;
      std::tie(g.home_rank, g.home_channel) = g.contributors[t % g.contributors.size()];
      g.accumulator = arenas_.take(plan_.ranks[static_cast<std::size_t>(g.home_rank)].slot, g.bytes);
      plan_.switch_bytes += g.bytes;
    }
  }

  /// Units: one per local op, switch op and receive (with the send it pairs with). Throws
  /// ReplayError for a receive without its Send or a Send without its receive.
  void make_units() {
    const auto partners = match_messages(s_);
    plan_.step_of.resize(static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) plan_.step_of[static_cast<std::size_t>(r)].assign(s_.ranks[static_cast<std::size_t>(r)].ops.size(), kNone);
    for (int r = 0; r < n_; ++r) {
      const auto& ops = s_.ranks[static_cast<std::size_t>(r)].ops;
      for (std::uint32_t i = 0; i < ops.size(); ++i) {
        const auto& op = ops[i];
        if (op.kind == OpKind::Send) continue;  // with its receive
        Unit u;
        u.stream = stream_of_.at({r, op.channel});
        if (op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce) {
          const auto& p = partners[static_cast<std::size_t>(r)][i];
          if (p.rank < 0) {
            throw ReplayError(fmt::format("cuda backend: {} ({}) has no matching Send", describe(CudaOpRef{r, i}), kind_name(op.kind)));
          }
          u.ops.push_back({p.rank, p.op});
        } else if (op.kind == OpKind::SwitchSend) {
          const auto& g = groups_[op.tag];
          u.stream = stream_of_.at({g.home_rank, g.home_channel});
          groups_[op.tag].send_units.push_back(static_cast<std::uint32_t>(units_.size()));
        }
        u.ops.push_back({r, i});
        for (const auto& o : u.ops) plan_.step_of[static_cast<std::size_t>(o.rank)][o.op] = static_cast<std::uint32_t>(units_.size());
        units_.push_back(std::move(u));
      }
    }
    for (int r = 0; r < n_; ++r) {
      for (std::uint32_t i = 0; i < plan_.step_of[static_cast<std::size_t>(r)].size(); ++i) {
        if (plan_.step_of[static_cast<std::size_t>(r)][i] == kNone) {
          throw ReplayError(fmt::format("cuda backend: {} (Send to rank {}) has no matching receive", describe(CudaOpRef{r, i}),
                                        s_.ranks[static_cast<std::size_t>(r)].ops[i].peer));
        }
      }
    }
  }

  /// Each unit's dependencies: its ops' dependencies, and for a SwitchRecv every contribution
  /// of its group. Throws ReplayError for a SwitchRecv of a group without a SwitchSend.
  void link_units() {
    for (std::uint32_t u = 0; u < units_.size(); ++u) {
      auto& unit = units_[u];
      for (const auto& o : unit.ops) {
        for (auto d : s_.ranks[static_cast<std::size_t>(o.rank)].deps(o.op)) {
          unit.deps.push_back(plan_.step_of[static_cast<std::size_t>(o.rank)][d]);
        }
        const auto& op = op_at(o);
        if (op.kind == OpKind::SwitchRecv) {
          const auto& g = groups_[op.tag];
          if (g.send_units.empty()) {
            throw ReplayError(fmt::format("cuda backend: {} (SwitchRecv) reads in-switch group {}, which has no SwitchSend",
                                          describe(o), op.tag));
          }
          unit.deps.insert(unit.deps.end(), g.send_units.begin(), g.send_units.end());
        }
      }
      std::sort(unit.deps.begin(), unit.deps.end());
      unit.deps.erase(std::unique(unit.deps.begin(), unit.deps.end()), unit.deps.end());
      std::erase(unit.deps, u);
    }
  }

  /// Issue order: Kahn's algorithm, first ready first issued (interleaves the ranks). Throws
  /// ReplayError when the dependencies and pairings form a cycle.
  std::vector<std::uint32_t> issue_order() const {
    std::vector<std::uint32_t> indegree(units_.size(), 0);
    std::vector<std::vector<std::uint32_t>> dependents(units_.size());
    for (std::uint32_t u = 0; u < units_.size(); ++u) {
      indegree[u] = static_cast<std::uint32_t>(units_[u].deps.size());
      for (auto d : units_[u].deps) dependents[d].push_back(u);
    }
    std::deque<std::uint32_t> ready;
    for (std::uint32_t u = 0; u < units_.size(); ++u) {
      if (indegree[u] == 0) ready.push_back(u);
    }
    std::vector<std::uint32_t> order;
    order.reserve(units_.size());
    while (!ready.empty()) {
      const auto u = ready.front();
      ready.pop_front();
      order.push_back(u);
      for (auto v : dependents[u]) {
        if (--indegree[v] == 0) ready.push_back(v);
      }
    }
    if (order.size() != units_.size()) {
      for (std::uint32_t u = 0; u < units_.size(); ++u) {
        if (indegree[u] == 0) continue;
        const auto& o = units_[u].ops.back();
        throw ReplayError(fmt::format(
            "cuda backend: the schedule deadlocks: {} ({}) never becomes ready ({} of {} steps can run; expected the "
            "dependencies and message pairings to form no cycle)",
            describe(o), kind_name(op_at(o).kind), order.size(), units_.size()));
      }
    }
    return order;
  }

  /// Steps, in issue order.
  void emit_steps(const std::vector<std::uint32_t>& order, const std::vector<std::uint32_t>& position) {
    plan_.steps.reserve(units_.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) {
      const auto& unit = units_[order[k]];
      CudaStep step;
      step.stream = unit.stream;
      step.ops = unit.ops;
      // Waits: the last step of every other stream among the dependencies (a stream is FIFO:
      // its later step done implies its earlier ones done).
      std::map<std::uint32_t, std::uint32_t> last_on_stream;
      for (auto d : unit.deps) {
        const auto p = position[d];
        const auto st = units_[d].stream;
        if (st == step.stream) continue;
        auto [it, inserted] = last_on_stream.try_emplace(st, p);
        if (!inserted) it->second = std::max(it->second, p);
      }
      for (const auto& [st, p] : last_on_stream) step.waits.push_back(p);
      std::sort(step.waits.begin(), step.waits.end());
      add_actions(step);
      plan_.steps.push_back(std::move(step));
    }
  }

  /// How a step on slot `slot` reaches data on `other_slot`.
  CudaAccess access_to(int slot, int other_slot, bool reduces) const {
    if (other_slot == slot) return CudaAccess::Local;
    if (peer(slot, other_slot)) return CudaAccess::Peer;
    return reduces ? CudaAccess::Staged : CudaAccess::Copied;
  }

  /// `dst` += `src` from another rank's memory as `step.access` allows: directly, or through a
  /// staging region on the step's slot (`add_to` is the other operand: dst = add_to + src).
  void add_remote(CudaStep& step, int slot, CudaAddress dst, CudaAddress add_to, CudaAddress src, std::uint64_t bytes) {
    if (step.access == CudaAccess::Staged) {
      const auto stage = arenas_.take(slot, bytes);
      plan_.staging_bytes += bytes;
      step.actions.push_back({CudaAction::Kind::Copy, stage, src, {}, bytes});
      step.actions.push_back({CudaAction::Kind::Add, dst, add_to, stage, bytes});
    } else {
      step.actions.push_back({CudaAction::Kind::Add, dst, add_to, src, bytes});
    }
  }

  /// The step's access and actions, by the kind of its last op.
  void add_actions(CudaStep& step) {
    const int slot = plan_.streams[step.stream].slot;
    const auto& last = step.ops.back();
    const auto& op = op_at(last);
    switch (op.kind) {
      case OpKind::Recv:
      case OpKind::RecvReduce: {
        const auto& send_ref = step.ops.front();
        const auto& send = op_at(send_ref);
        if (send.src.bytes != op.dst.bytes) {
          throw ReplayError(fmt::format("cuda backend: {} ({}) receives {} bytes from {} (Send of {} bytes); expected equal sizes",
                                        describe(last), kind_name(op.kind), op.dst.bytes, describe(send_ref), send.src.bytes));
        }
        const auto peer_src = address(send_ref.rank, send.src);
        const bool reduces = op.kind == OpKind::RecvReduce;
        step.access = access_to(slot, peer_src.slot, reduces);
        const auto dst = address(last.rank, op.dst);
        if (!reduces) {
          step.actions.push_back({CudaAction::Kind::Copy, dst, peer_src, {}, op.dst.bytes});
        } else {
          add_remote(step, slot, dst, address(last.rank, op.src), peer_src, op.dst.bytes);
        }
        break;
      }
      case OpKind::Copy:
        step.actions.push_back({CudaAction::Kind::Copy, address(last.rank, op.dst), address(last.rank, op.src), {}, op.dst.bytes});
        break;
      case OpKind::Reduce: {
        const auto dst = address(last.rank, op.dst);
        step.actions.push_back({CudaAction::Kind::Add, dst, dst, address(last.rank, op.src), op.dst.bytes});
        break;
      }
      case OpKind::SwitchSend: {
        auto& g = groups_[op.tag];
        const auto src = address(last.rank, op.src);
        const bool first = !g.first_issued;
        g.first_issued = true;
        step.access = access_to(slot, src.slot, !first);
        if (first) {
          step.actions.push_back({CudaAction::Kind::Copy, g.accumulator, src, {}, g.bytes});
        } else {
          add_remote(step, slot, g.accumulator, g.accumulator, src, g.bytes);
        }
        break;
      }
      case OpKind::SwitchRecv: {
        const auto& g = groups_[op.tag];
        step.access = access_to(slot, g.accumulator.slot, false);
        step.actions.push_back({CudaAction::Kind::Copy, address(last.rank, op.dst), g.accumulator, {}, g.bytes});
        break;
      }
      case OpKind::Send: break;  // never the last op of a unit
    }
  }

  const models::Schedule& s_;
  const CudaPlanDevices& devices_;
  const int n_;
  CudaPlan plan_;
  Arenas arenas_;
  std::map<std::pair<int, int>, std::uint32_t> stream_of_;  ///< (rank, channel) -> stream
  std::vector<SwitchGroup> groups_;
  std::vector<Unit> units_;
};

}  // namespace

std::string describe(const CudaOpRef& op) { return fmt::format("rank {} op {}", op.rank, op.op); }

CudaPlan plan_cuda_replay(const models::Schedule& s, const CudaPlanDevices& devices) {
  check_devices(s, devices);
  return Planner(s, devices).build();
}

}  // namespace ccsim::validate::replay
