// The mpi backend: every rank is an MPI process (world rank r executes rank r's RankProgram)
// with its buffers in host memory, started by a launcher (mpirun -n N ccsim replay ...).
//
//   Send         MPI_Isend of the source slice; done when MPI_Test says the send buffer may be
//                reused (for small messages that is when the eager copy left, not when the
//                receiver has it: MPI's completion, which is all a Schedule needs — the source
//                may then be overwritten).
//   Recv         MPI_Irecv into the destination slice.
//   RecvReduce   MPI_Irecv into a staging area of its own, then dst = src + staging
//                (replay::add) once it completed.
//   SwitchSend   the NVSwitch is emulated by an MPI window on rank 0 holding, per in-switch
//   SwitchRecv   group, one slot per contributor and two counters: a SwitchSend claims a slot
//                (MPI_Fetch_and_op), writes its slice there, flushes and counts itself done; a
//                SwitchRecv polls that count until every contributor of the group wrote, then
//                reads the slots and sums them (replay::add). See SwitchWindow for why MPI_SUM
//                is not used.
//
// Tags: the k-th message from a to b on channel c has tag k·C + c (C: the schedule's channels),
// unique per (source, destination) pair, so the order in which ranks post their sends and
// receives never matters (MPI matches on source, tag and communicator). Messages above 1 GiB
// go as several pieces of at most 1 GiB with the same tag (MPI keeps their order). The backend
// communicates on its own duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so MPI failures
// become ReplayErrors.
//
// Timing: each iteration starts on every rank as it leaves an MPI_Barrier (t0, its own
// monotonic clock: std::chrono::steady_clock, as MPI_Wtime). Op times are seconds from that
// rank's t0; an iteration's time is the maximum over ranks of (last op done − t0), reduced to
// rank 0 (MPI_Reduce MAX). Clocks of different machines are never compared, and their offsets
// are not corrected: what is not measured is the skew with which ranks leave the barrier (up to
// about one network latency across hosts, well under a microsecond within one). Per-op records
// of every rank are gathered to rank 0 as bytes (MeasuredOp: ranks on hosts of one byte order).
//
// Failures: errors every rank finds alike (a schedule that cannot be replayed, the wrong rank
// count) are thrown on every rank with no communication. An error on one rank while the ranks
// run (a transport failure, a stall) is thrown there and leaves the others waiting in MPI: the
// process then ends with MPI_Abort at exit instead of MPI_Finalize (which would wait for them
// forever), and mpirun stops the other ranks (support/mpi/session.hpp holds the process's MPI
// lifetime).

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

// The C API only: OpenMPI's and MPICH's mpi.h pull in the deprecated C++ bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "support/mpi/launcher.hpp"
#include "support/mpi/session.hpp"
#include "validate/replay/backends/backends.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/rank_loop.hpp"

