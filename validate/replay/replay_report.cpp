#include "validate/replay/replay_report.hpp"

#include "validate/measurements/nccl_tests_log.hpp"
#include "validate/replay/data.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ccsim::validate::replay {

namespace {

/// nccl-tests' time column: 2 decimals below 100 us, 1 below 10,000 us, none above.
std::string time_us(double us) {
  if (us < 100.0) return fmt::format("{:.2f}", us);
  if (us < 10000.0) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

bool reduces(models::Collective c) {
  return c == models::Collective::AllReduce || c == models::Collective::ReduceScatter || c == models::Collective::Reduce;
}

/// Elements in nccl-tests' count column: per rank for ReduceScatter / AllGather / AlltoAll.
std::uint64_t count_of(models::Collective c, std::uint64_t bytes, int nranks, std::uint32_t element) {
  return bytes / element / (models::sized_per_rank(c) ? static_cast<std::uint64_t>(nranks) : 1);
}

double median(std::vector<double>& v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

std::string_view op_kind_name(models::OpKind k) { return models::to_string(k); }

std::string perf_test_name(models::Collective c) {
  switch (c) {
    case models::Collective::AllReduce: return "all_reduce_perf";
    case models::Collective::ReduceScatter: return "reduce_scatter_perf";
    case models::Collective::AllGather: return "all_gather_perf";
    case models::Collective::Broadcast: return "broadcast_perf";
    case models::Collective::Reduce: return "reduce_perf";
    case models::Collective::AlltoAll: return "alltoall_perf";
    case models::Collective::SendRecv: return "sendrecv_perf";
  }
  return "unknown_perf";
}

double reported_time(const LogInfo& info, const SizeResult& r) { return info.median ? r.median_time() : r.mean_time(); }

std::string nccl_tests_log(const LogInfo& info, const std::vector<ReplayedSize>& sizes) {
  std::string out;
  out += fmt::format("# {} written by ccsim replay ({} backend): {} ranks, the Schedules ccsim lowers for {}\n", info.test, info.backend,
                     info.nranks, info.scenario);
  out += fmt::format("# Command: {}\n", info.command);
  out += fmt::format("# nThread 1 nGpus {} minBytes {} maxBytes {} step: {}(factor) warmup iters: {} iters: {} agg iters: 1 validation: 1 graph: 0\n",
                     info.nranks, info.min_bytes, info.max_bytes, info.factor, info.warmup, info.iters);
  out += fmt::format("# time: the {} of {} timed iterations per size (nccl-tests prints the mean{})\n", info.median ? "median" : "mean",
                     info.iters, info.median ? "; --time-stat mean" : "");
  out += "#\n# Using devices\n";
  for (int r = 0; r < info.nranks; ++r) out += fmt::format("#  Rank {:2} Group  0 on {} backend rank {:2}\n", r, info.backend, r);
  out += fmt::format("# Ranks run as {}\n", info.where);
  out += "#\n";
  out += "#                                                              out-of-place\n";
  out += "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  out += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
  const double factor = models::busbw_factor(info.collective, info.nranks);
  const std::string redop = reduces(info.collective) ? "sum" : "none";
  double busbw_sum = 0;
  std::uint64_t wrong = 0;
  for (const ReplayedSize& s : sizes) {
    const double t = reported_time(info, s.measured);
    const double algbw = t > 0 ? static_cast<double>(s.bytes) / t / 1e9 : 0.0;
    busbw_sum += algbw * factor;
    wrong += s.measured.wrong;
    out += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:6.2f}  {:6.2f}  {:>5}\n", s.bytes,
                       count_of(info.collective, s.bytes, info.nranks, s.schedule.element_size), info.type, redop, info.root,
                       time_us(t * 1e6), algbw, algbw * factor, s.measured.wrong);
  }
  out += fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  out += fmt::format("# Avg bus bandwidth    : {:.4f} \n", sizes.empty() ? 0.0 : busbw_sum / static_cast<double>(sizes.size()));
  out += "#\n# ccsim: per size, the Schedule replayed and its simulated time (analytic engine, same Schedule)\n";
  out += "#       size  schedule               ops  measured (us)  simulated (us)  error\n";
  for (const ReplayedSize& s : sizes) {
    const double m = reported_time(info, s.measured), sim = s.simulated.makespan;
    out += fmt::format("# {:>10}  {:<18} {:>7}  {:>13}  {:>14}  {:>+5.0f}%\n", s.bytes, s.algorithm + "/" + s.protocol, s.schedule.op_count(),
                       time_us(m * 1e6), time_us(sim * 1e6), m > 0 ? (sim - m) / m * 100.0 : 0.0);
    if (!s.measured.first_wrong.empty()) out += fmt::format("# {:>10}  first wrong: {}\n", s.bytes, s.measured.first_wrong);
  }
  return out;
}

std::vector<MeasuredOp> median_ops(const SizeResult& r) {
  if (r.ops.empty()) return {};
  std::map<std::pair<std::int32_t, std::uint32_t>, std::pair<std::vector<double>, std::vector<double>>> per_op;
  for (const auto& iteration : r.ops)
    for (const MeasuredOp& m : iteration) {
      auto& [starts, ends] = per_op[{m.rank, m.op}];
      starts.push_back(m.start);
      ends.push_back(m.end);
    }
  std::vector<MeasuredOp> out;
  out.reserve(per_op.size());
  for (auto& [key, times] : per_op) out.push_back({key.first, key.second, median(times.first), median(times.second)});
  return out;
}

namespace {

/// median_ops() with the engines' start of a transfer: a send or receive starts when both sides
/// are ready (the later of the two issues), as in sim/analytic/analytic_engine.cpp; local ops as issued.
std::vector<MeasuredOp> engine_aligned_ops(const ReplayedSize& s) {
  std::vector<MeasuredOp> ops = median_ops(s.measured);
  if (ops.empty()) return ops;
  std::map<std::pair<std::int32_t, std::uint32_t>, std::size_t> index;
  for (std::size_t i = 0; i < ops.size(); ++i) index[{ops[i].rank, ops[i].op}] = i;
  const std::vector<std::vector<Partner>> partner = match_messages(s.schedule);
  std::vector<double> issued(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) issued[i] = ops[i].start;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const MeasuredOp& m = ops[i];
    if (m.rank < 0 || m.rank >= s.schedule.nranks || m.op >= partner[static_cast<std::size_t>(m.rank)].size()) continue;
    const Partner& p = partner[static_cast<std::size_t>(m.rank)][m.op];
    if (p.rank < 0) continue;
    const auto it = index.find({p.rank, p.op});
    if (it != index.end()) ops[i].start = std::min(ops[i].end, std::max(issued[i], issued[it->second]));
  }
  return ops;
}

}  // namespace

