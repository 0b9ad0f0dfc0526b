#include "planner/workload/workload_runner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace ccsim::planner {

using models::ProgramOp;
using models::ProgramOpKind;

double per_gpu_mean(const WorkloadResult& r, const std::function<double(const StageBreakdown&)>& f) {
  if (r.stages.empty()) return 0;
  double s = 0;
  if (r.classes.size() <= 1) {
    for (const auto& b : r.stages) s += f(b);
    return s / static_cast<double>(r.stages.size());
  }
  double weight = 0;
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const int cls = r.program.ranks[i].replica_class;
    const auto w = static_cast<double>(r.classes[static_cast<std::size_t>(cls)].replicas.size());
    s += w * f(r.stages[i]);
    weight += w;
  }
  return s / weight;
}

std::vector<int> replica_micro_batch_counts(const WorkloadResult& r) {
  std::size_t replicas = 0;
  bool uneven = false;
  for (const auto& rc : r.classes) {
    replicas += rc.replicas.size();
    uneven = uneven || rc.micro_batches > 0;
  }
  if (!uneven) return {};
  std::vector<int> out(replicas, 0);
  for (const auto& rc : r.classes)
    for (int d : rc.replicas) out[static_cast<std::size_t>(d)] = rc.micro_batches;
  return out;
}

WorkloadRunner::WorkloadRunner(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                               ComputeCalibration compute, models::EngineKind engine)
    : scenario_(scenario),
      cluster_(cluster),
      costs_(costs),
      compute_(std::move(compute)),
      engine_(engine),
      lowering_(scenario, cluster, costs, engine) {}

WorkloadResult WorkloadRunner::run_serving(const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::WorkloadSpec& w = *scenario_.workload;
  const auto sub = [&](const models::WorkloadSpec& spec) {
    models::Scenario sc = scenario_;
    sc.workload = spec;
    WorkloadRunner runner(sc, cluster_, costs_, compute_, engine_);
    runner.set_serving(serving_);
    return runner.run(progress);
  };
  const ServingSteps steps = serving_steps(w);
  WorkloadResult p = sub(steps.prefill);
  if (!p.feasible) return p;
  WorkloadResult d_last = sub(steps.decode_last);
  if (!d_last.feasible) return d_last;
  const WorkloadResult d_first = sub(steps.decode_first);
  WorkloadResult out = sub(steps.decode_middle);
  ServingStepTimes t;
  t.prefill = p.step_time;
  t.decode_first = d_first.step_time;
  t.decode_middle = out.step_time;
  t.decode_last = d_last.step_time;
  t.prefill_compute = per_gpu_mean(p, [](const StageBreakdown& b) { return b.compute; });
  t.prefill_comm = per_gpu_mean(p, [](const StageBreakdown& b) { return b.exposed_total; });
  out.serving = serving_result(w, steps, t);
  out.memory = d_last.memory;  // the KV cache at its largest
  return out;
}

namespace {

/// The workload one replica of class `rc` runs: its micro-batches as the global batch of dp such
/// replicas (so build_program and memory_footprint see them); `w` itself for the even split.
models::WorkloadSpec class_workload(const models::WorkloadSpec& w, const models::StrategySpec& s, const ReplicaClass& rc) {
  if (rc.micro_batches == 0) return w;
  models::WorkloadSpec out = w;
  out.global_batch_size = static_cast<std::int64_t>(rc.micro_batches) * w.micro_batch_size * s.dp;
  return out;
}

}  // namespace

