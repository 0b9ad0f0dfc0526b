#include "planner/search/plan_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/scenario/effective_yaml.hpp"
#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

using nlohmann::ordered_json;

namespace {

constexpr std::array<models::ParallelDim, models::kParallelDims> kDims{models::ParallelDim::TP, models::ParallelDim::CP,
                                                                       models::ParallelDim::EP, models::ParallelDim::PP,
                                                                       models::ParallelDim::DP};

bool inference(models::WorkloadPhase phase) { return phase != models::WorkloadPhase::TrainingStep; }

/// A time in the table; below a picosecond it is rounding noise of a sum of op times (a bubble
/// of 5.6e-17 s), shown as 0.
std::string seconds(double s) { return support::format_time(std::fabs(s) < 1e-12 ? 0.0 : s); }

std::string thousands(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string out;
  for (const auto& x : v) {
    if (!out.empty()) out += ",";
    if constexpr (std::is_same_v<T, bool>) out += x ? "true" : "false";
    else out += fmt::format("{}", x);
  }
  return out;
}

/// The knobs with their values, in the order of --space.
std::vector<std::pair<std::string, std::string>> space_items(const SearchSpace& s, models::WorkloadPhase phase) {
  std::vector<std::pair<std::string, std::string>> out = {{"tp", join(s.tp)}, {"pp", join(s.pp)}, {"cp", join(s.cp)}, {"ep", join(s.ep)}};
  if (inference(phase)) {
    out.emplace_back("batch", join(s.batch));
    return out;
  }
  out.insert(out.end(), {{"mbs", join(s.mbs)}, {"sp", join(s.sp)}, {"tp_overlap", join(s.tp_overlap)}, {"zero", join(s.zero)},
                         {"v", join(s.v)}, {"recompute", join(s.recompute)}, {"order", join(s.order)}});
  return out;
}

std::string objective_text(const CandidateResult& r, const PlanOptions& o, models::WorkloadPhase phase) {
  if (o.objective == "tokens-per-s") return fmt::format("{:.0f} tokens/s", phase == models::WorkloadPhase::Serving ? r.output_tokens_per_s : r.tokens_per_s);
  if (o.objective == "mfu") return fmt::format("MFU {:.1f} %", 100 * r.mfu);
  if (o.objective == "cost") return fmt::format("${:.3f} per million tokens", r.cost_per_mtok);
  return seconds(r.step_time);
}

}  // namespace

