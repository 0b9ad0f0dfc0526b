#include "planner/workload/replica_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "support/text_table.hpp"

namespace ccsim::planner {

using models::ProgramOpKind;

namespace {

std::string seconds(double s) {
  if (s == 0) return "0";
  if (std::abs(s) >= 1.0) return fmt::format("{:.3f} s", s);
  if (std::abs(s) >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

/// "dp 3", "dp 0-7", "dp 0-2, 5, 9-15" (ascending indices as ranges).
std::string replica_list(const std::vector<int>& d) {
  std::string out;
  for (std::size_t i = 0; i < d.size();) {
    std::size_t j = i;
    while (j + 1 < d.size() && d[j + 1] == d[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j == i ? std::to_string(d[i]) : fmt::format("{}-{}", d[i], d[j]));
    i = j + 1;
  }
  // A long list is cut (report.json has them all).
  if (out.size() > 40) out = out.substr(0, out.rfind(',', 37)) + ", ...";
  return "dp " + out;
}

/// The class's lowest speed over its stages, as "0.5" or "gemm 0.5, attention 1, memory 1".
std::string speed_text(const ReplicaClass& rc) {
  models::ComputeSpeed low;
  for (const auto& v : rc.speed) low = {std::min(low.gemm, v.gemm), std::min(low.attention, v.attention), std::min(low.memory, v.memory)};
  if (low.gemm == low.attention && low.gemm == low.memory) return fmt::format("{:.3g}", low.gemm);
  return fmt::format("gemm {:.3g}, attn {:.3g}, mem {:.3g}", low.gemm, low.attention, low.memory);
}

bool interesting(const RunContext& c) {
  return c.result.classes.size() > 1 || !c.cluster.perturbations.empty() || c.unperturbed_step_time > 0;
}

}  // namespace

std::vector<ClassFigures> class_figures(const WorkloadResult& r) {
  std::vector<ClassFigures> out(r.classes.size());
  std::vector<int> stages(r.classes.size(), 0);
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const auto cls = static_cast<std::size_t>(r.program.ranks[i].replica_class);
    const StageBreakdown& b = r.stages[i];
    const double wait = i < r.sync_wait.size() ? r.sync_wait[i] : 0.0;
    ClassFigures& f = out[cls];
    f.compute += b.compute;
    f.exposed += b.exposed_total;
    f.sync_wait += wait;
    f.idle += std::max(0.0, b.idle - wait);
    f.end = std::max(f.end, b.end);
    ++stages[cls];
  }
  for (std::size_t c = 0; c < out.size(); ++c) {
    if (stages[c] == 0) continue;
    const double n = stages[c];
    out[c].compute /= n;
    out[c].exposed /= n;
    out[c].sync_wait /= n;
    out[c].idle /= n;
  }
  return out;
}

/// The GPU a critical-path segment is named by: its class's slowest GPU of the stage (the one
/// that held it), not the representative whose groups the communication ran on.
models::DeviceId slowest_of(const WorkloadResult& r, const models::ProgramRank& pr) {
  return r.classes[static_cast<std::size_t>(pr.replica_class)].slowest_gpu[static_cast<std::size_t>(pr.stage)];
}

std::vector<PathSegment> path_segments(const WorkloadResult& r) {
  std::vector<PathSegment> out;
  for (std::uint32_t id : r.critical_path) {
    const int rank = r.program.op_rank[id];
    const auto& t = r.timing[id];
    if (t.end <= t.start) continue;
    if (out.empty() || out.back().rank != rank) {
      PathSegment seg;
      seg.rank = rank;
      seg.start = t.start;
      out.push_back(seg);
    }
    PathSegment& seg = out.back();
    seg.end = t.end;
    const auto kind = r.program.ops[id].kind;
    (kind == ProgramOpKind::Collective || kind == ProgramOpKind::SendRecv ? seg.comm : seg.compute) += t.end - t.start;
    seg.last_op = r.program.ops[id].name;
  }
  return out;
}

std::string replica_summary(const RunContext& c) {
  if (!interesting(c)) return {};
  const WorkloadResult& r = c.result;
  const models::Topology& t = c.cluster.topology;
  std::string out;
  if (!c.cluster.perturbations.empty()) {
    out += "what-if perturbations:\n";
    for (const auto& line : c.cluster.perturbations) out += "  " + line + "\n";
    if (!c.cluster.gpu_speed.empty()) {
      // Rules on one GPU multiply: the lowest resulting speed per op kind.
      models::ComputeSpeed low;
      std::size_t slowed = 0;
      for (const auto& v : c.cluster.gpu_speed) {
        slowed += v.nominal() ? 0 : 1;
        low = {std::min(low.gemm, v.gemm), std::min(low.attention, v.attention), std::min(low.memory, v.memory)};
      }
      out += fmt::format("  (rules multiply: {} GPU{} off nominal; lowest speed gemm {:.3g}, attention {:.3g}, memory {:.3g})\n", slowed,
                         slowed == 1 ? "" : "s", low.gemm, low.attention, low.memory);
    }
    out += "\n";
  }
  if (c.unperturbed_e2e > 0 && r.serving) {
    out += fmt::format("end-to-end latency {} vs {} unperturbed: slowdown {:.3f}x (TTFT {} vs {}, TPOT {} vs {})\n\n", seconds(r.serving->e2e),
                       seconds(c.unperturbed_e2e), r.serving->e2e / c.unperturbed_e2e, seconds(r.serving->ttft), seconds(c.unperturbed_ttft),
                       seconds(r.step_time), seconds(c.unperturbed_step_time));
  } else if (c.unperturbed_step_time > 0) {
    const auto phase = c.scenario.workload->phase;
    const char* what = phase == models::WorkloadPhase::Prefill ? "TTFT" : phase == models::WorkloadPhase::Decode ? "TPOT" : "step time";
    out += fmt::format("{} {} vs {} unperturbed: slowdown {:.3f}x\n\n", what, seconds(r.step_time), seconds(c.unperturbed_step_time),
                       r.step_time / c.unperturbed_step_time);
  }
  const std::vector<ClassFigures> figs = class_figures(r);
  support::TextTable table({"replica class", "replicas", "slowest GPU", "speed", "compute", "exposed comm", "sync wait", "other idle", "end"},
                           {false, false, false, true, true, true, true, true, true});
  // At most 12 rows: class 0 (replica 0's), then those that waited least (they held the step).
  std::vector<std::size_t> rows;
  for (std::size_t k = 1; k < r.classes.size(); ++k) rows.push_back(k);
  constexpr std::size_t kRows = 12;
  if (rows.size() + 1 > kRows) {
    std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) { return figs[a].sync_wait < figs[b].sync_wait; });
    rows.resize(kRows - 1);
  }
  rows.insert(rows.begin(), 0);
  std::sort(rows.begin(), rows.end());
  for (std::size_t k : rows) {
    const ReplicaClass& rc = r.classes[k];
    // The slowest GPU over the class's stages: the lowest peak × GEMM speed.
    models::DeviceId g = rc.compute_gpu.front();
    double rate = std::numeric_limits<double>::infinity();
    for (std::size_t st = 0; st < rc.compute_gpu.size(); ++st) {
      const double x = gpu_spec(c.cluster, rc.compute_gpu[st]).bf16_flops * rc.speed[st].gemm;
      if (x < rate) {
        rate = x;
        g = rc.speed[st].nominal() ? rc.compute_gpu[st] : rc.slowest_gpu[st];
      }
    }
    const ClassFigures& f = figs[k];
    table.add_row({std::to_string(k), fmt::format("{} ({})", rc.replicas.size(), replica_list(rc.replicas)),
                   fmt::format("{} {}", t.name(g), gpu_spec(c.cluster, g).name), speed_text(rc), seconds(f.compute), seconds(f.exposed),
                   seconds(f.sync_wait), seconds(f.idle), seconds(f.end)});
  }
  out += table.render(0);
  if (rows.size() < r.classes.size()) {
    out += fmt::format("({} of {} classes shown: class 0 and those that waited least; report.json lists every class)\n", rows.size(),
                       r.classes.size());
  }
  out += "(per class: mean over its pipeline stages, one GPU each; sync wait = DP collectives waiting for the other classes)\n\n";

