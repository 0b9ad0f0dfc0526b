#include "planner/collective_runner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::planner {

using models::Collective;
using models::Granularity;

namespace {
/// Step granularity up to this many ranks (exact); phase granularity above, where available.
constexpr int kStepRanks = 64;
/// Pipelined algorithms (tree, chains, NVLS) get at most this many chunks × ranks per channel,
/// which bounds a step-granularity schedule to a few hundred thousand ops.
constexpr int kChunkBudget = 8192;
constexpr int kMaxChunks = 64;
}  // namespace

CollectiveRunner::CollectiveRunner(const models::Cluster& cluster, const CostModel& costs, CollectiveOptions options)
    : cluster_(cluster), costs_(costs), options_(std::move(options)), router_(cluster) {
  if (options_.gpus.empty()) throw std::invalid_argument("a collective needs at least one rank");
  const models::Topology& t = cluster.topology;
  analytic_ = sim::make_engine("analytic", cluster);
  engine_ = options_.engine == "analytic" ? nullptr : sim::make_engine(options_.engine, cluster);
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
  if (per_node.size() == 1) {
    const auto& node = cluster.nodes[static_cast<std::size_t>(per_node.begin()->first)];
    one_nvls_domain_ = node.nvswitch != models::kNoDevice && t.device(node.nvswitch).nvls;
  }
  if (options_.algorithm && *options_.algorithm == Algorithm::Nvls && !one_nvls_domain_) {
    throw std::invalid_argument("nvls needs all ranks on one NVSwitch with NVLink SHARP (NVSwitch gen3+)");
  }
  bound_ = lower_bound(cluster, router_, options_.collective, options_.gpus, options_.root);
}

std::vector<std::pair<Algorithm, Protocol>> CollectiveRunner::candidates() const {
  std::vector<std::pair<Algorithm, Protocol>> out;
  const Collective c = options_.collective;
  std::vector<Algorithm> algos;
  switch (c) {
    case Collective::AllReduce: algos = {Algorithm::Ring, Algorithm::Tree}; break;
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
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      if (options_.protocol && *options_.protocol != p) continue;
      // NCCL runs NVLS, and point-to-point (AlltoAll, SendRecv), with Simple only.
      if (!options_.protocol && (a == Algorithm::Nvls || a == Algorithm::Direct || a == Algorithm::Pairwise) &&
          p != Protocol::Simple) {
        continue;
      }
      if (costs_.supports(a, p)) out.emplace_back(a, p);
    }
  }
  return out;
}

std::vector<models::DeviceId> CollectiveRunner::placement(Algorithm a) const {
  if (a != Algorithm::Ring || ranks_per_node_ == 0 || ranks_per_node_ == static_cast<int>(options_.gpus.size())) {
    return options_.gpus;
  }
  // Snake ring: every other node is walked backwards, so the ring leaves node i and enters
  // node i+1 through GPUs of the same local index — the same NIC rail — instead of crossing
  // the spine (as NCCL's rail-aware rings do).
  std::vector<models::DeviceId> order(options_.gpus);
  const auto per = static_cast<std::size_t>(ranks_per_node_);
  for (std::size_t node = 1; node * per < order.size(); node += 2) {
    std::reverse(order.begin() + static_cast<std::ptrdiff_t>(node * per), order.begin() + static_cast<std::ptrdiff_t>((node + 1) * per));
  }
  return order;
}

AlgorithmRequest CollectiveRunner::request(Algorithm a, Protocol p, std::uint64_t bytes, Granularity g) const {
  AlgorithmRequest r;
  r.collective = options_.collective;
  r.nranks = static_cast<int>(options_.gpus.size());
  r.root = options_.root;
  r.bytes = bytes;
  r.element_size = options_.element_size;
  r.channels = options_.channels;
  r.ranks_per_node = ranks_per_node_;
  r.granularity = g;
  const double per_channel = static_cast<double>(bytes) / options_.channels;
  const int wanted = static_cast<int>(std::ceil(per_channel / costs_.chunk_bytes(p)));
  const int budget = std::max(1, kChunkBudget / r.nranks);
  r.pipeline_chunks = std::clamp(wanted, 1, std::min(kMaxChunks, budget));
  (void)a;
  return r;
}

double CollectiveRunner::simulate(Algorithm a, Protocol p, std::uint64_t bytes, sim::Engine& engine, Granularity& g,
                                  std::size_t& transfers) {
  const int n = static_cast<int>(options_.gpus.size());
  g = Granularity::Step;
  if (options_.granularity == "phase" || (options_.granularity == "auto" && n > kStepRanks)) {
    AlgorithmRequest probe = request(a, p, bytes, Granularity::Phase);
    if (unsupported_reason(a, probe).empty()) g = Granularity::Phase;
  }
  const AlgorithmRequest req = request(a, p, bytes, g);
  if (const std::string why = unsupported_reason(a, req); !why.empty()) {
    throw std::invalid_argument(fmt::format("{} cannot run {} here: {}", to_string(a), models::to_string(options_.collective), why));
  }
  const models::Schedule schedule = generate(a, req);
  sim::Plan plan;
  plan.schedule = &schedule;
  plan.rank_gpu = placement(a);
  plan.cost = costs_.params(a, p, cluster_.topology);
  const sim::Timeline tl = engine.run(plan);
  transfers = tl.transfers;
  return tl.makespan;
}

CollectiveResult CollectiveRunner::run(std::uint64_t bytes) {
  const auto cands = candidates();
  if (cands.empty()) {
    throw std::invalid_argument(fmt::format("no algorithm and protocol implement {} with these options",
                                            models::to_string(options_.collective)));
  }
  CollectiveResult best;
  best.bytes = bytes;
  best.time = std::numeric_limits<double>::infinity();
  for (const auto& [a, p] : cands) {
    if (cands.size() > 1 && !unsupported_reason(a, request(a, p, bytes, Granularity::Step)).empty()) continue;
    Granularity g{};
    std::size_t transfers = 0;
    const double t = simulate(a, p, bytes, *analytic_, g, transfers);
    if (t < best.time) {
      best.time = t;
      best.algorithm = a;
      best.protocol = p;
      best.granularity = g;
      best.transfers = transfers;
    }
  }
  if (best.time == std::numeric_limits<double>::infinity()) {
    throw std::invalid_argument(fmt::format("no algorithm implements {} at {} bytes", models::to_string(options_.collective), bytes));
  }
  if (engine_) best.time = simulate(best.algorithm, best.protocol, bytes, *engine_, best.granularity, best.transfers);
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