std::string explain_best(const PlanContext& c) {
  const auto& ranked = c.result.ranked;
  if (ranked.size() < 2) return "";
  const CandidateResult& a = ranked[0];
  const CandidateResult& b = ranked[1];
  const models::WorkloadPhase phase = c.scenario.workload->phase;
  // Terms of the step (per GPU, mean over stages): compute + exposed communication + idle.
  std::vector<std::pair<std::string, double>> terms = {{"compute", a.compute - b.compute}, {"bubble/idle", a.bubble - b.bubble}};
  for (models::ParallelDim d : kDims) {
    const auto i = static_cast<std::size_t>(d);
    terms.emplace_back(fmt::format("exposed {}", models::to_string(d)), a.exposed[i] - b.exposed[i]);
  }
  std::stable_sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) { return std::abs(x.second) > std::abs(y.second); });
  std::string parts;
  const double noise = 1e-6 * std::max(a.step_time, b.step_time);  // differences below this are rounding
  for (std::size_t i = 0; i < terms.size() && i < 3; ++i) {
    if (std::abs(terms[i].second) <= noise) break;
    parts += fmt::format("{}{} {}{}", parts.empty() ? "" : ", ", terms[i].first, terms[i].second < 0 ? "-" : "+",
                         seconds(std::abs(terms[i].second)));
  }
  // Knobs that differ.
  const Layout& x = a.candidate.layout;
  const Layout& y = b.candidate.layout;
  std::vector<std::string> knobs;
  const auto diff = [&](const char* name, const auto& u, const auto& v) {
    if (u != v) knobs.push_back(fmt::format("{} {} vs {}", name, u, v));
  };
  diff("tp", x.tp, y.tp), diff("pp", x.pp, y.pp), diff("dp", x.dp, y.dp), diff("cp", x.cp, y.cp), diff("ep", x.ep, y.ep);
  if (inference(phase)) {
    diff("batch", x.batch, y.batch);
  } else {
    diff("mbs", x.mbs, y.mbs), diff("sp", x.sp, y.sp), diff("tp_overlap", x.tp_overlap, y.tp_overlap), diff("zero", x.zero, y.zero);
    diff("v", x.v, y.v), diff("recompute", x.recompute, y.recompute), diff("order", x.order, y.order);
  }
  std::string knob_text;
  for (const auto& k : knobs) knob_text += (knob_text.empty() ? "" : ", ") + k;
  const double gap = b.step_time - a.step_time;
  std::string line = fmt::format("best vs runner-up: {} vs {}", objective_text(a, c.options, phase), objective_text(b, c.options, phase));
  if (c.options.objective == "step-time" || !inference(phase)) {
    if (std::abs(gap) <= 1e-3 * b.step_time) {
      line += fmt::format("; a tie within 0.1 % of the step ({})", seconds(std::abs(gap)));
    } else {
      line += fmt::format("; step {} {} ({:+.1f} %)", gap >= 0 ? "shorter by" : "longer by", seconds(std::abs(gap)),
                          b.step_time > 0 ? -100.0 * gap / b.step_time : 0.0);
    }
  }
  if (!parts.empty()) line += "; largest differing terms: " + parts;
  if (!knob_text.empty()) line += "; settings: " + knob_text;
  line += ".";
  return line + "\n";
}

