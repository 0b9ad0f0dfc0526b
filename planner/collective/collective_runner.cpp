#include "planner/collective/collective_runner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "planner/collective/candidate_bound.hpp"
#include "sim/analytic/analytic_engine.hpp"

namespace ccsim::planner {

using models::Collective;
using models::Granularity;

namespace {
/// Step granularity up to this many ranks (exact); phase granularity above, where available.
constexpr int kStepRanks = 64;
/// ... and up to this many ranks × ring channels (a 32-GPU mesh with 15 searched rings runs at
/// phase granularity: its step form has hundreds of concurrent flows re-shared at every step).
constexpr int kStepRankChannels = 256;
/// Pipelined algorithms (tree, chains, NVLS) get at most this many chunks × ranks per channel,
/// which bounds a step-granularity schedule to a few hundred thousand ops.
constexpr int kChunkBudget = 8192;
constexpr int kMaxChunks = 64;
/// At most this many channels per ring (NCCL's MAXCHANNELS / 2 for rings).
constexpr int kMaxChannels = 16;

std::string with_commas(double v) {
  std::string digits = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}
}  // namespace

CollectiveRunner::CollectiveRunner(const models::Cluster& cluster, const CostModel& costs, CollectiveOptions options,
                                   sim::Engine* analytic, sim::Engine* engine)
    : cluster_(cluster), costs_(costs), options_(std::move(options)) {
  if (options_.gpus.empty()) throw std::invalid_argument("a collective needs at least one rank");
  const models::Topology& t = cluster.topology;
  if (analytic == nullptr) {
    own_analytic_ = sim::make_engine("analytic", cluster);
    analytic = own_analytic_.get();
  }
  analytic_ = analytic;
  if (options_.engine != "analytic") {
    if (engine == nullptr) {
      own_engine_ = sim::make_engine(options_.engine, cluster);
      engine = own_engine_.get();
    }
    engine_ = engine;
  }
  // Ranks per node, when ranks fill nodes evenly in node-major order.
  std::map<int, int> per_node;
  int last_node = -2;
  bool contiguous = true;
  std::vector<int> seen_nodes;
  for (models::DeviceId g : options_.gpus) {
    const int node = t.device(g).node;
    if (node != last_node) {
      if (std::find(seen_nodes.begin(), seen_nodes.end(), node) != seen_nodes.end()) contiguous = false;
      seen_nodes.push_back(node);
      last_node = node;
    }
    ++per_node[node];
  }
  const int first = per_node.begin()->second;
  const bool even = std::all_of(per_node.begin(), per_node.end(), [&](const auto& kv) { return kv.second == first; });
  ranks_per_node_ = contiguous && even ? first : 0;
  all_nodes_nvls_ = true;
  for (const auto& [node_index, count] : per_node) {
    const auto& node = cluster.nodes[static_cast<std::size_t>(node_index)];
    all_nodes_nvls_ = all_nodes_nvls_ && node.nvswitch != models::kNoDevice && t.device(node.nvswitch).nvls;
  }
  one_nvls_domain_ = per_node.size() == 1 && all_nodes_nvls_;
  nodes_ = static_cast<int>(per_node.size());
  {
    const int node0 = t.device(options_.gpus.front()).node;
    if (node0 >= 0) arch_ = cluster.spec.groups[static_cast<std::size_t>(cluster.node_group[static_cast<std::size_t>(node0)])].node.gpu.arch;
  }
  if (options_.algorithm && *options_.algorithm == Algorithm::Nvls && !one_nvls_domain_) {
    throw std::invalid_argument("nvls needs all ranks on one NVSwitch with NVLink SHARP (NVSwitch gen3+)");
  }
  if (options_.algorithm && *options_.algorithm == Algorithm::NvlsTree && (!all_nodes_nvls_ || ranks_per_node_ == 0)) {
    throw std::invalid_argument(!all_nodes_nvls_ ? "nvls-tree needs whole nodes with NVLink SHARP (NVSwitch gen3+)"
                                                 : "nvls-tree needs the same number of ranks on every node, in node order");
  }
  protocol_context_ = protocol_context(cluster, options_.gpus, &bound_router());
  // NCCL tunes a communicator by its lowest compute capability (minCompCap).
  if (!protocol_context_.archs.empty()) arch_ = tuning_architecture(protocol_context_.archs);
  if (options_.check_bound) bound_ = lower_bound(cluster, bound_router(), options_.collective, options_.gpus, options_.root);
  plan_rings();
}

std::vector<std::pair<Algorithm, Protocol>> CollectiveRunner::candidates() const {
  std::vector<std::pair<Algorithm, Protocol>> out;
  const Collective c = options_.collective;
  std::vector<Algorithm> algos;
  switch (c) {
    case Collective::AllReduce:
      // NCCL's AllReduce algorithms: Ring, Tree (a chain in each node, a double binary tree
      // across nodes), NVLSTree across NVLS nodes, NVLS inside one (below). ccsim's
      // hierarchical AllReduce is not NCCL's and runs only when asked for.
      algos = {Algorithm::Ring, Algorithm::Tree};
      if (all_nodes_nvls_ && nodes_ > 1 && ranks_per_node_ > 0) algos.push_back(Algorithm::NvlsTree);
      break;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::Broadcast:
    case Collective::Reduce: algos = {Algorithm::Ring}; break;
    case Collective::AlltoAll:
    case Collective::SendRecv: algos = {Algorithm::Direct}; break;
  }
  if (one_nvls_domain_ && options_.gpus.size() > 1 &&
      (c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::AllGather)) {
    algos.push_back(Algorithm::Nvls);
  }
  if (options_.algorithm) algos = {*options_.algorithm};
  for (Algorithm a : algos) {
    // Drop algorithms that cannot run this collective at all (any size).
    AlgorithmRequest probe = request(a, Protocol::Simple, static_cast<std::uint64_t>(options_.element_size) * options_.gpus.size(),
                                     models::Granularity::Step);
    if (!unsupported_reason(a, probe).empty()) continue;
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      if (options_.protocol && *options_.protocol != p) continue;
      // NCCL runs NVLS, and point-to-point (AlltoAll, SendRecv), with Simple only.
      if (!options_.protocol && (a == Algorithm::Nvls || a == Algorithm::NvlsTree || a == Algorithm::Direct || a == Algorithm::Pairwise) &&
          p != Protocol::Simple) {
        continue;
      }
      // Protocols the library enables only in some cases (LL128) are offered where it does.
      if (!options_.protocol && !costs_.default_refusal(p, protocol_context_).empty()) continue;
      if (costs_.supports(a, p)) out.emplace_back(a, p);
    }
  }
  return out;
}

