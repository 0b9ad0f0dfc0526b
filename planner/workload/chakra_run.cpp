#include "planner/workload/chakra_run.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/workload/placement.hpp"
#include "sim/engine.hpp"
#include "support/input_error.hpp"
#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

using models::ProgramOp;
using models::ProgramOpKind;

namespace {

bool is_comm(const ProgramOp& op) { return op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv; }

/// What identifies the copies of one op in a per-rank trace: name, collective, size, group size,
/// and the op's position among its group's collectives.
using AlikeKey = std::tuple<std::string, int, double, std::size_t, std::size_t>;

class ChakraLowering {
 public:
  ChakraLowering(const models::Program& p, const models::Cluster& cluster, const CostModel& costs, models::EngineKind engine)
      : p_(p), cluster_(cluster), costs_(costs), engine_(engine), analytic_(sim::make_engine(models::EngineKind::Analytic, cluster)) {
    if (engine != models::EngineKind::Analytic) chosen_ = sim::make_engine(engine, cluster);
    const auto gpus = cluster.topology.gpus();
    node_ranks_.resize(cluster.nodes.size());
    for (std::size_t q = 0; q < gpus.size(); ++q) node_ranks_[static_cast<std::size_t>(cluster.topology.device(gpus[q]).node)].push_back(static_cast<int>(q));
    // Position of every collective in its group's sequence, on the group's first rank; the
    // groups of each alike op, by rank.
    for (std::size_t r = 0; r < p.ranks.size(); ++r) {
      std::map<std::vector<int>, std::size_t> seen;
      for (std::uint32_t id : p.ranks[r].ops) {
        const ProgramOp& op = p.ops[id];
        if (op.kind != ProgramOpKind::Collective) continue;
        const std::size_t k = seen[op.group]++;
        key_[id] = AlikeKey{op.name, static_cast<int>(op.collective), op.bytes, op.group.size(), k};
        if (static_cast<int>(r) != op.group.front()) continue;
        auto& by_rank = alike_[key_[id]];
        for (int q : op.group) by_rank.emplace(q, op.group);
      }
    }
  }

  int cost_index(std::uint32_t id) {
    const ProgramOp& op = p_.ops[id];
    if (op.group.empty()) throw std::invalid_argument("run_chakra: a communication op without a group");
    std::vector<std::vector<int>> others;
    if (op.kind == ProgramOpKind::Collective) others = concurrent(id);
    const auto key = std::make_tuple(static_cast<int>(op.kind), static_cast<int>(op.collective), op.group, op.bytes, others);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    CommCost c = op.kind == ProgramOpKind::Collective ? collective(op, others) : p2p(op);
    costs_list_.push_back(std::move(c));
    const int index = static_cast<int>(costs_list_.size()) - 1;
    memo_.emplace(key, index);
    return index;
  }
  const std::vector<CommCost>& costs() const { return costs_list_; }

 private:
  std::vector<models::DeviceId> gpus_of(const std::vector<int>& ranks) const {
    const auto gpus = cluster_.topology.gpus();
    std::vector<models::DeviceId> out;
    for (int r : ranks) out.push_back(gpus[static_cast<std::size_t>(r)]);
    return out;
  }

  /// The alike ops' groups on the nodes of `id`'s group, disjoint from it and from each other,
  /// taken by ascending rank (as CommLowering::concurrent_groups does).
  std::vector<std::vector<int>> concurrent(std::uint32_t id) const {
    const ProgramOp& op = p_.ops[id];
    std::vector<std::vector<int>> out;
    const auto alike = alike_.find(key_.at(id));
    if (alike == alike_.end()) return out;
    const auto gpus = cluster_.topology.gpus();
    std::set<int> nodes, covered(op.group.begin(), op.group.end());
    for (int r : op.group) nodes.insert(cluster_.topology.device(gpus[static_cast<std::size_t>(r)]).node);
    std::vector<int> candidates;
    for (int nd : nodes) candidates.insert(candidates.end(), node_ranks_[static_cast<std::size_t>(nd)].begin(), node_ranks_[static_cast<std::size_t>(nd)].end());
    std::sort(candidates.begin(), candidates.end());
    for (int q : candidates) {
      if (covered.count(q) != 0) continue;
      const auto g = alike->second.find(q);
      if (g == alike->second.end()) continue;
      bool fresh = true;
      for (int r : g->second) fresh = fresh && covered.count(r) == 0;
      if (!fresh) continue;
      covered.insert(g->second.begin(), g->second.end());
      out.push_back(g->second);
    }
    return out;
  }