std::string plan_summary(const PlanContext& c) {
  const auto& sc = c.scenario;
  const auto& w = *sc.workload;
  const auto& r = c.result;
  const bool infer = inference(w.phase);
  const int nodes = c.cluster.spec.total_nodes();
  std::string out = fmt::format("# ccsim plan: {} — {} {} on {} GPUs ({} node{}), objective {}\n", sc.name, sc.model->name, models::to_string(w.phase),
                                c.cluster.spec.total_gpus(), nodes, nodes == 1 ? "" : "s", c.options.objective);
  std::string space;
  for (const auto& [k, v] : space_items(c.space, w.phase)) space += fmt::format("{}{}={}", space.empty() ? "" : " ", k, v);
  out += "# space: " + space + "\n";
  std::size_t pruned = 0;
  for (const auto& [reason, n] : r.pruned) pruned += n;
  const std::size_t dropped = r.evaluated + pruned - r.enumerated;  // simulated, then pruned
  out += fmt::format("# {} layouts: {} pruned, {} ranked; {} simulated ({} full run{}, the rest screened from shorter steps)\n",
                     thousands(r.enumerated), thousands(pruned), thousands(r.ranked.size()), thousands(r.evaluated),
                     thousands(r.exact_runs), r.exact_runs == 1 ? "" : "s");
  for (const auto& [reason, n] : r.pruned) out += fmt::format("#   {:>9}  {}\n", thousands(n), reason);
  if (dropped > 0) {
    out += fmt::format("#   ({} of the pruned were simulated first: a latency target{} the KV cache of the last decode step{})\n", thousands(dropped),
                       r.pruned.count(kPruneAlgorithm) ? "," : ", or", r.pruned.count(kPruneAlgorithm) ? ", or an MSCCL file that did not fit the layout's groups" : "");
  }
  out += "\n";
  if (r.ranked.empty()) {
    out += "no layout is feasible: every candidate was pruned (see the counts above); widen the space with --space, or add GPUs\n";
    return out;
  }
  std::vector<std::string> head = {"rank", "layout"};
  if (infer) head.insert(head.end(), {w.phase == models::WorkloadPhase::Serving ? "TTFT" : w.phase == models::WorkloadPhase::Prefill ? "TTFT" : "TPOT"});
  if (w.phase == models::WorkloadPhase::Serving) head.push_back("TPOT");
  head.insert(head.end(), {"step time", w.phase == models::WorkloadPhase::Serving ? "output tokens/s" : "tokens/s", "MFU", "mem/GPU GiB", "exposed TP", "exposed PP", "exposed DP", "exposed CP/EP", "bubble"});
  const bool cost = c.options.price_per_gpu_hour > 0;
  const bool flow = c.options.rerank == "flow";
  if (cost) head.push_back("$/Mtok");
  if (flow) head.push_back("flow step");
  const bool synth = !c.options.synthesize.empty();
  if (synth) head.push_back("synthesized");
  std::vector<bool> right(head.size(), true);
  right[1] = false;
  support::TextTable t(head, right);
  const std::size_t shown = std::min(r.ranked.size(), static_cast<std::size_t>(c.options.top));
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& x = r.ranked[i];
    const auto ex = [&](models::ParallelDim d) { return x.exposed[static_cast<std::size_t>(d)]; };
    std::vector<std::string> row = {std::to_string(i + 1), layout_name(x.candidate.layout, w.phase)};
    if (infer) row.push_back(seconds(w.phase == models::WorkloadPhase::Decode ? x.tpot : x.ttft));
    if (w.phase == models::WorkloadPhase::Serving) row.push_back(seconds(x.tpot));
    row.insert(row.end(), {seconds(x.step_time), fmt::format("{:.0f}", w.phase == models::WorkloadPhase::Serving ? x.output_tokens_per_s : x.tokens_per_s),
                           fmt::format("{:.1f} %", 100 * x.mfu), fmt::format("{:.2f}", x.candidate.memory / 1073741824.0),
                           seconds(ex(models::ParallelDim::TP)), seconds(ex(models::ParallelDim::PP)), seconds(ex(models::ParallelDim::DP)),
                           seconds(ex(models::ParallelDim::CP) + ex(models::ParallelDim::EP)), seconds(x.bubble)});
    if (cost) row.push_back(fmt::format("{:.3f}", x.cost_per_mtok));
    if (flow) row.push_back(x.flow_step_time ? seconds(*x.flow_step_time) : "-");
    if (synth) {
      std::string dims;
      for (const std::string& d : x.synthesized) dims += (dims.empty() ? "" : "+") + d;
      row.push_back(dims.empty() || !x.library_step_time ? std::string("-")
                                                        : fmt::format("{} {:+.1f} %", dims, 100.0 * (x.step_time / *x.library_step_time - 1.0)));
    }
    t.add_row(row);
  }
  out += t.render(0);
  if (r.scenario_rank) {
    const auto& x = *r.scenario_layout;
    out += fmt::format("the scenario's own layout ({}) ranks {} of {}: {}\n", layout_name(x.candidate.layout, w.phase), *r.scenario_rank + 1,
                       r.ranked.size(), objective_text(x, c.options, w.phase));
  } else if (!r.scenario_dropped.empty()) {
    out += "the scenario's own layout " + r.scenario_dropped + "\n";
  } else {
    out += "the scenario's own layout is not among the candidates (outside the space, pruned by a rule or memory, or the scenario sets none)\n";
  }
  if (flow) out += "(ranked by the flow engine's figures; the other columns are the analytic engine's)\n";
  if (synth) {
    out += fmt::format("(synthesized: the dimensions whose AllReduce/AllGather/ReduceScatter run synthesized schedules in this row's "
                       "figures, and the step's change from the scenario's algorithms; '-' where no dimension gained; {} run{} of the top "
                       "{} with synthesized dimensions)\n",
                       r.synthesized_runs, r.synthesized_runs == 1 ? "" : "s", std::min<std::size_t>(r.ranked.size(), c.options.top));
  }
  if (r.split) {
    const auto& sp = *r.split;
    std::string per;
    const models::Scenario best = with_layout(sc, r.ranked.front().candidate);
    const auto classes = replica_classes(Placement(*best.strategy, c.cluster.spec.total_gpus()), *best.strategy, c.cluster);
    for (std::size_t i = 0; i < classes.size() && i < sp.per_class.size(); ++i) {
      per += fmt::format("{}{} per replica on {} ({} replica{})", per.empty() ? "" : ", ", sp.per_class[i],
                         gpu_spec(c.cluster, classes[i].compute_gpu.front()).name, classes[i].replicas.size(), classes[i].replicas.size() == 1 ? "" : "s");
    }
    out += fmt::format("uneven micro-batches for the best layout (strategy.dp_micro_batches, {} runs): {}: step {}", sp.runs, per,
                       seconds(sp.step_time));
    out += sp.even_step_time > 0 ? fmt::format(" vs {} even ({:.2f}x faster)\n", seconds(sp.even_step_time), sp.even_step_time / sp.step_time)
                                 : std::string(" (the micro-batches do not split evenly over the replicas)\n");
  }
  if (r.layer_split) {
    const auto& ls = *r.layer_split;
    std::string per;
    for (int n : ls.per_stage) per += fmt::format("{}{}", per.empty() ? "" : ", ", n);
    out += fmt::format("uneven layers per stage for the best layout (strategy.pipeline_layers, {} runs): [{}]: step {} vs {} even ({:.2f}x faster)\n",
                       ls.runs, per, seconds(ls.step_time), seconds(ls.even_step_time), ls.even_step_time / ls.step_time);
  }
  out += explain_best(c);
  return out;
}

