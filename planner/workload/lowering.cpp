#include "planner/workload/lowering.hpp"

#include <algorithm>
#include <filesystem>
#include <cctype>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/vllm_allreduce.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/collective/synthesis_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "sim/engine.hpp"
#include "support/input_error.hpp"

namespace ccsim::planner {

using models::ParallelDim;
using models::ProgramOp;
using models::ProgramOpKind;

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
// Lowering

namespace {

/// The strategy.algorithms key for collective `c` on dimension `d` that is set, the dimension's
/// own ("dp.allreduce") before the general one ("allreduce"); empty when neither is.
std::string algorithm_key(const models::StrategySpec& s, models::Collective c, ParallelDim d) {
  std::string key(models::to_string(c));
  for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::string dim(models::to_string(d));
  for (char& ch : dim) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (s.algorithms.count(dim + "." + key) != 0) return dim + "." + key;
  if (s.algorithms.count(key) != 0) return key;
  return {};
}

/// The strategy's value for collective `c` on dimension `d` ("auto" when not set).
std::string algorithm_value(const models::StrategySpec& s, models::Collective c, ParallelDim d) {
  const std::string key = algorithm_key(s, c, d);
  return key.empty() ? std::string("auto") : s.algorithms.at(key);
}

bool is_synthesized(const std::string& value) {
  return value == "synthesized" || value == "synthesized-or-nccl" || value.rfind("synth:", 0) == 0;
}

/// The strategy's explicit library algorithm for collective `c` on dimension `d`, or nullopt
/// for auto (and for a synthesized schedule, which CommLowering::simulate_synthesized runs).
std::optional<Algorithm> algorithm_choice(const models::StrategySpec& s, models::Collective c, ParallelDim d) {
  const std::string value = algorithm_value(s, c, d);
  if (value == "auto" || is_synthesized(value)) return std::nullopt;
  return parse_algorithm(value);
}

/// `plan` as a part of a later merged run: a copy of its schedule (one part, one copy).
std::shared_ptr<const sim::PlanPart> kept_plan(const sim::Plan& plan) {
  auto part = std::make_shared<sim::PlanPart>();
  part->schedule = std::make_shared<models::Schedule>(*plan.schedule);
  part->rank_gpu = plan.rank_gpu;
  part->cost = plan.cost;
  return part;
}

}  // namespace

CommLowering::CommLowering(const models::Scenario& scenario, const models::Cluster& cluster, const CostModel& costs,
                           models::EngineKind engine)
    : scenario_(scenario),
      cluster_(cluster),
      costs_(costs),
      engine_(engine),
      placement_(*scenario.strategy, static_cast<int>(cluster.topology.gpus().size())),
      analytic_(sim::make_engine(models::EngineKind::Analytic, cluster)),
      chosen_(engine_ == models::EngineKind::Analytic ? nullptr : sim::make_engine(engine_, cluster)) {}

CommLowering::~CommLowering() = default;

std::vector<models::DeviceId> CommLowering::gpus_of(const std::vector<int>& ranks) const {
  const auto gpus = cluster_.topology.gpus();
  std::vector<models::DeviceId> out;
  for (int r : ranks) out.push_back(gpus[static_cast<std::size_t>(r)]);
  return out;
}

int CommLowering::cost_index(const ProgramOp& op, int stage, int rep) {
  const auto key = std::make_tuple(static_cast<int>(op.dim), stage, rep, static_cast<int>(op.collective), op.peer, op.expert, op.bytes);
  auto it = memo_.find(key);
  if (it == memo_.end()) {
    costs_list_.push_back(lower(op, stage, rep));
    it = memo_.emplace(key, static_cast<int>(costs_list_.size() - 1)).first;
  }
  return it->second;
}

std::vector<int> CommLowering::group_of(const ProgramOp& op, int rank) const {
  if (op.kind == ProgramOpKind::SendRecv) {
    const Placement::Coords c = placement_.coords(rank);
    return {rank, placement_.rank({c.tp, c.cp, c.dp, op.peer})};
  }
  return op.expert ? placement_.expert_dp_group(rank) : placement_.group(op.dim, rank);
}

CommLowering::Groups CommLowering::concurrent_groups(const ProgramOp& op, int stage, int rep) {
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  Groups out;
  out.group = group_of(op, rep);
  // Groups that run the same op at the same time and share a node with this one.
  for (int r : out.group) out.nodes.insert(topo.device(gpus[static_cast<std::size_t>(r)]).node);
  std::set<int> covered(out.group.begin(), out.group.end());
  // The ranks on those nodes, ascending (a rank runs on the GPU of its index).
  if (node_ranks_.empty()) {
    node_ranks_.resize(cluster_.nodes.size());
    for (int q = 0; q < placement_.world(); ++q) {
      node_ranks_[static_cast<std::size_t>(topo.device(gpus[static_cast<std::size_t>(q)]).node)].push_back(q);
    }
  }
  std::vector<int> candidates;
  for (int nd : out.nodes) {
    const auto& on_node = node_ranks_[static_cast<std::size_t>(nd)];
    candidates.insert(candidates.end(), on_node.begin(), on_node.end());
  }
  std::sort(candidates.begin(), candidates.end());
  for (int q : candidates) {
    if (covered.count(q) != 0) continue;
    if (placement_.coords(q).pp != stage) continue;
    std::vector<int> g = group_of(op, q);
    bool fresh = true;
    for (int r : g) fresh = fresh && covered.count(r) == 0;
    if (!fresh) continue;
    covered.insert(g.begin(), g.end());
    out.others.push_back(std::move(g));
  }
  return out;
}

std::string CommLowering::shared_key(const ProgramOp& op, const Groups& g) const {
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  // The key is everything simulate() reads that differs between scenarios on one cluster (the
  // groups as GPUs, the op, the phase and the strategy's collective choices).
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|", static_cast<int>(op.kind), static_cast<int>(op.collective),
                                static_cast<int>(op.dim), op.bytes, models::to_string(scenario_.workload->phase),
                                scenario_.strategy->disable_custom_all_reduce,
                                scenario_.simulation.granularity ? models::to_string(*scenario_.simulation.granularity) : "auto",
                                models::to_string(engine_));
  for (const auto& [c, a] : scenario_.strategy->algorithms) key += c + "=" + a + ",";
  if (keep_plans_) key += "plan|";
  // Inside one node, nodes of one class are alike (Topology::node_class): such an op is keyed
  // by the node's class and the GPUs' local indices, so the same TP op on another stage's node
  // is found too, and a perturbed node (a class of its own) is not. Ops that leave the node
  // are keyed by their GPUs.
  // Such ops are keyed by the GPUs' local indices in the node, not by rank offsets: a job's view
  // of a shared cluster (models::job_view) may hold a node's GPUs in any order, or only some.
  bool one_node = g.nodes.size() == 1;
  const int node = *g.nodes.begin();
  for (const auto& other : g.others)
    for (int r : other) one_node = one_node && topo.device(gpus[static_cast<std::size_t>(r)]).node == node;
  if (one_node) key += fmt::format("node class {}", topo.node_class(node));
  const auto add_ranks = [&](const std::vector<int>& ranks) {
    key += '/';
    for (int r : ranks) {
      const models::DeviceId d = gpus[static_cast<std::size_t>(r)];
      key += std::to_string(one_node ? topo.device(d).local : static_cast<int>(d)) + ",";
    }
  };
  add_ranks(g.group);
  for (const auto& other : g.others) add_ranks(other);
  return key;
}

