#include "planner/search/layout_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "planner/search/micro_batch_split.hpp"
#include "support/input_error.hpp"
#include "support/parallel_for.hpp"
#include "models/workload/program_builder.hpp"

namespace ccsim::planner {

namespace {

double mean_of(const WorkloadResult& r, double StageBreakdown::*field) {
  return per_gpu_mean(r, [field](const StageBreakdown& b) { return b.*field; });
}

/// The figures of a full run, as report.json computes them.
CandidateResult figures(const WorkloadResult& r, const models::WorkloadSpec& w, int dp) {
  CandidateResult c;
  c.fits = r.feasible;
  c.step_time = r.step_time;
  c.tokens_per_s = r.program.tokens / r.step_time;
  c.mfu = r.mfu;
  c.compute = mean_of(r, &StageBreakdown::compute);
  c.exposed_total = mean_of(r, &StageBreakdown::exposed_total);
  c.bubble = mean_of(r, &StageBreakdown::idle);
  for (std::size_t d = 0; d < c.exposed.size(); ++d) c.exposed[d] = per_gpu_mean(r, [d](const StageBreakdown& b) { return b.exposed[d]; });
  if (w.phase == models::WorkloadPhase::Prefill) c.ttft = r.step_time;
  if (w.phase == models::WorkloadPhase::Decode) c.tpot = r.step_time;
  if (r.serving) {
    c.ttft = r.serving->ttft;
    c.tpot = r.serving->tpot;
    c.output_tokens_per_s = r.serving->output_tokens_per_s * dp;
  }
  return c;
}

WorkloadResult run_one(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                       const ComputeCalibration& compute, const ServingCalibration& serving, models::EngineKind engine,
                       const std::shared_ptr<CommCostCache>& shared, WorkloadRunner::Detail detail) {
  WorkloadRunner runner(scenario, cluster, costs, compute, engine);
  if (scenario.workload->phase != models::WorkloadPhase::TrainingStep) runner.set_serving(serving);
  if (shared) runner.set_shared_costs(shared);
  runner.set_detail(detail);
  return runner.run();
}

/// The objective as a number to minimise.
double objective_value(const CandidateResult& c, const PlanOptions& o, models::WorkloadPhase phase) {
  if (o.objective == "tokens-per-s") return -(phase == models::WorkloadPhase::Serving ? c.output_tokens_per_s : c.tokens_per_s);
  if (o.objective == "mfu") return -c.mfu;
  if (o.objective == "cost") return c.cost_per_mtok;
  return c.step_time;
}

}  // namespace

CandidateResult evaluate_candidate(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                                   const ComputeCalibration& compute, const ServingCalibration& serving, const Candidate& c,
                                   bool exact, models::EngineKind engine, const std::shared_ptr<CommCostCache>& shared) {
  const models::Scenario full = with_layout(scenario, c);
  const models::WorkloadSpec& w = c.workload;
  const models::StrategySpec& s = c.strategy;
  const int m = models::micro_batches(w, s);
  int g = 1, ma = 1, mb = 2;
  if (s.pipeline_schedule == "interleaved") {
    g = s.microbatch_group_size_per_vp_stage > 0 ? s.microbatch_group_size_per_vp_stage : s.pp;
    ma = g + m % g;
    mb = 2 * g + m % g;
  }
  // Uneven micro-batches per replica are not one affine family in m: run them in full.
  const bool uneven = !s.dp_micro_batches.empty() || s.dp_micro_batches_proportional;
  const bool screen = !exact && !uneven && w.phase == models::WorkloadPhase::TrainingStep && w.global_batch_size > 0 && m > ma + mb;
  CandidateResult out;
  if (!screen) {
    const WorkloadResult r = run_one(full, cluster, costs, compute, serving, engine, shared, WorkloadRunner::Detail::NoLinks);
    out = figures(r, w, s.dp);
    out.exact = true;
    out.candidate = c;
    // The run's footprint is the reported one (serving: the KV cache of the last decode step).
    double mem = 0;
    for (const auto& f : r.memory) mem = std::max(mem, f.total());
    if (!r.memory.empty()) out.candidate.memory = mem;
    return out;
  } else {
    // Two shorter steps; every figure is affine in m past the pipeline's warm-up.
    const auto shorter = [&](int micro) {
      models::Scenario sc = full;
      sc.workload->global_batch_size = static_cast<std::int64_t>(micro) * w.micro_batch_size * s.dp;
      return figures(run_one(sc, cluster, costs, compute, serving, engine, shared, WorkloadRunner::Detail::StepOnly), *sc.workload, s.dp);
    };
    const CandidateResult a = shorter(ma);
    const CandidateResult b = shorter(mb);
    const double k = static_cast<double>(m - mb) / g;
    const auto extend = [&](double fa, double fb) { return fb + k * (fb - fa); };
    out.step_time = extend(a.step_time, b.step_time);
    out.compute = extend(a.compute, b.compute);
    out.exposed_total = extend(a.exposed_total, b.exposed_total);
    out.bubble = extend(a.bubble, b.bubble);
    for (std::size_t d = 0; d < out.exposed.size(); ++d) out.exposed[d] = extend(a.exposed[d], b.exposed[d]);
    // Tokens and model FLOPs grow with m: tokens/s and MFU scale with m / step time.
    out.tokens_per_s = b.tokens_per_s * b.step_time / out.step_time * m / mb;
    out.mfu = b.mfu * b.step_time / out.step_time * m / mb;
    out.exact = false;
  }
  out.candidate = c;
  return out;
}

void check_objective(const std::string& objective, double price_per_gpu_hour) {
  const support::SourceLocation cmd{"<command line>", 0, 0};
  if (objective != "step-time" && objective != "tokens-per-s" && objective != "mfu" && objective != "cost") {
    throw support::InputError(cmd, "--objective", "step-time, tokens-per-s, mfu or cost", "'" + objective + "'");
  }
  if (objective == "cost" && !(price_per_gpu_hour > 0)) {
    throw support::InputError(cmd, "--objective cost", "--price-per-gpu-hour USD as well (the price of one GPU-hour)", "no price");
  }
}

namespace {

/// The option checks of plan_layouts, before any work.
void check_plan_options(const PlanOptions& o, models::WorkloadPhase phase) {
  const support::SourceLocation cmd{"<command line>", 0, 0};
  check_objective(o.objective, o.price_per_gpu_hour);
  if (phase == models::WorkloadPhase::TrainingStep && (o.max_tpot || o.max_ttft)) {
    throw support::InputError(cmd, o.max_tpot ? "--max-tpot" : "--max-ttft", "an inference scenario (phase prefill, decode or serving)",
                              "a training step");
  }
  if (o.max_tpot && phase == models::WorkloadPhase::Prefill) throw support::InputError(cmd, "--max-tpot", "a decode or serving scenario", "phase prefill");
  if (o.max_ttft && phase == models::WorkloadPhase::Decode) throw support::InputError(cmd, "--max-ttft", "a prefill or serving scenario", "phase decode");
  if (!o.rerank.empty() && o.rerank != "flow") throw support::InputError(cmd, "--rerank", "flow", "'" + o.rerank + "'");
  for (const std::string& d : o.synthesize) {
    if (d != "tp" && d != "cp" && d != "dp") throw support::InputError(cmd, "--synthesize", "dimensions among tp, cp, dp (comma-separated)", "'" + d + "'");
    if (std::count(o.synthesize.begin(), o.synthesize.end(), d) > 1) throw support::InputError(cmd, "--synthesize", "each dimension once", "'" + d + "' twice");
  }
}

/// One search's inputs, and the two things it does with a candidate: simulate it and score it.
struct Search {
  const models::Scenario& scenario;
  const models::Cluster& cluster;
  const CostModel& costs;
  const ComputeCalibration& compute;
  const ServingCalibration& serving;
  const PlanOptions& o;
  const Enumeration& en;
  std::shared_ptr<CommCostCache> shared;  ///< lowerings shared by every candidate
  models::WorkloadPhase phase = models::WorkloadPhase::TrainingStep;

