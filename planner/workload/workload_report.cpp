#include "planner/workload/workload_report.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/workload/replica_report.hpp"
#include "support/text_table.hpp"

namespace ccsim::planner {

using models::ParallelDim;
using models::ProgramOpKind;

namespace {

constexpr std::array<ParallelDim, models::kParallelDims> kDims{ParallelDim::TP, ParallelDim::CP, ParallelDim::EP, ParallelDim::PP,
                                                                ParallelDim::DP};

/// Seconds with a unit that keeps 4 significant figures.
std::string seconds(double s) {
  if (s == 0) return "0";
  if (std::abs(s) >= 1.0) return fmt::format("{:.3f} s", s);
  if (std::abs(s) >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}
/// fmt's "{:.0f}" of `x`, by integer formatting where `x` is a whole number (the same text, at a
/// fraction of the cost: fmt formats fixed precision of large doubles with exact bignum
/// arithmetic, most of ops.csv's time on a large step).
std::string whole(double x) {
  if (x == std::floor(x) && std::fabs(x) < 9e15 && !(x == 0 && std::signbit(x))) return fmt::format("{}", static_cast<long long>(x));
  return fmt::format("{:.0f}", x);
}
std::string gib(double b) { return fmt::format("{:.2f}", b / (1024.0 * 1024.0 * 1024.0)); }

double mean(const WorkloadResult& r, double StageBreakdown::*f) {
  return per_gpu_mean(r, [f](const StageBreakdown& b) { return b.*f; });
}
double mean_dim(const WorkloadResult& r, bool exposed, ParallelDim d) {
  return per_gpu_mean(r, [=](const StageBreakdown& b) { return (exposed ? b.exposed : b.comm)[static_cast<std::size_t>(d)]; });
}

int gpu_sms(const RunContext& c, models::DeviceId gpu) {
  const int node = c.cluster.topology.device(gpu).node;
  return c.cluster.spec.groups[static_cast<std::size_t>(c.cluster.node_group[static_cast<std::size_t>(node)])].node.gpu.sms;
}

std::string link_name(const models::Topology& t, models::LinkId id) {
  return t.name(t.link_source(id)) + " -> " + t.name(t.link_target(id));
}

std::string layout(const models::StrategySpec& s) {
  std::string out = fmt::format("TP{} PP{} DP{}", s.tp, s.pp, s.dp);
  if (s.cp > 1) out += fmt::format(" CP{}", s.cp);
  if (s.ep > 1) out += fmt::format(" EP{}", s.ep);
  if (s.sequence_parallel) out += ", sequence parallel";
  if (s.zero_stage > 0) out += fmt::format(", ZeRO-{}", s.zero_stage);
  if (s.pp > 1) out += s.pipeline_schedule == "interleaved" ? fmt::format(", interleaved 1F1B ({} chunks/stage)", s.virtual_stages) : ", 1F1B";
  if (s.tp_comm_overlap) out += ", TP overlap";
  if (s.overlap_grad_reduce) out += ", grad reduce overlapped";
  if (s.overlap_param_gather) out += ", param gather overlapped";
  return out;
}

/// Communication ops of the step grouped by (dim, collective, size): count and costs.
struct CommRow {
  ParallelDim dim;
  std::string collective;
  double bytes = 0;
  int count = 0;        // op instances on all stages
  double time = 0;      // per instance
  std::string algorithm, protocol;
  int group = 0, concurrent = 0;
};
std::vector<CommRow> comm_rows(const WorkloadResult& r) {
  std::map<std::tuple<int, std::string, double>, CommRow> rows;
  // Instances per replica: counted per class, the largest count kept (classes with more
  // micro-batches run more of the per-micro-batch ops).
  std::map<std::tuple<int, std::string, double, int>, int> per_class;
  for (std::size_t i = 0; i < r.program.ops.size(); ++i) {
    if (r.op_comm[i] < 0) continue;
    const auto& op = r.program.ops[i];
    const auto& cost = r.comm_costs[static_cast<std::size_t>(r.op_comm[i])];
    const std::string coll = op.kind == ProgramOpKind::SendRecv ? "Send" : std::string(models::to_string(op.collective));
    auto& row = rows[{static_cast<int>(op.dim), coll, op.bytes}];
    row.dim = op.dim;
    row.collective = coll;
    row.bytes = op.bytes;
    const int cls = r.program.ranks[static_cast<std::size_t>(r.program.op_rank[i])].replica_class;
    row.count = std::max(row.count, ++per_class[{static_cast<int>(op.dim), coll, op.bytes, cls}]);
    row.time = std::max(row.time, cost.time);
    row.algorithm = cost.algorithm;
    row.protocol = cost.protocol;
    row.group = cost.group_size;
    row.concurrent = cost.concurrent_groups;
  }
  std::vector<CommRow> out;
  for (auto& [k, v] : rows) out.push_back(v);
  return out;
}

/// The summary's first lines (`# ...`): scenario, layout, serving engine, model, compute model.
/// The cross-dimension contention table (simulation.contention).
std::string contention_summary(const ContentionResult& k, double step) {
  std::string out = fmt::format("cross-dimension contention: step {} against {} with each op costed alone ({:.3f}×); {} pass{}{}, {} engine run{}\n",
                                seconds(step), seconds(k.step_alone), k.step_alone > 0 ? step / k.step_alone : 1.0, k.passes,
                                k.passes == 1 ? "" : "es", k.converged ? ", converged" : " (not converged: the last pass still moved an op)",
                                k.runs, k.runs == 1 ? "" : "s");
  support::TextTable t({"dim", "ops", "slowed", "alone", "beside others", "lost", "lost to"}, {false, true, true, true, true, true, false});
  for (const auto& d : k.dims) {
    std::string to;
    for (const auto& [dim, s] : d.to) to += (to.empty() ? "" : ", ") + dim + " " + seconds(s);
    t.add_row({d.dim, std::to_string(d.ops), std::to_string(d.slowed), seconds(d.alone), seconds(d.contended), seconds(d.contended - d.alone),
               to.empty() ? "-" : to});
  }
  out += t.render(0);
  out += "(ops of the representative ranks, summed; lost = time beside the other dimensions' ops on shared links minus time alone)\n\n";
  return out;
}

/// The timed link events table (what_if links with at:).
std::string link_events_summary(const LinkEventsResult& e) {
  std::string out = fmt::format("timed link events: {} op{} ran during them, {} longer in all; {} pass{}{}\n", e.ops, e.ops == 1 ? "" : "s",
                                seconds(e.lost), e.passes, e.passes == 1 ? "" : "es",
                                e.converged ? ", converged" : " (not converged: the last pass still moved an op)");
  support::TextTable t({"rules", "when", "windows in step", "ops during"}, {false, false, true, true});
  for (const auto& ev : e.events) t.add_row({ev.rules, ev.timing, std::to_string(ev.windows), std::to_string(ev.ops)});
  out += t.render(0);
  out += "(communication ops of the representative ranks; an op runs on the cluster as it is while an event holds)\n\n";
  return out;
}

std::string summary_header(const RunContext& c) {
  const auto& sc = c.scenario;
  const auto& w = *sc.workload;
  const auto& s = *sc.strategy;
  const auto& m = *sc.model;
  const auto& r = c.result;
  std::string out;
  const auto plural = [](std::int64_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); };
  out += fmt::format("# ccsim run: {} — {} {} on {} ({}), {} engine\n", sc.name, m.name, models::to_string(w.phase), plural(r.world, "GPU"),
                     plural(static_cast<std::int64_t>(c.cluster.nodes.size()), "node"), models::to_string(c.engine));
  const std::vector<int> uneven = replica_micro_batch_counts(r);
  if (w.phase == models::WorkloadPhase::TrainingStep && !uneven.empty()) {
    // Uneven micro-batches: the count of each class's replicas.
    std::map<int, std::int64_t> replicas_with;  // micro-batches -> replicas
    for (const auto& rc : r.classes) replicas_with[rc.micro_batches] += static_cast<std::int64_t>(rc.replicas.size());
    std::string per;
    for (const auto& [mb, n] : replicas_with) per += fmt::format("{}{} for {}", per.empty() ? "" : ", ", mb, plural(n, "replica"));
    out += fmt::format("# layout: {}; micro-batches of {} × {} tokens per DP replica: {}; {}, recompute {}\n", layout(s), w.micro_batch_size,
                       w.sequence_length, per, w.dtype, w.recompute);
  } else if (w.phase == models::WorkloadPhase::TrainingStep) {
    out += fmt::format("# layout: {}; {} micro-batches of {} × {} tokens per DP rank, {}, recompute {}\n", layout(s), r.micro_batches,
                       w.micro_batch_size, w.sequence_length, w.dtype, w.recompute);
  } else if (w.phase == models::WorkloadPhase::Prefill) {
    out += fmt::format("# layout: {}; prefill of {} × {} tokens per DP replica, {}\n", layout(s), plural(w.micro_batch_size, "sequence"),
                       w.sequence_length, w.dtype);
  } else if (w.phase == models::WorkloadPhase::Serving) {
    out += fmt::format("# layout: {}; {} per DP replica admitted together, input {} + output {} tokens each, {}\n", layout(s),
                       plural(w.batch_size, "request"), w.input_len, w.output_len, w.dtype);
  } else {
    out += fmt::format("# layout: {}; decode of {} per DP replica, context {} + {} generated tokens, {}\n", layout(s),
                       plural(w.batch_size, "sequence"), w.context_length, w.generated_tokens, w.dtype);
  }
  if (w.phase != models::WorkloadPhase::TrainingStep) {
    const auto& sv = r.serving_calibration;
    out += fmt::format("# serving engine: {} host overhead per prefill step, {} per decode step; TP AllReduce as vLLM picks it{}\n",
                       seconds(sv.prefill_step_overhead), seconds(sv.decode_step_overhead),
                       s.disable_custom_all_reduce ? " (custom all-reduce disabled: NCCL)" : " (custom all-reduce in a node, NCCL otherwise)");
  }
  const auto& cc = r.compute;
  out += fmt::format("# model: {} ({:.2f} B parameters, {:.2f} B active)\n", m.name, m.total_params() / 1e9, m.active_params() / 1e9);
  out += fmt::format("# compute model: GEMM {:.0f} % of peak per {}x{} tile (k-loop overhead {:g}), attention {:.0f} / {:.0f} % "
                     "(fwd / bwd), HBM {:.0f} %, {} per kernel\n",
                     100 * cc.gemm_efficiency, cc.gemm_tile_m, cc.gemm_tile_n, cc.gemm_k_overhead, 100 * cc.attention_efficiency,
                     100 * cc.attention_backward_efficiency, 100 * cc.memory_efficiency, seconds(cc.kernel_overhead));
  return out;
}

}  // namespace

std::string run_summary(const RunContext& c) {
  const auto& sc = c.scenario;
  const auto& w = *sc.workload;
  const auto& s = *sc.strategy;
  const auto& r = c.result;
  const auto& t = c.cluster.topology;
  std::string out = summary_header(c);
  out += "\n";
  // Memory first: it decides feasibility.
  std::size_t worst = 0;
  for (std::size_t i = 0; i < r.memory.size(); ++i)
    if (r.memory[i].total() > r.memory[worst].total()) worst = i;
  const auto& f = r.memory[worst];
  if (!r.feasible) {
    out += fmt::format("INFEASIBLE: stage {} needs {} GiB per GPU, more than the {} GiB of HBM; not simulated.\n", f.stage,
                       gib(f.total()), gib(r.hbm_capacity));
  }
  support::TextTable mem({"memory per GPU (GiB)", "weights", "gradients", "optimizer", "activations", "KV cache", "total", "HBM"},
                         {false, true, true, true, true, true, true, true});
  mem.add_row({fmt::format("stage {} (largest)", f.stage), gib(f.weights), gib(f.gradients), gib(f.optimizer), gib(f.activations),
               gib(f.kv_cache), gib(f.total()), gib(r.hbm_capacity)});
  if (!r.feasible) {
    out += mem.render(0);
    return out;
  }
  const double step = r.step_time;
  support::TextTable head({"metric", "value"}, {false, true});
  if (w.phase == models::WorkloadPhase::TrainingStep) {
    head.add_row({"step time", seconds(step)});
    head.add_row({"tokens/s", fmt::format("{:.0f}", r.program.tokens / step)});
    head.add_row({"MFU", fmt::format("{:.1f} %", 100 * r.mfu)});
  } else if (w.phase == models::WorkloadPhase::Prefill) {
    head.add_row({"TTFT (prefill)", seconds(step)});
    head.add_row({"prompt tokens/s", fmt::format("{:.0f}", r.program.tokens / step)});
    head.add_row({"MFU", fmt::format("{:.1f} %", 100 * r.mfu)});
  } else if (r.serving) {
    const auto& sv = *r.serving;
    head.add_row({"end-to-end latency", seconds(sv.e2e)});
    head.add_row({"TTFT (prefill step)", seconds(sv.ttft)});
    head.add_row({"TPOT (mean)", seconds(sv.tpot)});
    head.add_row({"output tokens/s", fmt::format("{:.0f}", sv.output_tokens_per_s * s.dp)});
    head.add_row({"total tokens/s", fmt::format("{:.0f}", sv.total_tokens_per_s * s.dp)});
    head.add_row({"prefill compute per GPU", seconds(sv.prefill_compute)});
    head.add_row({"prefill exposed comm per GPU", seconds(sv.prefill_comm)});
    for (const auto& d : sv.decode) head.add_row({fmt::format("decode step at context {:g}", d.context), seconds(d.step)});
    head.add_row({"-- middle decode step --", ""});
    head.add_row({"MFU", fmt::format("{:.2f} %", 100 * r.mfu)});
  } else {
    head.add_row({"TPOT (per output token)", seconds(step)});
    head.add_row({"output tokens/s", fmt::format("{:.0f}", r.program.tokens / step)});
    head.add_row({"MFU", fmt::format("{:.2f} %", 100 * r.mfu)});
  }
  head.add_row({"compute per GPU", seconds(mean(r, &StageBreakdown::compute))});
  double comm = 0;
  for (ParallelDim d : kDims) comm += mean_dim(r, false, d);
  const double exposed = mean(r, &StageBreakdown::exposed_total);
  head.add_row({"communication per GPU", seconds(comm)});
  head.add_row({"  of which exposed", seconds(exposed)});
  head.add_row({"pipeline bubble / idle", seconds(mean(r, &StageBreakdown::idle))});
  if (w.phase != models::WorkloadPhase::TrainingStep) head.add_row({"  of which engine overhead", seconds(r.engine_overhead)});
  out += head.render(0);
  if (r.classes.size() > 1) {
    out += "\n(per GPU figures: mean over every GPU; the GPUs of a stage in one replica class do the same work)\n\n";
  } else {
    out += "\n(per GPU figures: mean over pipeline stages; every GPU of a stage does the same work)\n\n";
  }
  out += replica_summary(c);

  support::TextTable dims({"dim", "comm time", "exposed", "% of step"}, {false, true, true, true});
  for (ParallelDim d : kDims) {
    const double ct = mean_dim(r, false, d);
    if (ct == 0) continue;
    const double ex = mean_dim(r, true, d);
    dims.add_row({std::string(models::to_string(d)), seconds(ct), seconds(ex), fmt::format("{:.1f}", 100 * ex / step)});
  }
  out += dims.render(0);
  out += "\n";
  if (r.contention) out += contention_summary(*r.contention, step);
  if (r.link_events) out += link_events_summary(*r.link_events);
  support::TextTable ops({"dim", "collective", "size (B)", "per step", "group", "concurrent", "time each*", "algorithm", "protocol"},
                         {false, false, true, true, true, true, true, false, false});
  for (const auto& row : comm_rows(r)) {
    ops.add_row({std::string(models::to_string(row.dim)), row.collective, fmt::format("{:.0f}", row.bytes), std::to_string(row.count),
                 std::to_string(row.group), std::to_string(row.concurrent), seconds(row.time), row.algorithm, row.protocol});
  }
  out += ops.render(0);
  out += "(* slowest pipeline stage; concurrent = other groups running the same op at once on shared nodes)\n\n";
  support::TextTable links({"busiest links", "class", "utilisation", "peak", "GB/step"}, {false, false, true, true, true});
  for (std::size_t i = 0; i < std::min<std::size_t>(5, r.links.size()); ++i) {
    const auto& l = r.links[i];
    links.add_row({link_name(t, l.link), std::string(models::to_string(t.link(l.link).link_class)),
                   fmt::format("{:.1f} %", 100 * l.utilisation), fmt::format("{:.0f} %", 100 * l.peak), fmt::format("{:.3f}", l.bytes / 1e9)});
  }
  if (!r.links.empty()) {
    out += links.render(0);
    out += "\n";
  }
  out += mem.render(0);
  return out;
}

std::string report_json(const RunContext& c) {
  using nlohmann::ordered_json;
  const auto& sc = c.scenario;
  const auto& w = *sc.workload;
  const auto& s = *sc.strategy;
  const auto& m = *sc.model;
  const auto& r = c.result;
  const auto& t = c.cluster.topology;
  ordered_json j;
  j["schema"] = "ccsim.run/1";
  j["scenario"] = sc.name;
  j["engine"] = std::string(models::to_string(c.engine));
  j["model"] = {{"name", m.name}, {"parameters", m.total_params()}, {"active_parameters", m.active_params()}, {"source", m.source}};
  j["phase"] = std::string(models::to_string(w.phase));
  j["gpus"] = r.world;
  j["nodes"] = c.cluster.nodes.size();
  j["layout"] = {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"cp", s.cp}, {"ep", s.ep}, {"sequence_parallel", s.sequence_parallel},
                 {"zero_stage", s.zero_stage}, {"pipeline_schedule", s.pipeline_schedule}, {"virtual_stages", s.virtual_stages},
                 {"micro_batches", r.micro_batches}};
  if (const std::vector<int> uneven = replica_micro_batch_counts(r); !uneven.empty()) j["layout"]["dp_micro_batches"] = uneven;
  const auto& cc = r.compute;
  j["compute_calibration"] = {{"gemm_efficiency", cc.gemm_efficiency},
                               {"gemm_tile_m", cc.gemm_tile_m},
                               {"gemm_tile_n", cc.gemm_tile_n},
                               {"gemm_k_overhead", cc.gemm_k_overhead},
                               {"gemm_split_k_min", cc.gemm_split_k_min},
                               {"attention_efficiency", cc.attention_efficiency},
                               {"attention_backward_efficiency", cc.attention_backward_efficiency},
                               {"attention_seq_half", cc.attention_seq_half},
                               {"attention_backward_seq_half", cc.attention_backward_seq_half},
                               {"attention_tile_m", cc.attention_tile_m},
                               {"memory_efficiency", cc.memory_efficiency},
                               {"kernel_overhead_s", cc.kernel_overhead},
                               {"sms", r.stage_gpu.empty() ? 0 : gpu_sms(c, r.stage_gpu.front())},
                               {"source", cc.source}};
  j["feasible"] = r.feasible;
  ordered_json mem = ordered_json::array();
  for (const auto& f : r.memory) {
    mem.push_back({{"stage", f.stage}, {"weights_bytes", f.weights}, {"gradients_bytes", f.gradients}, {"optimizer_bytes", f.optimizer},
                   {"activations_bytes", f.activations}, {"kv_cache_bytes", f.kv_cache}, {"total_bytes", f.total()}});
  }
  j["memory_per_gpu"] = mem;
  j["hbm_capacity_bytes"] = r.hbm_capacity;
  if (!r.feasible) return j.dump(2) + "\n";
  j["step_time_s"] = r.step_time;
  if (w.phase == models::WorkloadPhase::Prefill) j["ttft_s"] = r.step_time;
  if (w.phase == models::WorkloadPhase::Decode) j["tpot_s"] = r.step_time;
  if (w.phase != models::WorkloadPhase::TrainingStep) {
    const auto& sv = r.serving_calibration;
    j["serving_calibration"] = {{"prefill_step_overhead_s", sv.prefill_step_overhead}, {"decode_step_overhead_s", sv.decode_step_overhead},
                                {"custom_allreduce_launch_s", sv.custom_allreduce_launch},
                                {"custom_allreduce_stage_s", sv.custom_allreduce_stage}, {"source", sv.source}};
    j["engine_overhead_s"] = r.engine_overhead;
  }
  if (r.serving) {
    // Request-level figures (vLLM benchmark terms); the step figures below are the middle decode step's.
    const auto& sv = *r.serving;
    ordered_json points = ordered_json::array();
    for (const auto& d : sv.decode) points.push_back({{"context", d.context}, {"step_s", d.step}});
    j["serving"] = {{"batch_size", w.batch_size}, {"input_len", w.input_len}, {"output_len", w.output_len},
                    {"e2e_latency_s", sv.e2e}, {"ttft_s", sv.ttft}, {"tpot_s", sv.tpot},
                    {"output_tokens_per_s", sv.output_tokens_per_s * s.dp}, {"total_tokens_per_s", sv.total_tokens_per_s * s.dp},
                    {"prefill_compute_s", sv.prefill_compute}, {"prefill_exposed_communication_s", sv.prefill_comm},
                    {"decode_points", points}};
  }
  j["tokens_per_s"] = r.program.tokens / r.step_time;
  j["mfu"] = r.mfu;
  j["model_flops"] = r.program.model_flops;
  j["compute_s"] = mean(r, &StageBreakdown::compute);
  j["exposed_communication_s"] = mean(r, &StageBreakdown::exposed_total);
  j["bubble_s"] = mean(r, &StageBreakdown::idle);
  ordered_json comm;
  for (ParallelDim d : kDims) {
    comm[std::string(models::to_string(d))] = {{"time_s", mean_dim(r, false, d)}, {"exposed_s", mean_dim(r, true, d)}};
  }
  j["communication"] = comm;
  if (r.contention) {
    const ContentionResult& k = *r.contention;
    ordered_json dims = ordered_json::array();
    for (const auto& d : k.dims) {
      ordered_json to = ordered_json::object();
      for (const auto& [dim, s] : d.to) to[dim] = s;
      dims.push_back({{"dim", d.dim}, {"ops", d.ops}, {"slowed", d.slowed}, {"alone_s", d.alone}, {"contended_s", d.contended},
                      {"lost_s", d.contended - d.alone}, {"lost_to_s", to}});
    }
    j["contention"] = {{"step_time_alone_s", k.step_alone}, {"passes", k.passes}, {"converged", k.converged}, {"engine_runs", k.runs},
                       {"dims", dims}};
  }
  if (r.link_events) {
    const LinkEventsResult& e = *r.link_events;
    ordered_json evs = ordered_json::array();
    for (const auto& ev : e.events) evs.push_back({{"rules", ev.rules}, {"when", ev.timing}, {"windows", ev.windows}, {"ops", ev.ops}});
    j["link_events"] = {{"ops", e.ops}, {"lost_s", e.lost}, {"passes", e.passes}, {"converged", e.converged}, {"events", evs}};
  }
  add_replica_json(c, j);
  ordered_json stages = ordered_json::array();
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const auto& b = r.stages[i];
    const auto& pr = r.program.ranks[i];
    ordered_json st = {{"stage", pr.stage}};
    if (r.classes.size() > 1) st["replica_class"] = pr.replica_class;
    st.update(ordered_json{{"gpu", t.name(r.stage_gpu[i])}, {"compute_s", b.compute}, {"exposed_communication_s", b.exposed_total},
                           {"idle_s", b.idle}, {"end_s", b.end}});
    for (ParallelDim d : kDims) {
      st[std::string("comm_") + std::string(models::to_string(d)) + "_s"] = b.comm[static_cast<std::size_t>(d)];
      st[std::string("exposed_") + std::string(models::to_string(d)) + "_s"] = b.exposed[static_cast<std::size_t>(d)];
    }
    stages.push_back(st);
  }
  j["stages"] = stages;
  ordered_json ops = ordered_json::array();
  for (const auto& row : comm_rows(r)) {
    ops.push_back({{"dim", std::string(models::to_string(row.dim))}, {"collective", row.collective}, {"bytes", row.bytes},
                   {"count", row.count}, {"group_size", row.group}, {"concurrent_groups", row.concurrent}, {"time_s", row.time},
                   {"algorithm", row.algorithm}, {"protocol", row.protocol}});
  }
  j["communication_ops"] = ops;
  ordered_json links = ordered_json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(5, r.links.size()); ++i) {
    const auto& l = r.links[i];
    links.push_back({{"link", l.link}, {"from", t.name(t.link_source(l.link))}, {"to", t.name(t.link_target(l.link))},
                     {"class", std::string(models::to_string(t.link(l.link).link_class))}, {"bytes", l.bytes}, {"busy_s", l.busy},
                     {"utilisation", l.utilisation}, {"peak", l.peak}});
  }
  j["busiest_links"] = links;
  return j.dump(2) + "\n";
}