WorkloadResult WorkloadRunner::prepare(std::vector<ReplicaClass> classes) const {
  const models::WorkloadSpec& w = *scenario_.workload;
  const models::StrategySpec& s = *scenario_.strategy;
  const models::Topology& topo = cluster_.topology;
  WorkloadResult out;
  out.serving_calibration = serving_;
  out.world = lowering_.placement().world();
  out.micro_batches = models::micro_batches(w, s);
  out.compute = compute_;
  for (const auto& rc : classes)
    for (int rep : rc.rank) out.stage_gpu.push_back(topo.gpus()[static_cast<std::size_t>(rep)]);
  out.classes = std::move(classes);
  // Memory first: a layout that does not fit is reported, not simulated. With uneven
  // micro-batches, each stage's largest footprint over the classes.
  out.memory = models::memory_footprint(*scenario_.model, w, s);
  for (const auto& rc : out.classes) {
    if (rc.micro_batches == 0) continue;
    const auto f = models::memory_footprint(*scenario_.model, class_workload(w, s, rc), s);
    for (std::size_t i = 0; i < f.size() && i < out.memory.size(); ++i)
      if (f[i].total() > out.memory[i].total()) out.memory[i] = f[i];
  }
  out.hbm_capacity = std::numeric_limits<double>::infinity();
  for (models::DeviceId g : topo.gpus()) out.hbm_capacity = std::min(out.hbm_capacity, gpu_spec(cluster_, g).hbm_capacity);
  for (const auto& f : out.memory) out.feasible = out.feasible && f.total() <= out.hbm_capacity;
  // MFU's denominator: the sum of every GPU's dense peak in the workload's dtype.
  double total_peak = 0;
  for (models::DeviceId g : topo.gpus()) {
    const auto& spec = gpu_spec(cluster_, g);
    total_peak += w.dtype == "fp8" && spec.fp8_flops > 0 ? spec.fp8_flops : spec.bf16_flops;
  }
  out.peak_flops = total_peak / static_cast<double>(topo.gpus().size());
  return out;
}

std::vector<double> WorkloadRunner::op_durations(WorkloadResult& out, const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::Program& p = out.program;
  const std::size_t n = p.ops.size();
  std::vector<double> duration(n, 0.0);
  out.op_comm.assign(n, -1);
  out.op_compute.assign(n, {});
  std::size_t comm_ops = 0;
  for (const auto& op : p.ops) comm_ops += op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv;
  std::size_t done = 0;
  using ComputeKey = std::tuple<int, int, int, int, double, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<ComputeKey, ComputeEstimate> compute_memo;  // a handful of shapes per Program rank
  for (std::size_t i = 0; i < n; ++i) {
    const ProgramOp& op = p.ops[i];
    const int rank = p.op_rank[i];
    const models::ProgramRank& pr = p.ranks[static_cast<std::size_t>(rank)];
    const ReplicaClass& rc = out.classes[static_cast<std::size_t>(pr.replica_class)];
    const auto stage = static_cast<std::size_t>(pr.stage);
    if (op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv) {
      if (op.bytes <= 0) continue;
      // A DP collective is one group over every class: lowered once, on class 0's representative
      // (the group of TP rank 0 of the stage is the same from every replica).
      const bool shared = models::spans_replica_classes(op) && !op.expert;
      out.op_comm[i] = lowering_.cost_index(op, pr.stage, shared ? out.classes.front().rank[stage] : rc.rank[stage]);
      duration[i] = lowering_.costs()[static_cast<std::size_t>(out.op_comm[i])].time;
      if (progress) progress(++done, comm_ops);
    } else {
      // Every layer and micro-batch repeats the same few shapes: estimate each once per rank.
      const ComputeKey key{rank, static_cast<int>(op.kind), static_cast<int>(op.pass), op.comm_sms, op.flops, op.bytes, op.m, op.n, op.k, op.batch};
      auto it = compute_memo.find(key);
      if (it == compute_memo.end()) {
        const models::GpuSpec& gpu = gpu_spec(cluster_, rc.compute_gpu[stage]);
        it = compute_memo.emplace(key, at_speed(estimate_compute(op, gpu, compute_.for_gpu(gpu), scenario_.workload->dtype), op, rc.speed[stage])).first;
      }
      out.op_compute[i] = it->second;
      duration[i] = out.op_compute[i].time;
    }
  }
  out.comm_costs = lowering_.costs();
  return duration;
}

namespace {

/// Per Program rank: the seconds its DP collectives waited for other replica classes.
std::vector<double> sync_waits(const models::Program& p, const std::vector<OpTiming>& timing) {
  std::vector<double> wait(p.ranks.size(), 0.0);
  if (p.ranks.empty() || p.ranks.back().replica_class == 0) return wait;
  const std::vector<std::uint32_t> pred = models::stream_predecessors(p);
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    if (!models::spans_replica_classes(p.ops[i])) continue;
    const int cls = p.ranks[static_cast<std::size_t>(p.op_rank[i])].replica_class;
    double ready = 0;
    for (std::uint32_t d : p.ops[i].deps)
      if (p.ranks[static_cast<std::size_t>(p.op_rank[d])].replica_class == cls) ready = std::max(ready, timing[d].end);
    if (pred[i] != ~0U) ready = std::max(ready, timing[pred[i]].end);
    wait[static_cast<std::size_t>(p.op_rank[i])] += std::max(0.0, timing[i].start - ready);
  }
  return wait;
}

}  // namespace