std::string CollectiveRunner::unsupported(Algorithm a) const {
  const AlgorithmRequest probe = request(a, Protocol::Simple, static_cast<std::uint64_t>(options_.element_size) * options_.gpus.size(),
                                         models::Granularity::Step);
  return unsupported_reason(a, probe);
}

void CollectiveRunner::plan_rings() {
  // Channels and their ring orders, as NCCL spreads channels over NICs and links.
  const models::Topology& t = cluster_.topology;
  const int n = static_cast<int>(options_.gpus.size());
  const int per = ranks_per_node_;
  const int nodes = per > 0 ? n / per : 0;
  // Direct GPU-to-GPU links among the ranks of the first node (xGMI and NVLink meshes; none
  // on NVSwitch and PCIe-only nodes). Nodes of one collective share a template.
  LinkGraph mesh;
  bool direct = false;
  if (per > 1) {
    mesh.n = per;
    mesh.capacity.assign(static_cast<std::size_t>(per * per), 0.0);
    for (int u = 0; u < per; ++u)
      for (models::LinkId id : t.out_links(options_.gpus[static_cast<std::size_t>(u)])) {
        if (t.link(id).link_class != models::LinkClass::ScaleUp) continue;
        for (int v = 0; v < per; ++v)
          if (t.link_target(id) == options_.gpus[static_cast<std::size_t>(v)]) {
            mesh.capacity[static_cast<std::size_t>(u * per + v)] += t.link(id).bandwidth;
            direct = true;
          }
      }
  }
  if (direct) node_orders_ = search_rings(mesh, kMaxChannels);
  if (per == 0) {
    // Nodes with different numbers of ranks (or ranks not in node order): each node's ranks
    // as they come, for the Tree and for rings across nodes.
    std::map<int, std::vector<int>> by_node;
    for (int r = 0; r < n; ++r) by_node[t.device(options_.gpus[static_cast<std::size_t>(r)]).node].push_back(r);
    for (auto& [node, ranks] : by_node) node_groups_.push_back(std::move(ranks));
  }
  int auto_channels = 1;
  if (per == 0 && node_groups_.size() > 1) {
    // Unequal nodes: as below, channel c walks every node from its local c+1 round to local c
    // (every other node backwards), one channel per rank of the smallest node, so the node-to-
    // node hops of the first channels stay on one NIC rail and no NIC carries every channel.
    std::size_t smallest = std::numeric_limits<std::size_t>::max();
    for (const auto& g : node_groups_) smallest = std::min(smallest, g.size());
    auto_channels = static_cast<int>(std::min<std::size_t>(kMaxChannels, smallest));
    for (int c = 0; c < auto_channels; ++c) {
      std::vector<int> order;
      for (std::size_t node = 0; node < node_groups_.size(); ++node) {
        const auto& g = node_groups_[node];
        const int size = static_cast<int>(g.size());
        std::vector<int> seq;
        for (int k = 1; k <= size; ++k) seq.push_back(g[static_cast<std::size_t>((c + k) % size)]);
        if (node % 2 == 1) std::reverse(seq.begin(), seq.end());
        order.insert(order.end(), seq.begin(), seq.end());
      }
      ring_orders_.push_back(std::move(order));
    }
  }
  if (per > 1 && nodes > 1) {
    // Across nodes each channel walks every node once. On a direct-link node the walk is one
    // of the searched Hamiltonian paths (entered at its first GPU's NIC, left at its last's),
    // so the channels use distinct GPU-to-GPU links. Otherwise channel c walks every node
    // from local c+1 round to local c. Every other node is walked backwards, so each
    // node-to-node hop joins GPUs of the same local index — the same NIC rail.
    auto_channels = std::min(kMaxChannels, per);
    const std::vector<std::vector<int>> paths = direct ? search_paths(mesh, auto_channels) : std::vector<std::vector<int>>{};
    for (int c = 0; c < auto_channels; ++c) {
      std::vector<int> order;
      for (int node = 0; node < nodes; ++node) {
        std::vector<int> seq;
        if (!paths.empty()) {
          for (int local : paths[static_cast<std::size_t>(c)]) seq.push_back(node * per + local);
        } else {
          for (int k = 1; k <= per; ++k) seq.push_back(node * per + (c + k) % per);
        }
        if (node % 2 == 1) std::reverse(seq.begin(), seq.end());
        order.insert(order.end(), seq.begin(), seq.end());
      }
      ring_orders_.push_back(std::move(order));
    }
  } else if (nodes == 1 && !node_orders_.empty()) {
    // One direct-link node: the searched rings, as many channels as the search found best.
    ring_orders_ = node_orders_;
    auto_channels = static_cast<int>(ring_orders_.size());
  }
  channels_ = options_.channels > 0 ? options_.channels : auto_channels;
  // Tree: one chain/tree pair per NIC rail the ranks of a node reach across nodes (NCCL builds
  // its trees per NIC); inside one node, one pair per searched ring on direct-link nodes.
  if (nodes_ > 1) {
    // Heads: on the first node, the first rank of each NIC rail, in rail order.
    std::map<int, int> first_of_rail;
    const int node0 = t.device(options_.gpus.front()).node;
    int local = 0;
    for (models::DeviceId g : options_.gpus) {
      if (t.device(g).node != node0) break;
      first_of_rail.try_emplace(t.device(g).rail, local++);
    }
    for (const auto& [rail, l] : first_of_rail) tree_heads_.push_back(l);
    tree_pairs_ = static_cast<int>(tree_heads_.size());
  } else {
    tree_pairs_ = node_orders_.empty() ? 1 : static_cast<int>(node_orders_.size());
  }
  tree_pairs_ = std::min(tree_pairs_, kMaxChannels);
  if (options_.channels > 0) tree_pairs_ = options_.channels;
}

