#pragma once
// The Transport of the verbs backend: the rendezvous of verbs_plan.hpp (receiver's "ready",
// sender's RDMA write with immediate, RecvReduce's addition from its staging slot) driven by
// completions, written against a small RdmaPort interface. verbs_backend.cpp implements the
// port with ibverbs; tests/validate/replay/plans/verbs_transport_test.cpp with an in-memory loopback that
// delivers in random order, so the protocol is tested on machines without an RDMA device.

#include <chrono>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "validate/replay/rank_loop.hpp"
#include "validate/replay/plans/verbs_plan.hpp"

namespace ccsim::validate::replay {

/// One completion reported by a rank's port (its completion queue).
struct RdmaCompletion {
  enum class Kind : std::uint8_t {
    Ready,      ///< the peer is ready for this rank's message `sequence` on `connection`
    Data,       ///< the peer's message `sequence` on `connection` has landed in this rank's region
    WriteDone,  ///< this rank's write for Send `op` was acknowledged: its data is delivered
    ReadyDone,  ///< this rank's ready for receive `op` was sent
  };
  Kind kind = Kind::Ready;
  std::uint32_t connection = 0;
  std::uint32_t sequence = 0;  ///< Ready, Data
  std::uint32_t op = 0;        ///< WriteDone, ReadyDone
};

/// The NIC side of one rank: posting to its queue pairs and polling its completion queue.
/// Posts never exceed a connection's depth (QueueDepths::work_requests) outstanding.
class RdmaPort {
 public:
  virtual ~RdmaPort() = default;
  /// Posts an RDMA write with immediate `sequence` of `bytes` bytes at `src` to the peer of
  /// `connection`, at `remote_offset` in its region; it completes as WriteDone(op).
  virtual void write(std::uint32_t connection, std::uint32_t op, const std::byte* src, std::uint64_t bytes, std::uint64_t remote_offset,
                     std::uint32_t sequence) = 0;
  /// Posts a zero-byte send with immediate `sequence` to the peer of `connection`; it
  /// completes as ReadyDone(op).
  virtual void ready(std::uint32_t connection, std::uint32_t op, std::uint32_t sequence) = 0;
  /// Fills up to out.size() completions, returns how many. Throws ReplayError on a failed one.
  virtual std::size_t poll(std::span<RdmaCompletion> out) = 0;
};

/// Everything one rank's transport works on, planned by verbs_plan.hpp.
struct VerbsRankPlan {
  int rank = 0;
  DataType type = DataType::Float;
  const models::RankProgram* program = nullptr;
  std::span<const RdmaConnection> connections;
  std::span<const OpRoute> routes;
  const RegionLayout* layout = nullptr;
  std::span<const std::uint32_t> depths;  ///< per connection: send work requests outstanding at most
  std::byte* region = nullptr;            ///< the rank's region (layout->bytes)
};

class VerbsTransport final : public Transport {
 public:
  VerbsTransport(const VerbsRankPlan& plan, RdmaPort& port);

  /// The rank's buffers in its region.
  RankMemory memory() const;
  /// Before each replay of the schedule: no op started, no receiver ready.
  void reset();
  bool start(std::uint32_t op) override;
  bool test(std::uint32_t op) override;
  void idle() override;
  /// After a replay: polls until the readies this rank posted have completed, so the next
  /// replay starts with empty send queues. Throws ReplayError after `timeout`.
  void drain(std::chrono::duration<double> timeout);

 private:
  enum class State : std::uint8_t { Idle, WaitReady, Writing, WaitData, Done };
  void issue(std::uint32_t q, std::uint32_t op);
  void post(std::uint32_t q, std::uint32_t op);
  void sent(std::uint32_t q);
  void poll();
  void complete(const RdmaCompletion& c);
  [[noreturn]] void protocol_error(std::uint32_t q, const std::string& what) const;

  VerbsRankPlan plan_;
  RdmaPort& port_;
  std::vector<State> state_;
  std::vector<std::vector<std::uint8_t>> ready_;   ///< per connection, per send sequence: the receiver is ready
  std::vector<std::uint32_t> outstanding_;         ///< per connection: posted work requests not completed
  std::vector<std::deque<std::uint32_t>> pending_; ///< per connection: ops waiting for send queue room
};

}  // namespace ccsim::validate::replay