namespace ccsim::validate::replay {

namespace {

/// Bytes per point-to-point piece: 1 GiB, below MPI's int count limit (2^31 − 1) with MPI_BYTE.
constexpr std::uint64_t kPieceBytes = std::uint64_t{1} << 30;

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return fmt::format("error {}", rc);
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw ReplayError(fmt::format("mpi backend: {} failed: {}", what, mpi_error_text(rc)));
}

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::Int8: return MPI_INT8_T;
    case DataType::Uint8: return MPI_UINT8_T;
    case DataType::Int32: return MPI_INT32_T;
    case DataType::Uint32: return MPI_UINT32_T;
    case DataType::Int64: return MPI_INT64_T;
    case DataType::Uint64: return MPI_UINT64_T;
    case DataType::Float: return MPI_FLOAT;
    case DataType::Double: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

/// Calls f(offset, bytes) for the pieces of a `bytes`-long transfer, each at most `piece` bytes.
template <class F>
void for_pieces(std::uint64_t bytes, std::uint64_t piece, F&& f) {
  if (bytes == 0) {
    f(std::uint64_t{0}, std::uint64_t{0});
    return;
  }
  for (std::uint64_t at = 0; at < bytes; at += piece) f(at, std::min(piece, bytes - at));
}

std::uint32_t piece_count(std::uint64_t bytes) { return bytes == 0 ? 1 : static_cast<std::uint32_t>((bytes + kPieceBytes - 1) / kPieceBytes); }

/// C in the tags k·C + c: the schedule's channels, or more when an op names a higher channel.
int channel_count(const models::Schedule& s) {
  int channels = std::max(1, s.channels);
  for (const auto& program : s.ranks)
    for (const auto& op : program.ops) channels = std::max(channels, static_cast<int>(op.channel) + 1);
  return channels;
}

/// Throws ReplayError when a message's tag k·C + c would exceed MPI_TAG_UB of `comm` (the same
/// answer on every rank: it looks at the whole schedule).
void check_tags(const models::Schedule& s, const std::vector<std::vector<Partner>>& partner, MPI_Comm comm) {
  int* tag_ub = nullptr;
  int found = 0;
  check(MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  const std::int64_t limit = found != 0 && tag_ub != nullptr ? *tag_ub : 32767;  // 32767: the MPI standard's guaranteed minimum
  const std::int64_t channels = channel_count(s);
  for (int r = 0; r < s.nranks; ++r) {
    const auto& ops = s.ranks[static_cast<std::size_t>(r)].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != models::OpKind::Send) continue;
      const Partner& p = partner[static_cast<std::size_t>(r)][i];
      const std::int64_t tag = static_cast<std::int64_t>(p.sequence) * channels + ops[i].channel;
      if (tag > limit) {
        throw ReplayError(fmt::format("mpi backend: message {} from rank {} to rank {} on channel {} (of {}) needs tag {}, above this MPI's "
                                      "MPI_TAG_UB {}: fewer messages per rank pair (a larger size, fewer pipeline chunks or channels)",
                                      p.sequence, r, ops[i].peer, ops[i].channel, channels, tag, limit));
      }
    }
  }
}