AlgorithmRequest CollectiveRunner::request(Algorithm a, Protocol p, std::uint64_t bytes, Granularity g) const {
  AlgorithmRequest r;
  r.collective = options_.collective;
  r.nranks = static_cast<int>(options_.gpus.size());
  r.root = options_.root;
  r.bytes = bytes;
  r.element_size = options_.element_size;
  // Channels spread rings over rails and links; the hierarchical AllReduce already uses every
  // rail (one inter-node ring per local rank), and the tree is not rail-aware: one channel.
  r.channels = a == Algorithm::Ring ? channels_ : a == Algorithm::Tree ? tree_pairs_ : 1;
  r.ranks_per_node = ranks_per_node_;
  if (a == Algorithm::Ring) r.ring_orders = ring_orders_;
  if (a == Algorithm::Tree) {
    r.node_orders = node_orders_;
    r.node_groups = node_groups_;
    r.tree_heads = tree_heads_;
  }
  if (a == Algorithm::Hierarchical && !node_orders_.empty()) {
    // On direct-link nodes the intra-node rings of the channels walk the searched rings, so
    // together they use every GPU-to-GPU link.
    r.node_orders = node_orders_;
    r.channels = options_.channels > 0 ? options_.channels : static_cast<int>(node_orders_.size());
  }
  r.granularity = g;
  const double per_channel = static_cast<double>(bytes) / r.channels;
  const int wanted = static_cast<int>(std::ceil(per_channel / costs_.chunk_bytes(p)));
  // NVLS-tree has no phase granularity and ~3 ops per rank per part and chunk, hierarchical
  // ~4 per intra-node ring step: tighter budgets.
  const int weight = a == Algorithm::NvlsTree ? 4 : a == Algorithm::Hierarchical ? 2 * std::max(1, ranks_per_node_) : 1;
  const int budget = std::max(1, kChunkBudget / (weight * r.nranks * r.channels));
  r.pipeline_chunks = std::clamp(wanted, 1, std::min(kMaxChunks, budget));
  return r;
}

