#include "planner/workload/workload_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "support/yaml_fields.hpp"
#include "planner/algorithms/vllm_allreduce.hpp"
#include "sim/engine.hpp"
#include "support/data_dir.hpp"

namespace ccsim::planner {

using models::ParallelDim;
using models::ProgramOp;
using models::ProgramOpKind;

// ---------------------------------------------------------------------------------------------
// Placement

Placement::Placement(const models::StrategySpec& s, int world) : s_(s), world_(world) {
  if (static_cast<std::int64_t>(s.tp) * s.cp * s.dp * s.pp != world) {
    throw std::invalid_argument(fmt::format("tp·cp·dp·pp = {} differs from the {} GPUs", s.tp * s.cp * s.dp * s.pp, world));
  }
  // The order names five dimensions; EP is folded into (cp, dp).
  std::size_t pos = 0;
  const std::string& o = s.order;
  while (pos <= o.size()) {
    const std::size_t dash = o.find('-', pos);
    const std::string part = o.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (part == "tp") order_.push_back('t');
    if (part == "cp") order_.push_back('c');
    if (part == "dp") order_.push_back('d');
    if (part == "pp") order_.push_back('p');
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  int stride = 1;
  for (char d : order_) {
    const int idx = d == 't' ? 0 : d == 'c' ? 1 : d == 'd' ? 2 : 3;
    stride_[static_cast<std::size_t>(idx)] = stride;
    stride *= d == 't' ? s.tp : d == 'c' ? s.cp : d == 'd' ? s.dp : s.pp;
  }
}

Placement::Coords Placement::coords(int rank) const {
  Coords c;
  c.tp = rank / stride_[0] % s_.tp;
  c.cp = rank / stride_[1] % s_.cp;
  c.dp = rank / stride_[2] % s_.dp;
  c.pp = rank / stride_[3] % s_.pp;
  return c;
}

int Placement::rank(const Coords& c) const {
  return c.tp * stride_[0] + c.cp * stride_[1] + c.dp * stride_[2] + c.pp * stride_[3];
}

std::vector<int> Placement::group(ParallelDim dim, int r) const {
  const Coords base = coords(r);
  std::vector<int> out;
  switch (dim) {
    case ParallelDim::TP:
      for (int i = 0; i < s_.tp; ++i) out.push_back(rank({i, base.cp, base.dp, base.pp}));
      break;
    case ParallelDim::CP:
      for (int i = 0; i < s_.cp; ++i) out.push_back(rank({base.tp, i, base.dp, base.pp}));
      break;
    case ParallelDim::PP:
      for (int i = 0; i < s_.pp; ++i) out.push_back(rank({base.tp, base.cp, base.dp, i}));
      break;
    case ParallelDim::DP:
      // Gradients are reduced over DP × CP (every replica of the parameters).
      for (int d = 0; d < s_.dp; ++d)
        for (int c = 0; c < s_.cp; ++c) out.push_back(rank({base.tp, c, d, base.pp}));
      break;
    case ParallelDim::EP: {
      const int combined = base.dp * s_.cp + base.cp;
      const int first = combined / s_.ep * s_.ep;
      for (int k = first; k < first + s_.ep; ++k) out.push_back(rank({base.tp, k % s_.cp, k / s_.cp, base.pp}));
      break;
    }
  }
  return out;
}

std::vector<int> Placement::expert_dp_group(int r) const {
  const Coords base = coords(r);
  const int combined = base.dp * s_.cp + base.cp;
  std::vector<int> out;
  for (int k = combined % s_.ep; k < s_.dp * s_.cp; k += s_.ep) out.push_back(rank({base.tp, k % s_.cp, k / s_.cp, base.pp}));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Shared communication costs

std::optional<CommCost> CommCostCache::find(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = costs_.find(key);
  if (it == costs_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return it->second;
}

void CommCostCache::insert(const std::string& key, const CommCost& cost) {
  const std::lock_guard<std::mutex> lock(mutex_);
  costs_.emplace(key, cost);
}

std::size_t CommCostCache::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return costs_.size();
}

std::pair<std::size_t, std::size_t> CommCostCache::hits_misses() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return {hits_, misses_};
}

// ---------------------------------------------------------------------------------------------
// Runner

WorkloadRunner::WorkloadRunner(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                               ComputeCalibration compute, std::string engine)
    : scenario_(scenario),
      cluster_(cluster),
      costs_(costs),
      compute_(std::move(compute)),
      engine_(std::move(engine)),
      placement_(*scenario.strategy, static_cast<int>(cluster.topology.gpus().size())),
      analytic_(sim::make_engine("analytic", cluster)),
      chosen_(engine_ == "analytic" ? nullptr : sim::make_engine(engine_, cluster)) {}

namespace {

const models::GpuSpec& gpu_spec(const models::Cluster& c, models::DeviceId gpu) {
  const int node = c.topology.device(gpu).node;
  return c.spec.groups[static_cast<std::size_t>(c.node_group[static_cast<std::size_t>(node)])].node.gpu;
}

std::optional<Algorithm> algorithm_choice(const models::StrategySpec& s, models::Collective c) {
  std::string key(models::to_string(c));
  for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto it = s.algorithms.find(key);
  if (it == s.algorithms.end() || it->second == "auto") return std::nullopt;
  return parse_algorithm(it->second);
}

}  // namespace

ComputeEstimate WorkloadRunner::compute_time(const ProgramOp& op, const models::GpuSpec& gpu) const {
  return estimate_compute(op, gpu, compute_, scenario_.workload->dtype);
}

CommCost WorkloadRunner::lower(const ProgramOp& op, int stage) {
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  const int rep = stage_rep_[static_cast<std::size_t>(stage)];
  std::vector<int> group;
  if (op.kind == ProgramOpKind::SendRecv) {
    const Placement::Coords c = placement_.coords(rep);
    group = {rep, placement_.rank({c.tp, c.cp, c.dp, op.peer})};
  } else {
    group = op.expert ? placement_.expert_dp_group(rep) : placement_.group(op.dim, rep);
  }
  // Groups that run the same op at the same time and share a node with this one.
  std::set<int> nodes;
  for (int r : group) nodes.insert(topo.device(gpus[static_cast<std::size_t>(r)]).node);
  std::vector<std::vector<int>> others;
  std::set<int> covered(group.begin(), group.end());
  // The ranks on those nodes, ascending (a rank runs on the GPU of its index).
  if (node_ranks_.empty()) {
    node_ranks_.resize(cluster_.nodes.size());
    for (int q = 0; q < placement_.world(); ++q) {
      node_ranks_[static_cast<std::size_t>(topo.device(gpus[static_cast<std::size_t>(q)]).node)].push_back(q);
    }
  }
  std::vector<int> candidates;
  for (int nd : nodes) candidates.insert(candidates.end(), node_ranks_[static_cast<std::size_t>(nd)].begin(), node_ranks_[static_cast<std::size_t>(nd)].end());
  std::sort(candidates.begin(), candidates.end());
  for (int q : candidates) {
    if (covered.count(q) != 0) continue;
    const Placement::Coords c = placement_.coords(q);
    if (c.pp != stage) continue;
    std::vector<int> g = op.kind == ProgramOpKind::SendRecv ? std::vector<int>{q, placement_.rank({c.tp, c.cp, c.dp, op.peer})}
                         : op.expert                        ? placement_.expert_dp_group(q)
                                                            : placement_.group(op.dim, q);
    bool fresh = true;
    for (int r : g) fresh = fresh && covered.count(r) == 0;
    if (!fresh) continue;
    covered.insert(g.begin(), g.end());
    others.push_back(std::move(g));
  }
  if (!shared_) return simulate(op, group, others);
  // Candidates of a layout search share what they simulate: the key is everything simulate()
  // reads that differs between scenarios on one cluster (the groups as GPUs, the op, the
  // phase and the strategy's collective choices).
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|", static_cast<int>(op.kind), static_cast<int>(op.collective),
                                static_cast<int>(op.dim), op.bytes, scenario_.workload->phase,
                                scenario_.strategy->disable_custom_all_reduce, scenario_.simulation.granularity, engine_);
  for (const auto& [c, a] : scenario_.strategy->algorithms) key += c + "=" + a + ",";
  // Inside one node every node of the same template is alike: such an op is keyed by the
  // node's template and the GPUs' local indices, so the same TP op on another stage's node
  // is found too. Ops that leave the node are keyed by their GPUs.
  bool one_node = nodes.size() == 1;
  const int node = *nodes.begin();
  const int base = node_ranks_[static_cast<std::size_t>(node)].front();
  for (const auto& g : others)
    for (int r : g) one_node = one_node && topo.device(gpus[static_cast<std::size_t>(r)]).node == node;
  if (one_node) key += fmt::format("node template {}", cluster_.node_group[static_cast<std::size_t>(node)]);
  const auto add_ranks = [&](const std::vector<int>& ranks) {
    key += '/';
    for (int r : ranks) key += std::to_string(one_node ? r - base : static_cast<int>(gpus[static_cast<std::size_t>(r)])) + ",";
  };
  add_ranks(group);
  for (const auto& g : others) add_ranks(g);
  if (auto hit = shared_->find(key)) return *hit;
  CommCost cost = simulate(op, group, others);
  shared_->insert(key, cost);
  return cost;
}

CommCost WorkloadRunner::simulate(const ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others) {
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  const auto to_gpus = [&](const std::vector<int>& ranks) {
    std::vector<models::DeviceId> out;
    for (int r : ranks) out.push_back(gpus[static_cast<std::size_t>(r)]);
    return out;
  };
  if (auto custom = lower_vllm_allreduce(op, group, others)) return *custom;
  CommCost cost;
  cost.group_size = static_cast<int>(group.size());
  cost.concurrent_groups = static_cast<int>(others.size());
  if (op.kind == ProgramOpKind::SendRecv) {
    // One-way point-to-point: rank 2i sends to rank 2i+1 in every pair (NCCL p2p, Simple).
    models::Schedule s;
    s.collective = models::Collective::SendRecv;
    s.algorithm = "p2p";
    s.bytes = static_cast<std::uint64_t>(op.bytes);
    s.element_size = 1;
    std::vector<models::DeviceId> rank_gpu;
    const auto add_pair = [&](const std::vector<int>& pair) {
      const int a = static_cast<int>(s.ranks.size());
      s.ranks.resize(static_cast<std::size_t>(a + 2));
      models::Op send;
      send.kind = models::OpKind::Send;
      send.peer = a + 1;
      send.src = {models::BufferKind::Input, 0, s.bytes};
      s.ranks[static_cast<std::size_t>(a)].add(send);
      models::Op recv;
      recv.kind = models::OpKind::Recv;
      recv.peer = a;
      recv.dst = {models::BufferKind::Output, 0, s.bytes};
      s.ranks[static_cast<std::size_t>(a + 1)].add(recv);
      for (int r : pair) rank_gpu.push_back(gpus[static_cast<std::size_t>(r)]);
    };
    add_pair(group);
    for (const auto& g : others) add_pair(g);
    s.nranks = static_cast<int>(s.ranks.size());
    sim::Plan plan;
    plan.schedule = &s;
    plan.rank_gpu = rank_gpu;
    plan.cost = costs_.params(Algorithm::Direct, Protocol::Simple, topo, gpu_spec(cluster_, plan.rank_gpu.front()).arch);
    const sim::Timeline tl = (chosen_ ? *chosen_ : *analytic_).run(plan);
    cost.time = tl.makespan;
    cost.algorithm = "p2p";
    cost.protocol = "Simple";
    cost.links = tl.links;
    return cost;
  }
  CollectiveOptions o;
  o.collective = op.collective;
  o.algorithm = algorithm_choice(*scenario_.strategy, op.collective);
  o.gpus = to_gpus(group);
  for (const auto& g : others) o.concurrent.push_back(to_gpus(g));
  o.element_size = 1;
  o.engine = engine_;
  o.granularity = scenario_.simulation.granularity;
  o.check_bound = false;
  CollectiveResult r;
  try {
    CollectiveRunner runner(cluster_, costs_, o, analytic_.get(), chosen_.get());
    // AllGather / ReduceScatter move equal parts per rank (an nccl-tests size is the per-rank
    // count × ranks). The builder pads what the frameworks pad (DP buckets, the logits); any
    // other size is rounded up to equal parts rather than refused.
    auto bytes = static_cast<std::uint64_t>(op.bytes);
    if (op.collective == models::Collective::AllGather || op.collective == models::Collective::ReduceScatter) {
      const std::uint64_t n = o.gpus.size();
      bytes = (bytes + n - 1) / n * n;
    }
    r = runner.run(bytes);
  } catch (const std::invalid_argument& e) {
    // Only an explicit algorithm choice can fail here; say which key and which group.
    std::string key(models::to_string(op.collective));
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto& s = *scenario_.strategy;
    const auto loc = s.algorithm_locations.find(key);
    if (!o.algorithm || loc == s.algorithm_locations.end()) throw;
    std::set<int> group_nodes;
    for (models::DeviceId g : o.gpus) group_nodes.insert(topo.device(g).node);
    throw support::InputError(loc->second, "strategy.algorithms." + key,
                              fmt::format("an algorithm that runs {} on the {} group ({} ranks on {} node{})",
                                          models::to_string(op.collective), models::to_string(op.dim), o.gpus.size(),
                                          group_nodes.size(), group_nodes.size() == 1 ? "" : "s"),
                             "'" + s.algorithms.at(key) + "'", e.what());
  }
  cost.time = r.time;
  cost.algorithm = std::string(to_string(r.algorithm));
  cost.protocol = std::string(to_string(r.protocol));
  cost.links = r.links;
  return cost;
}

std::optional<CommCost> WorkloadRunner::lower_vllm_allreduce(const ProgramOp& op, const std::vector<int>& group,
                                                             const std::vector<std::vector<int>>& others) {
  // vLLM's TP AllReduce (inference phases only; an explicit strategy.algorithms.allreduce
  // choice means NCCL with that algorithm). vLLM's GroupCoordinator.all_reduce goes to the
  // device communicator, which tries the custom all-reduce before PyNccl
  // (vllm/distributed/device_communicators/cuda_communicator.py, CudaCommunicator.all_reduce).
  const models::StrategySpec& s = *scenario_.strategy;
  if (scenario_.workload->phase == "training_step" || op.kind != ProgramOpKind::Collective || op.dim != ParallelDim::TP ||
      op.collective != models::Collective::AllReduce || algorithm_choice(s, op.collective)) {
    return std::nullopt;
  }
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  const auto gpu = [&](int r) { return gpus[static_cast<std::size_t>(r)]; };
  VllmGroup g;
  g.world_size = static_cast<int>(group.size());
  g.disabled = s.disable_custom_all_reduce;
  g.fully_connected = true;
  g.p2p = true;
  for (int a : group) {
    g.same_node = g.same_node && topo.device(gpu(a)).node == topo.device(gpu(group.front())).node;
    g.p2p = g.p2p && topo.device(gpu(a)).p2p;
  }
  // vLLM's is_fully_connected asks NVML whether every pair has an NVLink P2P path.
  for (std::size_t i = 0; g.same_node && i < group.size(); ++i)
    for (std::size_t j = i + 1; j < group.size(); ++j)
      g.fully_connected = g.fully_connected && topo.route(gpu(group[i]), gpu(group[j])).path.type == models::PathType::Nvl;
  g.p2p = g.p2p || g.fully_connected;
  const auto bytes = static_cast<std::uint64_t>(op.bytes);
  const VllmAllReduce kind = vllm_allreduce_choice(g, bytes);
  if (kind == VllmAllReduce::Nccl) return std::nullopt;
  const models::Schedule one = vllm_custom_allreduce(kind, g.world_size, bytes, 1);
  const models::Schedule all = models::replicate(one, 1 + static_cast<int>(others.size()));
  sim::Plan plan;
  plan.schedule = &all;
  for (int r : group) plan.rank_gpu.push_back(gpu(r));
  for (const auto& o : others)
    for (int r : o) plan.rank_gpu.push_back(gpu(r));
  // Loads and stores over NVLink / P2P: the link efficiencies of NCCL's Simple protocol
  // (bulk copies), no protocol wire overhead; latencies from serving.yaml.
  plan.cost = costs_.params(Algorithm::Direct, Protocol::Simple, topo, gpu_spec(cluster_, plan.rank_gpu.front()).arch);
  plan.cost.wire_factor = 1.0;
  plan.cost.max_rate = std::numeric_limits<double>::infinity();
  plan.cost.base_latency = serving_.custom_allreduce_launch;
  plan.cost.step_latency.fill(serving_.custom_allreduce_stage);
  const sim::Timeline tl = (chosen_ ? *chosen_ : *analytic_).run(plan);
  CommCost cost;
  cost.time = tl.makespan;
  cost.algorithm = std::string(to_string(kind));
  cost.protocol = "LD/ST";
  cost.group_size = g.world_size;
  cost.concurrent_groups = static_cast<int>(others.size());
  cost.links = tl.links;
  return cost;
}

WorkloadResult WorkloadRunner::run_serving(const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::WorkloadSpec& w = *scenario_.workload;
  const auto sub = [&](const models::WorkloadSpec& spec) {
    models::Scenario sc = scenario_;
    sc.workload = spec;
    WorkloadRunner runner(sc, cluster_, costs_, compute_, engine_);
    runner.set_serving(serving_);
    return runner.run(progress);
  };
  // Prefill: every prompt in one step (no chunked prefill), which samples the first token.
  models::WorkloadSpec prefill = w;
  prefill.phase = "prefill";
  prefill.micro_batch_size = w.batch_size;
  prefill.sequence_length = w.input_len;
  // Decode step k (1 ≤ k ≤ output_len − 1) attends over input_len + k tokens; the builder
  // costs attention at context_length + generated_tokens / 2.
  const auto decode = [&](double context) {
    models::WorkloadSpec d = w;
    d.phase = "decode";
    const double whole = std::floor(context);
    d.context_length = static_cast<std::int64_t>(whole) - (whole == context ? 1 : 0);
    d.generated_tokens = whole == context ? 2 : 1;
    return d;
  };
  const double n = static_cast<double>(w.output_len - 1);
  const double first = static_cast<double>(w.input_len) + 1.0;
  const double last = static_cast<double>(w.input_len) + n;
  const double middle = (first + last) / 2.0;
  WorkloadResult p = sub(prefill);
  if (!p.feasible) return p;
  WorkloadResult d_last = sub(decode(last));
  if (!d_last.feasible) return d_last;
  const WorkloadResult d_first = sub(decode(first));
  WorkloadResult out = sub(decode(middle));
  ServingResult sr;
  sr.ttft = p.step_time;
  sr.decode = {{first, d_first.step_time}, {middle, out.step_time}, {last, d_last.step_time}};
  sr.e2e = sr.ttft + sum_decode_steps(d_first.step_time, out.step_time, d_last.step_time, n);
  sr.tpot = (sr.e2e - sr.ttft) / n;
  const double batch = static_cast<double>(w.batch_size);
  sr.output_tokens_per_s = batch * static_cast<double>(w.output_len) / sr.e2e;
  sr.total_tokens_per_s = batch * static_cast<double>(w.input_len + w.output_len) / sr.e2e;
  double compute = 0, comm = 0;
  for (const auto& b : p.stages) {
    compute += b.compute;
    comm += b.exposed_total;
  }
  sr.prefill_compute = compute / static_cast<double>(p.stages.size());
  sr.prefill_comm = comm / static_cast<double>(p.stages.size());
  out.serving = sr;
  out.memory = d_last.memory;  // the KV cache at its largest
  return out;
}

WorkloadResult WorkloadRunner::run(const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::WorkloadSpec& w = *scenario_.workload;
  const models::StrategySpec& s = *scenario_.strategy;
  const models::TransformerConfig& m = *scenario_.model;
  const models::Topology& topo = cluster_.topology;
  if (w.phase == "serving") return run_serving(progress);
  WorkloadResult out;
  out.serving_calibration = serving_;
  out.world = placement_.world();
  out.micro_batches = models::micro_batches(w, s);
  out.compute = compute_;
  // Each stage is represented by TP/CP rank 0 of its slowest DP replica (the one holding the
  // GPU with the lowest dense peak, then HBM bandwidth): in a mixed cluster every replica waits
  // for the slowest at the DP reduction. Compute is timed on that GPU; communication on that
  // replica's groups.
  std::vector<models::DeviceId> compute_gpu;
  stage_rep_.clear();
  for (int stage = 0; stage < s.pp; ++stage) {
    stage_rep_.push_back(placement_.rank({0, 0, 0, stage}));
    compute_gpu.push_back(topo.gpus()[static_cast<std::size_t>(stage_rep_.back())]);
  }
  for (int r = 0; r < placement_.world(); ++r) {
    const Placement::Coords c = placement_.coords(r);
    const auto stage = static_cast<std::size_t>(c.pp);
    const models::DeviceId g = topo.gpus()[static_cast<std::size_t>(r)];
    const auto& a = gpu_spec(cluster_, g);
    const auto& b = gpu_spec(cluster_, compute_gpu[stage]);
    if (a.bf16_flops < b.bf16_flops || (a.bf16_flops == b.bf16_flops && a.hbm_bandwidth < b.hbm_bandwidth)) {
      compute_gpu[stage] = g;
      stage_rep_[stage] = placement_.rank({0, 0, c.dp, c.pp});
    }
  }
  for (int rep : stage_rep_) out.stage_gpu.push_back(topo.gpus()[static_cast<std::size_t>(rep)]);
  // Memory first: a layout that does not fit is reported, not simulated.
  out.memory = models::memory_footprint(m, w, s);
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
  if (!out.feasible) return out;

  out.program = models::build_program(m, w, s);
  const models::Program& p = out.program;
  const std::size_t n = p.ops.size();
  // Lower communication ops (memoized) and time compute ops.
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
      const auto key = std::make_tuple(static_cast<int>(op.dim), stage, static_cast<int>(op.collective), op.peer, op.expert, op.bytes);
      auto it = memo_.find(key);
      if (it == memo_.end()) {
        costs_list_.push_back(lower(op, stage));
        it = memo_.emplace(key, static_cast<int>(costs_list_.size() - 1)).first;
      }
      out.op_comm[i] = it->second;
      duration[i] = costs_list_[static_cast<std::size_t>(it->second)].time;
      if (progress) progress(++done, comm_ops);
    } else {
      // Every layer and micro-batch repeats the same few shapes: estimate each once per stage.
      const ComputeKey key{stage, static_cast<int>(op.kind), static_cast<int>(op.pass), op.comm_sms, op.flops, op.bytes, op.m, op.n, op.k, op.batch};
      auto it = compute_memo.find(key);
      if (it == compute_memo.end()) {
        it = compute_memo.emplace(key, compute_time(op, gpu_spec(cluster_, compute_gpu[static_cast<std::size_t>(stage)]))).first;
      }
      out.op_compute[i] = it->second;
      duration[i] = out.op_compute[i].time;
    }
  }
  out.comm_costs = costs_list_;
  // Execute the DAG: an op starts when its dependencies and its stream predecessor are done.
  std::vector<std::uint32_t> stream_pred(n, ~0U);
  for (const auto& rank : p.ranks) {
    std::array<std::uint32_t, models::kStreams> last;
    last.fill(~0U);
    for (std::uint32_t id : rank.ops) {
      auto& l = last[static_cast<std::size_t>(p.ops[id].stream)];
      stream_pred[id] = l;
      l = id;
    }
  }
  // Successors in compressed rows (first[i] .. first[i + 1] of succ), in the order the ops
  // name them: no allocation per op.
  std::vector<std::uint32_t> first(n + 1, 0);
  std::vector<std::uint32_t> pending(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t d : p.ops[i].deps) ++first[d + 1];
    if (stream_pred[i] != ~0U) ++first[stream_pred[i] + 1];
    pending[i] = static_cast<std::uint32_t>(p.ops[i].deps.size()) + (stream_pred[i] != ~0U ? 1U : 0U);
  }
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<std::uint32_t> succ(first[n]);
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t d : p.ops[i].deps) succ[fill[d]++] = i;
      if (stream_pred[i] != ~0U) succ[fill[stream_pred[i]]++] = i;
    }
  }
  out.timing.assign(n, {});
  std::vector<double> ready(n, 0.0);
  std::vector<std::uint32_t> queue;
  for (std::uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) queue.push_back(i);
  std::size_t processed = 0;
  while (!queue.empty()) {
    const std::uint32_t i = queue.back();
    queue.pop_back();
    ++processed;
    out.timing[i].start = ready[i];
    out.timing[i].end = ready[i] + duration[i];
    for (std::uint32_t e = first[i]; e < first[i + 1]; ++e) {
      const std::uint32_t j = succ[e];
      ready[j] = std::max(ready[j], out.timing[i].end);
      if (--pending[j] == 0) queue.push_back(j);
    }
  }
  if (processed != n) throw std::logic_error("the workload program deadlocks (a cycle between streams and dependencies)");
  for (const auto& t : out.timing) out.step_time = std::max(out.step_time, t.end);
  // Inference: the serving engine's host work between steps (scheduler, input preparation,
  // sampler, output processing), during which the GPU waits: counted in every stage's idle.
  if (w.phase == "prefill") out.engine_overhead = serving_.prefill_step_overhead;
  if (w.phase == "decode") out.engine_overhead = serving_.decode_step_overhead;
  out.step_time += out.engine_overhead;

  if (detail_ == Detail::StepOnly) {
    out.mfu = p.model_flops / (out.step_time * out.world * out.peak_flops);
    return out;
  }
  // Per stage: compute busy time, communication and its exposed part, idle time.
  for (const auto& rank : p.ranks) {
    StageBreakdown b;
    std::vector<std::pair<double, double>> busy;  // compute intervals
    for (std::uint32_t id : rank.ops) {
      const auto& op = p.ops[id];
      const auto& t = out.timing[id];
      b.end = std::max(b.end, t.end);
      if (op.stream == models::Stream::Compute && t.end > t.start) {
        b.compute += t.end - t.start;
        busy.emplace_back(t.start, t.end);
      }
    }
    std::sort(busy.begin(), busy.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& iv : busy) {
      if (!merged.empty() && iv.first <= merged.back().second) merged.back().second = std::max(merged.back().second, iv.second);
      else merged.push_back(iv);
    }
    // Compute time inside [a, z]: the merged intervals are disjoint and sorted, so start at
    // the first one ending after a (binary search) and stop at the first starting after z.
    const auto covered = [&](double a, double z) {
      double c = 0;
      auto it = std::upper_bound(merged.begin(), merged.end(), a,
                                 [](double v, const std::pair<double, double>& iv) { return v < iv.second; });
      for (; it != merged.end() && it->first < z; ++it) c += std::max(0.0, std::min(it->second, z) - std::max(it->first, a));
      return c;
    };
    std::vector<std::pair<double, double>> exposed_iv;
    for (std::uint32_t id : rank.ops) {
      const auto& op = p.ops[id];
      if (op.kind != ProgramOpKind::Collective && op.kind != ProgramOpKind::SendRecv) continue;
      const auto& t = out.timing[id];
      const auto d = static_cast<std::size_t>(op.dim);
      b.comm[d] += t.end - t.start;
      b.exposed[d] += (t.end - t.start) - covered(t.start, t.end);
      exposed_iv.emplace_back(t.start, t.end);
    }
    // Idle: the step's length not covered by compute or any communication.
    std::vector<std::pair<double, double>> all = merged;
    all.insert(all.end(), exposed_iv.begin(), exposed_iv.end());
    std::sort(all.begin(), all.end());
    double covered_all = 0, reach = 0;
    for (const auto& [x, y] : all) {
      const double from = std::max(x, reach);
      if (y > from) covered_all += y - from;
      reach = std::max(reach, y);
    }
    b.exposed_total = std::max(0.0, covered_all - b.compute);
    b.idle = std::max(0.0, out.step_time - covered_all);
    out.stages.push_back(b);
  }
  out.mfu = p.model_flops / (out.step_time * out.world * out.peak_flops);
  if (detail_ == Detail::NoLinks) return out;

  // Links: every communication op instance adds its simulated groups' traffic.
  std::map<models::LinkId, LinkLoad> links;
  for (std::size_t i = 0; i < n; ++i) {
    if (out.op_comm[i] < 0) continue;
    for (const auto& l : costs_list_[static_cast<std::size_t>(out.op_comm[i])].links) {
      LinkLoad& a = links[l.link];
      a.link = l.link;
      a.bytes += l.bytes;
      a.busy += l.busy;
      a.peak = std::max(a.peak, l.peak);
    }
  }
  const std::vector<double> efficiency =
      costs_.params(Algorithm::Ring, Protocol::Simple, topo, cluster_.spec.groups.front().node.gpu.arch).link_efficiency;
  for (auto& [id, l] : links) {
    const models::Link& link = topo.link(id);
    const double eff = link.kind < efficiency.size() ? efficiency[link.kind] : 1.0;
    l.utilisation = l.bytes / (link.bandwidth * eff * out.step_time);
    out.links.push_back(l);
  }
  std::stable_sort(out.links.begin(), out.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.link < b.link;
  });
  return out;
}

}  // namespace ccsim::planner