CommCost CommLowering::lower(const ProgramOp& op, int stage, int rep) {
  const Groups g = concurrent_groups(op, stage, rep);
  if (!shared_) return simulate(op, g.group, g.others);
  // Candidates of a layout search share what they simulate.
  const std::string key = shared_key(op, g);
  if (auto hit = shared_->find(key)) return *hit;
  CommCost cost = simulate(op, g.group, g.others);
  shared_->insert(key, cost);
  return cost;
}

CommCost CommLowering::simulate_p2p(const ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others) {
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  CommCost cost;
  cost.group_size = static_cast<int>(group.size());
  cost.concurrent_groups = static_cast<int>(others.size());
  // The registry's p2p entry: the pairs (this group's, then the concurrent groups') as ranks
  // 2i -> 2i+1 of one Schedule, all sending at once.
  AlgorithmRequest request;
  request.collective = models::Collective::SendRecv;
  request.nranks = 2 * (1 + static_cast<int>(others.size()));
  request.bytes = static_cast<std::uint64_t>(op.bytes);
  request.element_size = 1;
  const models::Schedule s = generate(Algorithm::P2p, request);
  std::vector<models::DeviceId> rank_gpu;
  for (int r : group) rank_gpu.push_back(gpus[static_cast<std::size_t>(r)]);
  for (const auto& g : others)
    for (int r : g) rank_gpu.push_back(gpus[static_cast<std::size_t>(r)]);
  sim::Plan plan;
  plan.schedule = &s;
  plan.rank_gpu = rank_gpu;
  plan.cost = costs_.params(Algorithm::Direct, Protocol::Simple, topo, gpu_spec(cluster_, plan.rank_gpu.front()).arch);
  const sim::Timeline tl = engine().run(plan);
  if (keep_plans_) cost.plan = kept_plan(plan);
  cost.time = tl.makespan;
  cost.algorithm = "p2p";
  cost.protocol = "Simple";
  cost.links = tl.links;
  return cost;
}