  const std::vector<PathSegment> segs = path_segments(r);
  if (!segs.empty()) {
    std::map<int, double> by_class;
    for (const auto& s : segs) by_class[r.program.ranks[static_cast<std::size_t>(s.rank)].replica_class] += s.end - s.start;
    const auto held = std::max_element(by_class.begin(), by_class.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    out += fmt::format("critical path: held by replica class {} ({} of {})\n", held->first, seconds(held->second), seconds(r.step_time));
    const std::size_t shown = std::min<std::size_t>(segs.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& s = segs[i];
      const auto& pr = r.program.ranks[static_cast<std::size_t>(s.rank)];
      out += fmt::format("  {:>10} - {:>10}  class {} stage {} ({}): compute {}, communication {}, until '{}'\n", seconds(s.start),
                         seconds(s.end), pr.replica_class, pr.stage, t.name(slowest_of(r, pr)), seconds(s.compute),
                         seconds(s.comm), s.last_op);
    }
    if (segs.size() > shown) out += fmt::format("  ... {} more segments\n", segs.size() - shown);
    out += "\n";
  }
  return out;
}

void add_replica_json(const RunContext& c, nlohmann::ordered_json& j) {
  using nlohmann::ordered_json;
  if (!interesting(c)) return;
  const WorkloadResult& r = c.result;
  const models::Topology& t = c.cluster.topology;
  j["perturbations"] = c.cluster.perturbations;
  if (c.unperturbed_step_time > 0) {
    j["unperturbed_step_time_s"] = c.unperturbed_step_time;
    j["slowdown"] = r.step_time / c.unperturbed_step_time;
    if (c.unperturbed_e2e > 0 && r.serving) {
      j["unperturbed_ttft_s"] = c.unperturbed_ttft;
      j["unperturbed_e2e_latency_s"] = c.unperturbed_e2e;
      j["e2e_slowdown"] = r.serving->e2e / c.unperturbed_e2e;
    }
  }
  const std::vector<ClassFigures> figs = class_figures(r);
  ordered_json classes = ordered_json::array();
  for (std::size_t k = 0; k < r.classes.size(); ++k) {
    const ReplicaClass& rc = r.classes[k];
    ordered_json stages = ordered_json::array();
    for (std::size_t s = 0; s < rc.rank.size(); ++s) {
      stages.push_back({{"stage", s}, {"rank", rc.rank[s]}, {"compute_gpu", t.name(rc.compute_gpu[s])},
                        {"gpu_model", gpu_spec(c.cluster, rc.compute_gpu[s]).name}, {"slowest_gpu", t.name(rc.slowest_gpu[s])},
                        {"speed", {{"gemm", rc.speed[s].gemm}, {"attention", rc.speed[s].attention}, {"memory", rc.speed[s].memory}}}});
    }
    const ClassFigures& f = figs[k];
    classes.push_back({{"class", k}, {"replicas", rc.replicas}, {"stages", stages}, {"compute_s", f.compute},
                       {"exposed_communication_s", f.exposed}, {"sync_wait_s", f.sync_wait}, {"idle_s", f.idle}, {"end_s", f.end}});
  }
  j["replica_classes"] = classes;
  ordered_json path = ordered_json::array();
  for (const auto& s : path_segments(r)) {
    const auto& pr = r.program.ranks[static_cast<std::size_t>(s.rank)];
    path.push_back({{"replica_class", pr.replica_class}, {"stage", pr.stage}, {"gpu", t.name(slowest_of(r, pr))},
                    {"start_s", s.start}, {"end_s", s.end}, {"compute_s", s.compute}, {"communication_s", s.comm}, {"last_op", s.last_op}});
  }
  j["critical_path"] = path;
}

}  // namespace ccsim::planner
