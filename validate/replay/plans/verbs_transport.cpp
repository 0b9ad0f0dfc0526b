#include "validate/replay/plans/verbs_transport.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "validate/replay/data.hpp"

namespace ccsim::validate::replay {

VerbsTransport::VerbsTransport(const VerbsRankPlan& plan, RdmaPort& port)
    : plan_(plan), port_(port), state_(plan.program->ops.size(), State::Idle), ready_(plan.connections.size()),
      outstanding_(plan.connections.size(), 0), pending_(plan.connections.size()) {
  reset();
}

RankMemory VerbsTransport::memory() const {
  return {plan_.region + plan_.layout->input, plan_.region + plan_.layout->output, plan_.region + plan_.layout->scratch};
}

void VerbsTransport::reset() {
  std::fill(state_.begin(), state_.end(), State::Idle);
  for (std::size_t q = 0; q < ready_.size(); ++q) ready_[q].assign(plan_.connections[q].send_ops.size(), 0);
}

bool VerbsTransport::start(std::uint32_t op) {
  const auto& o = plan_.program->ops[op];
  const auto& route = plan_.routes[op];
  const auto q = static_cast<std::uint32_t>(route.connection);
  switch (o.kind) {
    case models::OpKind::Send:
      state_[op] = State::WaitReady;
      if (ready_[q][route.sequence]) issue(q, op);
      return false;
    case models::OpKind::Recv:
    case models::OpKind::RecvReduce:
      state_[op] = State::WaitData;
      issue(q, op);
      return false;
    default:
      throw ReplayError("verbs: rank " + std::to_string(plan_.rank) + " op " + std::to_string(op) +
                        " is an in-switch op; the verbs backend has no in-switch reduction: use --algo other than nvls");
  }
}

bool VerbsTransport::test(std::uint32_t op) {
  if (state_[op] != State::Done) poll();
  return state_[op] == State::Done;
}

void VerbsTransport::idle() { std::this_thread::yield(); }  // ranks may outnumber cores (soft-RoCE tests)

void VerbsTransport::drain(std::chrono::duration<double> timeout) {
  const auto until = Clock::now() + timeout;
  auto busy = [&] {
    for (std::size_t q = 0; q < outstanding_.size(); ++q) {
      if (outstanding_[q] > 0 || !pending_[q].empty()) return true;
    }
    return false;
  };
  while (busy()) {
    poll();
    if (Clock::now() > until) throw ReplayError("verbs: rank " + std::to_string(plan_.rank) + ": posted sends still incomplete after the replay");
  }
}

void VerbsTransport::issue(std::uint32_t q, std::uint32_t op) {
  if (plan_.program->ops[op].kind == models::OpKind::Send) state_[op] = State::Writing;
  if (outstanding_[q] >= plan_.depths[q]) {
    pending_[q].push_back(op);
    return;
  }
  post(q, op);
}

void VerbsTransport::post(std::uint32_t q, std::uint32_t op) {
  const auto& o = plan_.program->ops[op];
  const auto& route = plan_.routes[op];
  ++outstanding_[q];
  if (o.kind == models::OpKind::Send) {
    port_.write(q, op, memory().at(o.src), o.src.bytes, route.remote_offset, route.sequence);
  } else {
    port_.ready(q, op, route.sequence);
  }
}

void VerbsTransport::sent(std::uint32_t q) {
  --outstanding_[q];
  while (!pending_[q].empty() && outstanding_[q] < plan_.depths[q]) {
    const auto op = pending_[q].front();
    pending_[q].pop_front();
    post(q, op);
  }
}

void VerbsTransport::protocol_error(std::uint32_t q, const std::string& what) const {
  throw ReplayError("verbs: rank " + std::to_string(plan_.rank) + ": from rank " + std::to_string(plan_.connections[q].peer) + " channel " +
                    std::to_string(plan_.connections[q].channel) + ": " + what + " (the ranks replay different schedules?)");
}

void VerbsTransport::poll() {
  RdmaCompletion batch[32];
  const std::size_t n = port_.poll(batch);
  for (std::size_t i = 0; i < n; ++i) complete(batch[i]);
}

void VerbsTransport::complete(const RdmaCompletion& c) {
  const std::uint32_t q = c.connection;
  const RdmaConnection& conn = plan_.connections[q];
  switch (c.kind) {
    case RdmaCompletion::Kind::WriteDone:
      state_[c.op] = State::Done;  // acknowledged by the receiver's NIC: delivered
      sent(q);
      return;
    case RdmaCompletion::Kind::ReadyDone:
      sent(q);
      return;
    case RdmaCompletion::Kind::Ready: {
      if (c.sequence >= conn.send_ops.size()) {
        protocol_error(q, "ready for message " + std::to_string(c.sequence) + ", this rank sends " + std::to_string(conn.send_ops.size()));
      }
      ready_[q][c.sequence] = 1;
      const auto op = conn.send_ops[c.sequence];
      if (state_[op] == State::WaitReady) issue(q, op);
      return;
    }
    case RdmaCompletion::Kind::Data: {
      if (c.sequence >= conn.recv_ops.size()) {
        protocol_error(q, "message " + std::to_string(c.sequence) + " landed, this rank receives " + std::to_string(conn.recv_ops.size()));
      }
      const auto op = conn.recv_ops[c.sequence];
      if (state_[op] != State::WaitData) protocol_error(q, "message " + std::to_string(c.sequence) + " landed before its receive started");
      const auto& o = plan_.program->ops[op];
      if (o.kind == models::OpKind::RecvReduce) {
        const RankMemory m = memory();
        add(plan_.type, m.at(o.dst), m.at(o.src), plan_.region + plan_.layout->staging_of_op[op], o.dst.bytes / size_of(plan_.type));
      }
      state_[op] = State::Done;
      return;
    }
  }
}

}  // namespace ccsim::validate::replay