sim::Timeline CollectiveRunner::simulate(Algorithm a, Protocol p, std::uint64_t bytes, sim::Engine& engine, Granularity& g) {
  const models::Schedule schedule = prepare(a, p, bytes, g);
  return run_schedule(schedule, a, p, engine);
}

Granularity CollectiveRunner::granularity_for(Algorithm a, Protocol p, std::uint64_t bytes) const {
  const int n = static_cast<int>(options_.gpus.size());
  // NCCL's Tree at phase granularity by default: its pipeline is as deep as the chains and the
  // tree together, and the step form's bounded chunk count would undercount its pipelining
  // (tree.cpp: the fluid limit of the pipelined tree). --granularity step simulates it chunk by chunk.
  const int channels = a == Algorithm::Ring ? channels_ : 1;
  if (options_.granularity == "phase" ||
      (options_.granularity == "auto" && (n > kStepRanks || n * channels > kStepRankChannels || a == Algorithm::Tree))) {
    AlgorithmRequest probe = request(a, p, bytes, Granularity::Phase);
    if (unsupported_reason(a, probe).empty()) return Granularity::Phase;
  }
  return Granularity::Step;
}

models::Schedule CollectiveRunner::prepare(Algorithm a, Protocol p, std::uint64_t bytes, Granularity& g) const {
  g = granularity_for(a, p, bytes);
  return prepare_at(a, p, bytes, g);
}

models::Schedule CollectiveRunner::step_schedule(Algorithm a, Protocol p, std::uint64_t bytes) const {
  return prepare_at(a, p, bytes, Granularity::Step);
}