CommCost CommLowering::simulate(const ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others) {
  if (auto custom = lower_vllm_allreduce(op, group, others)) return *custom;
  if (op.kind == ProgramOpKind::SendRecv) return simulate_p2p(op, group, others);
  if (const std::string key = algorithm_key(*scenario_.strategy, op.collective, op.dim);
      !key.empty() && is_synthesized(scenario_.strategy->algorithms.at(key))) {
    const std::string& value = scenario_.strategy->algorithms.at(key);
    if (value != "synthesized-or-nccl") return simulate_synthesized(op, key, value, group, others);
    // The faster of NCCL's choice and the groups' synthesized schedules (as MSCCL falls back to
    // NCCL outside a schedule's sizes): NCCL alone above the synthesis limit.
    // NCCL's side is what `auto` runs: in inference phases vLLM's custom all-reduce first.
    std::optional<CommCost> custom = lower_vllm_allreduce(op, group, others, true);
    CommCost library = custom ? *custom : simulate_library(op, group, others);
    if (static_cast<int>(group.size()) > kSynthesizedMaxRanks) return library;
    CommCost synthesized = simulate_synthesized(op, key, "synthesized", group, others);
    return synthesized.time < library.time ? synthesized : library;
  }
  return simulate_library(op, group, others);
}

CommCost CommLowering::simulate_library(const ProgramOp& op, const std::vector<int>& group, const std::vector<std::vector<int>>& others) {
  const models::Topology& topo = cluster_.topology;
  CommCost cost;
  cost.group_size = static_cast<int>(group.size());
  cost.concurrent_groups = static_cast<int>(others.size());
  CollectiveOptions o;
  o.collective = op.collective;
  o.algorithm = algorithm_choice(*scenario_.strategy, op.collective, op.dim);
  o.gpus = gpus_of(group);
  for (const auto& g : others) o.concurrent.push_back(gpus_of(g));
  o.element_size = 1;
  o.engine = engine_;
  o.granularity = scenario_.simulation.granularity;
  o.check_bound = false;
  o.keep_plan = keep_plans_;
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
    const auto& s = *scenario_.strategy;
    const std::string key = algorithm_key(s, op.collective, op.dim);
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
  cost.plan = std::move(r.plan);
  return cost;
}