  /// Evaluates `todo` (indices into en.candidates) on the worker threads; results by position.
  std::vector<CandidateResult> run_all(const std::vector<std::size_t>& todo, bool exact, models::EngineKind engine) const {
    std::vector<CandidateResult> results(todo.size());
    support::ParallelOptions parallel;
    parallel.threads = o.jobs;
    parallel.progress = o.progress;
    support::parallel_for(todo.size(), parallel, [&](std::size_t i) {
      try {
        results[i] = evaluate_candidate(scenario, cluster, costs, compute, serving, en.candidates[todo[i]], exact, engine, shared);
      } catch (const GroupSizeMismatch& e) {
        // A synth:FILE holds for one group size: a layout with groups of another size cannot run
        // it and is left out (counted), not the whole search. Any other error of the file (missing,
        // malformed, another collective) stops the search.
        results[i] = CandidateResult{};
        results[i].candidate = en.candidates[todo[i]];
        results[i].rejected = e.what();
      }
      results[i].index = todo[i];
    });
    return results;
  }

  /// The cost per million tokens and the objective of a simulated candidate.
  void finish(CandidateResult& r) const {
    const double gpus = cluster.spec.total_gpus();
    const double tokens = r.tokens_per_s * r.step_time;
    r.cost_per_mtok = o.price_per_gpu_hour > 0 && tokens > 0 ? o.price_per_gpu_hour * gpus / 3600.0 * r.step_time / tokens * 1e6 : 0;
    r.objective = objective_value(r, o, phase);
  }
};

/// The better of two candidates: the lower objective, ties by enumeration order.
bool better(const CandidateResult& a, const CandidateResult& b) {
  return a.objective != b.objective ? a.objective < b.objective : a.index < b.index;
}

/// The candidates that fit in memory (as the full run saw it: serving's KV cache grows over the
/// decode steps) and meet the latency targets (inference phases are simulated in full: one step
/// each), finished; the others counted as pruned in `out`.
std::vector<CandidateResult> keep_feasible(std::vector<CandidateResult>& results, const Search& search, const Layout& own, PlanResult& out) {
  const PlanOptions& o = search.o;
  std::vector<CandidateResult> kept;
  for (auto& r : results) {
    if (!r.rejected.empty()) {
      ++out.pruned[kPruneAlgorithm];
      if (same_layout(r.candidate.layout, own)) out.scenario_dropped = r.rejected;
      continue;
    }
    if (!r.fits) {
      ++out.pruned[kPruneMemory];
      if (same_layout(r.candidate.layout, own)) out.scenario_dropped = "does not fit in GPU memory";
      continue;
    }
    const bool tpot_ok = !o.max_tpot || r.tpot <= *o.max_tpot;
    const bool ttft_ok = !o.max_ttft || r.ttft <= *o.max_ttft;
    if (!tpot_ok || !ttft_ok) {
      ++out.pruned[kPruneLatency];
      if (same_layout(r.candidate.layout, own)) {
        out.scenario_dropped = fmt::format("misses the latency target ({})", !tpot_ok ? fmt::format("TPOT {:.4g} s", r.tpot)
                                                                                      : fmt::format("TTFT {:.4g} s", r.ttft));
      }
      continue;
    }
    search.finish(r);
    kept.push_back(std::move(r));
  }
  return kept;
}

/// The best of the screen run in full (their figures are `ccsim run`'s), then ranked again.
void run_best_in_full(std::vector<CandidateResult>& kept, const Search& search, PlanResult& out) {
  const std::size_t full_runs = std::min(kept.size(), static_cast<std::size_t>(std::max(2 * search.o.top, 20)));
  std::vector<std::size_t> redo;
  for (std::size_t i = 0; i < full_runs; ++i)
    if (!kept[i].exact) redo.push_back(kept[i].index);
  std::vector<CandidateResult> again = search.run_all(redo, true, models::EngineKind::Analytic);
  out.exact_runs += redo.size();
  std::map<std::size_t, CandidateResult*> by_index;
  for (auto& r : again) by_index[r.index] = &r;
  for (std::size_t i = 0; i < full_runs; ++i) {
    if (kept[i].exact) continue;
    kept[i] = *by_index.at(kept[i].index);
    search.finish(kept[i]);
  }
  std::sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(full_runs), better);
}

/// --rerank flow: the top candidates re-simulated with the flow engine and ranked by it.
void rerank_with_flow(std::vector<CandidateResult>& kept, const Search& search) {
  const std::size_t k = std::min(kept.size(), static_cast<std::size_t>(search.o.top));
  // Each candidate as ranked (with the dimensions --synthesize kept on synthesized schedules).
  std::vector<CandidateResult> flow(k);
  support::ParallelOptions parallel;
  parallel.threads = search.o.jobs;
  support::parallel_for(k, parallel, [&](std::size_t i) {
    flow[i] = evaluate_candidate(search.scenario, search.cluster, search.costs, search.compute, search.serving, kept[i].candidate, true,
                                 models::EngineKind::Flow, search.shared);
  });
  for (std::size_t i = 0; i < k; ++i) {
    CandidateResult f = flow[i];
    f.index = kept[i].index;
    search.finish(f);
    kept[i].flow_step_time = f.step_time;
    kept[i].objective = f.objective;
  }
  std::sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(k), better);
}