  CommCost collective(const ProgramOp& op, const std::vector<std::vector<int>>& others) {
    CommCost cost;
    cost.group_size = static_cast<int>(op.group.size());
    cost.concurrent_groups = static_cast<int>(others.size());
    if (op.group.size() == 1) {
      cost.algorithm = "none";
      return cost;
    }
    CollectiveOptions o;
    o.collective = op.collective;
    o.gpus = gpus_of(op.group);
    for (const auto& g : others) o.concurrent.push_back(gpus_of(g));
    o.element_size = 1;
    o.engine = engine_;
    o.check_bound = false;
    CollectiveRunner runner(cluster_, costs_, o, analytic_.get(), chosen_.get());
    // AllGather / ReduceScatter move equal parts per rank: a size is rounded up to them (as CommLowering does).
    auto bytes = static_cast<std::uint64_t>(op.bytes);
    if (op.collective == models::Collective::AllGather || op.collective == models::Collective::ReduceScatter) {
      const std::uint64_t n = o.gpus.size();
      bytes = (bytes + n - 1) / n * n;
    }
    const CollectiveResult r = runner.run(bytes);
    cost.time = r.time;
    cost.algorithm = std::string(to_string(r.algorithm));
    cost.protocol = std::string(to_string(r.protocol));
    cost.links = r.links;
    return cost;
  }

  /// One-way NCCL p2p from group[0] to group[1] (CommLowering::simulate_p2p's schedule, alone).
  CommCost p2p(const ProgramOp& op) {
    CommCost cost;
    cost.group_size = 2;
    AlgorithmRequest request;
    request.collective = models::Collective::SendRecv;
    request.nranks = 2;
    request.bytes = static_cast<std::uint64_t>(op.bytes);
    request.element_size = 1;
    const models::Schedule s = generate(Algorithm::P2p, request);
    sim::Plan plan;
    plan.schedule = &s;
    plan.rank_gpu = gpus_of(op.group);
    plan.cost = costs_.params(Algorithm::Direct, Protocol::Simple, cluster_.topology, gpu_spec(cluster_, plan.rank_gpu.front()).arch);
    const sim::Timeline tl = (chosen_ ? *chosen_ : *analytic_).run(plan);
    cost.time = tl.makespan;
    cost.algorithm = "p2p";
    cost.protocol = "Simple";
    cost.links = tl.links;
    return cost;
  }

  const models::Program& p_;
  const models::Cluster& cluster_;
  const CostModel& costs_;
  models::EngineKind engine_;
  std::unique_ptr<sim::Engine> analytic_;
  std::unique_ptr<sim::Engine> chosen_;
  std::vector<std::vector<int>> node_ranks_;
  std::map<std::uint32_t, AlikeKey> key_;
  std::map<AlikeKey, std::map<int, std::vector<int>>> alike_;  // alike op -> rank -> its group
  std::map<std::tuple<int, int, std::vector<int>, double, std::vector<std::vector<int>>>, int> memo_;
  std::vector<CommCost> costs_list_;
};

}  // namespace

