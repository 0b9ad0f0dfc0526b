#include "validate/replay/rank_loop.hpp"

#include <cstring>

#include <fmt/format.h>

#include "validate/replay/data.hpp"

namespace ccsim::validate::replay {

RankLoop::RankLoop(const models::RankProgram& program, int rank, DataType type) : program_(program), rank_(rank), type_(type) {
  const std::size_t n = program.ops.size();
  dep_count_.assign(n, 0);
  dependents_begin_.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t d : program.deps(i)) {
      ++dep_count_[i];
      ++dependents_begin_[d + 1];
    }
  }
  for (std::size_t i = 0; i < n; ++i) dependents_begin_[i + 1] += dependents_begin_[i];
  dependents_.assign(dependents_begin_[n], 0);
  std::vector<std::uint32_t> fill(dependents_begin_.begin(), dependents_begin_.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    for (std::uint32_t d : program.deps(i)) dependents_[fill[d]++] = static_cast<std::uint32_t>(i);
  start_.assign(n, 0.0);
}

void RankLoop::run(const RankMemory& memory, Transport& transport, Clock::time_point t0, std::vector<MeasuredOp>* record,
                   std::chrono::duration<double> stall_timeout) {
  const auto& ops = program_.ops;
  const std::size_t n = ops.size();
  remaining_ = dep_count_;
  ready_.clear();
  in_flight_.clear();
  for (std::uint32_t i = 0; i < n; ++i)
    if (remaining_[i] == 0) ready_.push_back(i);
  std::size_t done = 0;
  const auto seconds = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
  const auto complete = [&](std::uint32_t op, Clock::time_point now) {
    ++done;
    if (record != nullptr) record->push_back({rank_, op, start_[op], seconds(now)});
    for (std::uint32_t k = dependents_begin_[op]; k < dependents_begin_[op + 1]; ++k) {
      const std::uint32_t next = dependents_[k];
      if (--remaining_[next] == 0) ready_.push_back(next);
    }
  };
  Clock::time_point last_progress = Clock::now();
  std::size_t next_ready = 0;
  while (done < n) {
    bool progress = false;
    // Issue what is ready, in the order it became ready (program order among ops ready at once).
    while (next_ready < ready_.size()) {
      const std::uint32_t i = ready_[next_ready++];
      const models::Op& op = ops[i];
      const Clock::time_point now = Clock::now();
      start_[i] = seconds(now);
      progress = true;
      if (op.kind == models::OpKind::Copy) {
        if (op.dst.bytes > 0) std::memmove(memory.at(op.dst), memory.at(op.src), op.dst.bytes);  // empty buffers may be null
        complete(i, Clock::now());
      } else if (op.kind == models::OpKind::Reduce) {
        add(type_, memory.at(op.dst), memory.at(op.dst), memory.at(op.src), op.dst.bytes / size_of(type_));
        complete(i, Clock::now());
      } else if (transport.start(i)) {
        complete(i, Clock::now());
      } else {
        in_flight_.push_back(i);
      }
    }
    if (next_ready == ready_.size()) {
      ready_.clear();
      next_ready = 0;
    }
    next_flight_.clear();
    for (std::uint32_t i : in_flight_) {
      if (transport.test(i)) {
        complete(i, Clock::now());
        progress = true;
      } else {
        next_flight_.push_back(i);
      }
    }
    in_flight_.swap(next_flight_);
    if (progress) {
      last_progress = Clock::now();
    } else if (done < n) {
      if (Clock::now() - last_progress > stall_timeout) {
        const std::uint32_t waiting = in_flight_.empty() ? 0 : in_flight_.front();
        const models::Op& op = ops[waiting];
        throw ReplayError(fmt::format("rank {} made no progress for {:g} s: op {} ({} peer {} channel {}) never completed "
                                      "({} of {} ops done)",
                                      rank_, stall_timeout.count(), waiting, models::to_string(op.kind), op.peer, op.channel, done, n));
      }
      transport.idle();
    }
  }
}

}  // namespace ccsim::validate::replay