/// The size of dimension `d` ("tp", "cp", "dp") in `s`.
int dim_size(const models::StrategySpec& s, const std::string& d) { return d == "tp" ? s.tp : d == "cp" ? s.cp : s.dp; }

/// `c` with the collectives of dimensions `dims` on synthesized schedules.
Candidate with_synthesized(Candidate c, const std::vector<std::string>& dims) {
  for (const std::string& d : dims)
    for (const char* coll : {"allreduce", "allgather", "reducescatter"}) c.strategy.algorithms[d + "." + coll] = "synthesized";
  return c;
}

/// --synthesize: each top candidate tries each asked dimension (of size > 1) on synthesized
/// schedules alone; the dimensions that improve its objective by at least 0.1 % are kept (together, when together they
/// are no slower than the best one alone), and the candidates ranked again. A dimension whose
/// groups cannot be synthesized (support::InputError) is left on the library's algorithms.
void choose_synthesized(std::vector<CandidateResult>& kept, const Search& search, PlanResult& out) {
  const std::size_t k = std::min(kept.size(), static_cast<std::size_t>(search.o.top));
  support::ParallelOptions parallel;
  parallel.threads = search.o.jobs;
  std::vector<std::size_t> runs(k, 0);
  support::parallel_for(k, parallel, [&](std::size_t i) {
    CandidateResult& base = kept[i];
    const auto try_dims = [&](const std::vector<std::string>& dims) -> std::optional<CandidateResult> {
      try {
        CandidateResult r = evaluate_candidate(search.scenario, search.cluster, search.costs, search.compute, search.serving,
                                               with_synthesized(base.candidate, dims), true, models::EngineKind::Analytic, search.shared);
        ++runs[i];
        r.index = base.index;
        search.finish(r);
        return r;
      } catch (const support::InputError&) {
        return std::nullopt;
      }
    };
    std::vector<std::string> gaining;
    std::optional<CandidateResult> best;
    for (const std::string& d : search.o.synthesize) {
      if (dim_size(base.candidate.strategy, d) < 2) continue;
      const auto r = try_dims({d});
      // Kept only where it gains at least 0.1 % of the objective: not a tie's rounding.
      if (!r || !(r->objective < base.objective - 1e-3 * std::abs(base.objective))) continue;
      gaining.push_back(d);
      if (!best || r->objective < best->objective) best = r;
    }
    if (gaining.size() > 1) {
      const auto all = try_dims(gaining);
      if (all && all->objective <= best->objective) best = all;
    }
    const double library = base.step_time;
    if (best) {
      best->synthesized.clear();
      for (const auto& [key, value] : best->candidate.strategy.algorithms) {
        const std::string d = key.substr(0, key.find('.'));
        if (value == "synthesized" && key.find('.') != std::string::npos &&
            std::find(best->synthesized.begin(), best->synthesized.end(), d) == best->synthesized.end()) {
          best->synthesized.push_back(d);
        }
      }
      best->flow_step_time = base.flow_step_time;
      base = std::move(*best);
    }
    base.library_step_time = library;
  });
  for (std::size_t n : runs) out.synthesized_runs += n;
  std::sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(k), better);
}