ChakraRunResult run_chakra(const models::Program& p, const models::Cluster& cluster, const CostModel& costs, const ChakraRunOptions& o) {
  const auto gpus = cluster.topology.gpus();
  if (p.ranks.size() != gpus.size()) {
    throw support::InputError({"<command line>", 0, 0}, "--chakra", fmt::format("one trace per GPU of the scenario's cluster ({} GPUs)", gpus.size()),
                              fmt::format("{} ranks", p.ranks.size()));
  }
  ChakraRunResult out;
  const std::size_t n = p.ops.size();
  out.duration.assign(n, 0.0);
  out.op_comm.assign(n, -1);
  ChakraLowering lowering(p, cluster, costs, o.engine);
  std::map<std::tuple<int, int, double, double>, double> compute_memo;  // (rank, kind, flops, bytes) -> seconds
  for (std::uint32_t i = 0; i < n; ++i) {
    const ProgramOp& op = p.ops[i];
    const int rank = p.op_rank[i];
    if (is_comm(op)) {
      // A receive takes no time: it ends with its send (a dependency).
      if (op.bytes <= 0 || (op.kind == ProgramOpKind::SendRecv && op.group.size() == 2 && op.group[1] == rank)) continue;
      out.op_comm[i] = lowering.cost_index(i);
      out.duration[i] = lowering.costs()[static_cast<std::size_t>(out.op_comm[i])].time;
    } else if (op.fixed_time >= 0) {
      out.duration[i] = op.fixed_time;
    } else {
      const auto key = std::make_tuple(rank, static_cast<int>(op.kind), op.flops, op.bytes);
      auto it = compute_memo.find(key);
      if (it == compute_memo.end()) {
        const models::GpuSpec& gpu = gpu_spec(cluster, gpus[static_cast<std::size_t>(rank)]);
        const ComputeEstimate e = at_speed(estimate_compute(op, gpu, o.compute.for_gpu(gpu), o.dtype), op, cluster.speed_of(rank));
        it = compute_memo.emplace(key, e.time).first;
      }
      out.duration[i] = it->second;
    }
  }
  out.comm_costs = lowering.costs();
  out.timing = execute_step(p, out.duration);
  for (const auto& t : out.timing) out.step_time = std::max(out.step_time, t.end);
  out.ranks = stage_breakdown(p, out.timing, out.step_time);
  return out;
}

models::Program world_program(const WorkloadResult& r, const models::Scenario& scenario) {
  const models::Program& src = r.program;
  if (src.ranks.empty() || r.timing.size() != src.ops.size()) throw std::invalid_argument("world_program: a result without a Program");
  const models::StrategySpec& s = *scenario.strategy;
  const Placement placement(s, r.world);
  models::Program out;
  out.ranks.resize(static_cast<std::size_t>(r.world));
  out.model_flops = src.model_flops;
  out.tokens = src.tokens;
  // Program rank of each DP replica's class.
  std::map<int, int> class_of;
  for (std::size_t c = 0; c < r.classes.size(); ++c)
    for (int d : r.classes[c].replicas) class_of[d] = static_cast<int>(c);
  const int pp = s.pp;
  for (int g = 0; g < r.world; ++g) {
    const Placement::Coords c = placement.coords(g);
    out.ranks[static_cast<std::size_t>(g)].stage = g;
    const int cls = class_of.count(c.dp) != 0 ? class_of.at(c.dp) : 0;
    const int prog_rank = cls * pp + c.pp;
    std::map<std::uint32_t, std::uint32_t> mapped;  // source op (this Program rank's, or a send it receives) -> world op
    for (std::uint32_t id : src.ranks[static_cast<std::size_t>(prog_rank)].ops) {
      ProgramOp op = src.ops[id];
      std::vector<std::uint32_t> deps;
      for (std::uint32_t d : op.deps) {
        if (const auto it = mapped.find(d); it != mapped.end()) {
          deps.push_back(it->second);
          continue;
        }
        const ProgramOp& dep = src.ops[d];
        if (dep.kind != ProgramOpKind::SendRecv || src.op_rank[d] == prog_rank) continue;  // another class's: the collective synchronises
        // A send of another stage that this rank receives: its receive, before this op.
        const int sender = placement.rank({c.tp, c.cp, c.dp, src.ranks[static_cast<std::size_t>(src.op_rank[d])].stage});
        ProgramOp recv;
        recv.kind = ProgramOpKind::SendRecv;
        recv.collective = models::Collective::SendRecv;
        recv.stream = op.stream;  // right before the op that needs it, on its stream: it adds no wait
        recv.dim = models::ParallelDim::PP;
        recv.pass = dep.pass;
        recv.name = dep.name;
        if (const auto at = recv.name.find("send"); at != std::string::npos) recv.name.replace(at, 4, "recv");
        recv.bytes = dep.bytes;
        recv.peer = sender;
        recv.group = {sender, g};
        recv.micro_batch = dep.micro_batch;
        const std::uint32_t rid = out.add(g, std::move(recv));
        mapped.emplace(d, rid);
        deps.push_back(rid);
      }
      op.deps = std::move(deps);
      if (op.kind == ProgramOpKind::Collective) {
        op.group = op.expert ? placement.expert_dp_group(g) : placement.group(op.dim, g);
      } else if (op.kind == ProgramOpKind::SendRecv) {
        op.peer = placement.rank({c.tp, c.cp, c.dp, op.peer});
        op.group = {g, op.peer};
      } else {
        op.fixed_time = r.timing[id].end - r.timing[id].start;
      }
      mapped.emplace(id, out.add(g, std::move(op)));
    }
  }
  return out;
}

