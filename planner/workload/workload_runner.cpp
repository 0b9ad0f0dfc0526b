#include "planner/workload/workload_runner.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace ccsim::planner {

using models::ProgramOp;
using models::ProgramOpKind;

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
  double compute = 0, comm = 0;
  for (const auto& b : p.stages) {
    compute += b.compute;
    comm += b.exposed_total;
  }
  t.prefill_compute = compute / static_cast<double>(p.stages.size());
  t.prefill_comm = comm / static_cast<double>(p.stages.size());
  out.serving = serving_result(w, steps, t);
  out.memory = d_last.memory;  // the KV cache at its largest
  return out;
}

WorkloadResult WorkloadRunner::prepare(const StageRepresentatives& reps) const {
  const models::WorkloadSpec& w = *scenario_.workload;
  const models::StrategySpec& s = *scenario_.strategy;
  const models::Topology& topo = cluster_.topology;
  WorkloadResult out;
  out.serving_calibration = serving_;
  out.world = lowering_.placement().world();
  out.micro_batches = models::micro_batches(w, s);
  out.compute = compute_;
  for (int rep : reps.rank) out.stage_gpu.push_back(topo.gpus()[static_cast<std::size_t>(rep)]);
  // Memory first: a layout that does not fit is reported, not simulated.
  out.memory = models::memory_footprint(*scenario_.model, w, s);
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

std::vector<double> WorkloadRunner::op_durations(WorkloadResult& out, const StageRepresentatives& reps,
                                                 const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::Program& p = out.program;
  const std::size_t n = p.ops.size();
  std::vector<double> duration(n, 0.0);
  out.op_comm.assign(n, -1);
  out.op_compute.assign(n, {});
  std::size_t comm_ops = 0;
  for (const auto& op : p.ops) comm_ops += op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv;
  std::size_t done = 0;
  using ComputeKey = std::tuple<int, int, int, int, double, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<ComputeKey, ComputeEstimate> compute_memo;  // a handful of shapes per stage
  for (std::size_t i = 0; i < n; ++i) {
    const ProgramOp& op = p.ops[i];
    const int stage = p.op_rank[i];
    if (op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv) {
      if (op.bytes <= 0) continue;
      out.op_comm[i] = lowering_.cost_index(op, stage, reps.rank[static_cast<std::size_t>(stage)]);
      duration[i] = lowering_.costs()[static_cast<std::size_t>(out.op_comm[i])].time;
      if (progress) progress(++done, comm_ops);
    } else {
      // Every layer and micro-batch repeats the same few shapes: estimate each once per stage.
      const ComputeKey key{stage, static_cast<int>(op.kind), static_cast<int>(op.pass), op.comm_sms, op.flops, op.bytes, op.m, op.n, op.k, op.batch};
      auto it = compute_memo.find(key);
      if (it == compute_memo.end()) {
        const models::GpuSpec& gpu = gpu_spec(cluster_, reps.compute_gpu[static_cast<std::size_t>(stage)]);
        it = compute_memo.emplace(key, estimate_compute(op, gpu, compute_, scenario_.workload->dtype)).first;
      }
      out.op_compute[i] = it->second;
      duration[i] = out.op_compute[i].time;
    }
  }
  out.comm_costs = lowering_.costs();
  return duration;
}

WorkloadResult WorkloadRunner::run(const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::WorkloadSpec& w = *scenario_.workload;
  if (w.phase == models::WorkloadPhase::Serving) return run_serving(progress);
  const StageRepresentatives reps = stage_representatives(lowering_.placement(), *scenario_.strategy, cluster_);
  WorkloadResult out = prepare(reps);
  if (!out.feasible) return out;

  out.program = models::build_program(*scenario_.model, w, *scenario_.strategy);
  const models::Program& p = out.program;
  const std::vector<double> duration = op_durations(out, reps, progress);
  out.timing = execute_step(p, duration);
  for (const auto& t : out.timing) out.step_time = std::max(out.step_time, t.end);
  // Inference: the serving engine's host work between steps (scheduler, input preparation,
  // sampler, output processing), during which the GPU waits: counted in every stage's idle.
  if (w.phase == models::WorkloadPhase::Prefill) out.engine_overhead = serving_.prefill_step_overhead;
  if (w.phase == models::WorkloadPhase::Decode) out.engine_overhead = serving_.decode_step_overhead;
  out.step_time += out.engine_overhead;

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
  out.links = link_loads({cluster_.topology, out.op_comm, out.comm_costs, efficiency, out.step_time});
  return out;
}

}  // namespace ccsim::planner