std::optional<CommCost> CommLowering::lower_vllm_allreduce(const ProgramOp& op, const std::vector<int>& group,
                                                           const std::vector<std::vector<int>>& others, bool as_auto) {
  // vLLM's TP AllReduce (inference phases only; an explicit strategy.algorithms.allreduce
  // choice means NCCL with that algorithm). vLLM's GroupCoordinator.all_reduce goes to the
  // device communicator, which tries the custom all-reduce before PyNccl
  // (vllm/distributed/device_communicators/cuda_communicator.py, CudaCommunicator.all_reduce).
  const models::StrategySpec& s = *scenario_.strategy;
  if (scenario_.workload->phase == models::WorkloadPhase::TrainingStep || op.kind != ProgramOpKind::Collective ||
      op.dim != ParallelDim::TP || op.collective != models::Collective::AllReduce || (!as_auto && algorithm_value(s, op.collective, op.dim) != "auto")) {
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
  AlgorithmRequest request;
  request.collective = models::Collective::AllReduce;
  request.nranks = g.world_size;
  request.bytes = bytes;
  request.element_size = 1;
  const models::Schedule one = generate(*vllm_algorithm(kind), request);
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
  const sim::Timeline tl = engine().run(plan);
  CommCost cost;
  if (keep_plans_) cost.plan = kept_plan(plan);
  cost.time = tl.makespan;
  cost.algorithm = std::string(to_string(kind));
  cost.protocol = "LD/ST";
  cost.group_size = g.world_size;
  cost.concurrent_groups = static_cast<int>(others.size());
  cost.links = tl.links;
  return cost;
}

synthesis::SynthesisRunner& CommLowering::synthesis_runner(models::Collective collective, const std::vector<models::DeviceId>& gpus) {
  auto& slot = synthesis_runners_[{static_cast<int>(collective), gpus}];
  if (!slot) {
    synthesis::SynthesisOptions o;
    o.collective = collective;
    o.gpus = gpus;
    o.element_size = 1;
    o.method = synthesis::Method::Auto;
    // The methods are compared on the analytic engine (each alone); the chosen schedules then
    // run together on the scenario's engine.
    o.engine = models::EngineKind::Analytic;
    slot = std::make_unique<synthesis::SynthesisRunner>(cluster_, costs_, std::move(o));
  }
  return *slot;
}

CommCost CommLowering::simulate_synthesized(const ProgramOp& op, const std::string& key, const std::string& value,
                                            const std::vector<int>& group, const std::vector<std::vector<int>>& others) {
  const models::Topology& topo = cluster_.topology;
  const auto gpus = topo.gpus();
  const models::StrategySpec& s = *scenario_.strategy;
  const auto loc = s.algorithm_locations.find(key);
  const support::SourceLocation where = loc == s.algorithm_locations.end() ? support::SourceLocation{"<scenario>", 0, 0} : loc->second;
  const std::uint64_t n = group.size();
  std::set<int> group_nodes;
  for (int r : group) group_nodes.insert(topo.device(gpus[static_cast<std::size_t>(r)]).node);
  const std::string which = fmt::format("{} on the {} group ({} ranks on {} node{})", models::to_string(op.collective), models::to_string(op.dim), n,
                                        group_nodes.size(), group_nodes.size() == 1 ? "" : "s");
  CommCost cost;
  cost.group_size = static_cast<int>(n);
  cost.concurrent_groups = static_cast<int>(others.size());
  cost.protocol = "Simple";
  std::vector<std::shared_ptr<sim::PlanPart>> parts;
  try {
    if (value == "synthesized") {
      if (static_cast<int>(n) > kSynthesizedMaxRanks) {
        throw support::InputError(where, "strategy.algorithms." + key,
                                  fmt::format("synthesized groups of at most {} ranks (tree synthesis grows as N^3, seconds per group "
                                              "past 64 ranks) for {}",
                                              kSynthesizedMaxRanks, which),
                                  fmt::format("{} ranks", n), "use a file: ccsim synthesize --out, then synth:FILE");
      }
      // Every group synthesizes its own schedule on its own GPUs: groups on differently wired
      // (or perturbed) nodes get different trees. Sizes are whole bytes per rank.
      const std::uint64_t bytes = (static_cast<std::uint64_t>(op.bytes) + n - 1) / n * n;
      std::vector<std::vector<models::DeviceId>> all{gpus_of(group)};
      for (const auto& g : others) all.push_back(gpus_of(g));
      for (const auto& g : all) {
        synthesis::SynthesisRunner& runner = synthesis_runner(op.collective, g);
        synthesis::SynthesisChoice choice = runner.best(bytes);
        auto part = std::make_shared<sim::PlanPart>();
        part->schedule = std::make_shared<models::Schedule>(std::move(choice.schedule));
        part->rank_gpu = g;
        part->cost = runner.cost_params(*part->schedule);
        if (parts.empty()) cost.algorithm = fmt::format("synthesized ({})", synthesis::to_string(choice.method));
        parts.push_back(std::move(part));
      }
    } else {
      // An MSCCL XML file: one schedule, every group runs it (as MSCCL runs one file on every
      // communicator of its rank count).
      const std::string path = value.substr(6);
      auto file = synth_files_.find(path);
      if (file == synth_files_.end()) {
        auto read = std::make_shared<const synthesis::MscclFile>(synthesis::read_msccl_file(path, where, "strategy.algorithms." + key));
        file = synth_files_.emplace(path, std::move(read)).first;
      }
      const synthesis::MscclFile& h = *file->second;
      const std::string expected = fmt::format("an MSCCL file of {} on {} ranks ({})", models::to_string(op.collective), n, which);
      const std::string found = fmt::format("{}: {} on {} ranks", path, models::to_string(h.collective), h.ranks);
      if (h.collective != op.collective) throw support::InputError(where, "strategy.algorithms." + key, expected, found);
      if (h.ranks != static_cast<int>(n)) throw GroupSizeMismatch(where, "strategy.algorithms." + key, expected, found);
      // Whole loops of the file's chunks (the size padded up, as MSCCL pads to its chunking).
      const auto loop = static_cast<std::uint64_t>(h.chunks_per_loop);
      const std::uint64_t bytes = std::max<std::uint64_t>(1, (static_cast<std::uint64_t>(op.bytes) + loop - 1) / loop) * loop;
      auto part = std::make_shared<sim::PlanPart>();
      part->schedule = std::make_shared<models::Schedule>(h.schedule(bytes));
      part->copies = static_cast<int>(1 + others.size());
      part->rank_gpu = gpus_of(group);
      for (const auto& g : others) {
        const auto more = gpus_of(g);
        part->rank_gpu.insert(part->rank_gpu.end(), more.begin(), more.end());
      }
      CollectiveOptions o;
      o.collective = op.collective;
      o.gpus = gpus_of(group);
      o.element_size = 1;
      const CollectiveRunner runner(cluster_, costs_, o, analytic_.get(), nullptr);
      part->cost = runner.cost_params(Algorithm::Synthesized, Protocol::Simple, *part->schedule);
      cost.algorithm = "synthesized (" + std::filesystem::path(path).filename().string() + ")";
      parts.push_back(std::move(part));
    }
  } catch (const support::InputError& e) {
    // The synthesis speaks of command-line options; a file's own errors name its line and column.
    if (e.where().file != "<command line>") throw;
    throw support::InputError(where, "strategy.algorithms." + key, "a synthesized schedule for " + which, "'" + value + "'", e.what());
  } catch (const std::invalid_argument& e) {
    throw support::InputError(where, "strategy.algorithms." + key, "a synthesized schedule for " + which, "'" + value + "'", e.what());
  }
  sim::Timeline tl;
  if (parts.size() == 1) {
    models::Schedule replicated;
    const sim::PlanPart& p = *parts.front();
    if (p.copies > 1) replicated = models::replicate(*p.schedule, p.copies);
    sim::Plan plan;
    plan.schedule = p.copies > 1 ? &replicated : p.schedule.get();
    plan.rank_gpu = p.rank_gpu;
    plan.cost = p.cost;
    tl = engine().run(plan);
    if (keep_plans_) cost.plan = parts.front();
  } else {
    std::vector<const sim::PlanPart*> ptrs;
    for (const auto& p : parts) ptrs.push_back(p.get());
    const std::vector<double> ready(parts.size(), 0.0);
    const std::unique_ptr<sim::MergedPlan> merged = sim::merge_plans(ptrs, ready);
    tl = engine().run(merged->plan);
    if (keep_plans_) {
      // One part for cross-dimension contention: the groups' schedules side by side (their
      // cost rows are alike: the Synthesized entry on Simple).
      auto part = std::make_shared<sim::PlanPart>();
      part->schedule = std::make_shared<models::Schedule>(merged->schedule);
      part->rank_gpu = merged->plan.rank_gpu;
      part->cost = parts.front()->cost;
      cost.plan = std::move(part);
    }
  }
  cost.time = tl.makespan;
  cost.links = tl.links;
  return cost;
}

}  // namespace ccsim::planner
