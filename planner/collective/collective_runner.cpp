#include "planner/collective/collective_runner.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "planner/algorithms/registry.hpp"
#include "planner/algorithms/vllm_allreduce.hpp"
#include "planner/tuning/protocol_rules.hpp"
#include "sim/analytic/analytic_engine.hpp"

namespace ccsim::planner {

using models::Granularity;

CollectiveRunner::CollectiveRunner(const models::Cluster& cluster, const CostModel& costs, CollectiveOptions options,
                                   sim::Engine* analytic, sim::Engine* engine)
    : cluster_(cluster),
      costs_(costs),
      options_(std::move(options)),
      choice_({.collective = options_.collective,
               .prune = options_.prune,
               .guess_nvls = options_.concurrent.empty() && options_.collective == models::Collective::AllReduce}) {
  if (options_.gpus.empty()) throw std::invalid_argument("a collective needs at least one rank");
  if (analytic == nullptr) {
    own_analytic_ = sim::make_engine(models::EngineKind::Analytic, cluster);
    analytic = own_analytic_.get();
  }
  analytic_ = analytic;
  if (options_.engine != models::EngineKind::Analytic) {
    if (engine == nullptr) {
      own_engine_ = sim::make_engine(options_.engine, cluster);
      engine = own_engine_.get();
    }
    engine_ = engine;
  }
  plan_ = plan_channels(cluster, options_.gpus, options_.channels, &costs_);
  group_ = nccl_group(cluster, options_.gpus, options_.collective, plan_.ranks_per_node);
  if (options_.algorithm) {
    if (const std::string why = placement_refusal(*options_.algorithm, group_); !why.empty()) throw std::invalid_argument(why);
  }
  protocol_context_ = protocol_context(cluster, options_.gpus, &bound_router());
  arch_ = nccl_architecture(cluster, options_.gpus, protocol_context_);
  if (options_.collective == models::Collective::SendRecv || options_.collective == models::Collective::AlltoAll) {
    // AlltoAll is grouped sends and receives on the same p2p channels (NCCL's enqueue.cc
    // schedules each peer's bytes over its p2pnChannelsPerPeer channels as for SendRecv).
    // NCCL's comm->nChannels is twice the searched channels (connect.cc, ncclTopoPostset
    // duplicates them); ccsim's ring channels are the searched ones.
    p2p_ = nccl_p2p_channels(p2p_channel_inputs(cluster, bound_router(), options_.gpus, 2 * plan_.channels, options_.nccl));
    if (options_.channels > 0) p2p_.per_peer = options_.channels;
  }
  if (options_.check_bound) bound_ = lower_bound(cluster, bound_router(), options_.collective, options_.gpus, options_.root);
}

std::vector<CollectiveCandidate> CollectiveRunner::candidates() const {
  std::vector<CollectiveCandidate> out;
  std::vector<Algorithm> algos = options_.algorithm ? std::vector<Algorithm>{*options_.algorithm} : nccl_algorithms(group_);
  if (!options_.algorithm && options_.algorithms) {
    // Names in NCCL_ALGO enable what NCCL's tuner would not prefer on its own (Tree in a node).
    algos = options_.algorithms->apply(nccl_algorithms(group_, !options_.algorithms->exclude), options_.collective);
  }
  for (Algorithm a : algos) {
    // Drop algorithms that cannot run this collective at all (any size).
    if (!unsupported(a).empty()) continue;
    for (Protocol p : nccl_protocols(a, options_.protocol, costs_, protocol_context_)) {
      if (!options_.protocol && options_.protocols && !options_.protocols->contains(p)) continue;
      out.emplace_back(a, p);
    }
  }
  return out;
}

std::string CollectiveRunner::unsupported(Algorithm a) const {
  const AlgorithmRequest probe = request(a, Protocol::Simple, static_cast<std::uint64_t>(options_.element_size) * options_.gpus.size(),
                                         Granularity::Step);
  return unsupported_reason(a, probe);
}

AlgorithmRequest CollectiveRunner::request(Algorithm a, Protocol p, std::uint64_t bytes, Granularity g) const {
  const AlgorithmEntry& entry = algorithm_entry(a);
  AlgorithmRequest r;
  r.collective = options_.collective;
  r.nranks = static_cast<int>(options_.gpus.size());
  r.root = options_.root;
  r.bytes = bytes;
  r.element_size = options_.element_size;
  // The entry says which channels it takes (ChannelUse): the ring channels (spread over rails
  // and links), the tree pairs (one per NIC rail across nodes, each headed on its rail), or one
  // (the hierarchical AllReduce already uses every rail: one inter-node ring per local rank).
  r.channels = entry.channels == ChannelUse::Rings ? plan_.channels : entry.channels == ChannelUse::TreePairs ? plan_.tree_pairs : 1;
  r.ranks_per_node = plan_.ranks_per_node;
  if (entry.channels == ChannelUse::Rings) r.ring_orders = plan_.ring_orders;
  if (entry.channels == ChannelUse::TreePairs) {
    r.node_orders = plan_.node_orders;
    r.node_groups = plan_.node_groups;
    r.tree_heads = plan_.tree_heads;
  }
  if (entry.channels == ChannelUse::NodeRings && !plan_.node_orders.empty()) {
    // On direct-link nodes the intra-node rings of the channels walk the searched rings, so
    // together they use every GPU-to-GPU link.
    r.node_orders = plan_.node_orders;
    r.channels = options_.channels > 0 ? options_.channels : static_cast<int>(plan_.node_orders.size());
  }
  if (r.collective == models::Collective::SendRecv) r.channels = p2p_.per_peer;  // each peer's channels, each 1/k of the bytes
  r.granularity = g;
  r.pipeline_chunks = pipeline_chunks(a, r, costs_.chunk_bytes(p));
  r.chunk_bytes = static_cast<std::uint64_t>(costs_.chunk_bytes(p));
  return r;
}

Granularity CollectiveRunner::granularity(Algorithm a, Protocol p, std::uint64_t bytes) const {
  const int n = static_cast<int>(options_.gpus.size());
  const int channels = algorithm_entry(a).channels == ChannelUse::Rings ? plan_.channels : 1;
  if (prefers_phase(a, options_.granularity, n, channels) && unsupported_reason(a, request(a, p, bytes, Granularity::Phase)).empty()) {
    return Granularity::Phase;
  }
  return Granularity::Step;
}

models::Schedule CollectiveRunner::step_schedule(Algorithm a, Protocol p, std::uint64_t bytes) const {
  return schedule(a, p, bytes, Granularity::Step);
}

models::Schedule CollectiveRunner::schedule(Algorithm a, Protocol p, std::uint64_t bytes, Granularity g) const {
  AlgorithmRequest req = request(a, p, bytes, g);
  if (const std::string why = unsupported_reason(a, req); !why.empty()) {
    throw std::invalid_argument(fmt::format("{} cannot run {} here: {}", to_string(a), models::to_string(options_.collective), why));
  }
  // Concurrent groups replicate the schedule: the limit holds for all of them together.
  const std::uint64_t groups = 1 + options_.concurrent.size();
  return generate_within_limit(a, std::move(req), groups,
                               [&] { return unsupported_reason(a, request(a, p, bytes, Granularity::Phase)).empty(); });
}

sim::CostParams CollectiveRunner::cost_params(Algorithm a, Protocol p, const models::Schedule& one) const {
  sim::CostParams cost = costs_.params(a, p, cluster_.topology, arch_);
  // The fixed cost as launched (eager, graph, agg_iters per launch), then PAT's per-rank term
  // (once per group of agg_iters as well).
  cost.base_latency = launch_latency(cost.base_latency) +
                      costs_.rank_latency(a, p) * static_cast<double>(one.nranks) / std::max(1, options_.agg_iters);
  cost.max_rate = costs_.max_rate(a, p, arch_, group_.nodes, one.channels, group_.ranks);
  if (options_.collective == models::Collective::SendRecv && group_.nodes > 1) {
    // One p2p channel drives at most the table's network rate (NCCL_P2P_PER_CHANNEL_NET_BW).
    // The cap is per connection, so it also binds the same-node pairs of the group (on as
    // many channels, NVLink pairs are not the slowest in nccl-tests' sendrecv ring).
    cost.max_rate = std::min(cost.max_rate, costs_.p2p_net_channel_bandwidth());
  }
  if (options_.collective == models::Collective::AlltoAll && group_.nodes > 1) {
    // An AlltoAll's Schedule sends each peer's block on one connection: it drives at most its
    // p2p channels' network rate together (NCCL_P2P_PER_CHANNEL_NET_BW each).
    cost.max_rate = std::min(cost.max_rate, std::max(1, p2p_.per_peer) * costs_.p2p_net_channel_bandwidth());
  }
  // NCCL's PXN (on unless NCCL_PXN_DISABLE=1) serves point-to-point sends only: rings and trees
  // across nodes take the NICs of their searched graph (models::Router::pxn_relay).
  const bool p2p = options_.collective == models::Collective::SendRecv || options_.collective == models::Collective::AlltoAll;
  cost.pxn = p2p && group_.nodes > 1 && options_.nccl.pxn();
  return cost;
}

double CollectiveRunner::launch_latency(double eager) const {
  // A CUDA graph replays the launch: the table's fixed cost per graph-launched collective
  // replaces NCCL's baseLat (which includes a kernel launch) where the table has one. nccl-tests
  // -m puts agg_iters collectives in one group, one kernel: the fixed cost is paid once for them.
  double fixed = eager;
  if (options_.graph_launch) fixed = costs_.graph_latency(arch_).value_or(eager);
  return fixed / std::max(1, options_.agg_iters);
}

bool CollectiveRunner::symmetric_eligible() {
  // NCCL 2.27+ (src/sym_kernels.cc ncclSymkAvailable): symmetric-memory kernels need every rank
  // a direct NVLink peer of every other (comm->isAllDirectNvlink) and a collective and type they
  // implement; ccsim models the AllReduce one (sums of floating-point types). RCCL has no
  // such kernels; releases before 2.27 neither. The public figures (nccl#1940, nccl-tests#333)
  // are Hopper's and Blackwell's, so older NVIDIA architectures keep NCCL's other algorithms.
  if (!options_.symmetric || options_.collective != models::Collective::AllReduce || group_.nodes != 1) return false;
  if (options_.nccl.release() < models::NcclVersion{2, 27}) return false;
  if (const auto cc = compute_capability(arch_); !cc || *cc < 90) return false;
  if (!options_.concurrent.empty() || !options_.rank_ready.empty() || options_.algorithm || options_.keep_plan) return false;
  for (std::size_t i = 0; i < options_.gpus.size(); ++i)
    for (std::size_t j = 0; j < options_.gpus.size(); ++j)
      if (i != j && bound_router().route(options_.gpus[i], options_.gpus[j]).type != models::PathType::Nvl) return false;
  return options_.gpus.size() > 1;
}

void CollectiveRunner::try_symmetric(std::uint64_t bytes, CollectiveResult& best) {
  // NCCL's symmetric kernel for small AllReduces, AllReduce_AGxLL_R: every rank stores its
  // input into every peer's symmetric buffer with LL flags in one NVLink round and each rank
  // reduces what it received (sym_kernels.cc, LL_BusFactor nRanks x nBytes). Its data
  // movement is vLLM's one-shot schedule (every rank reads the whole input of every peer),
  // at LL's wire efficiency and step costs; its fixed cost the launch's (launch_latency of
  // the ring LL figure). Chosen where faster than NCCL's other algorithms, as NCCL's tuner
  // compares their modelled times (enqueue.cc). The two-shot and multimem kernels for larger
  // sizes are not modelled.
  if (bytes % options_.element_size != 0 || !costs_.supports(Algorithm::Ring, Protocol::LL)) return;
  const models::Schedule one = vllm_custom_allreduce(VllmAllReduce::OneShot, static_cast<int>(options_.gpus.size()), bytes,
                                                     options_.element_size);
  sim::Plan plan;
  plan.rank_gpu = options_.gpus;
  plan.schedule = &one;
  plan.cost = costs_.params(Algorithm::Ring, Protocol::LL, cluster_.topology, arch_);
  plan.cost.base_latency = launch_latency(plan.cost.base_latency);
  sim::Engine& engine = engine_ ? *engine_ : *analytic_;
  sim::Timeline tl = engine.run(plan);
  if (tl.makespan >= best.time) return;
  best.algorithm = Algorithm::VllmOneShot;
  best.protocol = Protocol::LL;
  best.granularity = models::Granularity::Step;
  best.time = tl.makespan;
  best.transfers = tl.transfers;
  best.links = std::move(tl.links);
  best.kernel = "symmetric-ll";
}

models::Router& CollectiveRunner::bound_router() {
  if (auto* engine = dynamic_cast<sim::AnalyticEngine*>(analytic_)) return engine->router();
  if (!own_bound_router_) own_bound_router_ = std::make_unique<models::Router>(cluster_);
  return *own_bound_router_;
}

sim::Plan CollectiveRunner::bound_plan(Algorithm a, Protocol p, const models::Schedule& one) const {
  sim::Plan plan;
  plan.rank_gpu = options_.gpus;
  plan.schedule = &one;
  plan.cost = cost_params(a, p, one);
  return plan;
}

double CollectiveRunner::candidate_bound(Algorithm a, Protocol p, std::uint64_t bytes) { return choice_.bound(a, p, bytes, *this); }

sim::Timeline CollectiveRunner::run_schedule(const models::Schedule& one, Algorithm a, Protocol p, sim::Engine& engine,
                                             bool skewed) const {
  sim::Plan plan;
  if (skewed) {
    for (std::size_t copy = 0; copy <= options_.concurrent.size(); ++copy)
      plan.rank_ready.insert(plan.rank_ready.end(), options_.rank_ready.begin(), options_.rank_ready.end());
  }
  plan.rank_gpu = options_.gpus;
  for (const auto& group : options_.concurrent) {
    if (group.size() != options_.gpus.size()) throw std::invalid_argument("concurrent groups must have the same size");
    plan.rank_gpu.insert(plan.rank_gpu.end(), group.begin(), group.end());
  }
  // Concurrent groups run a replica; a lone group runs `one` itself (no copy: a 1,024-rank
  // AlltoAll's schedule holds 2 M ops).
  models::Schedule replicated;
  if (!options_.concurrent.empty()) replicated = models::replicate(one, static_cast<int>(1 + options_.concurrent.size()));
  plan.schedule = options_.concurrent.empty() ? &one : &replicated;
  plan.cost = cost_params(a, p, one);
  return engine.run(plan);
}

sim::Timeline CollectiveRunner::simulate(const models::Schedule& one, Algorithm a, Protocol p) {
  return run_schedule(one, a, p, *analytic_);
}

CollectiveResult CollectiveRunner::run(std::uint64_t bytes) {
  if (!candidates_) candidates_ = candidates();
  const auto& cands = *candidates_;
  if (cands.empty()) {
    throw std::invalid_argument(fmt::format("no algorithm and protocol implement {} with these options",
                                            models::to_string(options_.collective)));
  }
  CollectiveResult best = choice_.choose(bytes, cands, *this);
  if (options_.granularity == Granularity::Phase && best.granularity == Granularity::Step) {
    best.granularity_note = unsupported_reason(best.algorithm, request(best.algorithm, best.protocol, bytes, Granularity::Phase));
  }
  if (engine_ && symmetric_eligible()) {
    // Compare on the chosen engine: simulate NCCL's choice there first.
    best.granularity = granularity(best.algorithm, best.protocol, bytes);
    const models::Schedule one = schedule(best.algorithm, best.protocol, bytes, best.granularity);
    sim::Timeline tl = run_schedule(one, best.algorithm, best.protocol, *engine_);
    best.time = tl.makespan;
    best.transfers = tl.transfers;
    best.links = std::move(tl.links);
    try_symmetric(bytes, best);
  } else if (symmetric_eligible()) {
    try_symmetric(bytes, best);
  } else if (engine_) {
    best.granularity = granularity(best.algorithm, best.protocol, bytes);
    const models::Schedule one = schedule(best.algorithm, best.protocol, bytes, best.granularity);
    sim::Timeline tl = run_schedule(one, best.algorithm, best.protocol, *engine_);
    best.time = tl.makespan;
    best.transfers = tl.transfers;
    best.links = std::move(tl.links);
  }
  if (!options_.rank_ready.empty()) {
    if (options_.rank_ready.size() != options_.gpus.size()) {
      throw std::invalid_argument(fmt::format("a skew for {} ranks given for {}", options_.rank_ready.size(), options_.gpus.size()));
    }
    // The phase-granularity tree is the fluid limit of a deep pipeline: every edge carries its
    // data up and down at once, with no order between a rank's receive from below and its send
    // down, so a late rank would not hold the others back. Under skew the tree runs at step
    // granularity (every chunk's reduce before its broadcast) where its schedule fits.
    Granularity g = best.granularity;
    if (best.algorithm == Algorithm::Tree && g == Granularity::Phase) {
      try {
        (void)schedule(best.algorithm, best.protocol, bytes, Granularity::Step);
        g = Granularity::Step;
      } catch (const ScheduleTooLarge&) {
        best.notes.push_back("--skew: the tree's schedule is too large at step granularity; its phase form does not order a rank's "
                             "broadcast after the late ranks' data, so the waits are a lower bound");
      }
    }
    const models::Schedule one = schedule(best.algorithm, best.protocol, bytes, g);
    sim::Engine& engine = engine_ ? *engine_ : *analytic_;
    const sim::Timeline tl = run_schedule(one, best.algorithm, best.protocol, engine, true);
    const sim::Timeline plain = run_schedule(one, best.algorithm, best.protocol, engine, false);
    SkewResult skew;
    const double last = *std::max_element(options_.rank_ready.begin(), options_.rank_ready.end());
    skew.from_first = tl.makespan;
    skew.from_last = tl.makespan - last;
    // A rank's own time: its arrival to its last op's end (the first group's ranks).
    const std::size_t n = options_.gpus.size();
    const auto ends = [n](const sim::Timeline& t) {
      std::vector<double> end(n, 0.0);
      for (const sim::OpRecord& op : t.ops)
        if (static_cast<std::size_t>(op.rank) < n) end[static_cast<std::size_t>(op.rank)] = std::max(end[static_cast<std::size_t>(op.rank)], op.end);
      return end;
    };
    const std::vector<double> end = ends(tl);
    skew.rank_time_unskewed = ends(plain);
    skew.rank_time.assign(n, 0.0);
    for (std::size_t r = 0; r < n; ++r) skew.rank_time[r] = std::max(0.0, end[r] - options_.rank_ready[r]);
    best.skew = std::move(skew);
  }
  if (options_.keep_plan) {
    auto part = std::make_shared<sim::PlanPart>();
    auto one = std::make_shared<models::Schedule>(schedule(best.algorithm, best.protocol, bytes, best.granularity));
    part->cost = cost_params(best.algorithm, best.protocol, *one);
    part->copies = static_cast<int>(1 + options_.concurrent.size());
    part->rank_gpu = options_.gpus;
    for (const auto& group : options_.concurrent) part->rank_gpu.insert(part->rank_gpu.end(), group.begin(), group.end());
    part->schedule = std::move(one);
    best.plan = std::move(part);
  }
  costs_.warn_missing_efficiency(cluster_.topology, best.links, arch_);
  if (!options_.check_bound) return best;
  best.bound = bound_.time(static_cast<double>(bytes));
  if (best.time < best.bound * (1.0 - 1e-9)) {
    throw std::logic_error(fmt::format("simulated {} {} of {} bytes takes {:.6g} s, below the lower bound {:.6g} s: "
                                       "the model is broken",
                                       to_string(best.algorithm), models::to_string(options_.collective), bytes, best.time,
                                       best.bound));
  }
  return best;
}

}  // namespace ccsim::planner