std::string plan_json(const PlanContext& c) {
  const auto& sc = c.scenario;
  const auto& w = *sc.workload;
  const auto& r = c.result;
  ordered_json j;
  j["scenario"] = sc.name;
  j["model"] = sc.model->name;
  j["phase"] = std::string(models::to_string(w.phase));
  j["gpus"] = c.cluster.spec.total_gpus();
  j["objective"] = c.options.objective;
  if (c.options.price_per_gpu_hour > 0) j["price_per_gpu_hour_usd"] = c.options.price_per_gpu_hour;
  if (c.options.max_tpot) j["max_tpot_s"] = *c.options.max_tpot;
  if (c.options.max_ttft) j["max_ttft_s"] = *c.options.max_ttft;
  ordered_json space;
  for (const auto& [k, v] : space_items(c.space, w.phase)) space[k] = v;
  j["space"] = space;
  j["enumerated"] = r.enumerated;
  j["pruned"] = r.pruned;
  j["simulated"] = r.evaluated;
  j["full_runs"] = r.exact_runs;
  ordered_json list = ordered_json::array();
  const std::size_t shown = std::min(r.ranked.size(), static_cast<std::size_t>(c.options.top));
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& x = r.ranked[i];
    const auto& s = x.candidate.strategy;
    const auto& cw = x.candidate.workload;
    ordered_json e;
    e["rank"] = i + 1;
    e["layout"] = layout_name(x.candidate.layout, w.phase);
    e["simulated_in_full"] = x.exact;
    e["step_time_s"] = x.step_time;
    if (w.phase == models::WorkloadPhase::Prefill || w.phase == models::WorkloadPhase::Serving) e["ttft_s"] = x.ttft;
    if (w.phase == models::WorkloadPhase::Decode || w.phase == models::WorkloadPhase::Serving) e["tpot_s"] = x.tpot;
    e["tokens_per_s"] = x.tokens_per_s;
    if (w.phase == models::WorkloadPhase::Serving) e["output_tokens_per_s"] = x.output_tokens_per_s;
    e["mfu"] = x.mfu;
    e["memory_per_gpu_bytes"] = x.candidate.memory;
    e["compute_s"] = x.compute;
    e["exposed_communication_s"] = x.exposed_total;
    ordered_json ex;
    for (models::ParallelDim d : kDims) ex[std::string(models::to_string(d))] = x.exposed[static_cast<std::size_t>(d)];
    e["exposed_s"] = ex;
    e["bubble_s"] = x.bubble;
    if (c.options.price_per_gpu_hour > 0) e["cost_per_million_tokens_usd"] = x.cost_per_mtok;
    if (x.flow_step_time) e["flow_step_time_s"] = *x.flow_step_time;
    if (x.library_step_time) {
      e["synthesized_dims"] = x.synthesized;
      e["library_step_time_s"] = *x.library_step_time;
    }
    e["strategy"] = {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"cp", s.cp}, {"ep", s.ep}, {"sequence_parallel", s.sequence_parallel},
                     {"tp_comm_overlap", s.tp_comm_overlap}, {"zero_stage", s.zero_stage}, {"pipeline_schedule", s.pipeline_schedule},
                     {"virtual_stages", s.virtual_stages}, {"order", s.order}};
    if (inference(w.phase)) {
      e["workload"] = {{w.phase == models::WorkloadPhase::Prefill ? "micro_batch_size" : "batch_size", x.candidate.layout.batch}};
    } else {
      e["workload"] = {{"micro_batch_size", cw.micro_batch_size}, {"recompute", cw.recompute}};
    }
    list.push_back(e);
  }
  j["candidates"] = list;
  if (r.scenario_rank) {
    j["scenario_layout"] = {{"rank", *r.scenario_rank + 1}, {"layout", layout_name(r.scenario_layout->candidate.layout, w.phase)},
                            {"step_time_s", r.scenario_layout->step_time}, {"tokens_per_s", r.scenario_layout->tokens_per_s},
                            {"mfu", r.scenario_layout->mfu}};
  } else {
    j["scenario_layout"] = nullptr;
  }
  if (r.layer_split) {
    j["layer_split"] = {{"pipeline_layers", r.layer_split->per_stage}, {"step_time_s", r.layer_split->step_time},
                        {"even_step_time_s", r.layer_split->even_step_time}, {"runs", r.layer_split->runs}};
  }
  if (r.split) {
    j["micro_batch_split"] = {{"dp_micro_batches", r.split->per_replica}, {"per_class", r.split->per_class},
                              {"step_time_s", r.split->step_time},
                              {"even_step_time_s", r.split->even_step_time > 0 ? ordered_json(r.split->even_step_time) : ordered_json(nullptr)},
                              {"runs", r.split->runs}};
  }
  return j.dump(2) + "\n";
}