double OpComparison::deviation() const {
  return std::max(std::abs(measured_start - simulated_start), std::abs(measured_duration - simulated_duration));
}

std::vector<OpComparison> compare_ops(const ReplayedSize& s) {
  const std::vector<MeasuredOp> measured = engine_aligned_ops(s);
  std::map<std::pair<std::int32_t, std::uint32_t>, const sim::OpRecord*> simulated;
  for (const sim::OpRecord& r : s.simulated.ops) simulated[{r.rank, r.op}] = &r;
  std::vector<OpComparison> rows;
  rows.reserve(measured.size());
  for (const MeasuredOp& m : measured) {
    const auto it = simulated.find({m.rank, m.op});
    if (it == simulated.end() || m.rank < 0 || m.rank >= s.schedule.nranks ||
        m.op >= s.schedule.ranks[static_cast<std::size_t>(m.rank)].ops.size()) {
      throw std::invalid_argument(fmt::format("rank {} op {} was measured but is not in the simulated schedule", m.rank, m.op));
    }
    const models::Op& op = s.schedule.ranks[static_cast<std::size_t>(m.rank)].ops[m.op];
    rows.push_back({m.rank, m.op, op.kind, op.peer, op.channel, op.bytes(), m.start, m.end - m.start, it->second->start,
                    it->second->end - it->second->start});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OpComparison& a, const OpComparison& b) { return a.deviation() > b.deviation(); });
  return rows;
}