models::Schedule CollectiveRunner::prepare_at(Algorithm a, Protocol p, std::uint64_t bytes, Granularity g) const {
  AlgorithmRequest req = request(a, p, bytes, g);
  if (const std::string why = unsupported_reason(a, req); !why.empty()) {
    throw std::invalid_argument(fmt::format("{} cannot run {} here: {}", to_string(a), models::to_string(options_.collective), why));
  }
  // Concurrent groups replicate the schedule: the limit holds for all of them together.
  const std::uint64_t groups = 1 + options_.concurrent.size();
  req.max_ops = std::max<std::uint64_t>(1, kMaxScheduleOps / groups);
  const auto too_large = [&](const std::string& found) {
    const int n = static_cast<int>(options_.gpus.size());
    const bool step_only = g == Granularity::Step && unsupported_reason(a, request(a, p, bytes, Granularity::Phase)).empty();
    // The most ranks that fit, where the size has a closed form (it grows with the ranks).
    std::string fewer = "fewer ranks (--ranks)";
    if (estimated_ops(a, req) > 0) {
      int lo = 1, hi = n;  // estimate(lo) fits, estimate(hi) does not
      AlgorithmRequest probe = req;
      while (hi - lo > 1) {
        probe.nranks = lo + (hi - lo) / 2;
        (estimated_ops(a, probe) * static_cast<double>(groups) <= static_cast<double>(kMaxScheduleOps) ? lo : hi) = probe.nranks;
      }
      fewer = fmt::format("fewer ranks (--ranks; {} fits up to {})", to_string(a), lo);
    }
    const std::string alternatives = step_only ? "--granularity phase, or " + fewer : fewer;
    return ScheduleTooLarge({"<command line>", 0, 0}, "--ranks",
                            fmt::format("a schedule of at most {} ops (sends, receives and local steps; about {} GiB to simulate)",
                                        with_commas(static_cast<double>(kMaxScheduleOps)), kMaxScheduleGiB),
                            fmt::format("{} {} on {} ranks{}{}: {}", to_string(a), models::to_string(options_.collective), n,
                                        groups > 1 ? fmt::format(" × {} concurrent groups", groups) : "",
                                        step_only ? " at step granularity" : "", found),
                            "use " + alternatives);
  };
  const double estimate = estimated_ops(a, req) * static_cast<double>(groups);
  if (estimate > static_cast<double>(kMaxScheduleOps)) throw too_large(with_commas(estimate) + " ops");
  models::Schedule schedule;
  try {
    schedule = generate(a, req);
  } catch (const ScheduleTooLarge&) {
    throw too_large("more ops than that");
  }
  return schedule;
}

sim::CostParams CollectiveRunner::cost_params(Algorithm a, Protocol p, const models::Schedule& one) const {
  sim::CostParams cost = costs_.params(a, p, cluster_.topology, arch_);
  cost.max_rate = costs_.max_rate(a, p, arch_, nodes_, one.channels);
  return cost;
}

models::Router& CollectiveRunner::bound_router() {
  if (auto* engine = dynamic_cast<sim::AnalyticEngine*>(analytic_)) return engine->router();
  if (!own_bound_router_) own_bound_router_ = std::make_unique<models::Router>(cluster_);
  return *own_bound_router_;
}

double CollectiveRunner::schedule_bound(const models::Schedule& one, Algorithm a, Protocol p) {
  for (const CachedBound& c : bound_cache_)
    if (c.a == a && c.p == p && c.bound->matches(one)) return c.bound->evaluate(one);
  // One group: concurrent groups only add traffic (candidate_bound.hpp).
  sim::Plan plan;
  plan.rank_gpu = options_.gpus;
  plan.schedule = &one;
  plan.cost = cost_params(a, p, one);
  auto bound = std::make_unique<ScheduleBound>(plan, bound_router());
  const double b = bound->evaluate(one);
  // Kept for the next sizes while the cache holds a few schedules' worth of ops.
  constexpr std::size_t kCacheOps = std::size_t{1} << 22;
  if (bound_cache_ops_ + bound->ops() <= kCacheOps) {
    bound_cache_ops_ += bound->ops();
    bound_cache_.push_back({a, p, std::move(bound)});
  }
  return b;
}

double CollectiveRunner::candidate_bound(Algorithm a, Protocol p, std::uint64_t bytes) {
  Granularity g{};
  const models::Schedule one = prepare(a, p, bytes, g);
  return schedule_bound(one, a, p);
}