std::string candidate_yaml(const PlanContext& c, std::size_t rank) {
  const CandidateResult& x = c.result.ranked.at(rank);
  models::Scenario sc = with_layout(c.scenario, x.candidate);
  sc.name = c.scenario.name + "-plan-" + std::to_string(rank + 1);
  // The best layout carries its micro-batch split when one beats the even one.
  if (rank == 0 && c.result.split && (c.result.split->even_step_time <= 0 || c.result.split->step_time < c.result.split->even_step_time)) {
    sc.strategy->dp_micro_batches = c.result.split->per_replica;
    sc.strategy->dp_micro_batches_proportional = false;
  }
  if (rank == 0 && c.result.layer_split && c.result.layer_split->step_time < c.result.layer_split->even_step_time) {
    sc.strategy->pipeline_layers = c.result.layer_split->per_stage;
    sc.strategy->decoder_first_pipeline_num_layers = sc.strategy->decoder_last_pipeline_num_layers = 0;
  }
  std::string head = fmt::format("# ccsim plan: candidate {} of {} for {} (objective {}): {}\n", rank + 1, c.result.ranked.size(),
                                 c.scenario.name, c.options.objective, layout_name(x.candidate.layout, c.scenario.workload->phase));
  std::string body = models::effective_yaml(sc);
  const std::string generic = "# Effective scenario written by ccsim run";
  if (body.rfind(generic, 0) == 0) body = body.substr(body.find('\n') + 1);
  return head + "# Every setting explicit, includes merged: run it with `ccsim run`.\n" + body;
}

}  // namespace ccsim::planner