/// The in-switch groups of an NVLS schedule emulated on rank 0. The window holds, per group,
/// two 64-bit counters (slots claimed, contributions written) and one slot per contributor
/// (8-byte aligned). A contribution claims a slot (MPI_Fetch_and_op), writes its slice there
/// (MPI_Accumulate MPI_REPLACE), flushes, and counts itself written; a reader waits until every
/// contributor has written, reads the slots (MPI_Get_accumulate MPI_NO_OP) and sums them with
/// replay::add, the element arithmetic every backend uses. MPI's own MPI_SUM is not used: Open
/// MPI 4.1's vectorised reduction kernels (op/avx) saturate 8-bit sums instead of wrapping
/// (measured here: int8 elements summing to 136 read back 127).
class SwitchWindow {
 public:
  /// Collective over `comm`. Throws ReplayError (on every rank alike) when the slices of a
  /// group differ in size.
  SwitchWindow(const models::Schedule& s, DataType t, MPI_Comm comm, int rank) : type_(t), mpi_type_(mpi_type(t)), element_(size_of(t)) {
    const std::size_t groups = s.switch_groups.size();
    contributors_.assign(s.switch_groups.begin(), s.switch_groups.end());
    bytes_ = switch_group_bytes(s);
    slot_.resize(groups);
    std::uint64_t at = groups * 2 * sizeof(std::int64_t);
    std::uint64_t largest = 0;
    for (std::size_t g = 0; g < groups; ++g) {
      slot_[g] = at;
      stride_.push_back((bytes_[g] + 7) / 8 * 8);
      at += stride_[g] * static_cast<std::uint64_t>(std::max(contributors_[g], 1));
      largest = std::max(largest, bytes_[g]);
    }
    if (at > static_cast<std::uint64_t>(LLONG_MAX)) throw ReplayError("mpi backend: the in-switch groups exceed a window's size");
    check(MPI_Win_allocate(static_cast<MPI_Aint>(rank == 0 ? at : 0), 1, MPI_INFO_NULL, comm, &base_, &win_), "MPI_Win_allocate");
    MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
    check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
    staging_.resize(largest);
  }
  ~SwitchWindow() {
    // Collective: skipped when a rank failed (the others may never get here).
    if (support::mpi::Session::process().failed()) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  SwitchWindow(const SwitchWindow&) = delete;
  SwitchWindow& operator=(const SwitchWindow&) = delete;

  /// Rank 0, between iterations while every rank waits: zero every counter (the slots are
  /// written whole by every iteration's contributions).
  void reset() {
    const std::int64_t zero[2] = {0, 0};
    for (std::size_t g = 0; g < slot_.size(); ++g) {
      check(MPI_Accumulate(zero, 2, MPI_INT64_T, 0, counter(g, 0), 2, MPI_INT64_T, MPI_REPLACE, win_), "MPI_Accumulate (reset counters)");
    }
    check(MPI_Win_flush(0, win_), "MPI_Win_flush");
  }

  /// Writes `bytes` at `src` into a slot of group `g`, then counts the contribution.
  void contribute(std::uint32_t g, const std::byte* src, std::uint64_t bytes) {
    const std::int64_t one = 1;
    std::int64_t slot = 0;
    check(MPI_Fetch_and_op(&one, &slot, MPI_INT64_T, 0, counter(g, 0), MPI_SUM, win_), "MPI_Fetch_and_op (claim a slot)");
    check(MPI_Win_flush(0, win_), "MPI_Win_flush");
    if (slot >= contributors_[g]) {
      throw ReplayError(fmt::format("mpi backend: in-switch group {} got more than its {} contributions", g, contributors_[g]));
    }
    const std::uint64_t base = slot_[g] + static_cast<std::uint64_t>(slot) * stride_[g];
    for_elements(bytes, [&](std::uint64_t at, int count) {
      check(MPI_Accumulate(src + at, count, mpi_type_, 0, static_cast<MPI_Aint>(base + at), count, mpi_type_, MPI_REPLACE, win_),
            "MPI_Accumulate (switch send)");
    });
    // The slice must be complete at rank 0 before the counter says so.
    check(MPI_Win_flush(0, win_), "MPI_Win_flush");
    std::int64_t before = 0;
    check(MPI_Fetch_and_op(&one, &before, MPI_INT64_T, 0, counter(g, 1), MPI_SUM, win_), "MPI_Fetch_and_op (count a contribution)");
    check(MPI_Win_flush(0, win_), "MPI_Win_flush");
  }

  /// When every contributor of group `g` has written its slice: `dst` = the sum of the slices
  /// (the one slice of a multicast group), and true; false otherwise.
  bool collect(std::uint32_t g, std::byte* dst, std::uint64_t bytes) {
    std::int64_t written = 0;
    check(MPI_Fetch_and_op(nullptr, &written, MPI_INT64_T, 0, counter(g, 1), MPI_NO_OP, win_), "MPI_Fetch_and_op (poll)");
    check(MPI_Win_flush(0, win_), "MPI_Win_flush");
    if (written < contributors_[g]) return false;
    for (int k = 0; k < contributors_[g]; ++k) {
      std::byte* into = k == 0 ? dst : staging_.data();
      const std::uint64_t base = slot_[g] + static_cast<std::uint64_t>(k) * stride_[g];
      for_elements(bytes, [&](std::uint64_t at, int n) {
        check(MPI_Get_accumulate(nullptr, 0, mpi_type_, into + at, n, mpi_type_, 0, static_cast<MPI_Aint>(base + at), n, mpi_type_, MPI_NO_OP, win_),
              "MPI_Get_accumulate (switch recv)");
      });
      check(MPI_Win_flush(0, win_), "MPI_Win_flush");
      if (k > 0) add(type_, dst, dst, staging_.data(), bytes / element_);
    }
    return true;
  }

 private:
  /// Displacement of group g's counter: 0 = slots claimed, 1 = contributions written.
  static MPI_Aint counter(std::size_t g, int which) { return static_cast<MPI_Aint>((2 * g + static_cast<std::size_t>(which)) * sizeof(std::int64_t)); }

  /// Calls f(byte offset, element count) over `bytes` in pieces of at most 2^28 elements.
  template <class F>
  void for_elements(std::uint64_t bytes, F&& f) {
    const std::uint64_t piece = (std::uint64_t{1} << 28) * element_;
    for (std::uint64_t at = 0; at < bytes; at += piece) f(at, static_cast<int>(std::min(piece, bytes - at) / element_));
  }

  DataType type_;
  MPI_Datatype mpi_type_;
  std::uint32_t element_;
  std::vector<int> contributors_;
  std::vector<std::uint64_t> bytes_;   ///< bytes of each group's slices
  std::vector<std::uint64_t> slot_;    ///< byte offset of each group's first slot in the window
  std::vector<std::uint64_t> stride_;  ///< bytes between a group's slots
  std::vector<std::byte> staging_;     ///< a slot read back before it is added
  void* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

/// One rank's transport: nonblocking point-to-point on `comm`, the switch on the window.
class MpiTransport final : public Transport {
 public:
  MpiTransport(const models::Schedule& s, int rank, DataType t, MPI_Comm comm, const std::vector<Partner>& partner, SwitchWindow* window)
      : ops_(s.ranks[static_cast<std::size_t>(rank)].ops), partner_(partner), type_(t), comm_(comm), window_(window) {
    const int channels = channel_count(s);
    const std::size_t n = ops_.size();
    tag_.assign(n, 0);
    request_begin_.assign(n + 1, 0);
    staging_at_.assign(n, 0);
    std::uint64_t staging = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const models::Op& op = ops_[i];
      std::uint32_t pieces = 0;
      if (op.kind == models::OpKind::Send || op.kind == models::OpKind::Recv || op.kind == models::OpKind::RecvReduce) {
        tag_[i] = static_cast<int>(static_cast<std::int64_t>(partner_[i].sequence) * channels + op.channel);
        pieces = piece_count(op.kind == models::OpKind::Send ? op.src.bytes : op.dst.bytes);
      }
      if (op.kind == models::OpKind::RecvReduce) {
        staging_at_[i] = staging;
        staging += op.dst.bytes;
      }
      request_begin_[i + 1] = request_begin_[i] + pieces;
    }
    requests_.assign(request_begin_[n], MPI_REQUEST_NULL);
    staging_.resize(staging);
  }

  void bind(const RankMemory& memory) { memory_ = memory; }

  bool start(std::uint32_t i) override {
    const models::Op& op = ops_[i];
    MPI_Request* req = requests_.data() + request_begin_[i];
    switch (op.kind) {
      case models::OpKind::Send: {
        const std::byte* src = memory_.at(op.src);
        for_pieces(op.src.bytes, kPieceBytes, [&](std::uint64_t at, std::uint64_t bytes) {
          check(MPI_Isend(src + at, static_cast<int>(bytes), MPI_BYTE, op.peer, tag_[i], comm_, req++), "MPI_Isend");
        });
        return false;
      }
      case models::OpKind::Recv:
      case models::OpKind::RecvReduce: {
        std::byte* dst = op.kind == models::OpKind::Recv ? memory_.at(op.dst) : staging_.data() + staging_at_[i];
        for_pieces(op.dst.bytes, kPieceBytes, [&](std::uint64_t at, std::uint64_t bytes) {
          check(MPI_Irecv(dst + at, static_cast<int>(bytes), MPI_BYTE, op.peer, tag_[i], comm_, req++), "MPI_Irecv");
        });
        return false;
      }
      case models::OpKind::SwitchSend: window_->contribute(op.tag, memory_.at(op.src), op.src.bytes); return true;
      case models::OpKind::SwitchRecv: return window_->collect(op.tag, memory_.at(op.dst), op.dst.bytes);
      default: return true;
    }
  }

  /// Nothing completed in a pass: with more ranks on this host than cores, let another process
  /// have the core (as Open MPI's mpi_yield_when_idle does when oversubscribed); otherwise keep
  /// polling (a yield can hand the core to an unrelated process for a whole time slice).
  void idle() override {
    if (yield_when_idle_) std::this_thread::yield();
  }
  void yield_when_idle(bool yield) { yield_when_idle_ = yield; }

  bool test(std::uint32_t i) override {
    const models::Op& op = ops_[i];
    if (op.kind == models::OpKind::SwitchRecv) return window_->collect(op.tag, memory_.at(op.dst), op.dst.bytes);
    int done = 0;
    const int count = static_cast<int>(request_begin_[i + 1] - request_begin_[i]);
    check(MPI_Testall(count, requests_.data() + request_begin_[i], &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (done == 0) return false;
    if (op.kind == models::OpKind::RecvReduce) {
      add(type_, memory_.at(op.dst), memory_.at(op.src), staging_.data() + staging_at_[i], op.dst.bytes / size_of(type_));
    }
    return true;
  }

 private:
  const std::vector<models::Op>& ops_;
  const std::vector<Partner>& partner_;
  DataType type_;
  MPI_Comm comm_;
  SwitchWindow* window_;
  RankMemory memory_{};
  bool yield_when_idle_ = false;
  std::vector<int> tag_;
  std::vector<std::uint32_t> request_begin_;  ///< CSR: the requests of op i (one per piece)
  std::vector<MPI_Request> requests_;
  std::vector<std::uint64_t> staging_at_;     ///< RecvReduce: offset of its staging area
  std::vector<std::byte> staging_;
};

class MpiBackend final : public Backend {
 public:
  MpiBackend() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    // Host names of all ranks (collective, so here, where every rank constructs the backend).
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    check(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
    std::vector<char> all(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME, '\0');
    check(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm_), "MPI_Allgather");
    // Ranks sharing this host's memory, against its hardware threads (not this process's
    // affinity: mpirun binds each rank to a core).
    MPI_Comm local = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
    int local_ranks = 1;
    check(MPI_Comm_size(local, &local_ranks), "MPI_Comm_size");
    MPI_Comm_free(&local);
    oversubscribed_ = local_ranks > std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int r = 0; r < size_; ++r) {
      const char* p = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
      std::string host(p, strnlen(p, MPI_MAX_PROCESSOR_NAME));
      if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end()) hosts_.push_back(std::move(host));
    }
  }
  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && !support::mpi::Session::process().failed()) MPI_Comm_free(&comm_);
  }
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  std::string_view name() const override { return "mpi"; }
  int world_ranks() const override { return size_; }
  bool reporter() const override { return rank_ == 0; }

  std::string describe(int nranks) const override {
    // Up to 8 names, then how many more.
    std::string names;
    for (std::size_t h = 0; h < hosts_.size() && h < 8; ++h) names += (names.empty() ? "" : ", ") + hosts_[h];
    if (hosts_.size() > 8) names += fmt::format(" and {} more", hosts_.size() - 8);
    return fmt::format("{} MPI processes on {} host{} ({})", nranks, hosts_.size(), hosts_.size() == 1 ? "" : "s", names);
  }

  SizeResult run(const models::Schedule& schedule, const ReplayConfig& config) override {
    if (schedule.nranks != size_) {
      throw ReplayError(fmt::format("schedule has {} ranks, mpirun started {}: use --ranks {} or mpirun -n {}", schedule.nranks, size_, size_,
                                    schedule.nranks));
    }
    check_replayable(schedule, config.type);
    if (config.warmup < 0 || config.iters < 1) {
      throw ReplayError(fmt::format("mpi backend: expected warmup ≥ 0 and iters ≥ 1, found {} and {}", config.warmup, config.iters));
    }
    check_same_schedule(schedule);
    const std::vector<std::vector<Partner>> partner = match_messages(schedule);
    check_tags(schedule, partner, comm_);
    try {
      return run_checked(schedule, config, partner);
    } catch (...) {
      // Peers may be blocked in a receive or a barrier this rank will never reach: the process
      // ends with MPI_Abort (exit code 3, the backend's failure) instead of MPI_Finalize.
      support::mpi::Session::process().abort_at_exit(3);
      throw;
    }
  }

 private:
  /// Throws ReplayError on every rank when the ranks were given different schedules (their
  /// rank counts, sizes, op counts or channels differ).
  void check_same_schedule(const models::Schedule& s) {
    const long long mine[4] = {s.nranks, static_cast<long long>(s.bytes), static_cast<long long>(s.op_count()), s.channels};
    long long low[4] = {}, high[4] = {};
    check(MPI_Allreduce(mine, low, 4, MPI_LONG_LONG, MPI_MIN, comm_), "MPI_Allreduce");
    check(MPI_Allreduce(mine, high, 4, MPI_LONG_LONG, MPI_MAX, comm_), "MPI_Allreduce");
    if (!std::equal(low, low + 4, high)) {
      throw ReplayError(fmt::format("mpi backend: the ranks replay different schedules (sizes {}..{} bytes, {}..{} ops): every rank must run "
                                    "the same command line",
                                    low[1], high[1], low[2], high[2]));
    }
  }

  /// run() once every rank agreed the schedule can run: from here an error on one rank leaves
  /// the others waiting.
  SizeResult run_checked(const models::Schedule& schedule, const ReplayConfig& config, const std::vector<std::vector<Partner>>& partner) {
    const int n = schedule.nranks;
    const std::uint32_t e = size_of(config.type);
    const RankBufferBytes b = rank_buffer_bytes(schedule, rank_);
    std::vector<std::byte> input(b.input), output(b.output), scratch(b.scratch);
    fill_input(config.type, rank_, input.data(), b.input / e);
    fill_poison(config.type, output.data(), b.output / e);
    fill_poison(config.type, scratch.data(), b.scratch / e);
    const RankMemory memory{input.data(), output.data(), scratch.data()};

    std::unique_ptr<SwitchWindow> window;
    if (!schedule.switch_groups.empty()) window = std::make_unique<SwitchWindow>(schedule, config.type, comm_, rank_);
    MpiTransport transport(schedule, rank_, config.type, comm_, partner[static_cast<std::size_t>(rank_)], window.get());
    transport.bind(memory);
    transport.yield_when_idle(oversubscribed_);
    RankLoop loop(schedule.ranks[static_cast<std::size_t>(rank_)], rank_, config.type);

    const int total = config.warmup + config.iters;
    std::vector<double> ends(static_cast<std::size_t>(config.iters), 0.0);
    std::vector<std::vector<MeasuredOp>> records(config.record_ops ? static_cast<std::size_t>(config.iters) : 0);
    for (int it = 0; it < total; ++it) {
      if (window) {
        // Every rank finished the previous iteration (its reads of the sums included), then
        // rank 0 zeroes the switch, then all start.
        check(MPI_Barrier(comm_), "MPI_Barrier");
        if (rank_ == 0) window->reset();
      }
      check(MPI_Barrier(comm_), "MPI_Barrier");
      const Clock::time_point t0 = Clock::now();
      const int timed = it - config.warmup;
      std::vector<MeasuredOp>* record = timed >= 0 && config.record_ops ? &records[static_cast<std::size_t>(timed)] : nullptr;
      if (record != nullptr) record->reserve(schedule.ranks[static_cast<std::size_t>(rank_)].ops.size());
      loop.run(memory, transport, t0, record);
      if (timed >= 0) ends[static_cast<std::size_t>(timed)] = std::chrono::duration<double>(Clock::now() - t0).count();
    }

    SizeResult result;
    result.bytes = schedule.bytes;
    result.iteration_times.assign(static_cast<std::size_t>(config.iters), 0.0);
    check(MPI_Reduce(ends.data(), result.iteration_times.data(), config.iters, MPI_DOUBLE, MPI_MAX, 0, comm_), "MPI_Reduce (iteration times)");
    if (config.record_ops) result.ops = gather_ops(records);

    std::string first;
    const std::uint64_t wrong = count_wrong(config.type, schedule.collective, schedule.root, rank_, n, output.data(), b.output / e, first);
    check(MPI_Reduce(&wrong, &result.wrong, 1, MPI_UINT64_T, MPI_SUM, 0, comm_), "MPI_Reduce (wrong elements)");
    const std::vector<std::string> firsts = gather_strings(first);
    for (const auto& f : firsts) {
      if (!f.empty()) {
        result.first_wrong = f;
        break;
      }
    }
    if (rank_ != 0) {
      result.iteration_times.clear();
      result.ops.clear();
      result.wrong = 0;
    }
    return result;
  }

  /// Rank 0 gets every rank's records, iteration by iteration, in rank order; the others nothing.
  std::vector<std::vector<MeasuredOp>> gather_ops(const std::vector<std::vector<MeasuredOp>>& mine) {
    static_assert(std::is_trivially_copyable_v<MeasuredOp>);
    std::vector<std::vector<MeasuredOp>> all(rank_ == 0 ? mine.size() : 0);
    std::vector<int> counts(rank_ == 0 ? static_cast<std::size_t>(size_) : 0), offsets(counts.size());
    for (std::size_t it = 0; it < mine.size(); ++it) {
      const std::uint64_t bytes = mine[it].size() * sizeof(MeasuredOp);
      if (bytes > static_cast<std::uint64_t>(INT_MAX)) throw ReplayError("mpi backend: a rank's op records of one iteration exceed 2 GiB");
      const int length = static_cast<int>(bytes);
      check(MPI_Gather(&length, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_), "MPI_Gather (op records)");
      std::uint64_t total = 0;
      for (std::size_t r = 0; r < counts.size(); ++r) {
        offsets[r] = static_cast<int>(total);
        total += static_cast<std::uint64_t>(counts[r]);
        if (total > static_cast<std::uint64_t>(INT_MAX)) throw ReplayError("mpi backend: one iteration's op records exceed 2 GiB");
      }
      if (rank_ == 0) all[it].resize(total / sizeof(MeasuredOp));
      check(MPI_Gatherv(mine[it].data(), length, MPI_BYTE, rank_ == 0 ? all[it].data() : nullptr, counts.data(), offsets.data(), MPI_BYTE, 0, comm_),
            "MPI_Gatherv (op records)");
    }
    return all;
  }

  /// Rank 0 gets every rank's `mine`, in rank order; the others an empty list.
  std::vector<std::string> gather_strings(const std::string& mine) {
    const int length = static_cast<int>(std::min<std::size_t>(mine.size(), 4096));
    std::vector<int> lengths(rank_ == 0 ? static_cast<std::size_t>(size_) : 0), offsets(lengths.size());
    check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_), "MPI_Gather");
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    check(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm_), "MPI_Gatherv");
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lengths.size(); ++r) out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    return out;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool oversubscribed_ = false;  ///< more ranks on this host than cores: yield when idle
  std::vector<std::string> hosts_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(const BackendOptions&) {
  support::mpi::Session& session = support::mpi::Session::process();
  if (!session.initialised() && !support::mpi::launched()) {
    throw ReplayError("the mpi backend runs under mpirun: mpirun -n N ccsim replay ... (no MPI launcher started this process: "
                      "OMPI_COMM_WORLD_SIZE, PMI_SIZE and PMIX_RANK are unset)");
  }
  try {
    // Each rank is one thread of MPI calls (the rank loop); FUNNELED leaves room for helper threads.
    session.start(support::mpi::ThreadLevel::Funneled);
  } catch (const support::mpi::StartError& e) {
    if (e.reason() == support::mpi::StartError::Reason::Finalised) {
      throw ReplayError("the mpi backend cannot start: MPI was already finalised in this process");
    }
    check(e.code(), "MPI_Init_thread");
  }
  return std::make_unique<MpiBackend>();
}

}  // namespace ccsim::validate::replay