/// Where the scenario's own layout ranks (a full run when the screen alone placed it).
void place_own_layout(const std::vector<CandidateResult>& kept, const Search& search, const Layout& own, PlanResult& out) {
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (!same_layout(kept[i].candidate.layout, own)) continue;
    out.scenario_rank = i;
    out.scenario_layout = kept[i];
    if (!kept[i].exact) {
      out.scenario_layout = search.run_all({kept[i].index}, true, models::EngineKind::Analytic).front();
      out.scenario_layout->index = kept[i].index;
      search.finish(*out.scenario_layout);
      ++out.exact_runs;
    }
    break;
  }
}

}  // namespace

PlanResult plan_layouts(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                        const ComputeCalibration& compute, const ServingCalibration& serving, const SearchSpace& space,
                        const PlanOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const models::WorkloadPhase phase = scenario.workload->phase;
  check_plan_options(o, phase);

  Enumeration en = enumerate_layouts(scenario, cluster, space);
  PlanResult out;
  out.enumerated = en.total;
  out.pruned = en.pruned;
  const Search search{scenario, cluster, costs, compute, serving, o, en, std::make_shared<CommCostCache>(), phase};

  std::vector<std::size_t> all(en.candidates.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<CandidateResult> results = search.run_all(all, o.exact, models::EngineKind::Analytic);
  out.evaluated = results.size();
  for (const auto& r : results) out.exact_runs += r.exact ? 1 : 0;
  const Layout own = layout_of(scenario);
  std::vector<CandidateResult> kept = keep_feasible(results, search, own, out);
  std::sort(kept.begin(), kept.end(), better);
  run_best_in_full(kept, search, out);
  if (!o.synthesize.empty()) choose_synthesized(kept, search, out);
  if (o.rerank == "flow") rerank_with_flow(kept, search);
  place_own_layout(kept, search, own, out);
  out.ranked = std::move(kept);
  // A heterogeneous cluster: the best layout's micro-batches split between its replica classes.
  if (!out.ranked.empty() && phase == models::WorkloadPhase::TrainingStep) {
    const models::Scenario best = with_layout(scenario, out.ranked.front().candidate);
    out.split = best_micro_batch_split(best, cluster, costs, compute, search.shared);
    out.layer_split = best_layer_split(best, cluster, costs, compute, search.shared);
  }
  std::tie(out.shared_hits, out.shared_misses) = search.shared->hits_misses();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ccsim::planner