sim::Timeline CollectiveRunner::run_schedule(const models::Schedule& one, Algorithm a, Protocol p, sim::Engine& engine) const {
  sim::Plan plan;
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

const double* CollectiveRunner::kept_bound(Algorithm a, Protocol p, const AlgorithmRequest& req) const {
  for (const KnownBound& k : known_bounds_)
    if (k.a == a && k.p == p && k.request.bytes <= req.bytes && shape_independent_of_size(a, k.request, req)) return &k.bound;
  return nullptr;
}

void CollectiveRunner::remember_bound(Algorithm a, Protocol p, const AlgorithmRequest& req, double bound) {
  for (KnownBound& k : known_bounds_) {
    if (k.a == a && k.p == p) {
      k.request = req;
      k.bound = bound;
      return;
    }
  }
  known_bounds_.push_back({a, p, req, bound});
}

CollectiveResult CollectiveRunner::run(std::uint64_t bytes) {
  if (!candidates_) candidates_ = candidates();
  const auto& cands = *candidates_;
  if (cands.empty()) {
    throw std::invalid_argument(fmt::format("no algorithm and protocol implement {} with these options",
                                            models::to_string(options_.collective)));
  }
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  CollectiveResult best;
  std::size_t best_index = cands.size();
  // Candidates too large to simulate are noted in candidate order; the first of them in that
  // order is thrown when no candidate fits.
  std::vector<std::pair<std::size_t, std::string>> notes;
  std::optional<ScheduleTooLarge> refused;
  std::size_t refused_index = cands.size();
  const auto reset = [&] {
    best = CollectiveResult{};
    best.bytes = bytes;
    best.time = kInfinity;
    best_index = cands.size();
    notes.clear();
    refused.reset();
    refused_index = cands.size();
  };
  const auto too_large = [&](std::size_t index, Algorithm a, Protocol p, const ScheduleTooLarge& e) {
    notes.emplace_back(index, fmt::format("{}/{} skipped: {}", to_string(a), to_string(p), e.found()));
    if (index < refused_index) {
      refused = e;
      refused_index = index;
    }
  };
  // A simulated candidate: the best so far when faster, or as fast and earlier in `cands`.
  const auto offer = [&](std::size_t index, Algorithm a, Protocol p, Granularity g, sim::Timeline& tl) {
    ++best.simulated;
    if (tl.makespan < best.time || (tl.makespan == best.time && index < best_index)) {
      best.time = tl.makespan;
      best.algorithm = a;
      best.protocol = p;
      best.granularity = g;
      best.transfers = tl.transfers;
      best.links = std::move(tl.links);
      best_index = index;
    }
  };
  const auto eligible = [&](std::size_t i) {
    return cands.size() == 1 || unsupported_reason(cands[i].first, request(cands[i].first, cands[i].second, bytes, Granularity::Step)).empty();
  };
  // Every eligible candidate simulated, in candidate order: the reference (prune off), and the
  // fallback when a candidate's bound cannot be computed (its simulation reports why).
  const auto run_all = [&] {
    reset();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (!eligible(i)) continue;
      const auto [a, p] = cands[i];
      Granularity g{};
      sim::Timeline tl;
      try {
        tl = simulate(a, p, bytes, *analytic_, g);
      } catch (const ScheduleTooLarge& e) {
        too_large(i, a, p, e);
        continue;
      }
      offer(i, a, p, g, tl);
    }
  };
  // Exact pruning: candidates are simulated in increasing order of a lower bound on their
  // engine time, the last size's choice first (in a sweep it usually wins again, and then its
  // time prunes the rest at once); a candidate whose bound is at least the best time so far is
  // not simulated. The bound is the candidate's ScheduleBound at this size, or, without
  // generating its schedule, the one computed at a smaller size of the same shape
  // (shape_independent_of_size): every op then carries at least the bytes it carried there, so
  // every contention-free time of the bound is no earlier (each is a max / + of latencies and
  // bytes / rate) and every link carries at least the volume it carried there, after starts no
  // earlier — that bound's two relaxations hold for the engine at this size as well. The
  // schedule of such a candidate is generated only when its kept bound does not prune it.
  // Returns false when a bound cannot be computed.
  const auto run_pruned = [&]() -> bool {
    reset();
    struct Prepared {
      std::size_t index = 0;
      Algorithm a = Algorithm::Ring;
      Protocol p = Protocol::Simple;
      Granularity g{};
      AlgorithmRequest req;
      std::optional<models::Schedule> schedule;  ///< kept when small, else generated again
      double bound = -kInfinity;
      bool exact = false;  ///< bound computed on this size's schedule (else kept from a smaller size)
      bool likely = false;  ///< the likely winner: simulated first, so never bounded
    };
    // Schedules up to this many ops are kept between bounding and simulating.
    constexpr std::size_t kKeepOps = std::size_t{1} << 20;
    // Generates c's schedule and bounds it; false when its bound cannot be computed.
    const auto bound_exactly = [&](Prepared& c, bool& skipped) -> bool {
      skipped = false;
      models::Schedule one;
      try {
        one = prepare(c.a, c.p, bytes, c.g);
      } catch (const ScheduleTooLarge& e) {
        too_large(c.index, c.a, c.p, e);
        skipped = true;
        return true;
      }
      try {
        c.bound = schedule_bound(one, c.a, c.p);
      } catch (const std::exception&) {
        return false;
      }
      c.exact = true;
      remember_bound(c.a, c.p, c.req, c.bound);
      if (one.op_count() <= kKeepOps) c.schedule = std::move(one);
      return true;
    };
    // The likely winner: the last size's choice (a sweep keeps its winner over long runs of
    // sizes), else NVLS where it runs (one NVSwitch domain: it wins from a few KiB up). It is
    // simulated first whatever its bound, so its schedule is not bounded. Not NVLS when
    // concurrent groups run: a wrong guess then costs a simulation of every group, and a bound
    // costs one group's schedule.
    std::optional<std::pair<Algorithm, Protocol>> likely = last_choice_;
    if (!likely && options_.concurrent.empty() && options_.collective == Collective::AllReduce && std::find(cands.begin(), cands.end(), std::make_pair(Algorithm::Nvls, Protocol::Simple)) != cands.end()) {
      likely = std::make_pair(Algorithm::Nvls, Protocol::Simple);
    }
    std::vector<Prepared> todo;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (!eligible(i)) continue;
      Prepared c;
      c.index = i;
      c.a = cands[i].first;
      c.p = cands[i].second;
      c.g = granularity_for(c.a, c.p, bytes);
      c.req = request(c.a, c.p, bytes, c.g);
      if (likely && c.a == likely->first && c.p == likely->second) {
        c.likely = true;  // bound −∞: first after sorting
      } else if (const double* kept = kept_bound(c.a, c.p, c.req); kept != nullptr && unsupported_reason(c.a, c.req).empty()) {
        c.bound = *kept;
      } else {
        bool skipped = false;
        if (!bound_exactly(c, skipped)) return false;
        if (skipped) continue;
      }
      todo.push_back(std::move(c));
    }
    std::stable_sort(todo.begin(), todo.end(), [](const Prepared& x, const Prepared& y) { return x.bound < y.bound; });
    // The engine's time is at least bound × (1 − kBoundSlack): a candidate whose bound is
    // above the best time cannot beat it, nor tie it when it comes later in `cands`.
    const auto cannot_win = [&](const Prepared& c) {
      const double floor = c.bound * (1.0 - kBoundSlack);
      return floor > best.time || (floor >= best.time && c.index > best_index);
    };
    for (Prepared& c : todo) {
      if (cannot_win(c)) continue;
      if (!c.exact && !c.likely) {
        bool skipped = false;
        if (!bound_exactly(c, skipped)) return false;
        if (skipped || cannot_win(c)) continue;
      }
      Granularity g = c.g;
      sim::Timeline tl;
      try {
        if (c.schedule) {
          tl = run_schedule(*c.schedule, c.a, c.p, *analytic_);
          c.schedule.reset();
        } else {
          tl = simulate(c.a, c.p, bytes, *analytic_, g);
        }
      } catch (const ScheduleTooLarge& e) {
        // Too big a schedule: skipped when another candidate fits (noted), refused when none does.
        too_large(c.index, c.a, c.p, e);
        continue;
      } catch (const std::exception&) {
        if (c.likely) return false;  // unbounded: report as simulating every candidate would, in candidate order
        throw;
      }
      offer(c.index, c.a, c.p, g, tl);
    }
    return true;
  };
  if (!options_.prune || cands.size() <= 1 || !run_pruned()) run_all();
  std::stable_sort(notes.begin(), notes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [index, note] : notes) best.notes.push_back(std::move(note));
  if (best.time == std::numeric_limits<double>::infinity() && refused) throw *refused;
  if (best.time == std::numeric_limits<double>::infinity()) {
    throw std::invalid_argument(fmt::format("no algorithm implements {} at {} bytes", models::to_string(options_.collective), bytes));
  }
  last_choice_ = std::make_pair(best.algorithm, best.protocol);
  if (options_.granularity == "phase" && best.granularity == Granularity::Step) {
    best.granularity_note = unsupported_reason(best.algorithm, request(best.algorithm, best.protocol, bytes, Granularity::Phase));
  }
  if (engine_) {
    sim::Timeline tl = simulate(best.algorithm, best.protocol, bytes, *engine_, best.granularity);
    best.time = tl.makespan;
    best.transfers = tl.transfers;
    best.links = std::move(tl.links);
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
