#pragma once
// The per-rank dataflow loop shared by the message-passing backends (host, mpi, verbs): a rank
// issues each op of its RankProgram as soon as the op's dependencies are done (in program order
// among the ready ones), runs local ops (Copy, Reduce) itself, hands Send / Recv / RecvReduce /
// switch ops to a Transport, and polls the transport until they complete. This is the
// semantics models::verify executes and the engines simulate: an op starts when its
// dependencies are done, a Send is done when its data is delivered.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/collective/schedule.hpp"
#include "validate/replay/replay.hpp"

namespace ccsim::validate::replay {

using Clock = std::chrono::steady_clock;

/// Host pointers to one rank's three buffers.
struct RankMemory {
  std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
  std::byte* at(const models::Slice& s) const {
    switch (s.buffer) {
      case models::BufferKind::Input: return input + s.offset;
      case models::BufferKind::Output: return output + s.offset;
      case models::BufferKind::Scratch: return scratch + s.offset;
    }
    return nullptr;
  }
};

/// What a backend provides for a rank's communication ops. start_*: the op's dependencies are
/// done — begin it; return true when it completed at once. test: return true once it has
/// completed (called repeatedly; never again after it returned true). idle: nothing progressed
/// in a pass over the in-flight ops (yield the core, drive an MPI progress engine, ...).
class Transport {
 public:
  virtual ~Transport() = default;
  /// Send, Recv, RecvReduce, SwitchSend, SwitchRecv (a RecvReduce's reduction included).
  virtual bool start(std::uint32_t op) = 0;
  virtual bool test(std::uint32_t op) = 0;
  virtual void idle() {}
};

/// The dependency structure of one rank's program, built once per Schedule and reused by every
/// iteration.
class RankLoop {
 public:
  RankLoop(const models::RankProgram& program, int rank, DataType type);

  /// Runs the program once. Op times (seconds from `t0`) are appended to `record` when it is not
  /// null. Throws ReplayError when nothing has progressed for `stall_timeout` (a peer that
  /// never sends: a schedule that deadlocks, a dead process), naming the op it waits on.
  void run(const RankMemory& memory, Transport& transport, Clock::time_point t0, std::vector<MeasuredOp>* record,
           std::chrono::duration<double> stall_timeout = std::chrono::seconds(120));

 private:
  const models::RankProgram& program_;
  int rank_;
  DataType type_;
  std::vector<std::uint32_t> dep_count_;
  std::vector<std::uint32_t> dependents_begin_;  ///< CSR: ops that depend on op i
  std::vector<std::uint32_t> dependents_;
  // Per-run state, kept to avoid reallocations.
  std::vector<std::uint32_t> remaining_;
  std::vector<std::uint32_t> ready_, in_flight_, next_flight_;
  std::vector<double> start_;
};

}  // namespace ccsim::validate::replay