std::vector<std::uint32_t> critical_path_of(const models::Program& p, const std::vector<OpTiming>& timing,
                                            const std::vector<double>& sync_wait) {
  std::vector<std::uint32_t> path;
  if (p.ops.empty()) return path;
  const std::vector<std::uint32_t> pred = models::stream_predecessors(p);
  // The last op to end; among equal ends (the copies of a DP collective) the rank that waited
  // least for the others, whose own chain led there.
  const auto wait_of = [&](std::uint32_t i) { return sync_wait[static_cast<std::size_t>(p.op_rank[i])]; };
  std::uint32_t cur = 0;
  for (std::uint32_t i = 1; i < p.ops.size(); ++i)
    if (timing[i].end > timing[cur].end || (timing[i].end == timing[cur].end && wait_of(i) < wait_of(cur))) cur = i;
  for (;;) {
    path.push_back(cur);
    std::uint32_t best = ~0U;
    // The predecessor that ended last; on a tie, one of the same rank (its own chain).
    const auto consider = [&](std::uint32_t d) {
      if (d == ~0U) return;
      if (best == ~0U || timing[d].end > timing[best].end ||
          (timing[d].end == timing[best].end && p.op_rank[d] == p.op_rank[cur] && p.op_rank[best] != p.op_rank[cur])) {
        best = d;
      }
    };
    for (std::uint32_t d : p.ops[cur].deps) consider(d);
    consider(pred[cur]);
    if (best == ~0U) break;
    cur = best;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

void WorkloadRunner::adapt_to_fixed_point(WorkloadResult& out, std::vector<double>& duration, LinkEventModel& events) {
  const models::Program& p = out.program;
  const std::vector<double> alone = duration;
  double step_alone = 0;
  for (const auto& t : out.timing) step_alone = std::max(step_alone, t.end);
  std::optional<CrossDimensionContention> contention;
  if (scenario_.simulation.contention) contention.emplace(p, out.op_comm, out.comm_costs, lowering_.simulation_engine(), alone);
  // An op lowered on an event's cluster: with the stage and representative op_durations uses.
  const auto lower = [&](CommLowering& l, std::uint32_t i) {
    const ProgramOp& op = p.ops[i];
    const models::ProgramRank& pr = p.ranks[static_cast<std::size_t>(p.op_rank[i])];
    const auto stage = static_cast<std::size_t>(pr.stage);
    const bool shared = models::spans_replica_classes(op) && !op.expert;
    const ReplicaClass& rc = out.classes[static_cast<std::size_t>(shared ? 0 : pr.replica_class)];
    return l.costs()[static_cast<std::size_t>(l.cost_index(op, pr.stage, rc.rank[stage]))].time;
  };
  constexpr int kMaxPasses = 8;
  int passes = 0;
  bool converged = false;
  // Contention depends on which ops overlap, so it is iterated; timed events depend only on
  // when each op starts, so the step execution applies them as it goes (exact in one pass).
  std::vector<double> base = alone;  // per op: its duration without events (contended when on)
  const auto execute = [&](const std::vector<double>& d) {
    if (events.empty()) return execute_step(p, d);
    events.begin_pass();
    return execute_step(p, [&](std::uint32_t i, double start) {
      if (out.op_comm[i] < 0) return d[i];
      const ProgramOp& op = p.ops[i];
      const bool copy = models::spans_replica_classes(op) && !op.expert &&
                        p.ranks[static_cast<std::size_t>(p.op_rank[i])].replica_class != 0;
      return events.duration_at(i, start, d[i], alone[i], lower, !copy);
    });
  };
  // With events, contention's reference is the step with the events and every op alone.
  if (contention && !events.empty()) {
    step_alone = 0;
    for (const auto& t : execute(alone)) step_alone = std::max(step_alone, t.end);
  }
  while (passes < kMaxPasses) {
    std::vector<double> next = contention ? contention->durations(out.timing) : alone;
    double change = 0;
    for (std::size_t i = 0; i < next.size(); ++i)
      if (next[i] != base[i]) change = std::max(change, std::abs(next[i] - base[i]) / std::max(next[i], base[i]));
    if (passes > 0 && change <= 1e-9) {
      converged = true;
      break;
    }
    base = std::move(next);
    out.timing = execute(base);
    ++passes;
    if (!contention) {
      converged = true;
      break;
    }
  }
  for (std::size_t i = 0; i < duration.size(); ++i) duration[i] = out.timing[i].end - out.timing[i].start;
  double step = 0;
  for (const auto& t : out.timing) step = std::max(step, t.end);
  if (contention) {
    ContentionResult c;
    c.passes = passes;
    c.converged = converged;
    c.step_alone = step_alone;
    c.runs = contention->runs();
    c.dims = contention->dims();
    out.contention = std::move(c);
  }
  if (!events.empty()) {
    events.check_contradictions(step);
    LinkEventsResult r = events.report(step);
    r.passes = passes;
    r.converged = converged;
    out.link_events = std::move(r);
  }
}

WorkloadResult WorkloadRunner::run(const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::WorkloadSpec& w = *scenario_.workload;
  if (w.phase == models::WorkloadPhase::Serving) return run_serving(progress);
  const models::StrategySpec& s = *scenario_.strategy;
  const std::vector<int> per_replica = replica_micro_batches(lowering_.placement(), s, w, cluster_);
  WorkloadResult out = prepare(replica_classes(lowering_.placement(), s, cluster_, per_replica));
  if (!out.feasible) return out;

  if (out.classes.size() == 1 && out.classes[0].micro_batches == 0) {
    out.program = models::build_program(*scenario_.model, w, s);
  } else {
    // One Program per replica class: the same unless the classes run different micro-batches.
    std::vector<models::Program> programs;
    std::vector<int> replicas;
    std::map<int, std::size_t> built;  // micro-batches -> index in programs
    for (const auto& rc : out.classes) {
      replicas.push_back(static_cast<int>(rc.replicas.size()));
      const auto [it, fresh] = built.emplace(rc.micro_batches, programs.size());
      programs.push_back(fresh ? models::build_program(*scenario_.model, class_workload(w, s, rc), s) : programs[it->second]);
    }
    out.program = models::join_replica_classes(programs, replicas, s.dp);
  }
  const models::Program& p = out.program;
  const bool contention = scenario_.simulation.contention;
  lowering_.set_keep_plans(contention || keep_plans_);
  std::vector<double> duration = op_durations(out, progress);
  out.timing = execute_step(p, duration);
  LinkEventModel events(scenario_, cluster_, costs_, engine_);
  if (contention || !events.empty()) adapt_to_fixed_point(out, duration, events);
  out.sync_wait = sync_waits(p, out.timing);
  // The critical path by class is reported where the replicas differ (replica_report.hpp).
  if (detail_ != Detail::StepOnly && (out.classes.size() > 1 || !cluster_.perturbations.empty())) {
    out.critical_path = critical_path_of(p, out.timing, out.sync_wait);
  }
  for (const auto& t : out.timing) out.step_time = std::max(out.step_time, t.end);
  // Inference: the serving engine's host work between steps (scheduler, input preparation,
  // sampler, output processing), during which the GPU waits: counted in every stage's idle.
  if (w.phase == models::WorkloadPhase::Prefill) out.engine_overhead = serving_.prefill_step_overhead;
  if (w.phase == models::WorkloadPhase::Decode) out.engine_overhead = serving_.decode_step_overhead;
  out.step_time += out.engine_overhead;
  if (out.contention) out.contention->step_alone += out.engine_overhead;  // the same step, each op alone

  if (detail_ == Detail::StepOnly) {
    out.mfu = p.model_flops / (out.step_time * out.world * out.peak_flops);
    return out;
  }
  out.stages = stage_breakdown(p, out.timing, out.step_time);
  out.mfu = p.model_flops / (out.step_time * out.world * out.peak_flops);
  if (detail_ == Detail::NoLinks) return out;

  // Link efficiencies from the cost table (ring, Simple) for the first node group's GPU.
  const std::vector<double> efficiency =
      costs_.params(Algorithm::Ring, Protocol::Simple, cluster_.topology, cluster_.spec.groups.front().node.gpu.arch).link_efficiency;
  // A DP collective is one op over every class, lowered once (op_durations): counted once, on
  // class 0. Other ops of a class run on its own groups and count for it.
  std::vector<int> counted = out.op_comm;
  for (std::size_t i = 0; i < counted.size(); ++i) {
    const auto& op = p.ops[i];
    if (models::spans_replica_classes(op) && !op.expert && p.ranks[static_cast<std::size_t>(p.op_rank[i])].replica_class != 0) counted[i] = -1;
  }
  out.links = link_loads({cluster_.topology, counted, out.comm_costs, efficiency, out.step_time});
  return out;
}

}  // namespace ccsim::planner