std::string ops_csv(const RunContext& c) {
  const auto& r = c.result;
  const auto& t = c.cluster.topology;
  std::string out =
      "op,stage,gpu,node,stream,pass,name,kind,dim,collective,micro_batch,layer,start_us,end_us,duration_us,flops,bytes,algorithm,"
      "protocol,m,n,k,batch,comm_sms,split_k,model_bytes,math_us,memory_us,overhead_us,waves,tflops,efficiency,bound\n";
  if (!r.feasible) return out;
  // Formatted in place (no temporary string per row): about 175 bytes a row.
  out.reserve(out.size() + 180 * r.program.ops.size());
  auto to = std::back_inserter(out);
  for (std::size_t i = 0; i < r.program.ops.size(); ++i) {
    const auto& op = r.program.ops[i];
    const int rank = r.program.op_rank[i];
    const int stage = r.program.ranks[static_cast<std::size_t>(rank)].stage;
    const models::DeviceId gpu = r.stage_gpu[static_cast<std::size_t>(rank)];
    const bool comm = op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv;
    const char* kind = op.kind == ProgramOpKind::Gemm        ? "gemm"
                       : op.kind == ProgramOpKind::Attention ? "attention"
                       : op.kind == ProgramOpKind::Memory    ? "memory"
                       : op.kind == ProgramOpKind::SendRecv  ? "send"
                                                             : "collective";
    std::string algo, proto;
    if (r.op_comm[i] >= 0) {
      algo = r.comm_costs[static_cast<std::size_t>(r.op_comm[i])].algorithm;
      proto = r.comm_costs[static_cast<std::size_t>(r.op_comm[i])].protocol;
    }
    const auto& tm = r.timing[i];
    fmt::format_to(to, "{},{},{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.6g},{},{},{}", i, stage, t.name(gpu),
                   t.device(gpu).node, models::to_string(op.stream), models::to_string(op.pass), op.name, kind,
                   comm ? models::to_string(op.dim) : std::string_view(), comm ? models::to_string(op.collective) : std::string_view(),
                   op.micro_batch, op.layer, tm.start * 1e6, tm.end * 1e6, (tm.end - tm.start) * 1e6, op.flops, whole(op.bytes), algo, proto);
    // The compute model's result (estimate_compute): shape, parts of the time, achieved rate, bound.
    if (comm || i >= r.op_compute.size()) {
      out += ",,,,,,,,,,,,,,\n";
      continue;
    }
    const ComputeEstimate& e = r.op_compute[i];
    const bool shaped = op.m > 0;
    fmt::format_to(to, ",{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{},{:.1f},{:.4f},{}\n", shaped ? std::to_string(op.m) : "",
                       shaped ? std::to_string(op.n) : "", shaped ? std::to_string(op.k) : "", shaped ? std::to_string(op.batch) : "",
                       op.comm_sms, e.split_k, whole(e.bytes), e.math * 1e6, e.memory * 1e6, e.overhead * 1e6, e.waves > 0 ? fmt::format("{:.0f}", e.waves) : "",
                       e.time > 0 ? op.flops / e.time / 1e12 : 0.0, e.efficiency, to_string(e.bound));
  }
  return out;
}

std::string links_csv(const RunContext& c) {
  const auto& r = c.result;
  const auto& t = c.cluster.topology;
  std::string out = "link,from,to,class,kind,bandwidth_GBps,bytes_per_step,busy_s,utilisation,peak\n";
  std::vector<LinkLoad> sorted = r.links;
  std::sort(sorted.begin(), sorted.end(), [](const LinkLoad& a, const LinkLoad& b) { return a.link < b.link; });
  for (const auto& l : sorted) {
    const auto& link = t.link(l.link);
    out += fmt::format("{},{},{},{},{},{:.3f},{:.0f},{:.9f},{:.6f},{:.6f}\n", l.link, t.name(t.link_source(l.link)),
                       t.name(t.link_target(l.link)), models::to_string(link.link_class), t.link_kind_name(link), link.bandwidth / 1e9,
                       l.bytes, l.busy, l.utilisation, l.peak);
  }
  return out;
}

}  // namespace ccsim::planner
