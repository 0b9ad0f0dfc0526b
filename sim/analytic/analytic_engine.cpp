#include "sim/analytic/analytic_engine.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/analytic/detail/analytic_run.hpp"

namespace ccsim::sim {

AnalyticEngine::AnalyticEngine(const models::Cluster& cluster, Sharing sharing)
    : cluster_(cluster), router_(cluster), sharing_(sharing) {}

Timeline AnalyticEngine::run(const Plan& plan) {
  return sharing_ == Sharing::Reference ? run_reference(plan) : run_incremental(plan);
}

}  // namespace ccsim::sim

namespace ccsim::sim::detail {

AnalyticRun::AnalyticRun(const Plan& plan, models::Router& router)
    : plan_(plan),
      topo_(router.topology()),
      g_(plan, router),
      dag_(g_),
      now_(plan.cost.base_latency),
      remaining_(g_.transfers.size(), 0.0),
      op_start_(g_.op_count(), -1.0),
      op_end_(g_.op_count(), -1.0),
      held_(held_ranks(plan)) {
  for (std::size_t r = 0; r < held_.size(); ++r)
    if (held_[r]) arrivals_.emplace_back(now_ + plan.rank_ready[r], r);
  std::sort(arrivals_.begin(), arrivals_.end());
}

void AnalyticRun::start_dag() {
  dag_.start(ev_, held_);
  handle();
}

void AnalyticRun::handle() {
  while (!ev_.empty()) {
    for (std::uint32_t op : ev_.finished) {
      if (op_start_[op] < 0) op_start_[op] = now_;
      op_end_[op] = now_;
    }
    ev_.finished.clear();
    startable_.swap(ev_.startable);
    flowable_.swap(ev_.flowable);
    ev_.startable.clear();
    ev_.flowable.clear();
    std::vector<LatencyEvent> batch;
    constexpr std::size_t kBatch = 4096;  // this many latencies start together: one sorted run
    if (startable_.size() >= kBatch) batch.reserve(startable_.size());
    for (std::uint32_t t : startable_) {
      const Transfer& tr = g_.transfers[t];
      for (std::uint32_t op : {tr.send_op, tr.recv_op})
        if (op != kNoOp) op_start_[op] = now_;
      remaining_[t] = tr.bytes;
      if (startable_.size() >= kBatch) {
        batch.push_back({now_ + tr.latency, seq_++, t});
      } else {
        latencies_.push({now_ + tr.latency, seq_++, t});
      }
    }
    if (!batch.empty()) latencies_.push_batch(std::move(batch));
    for (std::uint32_t t : flowable_) flow(t);
  }
}

void AnalyticRun::flow(std::uint32_t t) {
  if (g_.transfers[t].bytes <= 0.0 || g_.transfers[t].path_count == 0) {
    complete(t);
  } else {
    start_bytes(t);
  }
}

void AnalyticRun::complete(std::uint32_t t) { dag_.transfer_done(t, ev_); }

void AnalyticRun::expire_latencies() {
  while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].first <= now_ * (1.0 + kCoalesce)) {
    dag_.arrive(arrivals_[next_arrival_++].second, ev_);
    handle();
  }
  while (!latencies_.empty() && latencies_.top().time <= now_ * (1.0 + kCoalesce)) {
    const std::uint32_t t = latencies_.top().transfer;
    latencies_.pop();
    if (dag_.latency_elapsed(t)) flow(t);
    handle();
  }
}

double AnalyticRun::next_latency() const {
  const double arrival = next_arrival_ < arrivals_.size() ? arrivals_[next_arrival_].first : kInf;
  return std::min(arrival, latencies_.empty() ? kInf : latencies_.top().time);
}

Timeline AnalyticRun::timeline() const {
  if (dag_.ops_done() != g_.op_count()) {
    throw std::runtime_error(fmt::format("schedule {} deadlocks: {} of {} ops never ran", plan_.schedule->algorithm,
                                         g_.op_count() - dag_.ops_done(), g_.op_count()));
  }
  Timeline tl;
  tl.transfers = g_.transfers.size();
  tl.makespan = now_;
  tl.ops.reserve(g_.op_count());
  for (std::uint32_t op = 0; op < g_.op_count(); ++op) {
    tl.ops.push_back({g_.rank_of(op), g_.local_index(op), op_start_[op], op_end_[op]});
  }
  return tl;
}

}  // namespace ccsim::sim::detail