std::string chakra_summary(const std::string& source, const models::Program& p, const ChakraRunResult& r) {
  std::size_t compute = 0, coll = 0, p2p = 0;
  for (const auto& op : p.ops) {
    if (op.kind == ProgramOpKind::Collective) ++coll;
    else if (op.kind == ProgramOpKind::SendRecv) ++p2p;
    else ++compute;
  }
  std::string s = fmt::format("chakra trace {}: {} ranks, {} nodes ({} compute or memory, {} collective, {} send or receive)\n", source, p.ranks.size(),
                              p.ops.size(), compute, coll, p2p);
  s += fmt::format("step time: {}\n\n", support::format_time(r.step_time));
  support::TextTable ranks({"rank", "compute", "comm", "exposed comm", "idle", "end"}, {true, true, true, true, true, true});
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const StageBreakdown& b = r.ranks[i];
    double comm = 0;
    for (double c : b.comm) comm += c;
    ranks.add_row({std::to_string(i), support::format_time(b.compute), support::format_time(comm), support::format_time(b.exposed_total),
                   support::format_time(b.idle), support::format_time(b.end)});
  }
  s += "per rank\n" + ranks.render() + "\n";
  if (!r.comm_costs.empty()) {
    // Each distinct lowered op once, with how many trace nodes it times.
    std::vector<int> uses(r.comm_costs.size(), 0);
    std::vector<std::uint32_t> first(r.comm_costs.size(), ~0U);
    for (std::uint32_t i = 0; i < r.op_comm.size(); ++i) {
      if (r.op_comm[i] < 0) continue;
      const auto k = static_cast<std::size_t>(r.op_comm[i]);
      ++uses[k];
      if (first[k] == ~0U) first[k] = i;
    }
    support::TextTable ops({"op", "size (B)", "ranks", "beside", "algorithm", "protocol", "time", "nodes"}, {false, true, true, true, false, false, true, true});
    for (std::size_t k = 0; k < r.comm_costs.size(); ++k) {
      const CommCost& c = r.comm_costs[k];
      const ProgramOp& op = p.ops[first[k]];
      ops.add_row({std::string(models::to_string(op.collective)), fmt::format("{:.0f}", op.bytes), std::to_string(c.group_size),
                   std::to_string(c.concurrent_groups), c.algorithm, c.protocol, support::format_time(c.time), std::to_string(uses[k])});
    }
    s += "communication ops (NCCL's choice; 'beside': groups simulated alongside)\n" + ops.render();
  }
  return s;
}

}  // namespace ccsim::planner