std::string comparison_table(const std::vector<OpComparison>& rows, std::size_t top) {
  std::string out = "# rank      op  kind         peer  ch       bytes   start us (meas / sim)   duration us (meas / sim)   deviation us\n";
  for (std::size_t i = 0; i < std::min(top, rows.size()); ++i) {
    const OpComparison& c = rows[i];
    out += fmt::format("# {:>4}  {:>6}  {:<11}  {:>4}  {:>2}  {:>10}  {:>10} / {:<10}  {:>11} / {:<11}  {:>12}\n", c.rank, c.op,
                       op_kind_name(c.kind), c.peer == models::kSwitch ? std::string("sw") : std::to_string(c.peer), c.channel, c.bytes,
                       time_us(c.measured_start * 1e6), time_us(c.simulated_start * 1e6), time_us(c.measured_duration * 1e6),
                       time_us(c.simulated_duration * 1e6), time_us(c.deviation() * 1e6));
  }
  return out;
}

std::string trace_json(const ReplayedSize& s, const std::string& backend) {
  nlohmann::json events = nlohmann::json::array();
  const auto process = [&](int pid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_sort_index"}, {"args", {{"sort_index", pid}}}});
    for (int r = 0; r < s.schedule.nranks; ++r) {
      events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", r}, {"name", "thread_name"}, {"args", {{"name", fmt::format("rank {}", r)}}}});
    }
  };
  const auto event = [&](int pid, std::int32_t rank, std::uint32_t index, double start, double end) {
    const models::Op& op = s.schedule.ranks[static_cast<std::size_t>(rank)].ops[index];
    std::string name(op_kind_name(op.kind));
    if (op.peer >= 0) name += (op.is_send() ? " -> " : " <- ") + std::to_string(op.peer);
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", rank},
                      {"name", name},
                      {"ts", start * 1e6},
                      {"dur", std::max(0.0, end - start) * 1e6},
                      {"args", {{"op", index}, {"kind", op_kind_name(op.kind)}, {"peer", op.peer}, {"channel", op.channel}, {"bytes", op.bytes()}}}});
  };
  process(1, fmt::format("measured ({} backend, median of {} iterations)", backend, s.measured.ops.size()));
  process(2, "simulated (analytic engine)");
  for (const MeasuredOp& m : engine_aligned_ops(s)) event(1, m.rank, m.op, m.start, m.end);
  for (const sim::OpRecord& r : s.simulated.ops) event(2, r.rank, r.op, r.start, r.end);
  nlohmann::json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ns";
  j["otherData"] = {{"size_B", s.bytes}, {"schedule", s.algorithm + "/" + s.protocol}, {"ranks", s.schedule.nranks}};
  return j.dump() + "\n";
}

std::string ops_csv_rows(const ReplayedSize& s) {
  std::vector<OpComparison> rows = compare_ops(s);
  std::sort(rows.begin(), rows.end(), [](const OpComparison& a, const OpComparison& b) { return std::tie(a.rank, a.op) < std::tie(b.rank, b.op); });
  std::string out;
  for (const OpComparison& c : rows) {
    out += fmt::format("{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g}\n", s.bytes, c.rank, c.op, op_kind_name(c.kind), c.peer, c.channel, c.bytes,
                       c.measured_start * 1e6, c.measured_duration * 1e6, c.simulated_start * 1e6, c.simulated_duration * 1e6);
  }
  return out;
}

std::string ops_csv(const std::vector<ReplayedSize>& sizes) {
  std::string out = "size_B,rank,op,kind,peer,channel,bytes,measured_start_us,measured_duration_us,simulated_start_us,simulated_duration_us\n";
  for (const ReplayedSize& s : sizes) out += ops_csv_rows(s);
  return out;
}

}  // namespace ccsim::validate::replay
