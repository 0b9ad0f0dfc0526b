#include "planner/collective/synthesis_runner.hpp"

#include <algorithm>
#include <numeric>
#include <fmt/format.h>
#include <unordered_map>

#include "planner/collective/schedule_limits.hpp"
#include "planner/synthesis/forest_schedule.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "support/input_error.hpp"
#include "support/input_file.hpp"

namespace ccsim::planner::synthesis {

using models::Collective;

std::string_view to_string(Method m) {
  switch (m) {
    case Method::Forest: return "forest";
    case Method::Greedy: return "greedy";
    case Method::Auto: return "auto";
  }
  return "forest";
}

int greedy_default_chunks(std::uint64_t bytes, int ranks) {
  const std::uint64_t block = bytes / static_cast<std::uint64_t>(std::max(1, ranks));
  constexpr std::uint64_t kChunk = 512 * 1024;
  return static_cast<int>(std::clamp<std::uint64_t>((block + kChunk - 1) / kChunk, 1, 8));
}

SynthesisRunner::SynthesisRunner(const models::Cluster& cluster, const CostModel& costs, SynthesisOptions options)
    : cluster_(cluster), costs_(costs), options_(std::move(options)) {
  const Collective c = options_.collective;
  if (c != Collective::AllGather && c != Collective::ReduceScatter && c != Collective::AllReduce) {
    throw support::InputError({"<command line>", 0, 0}, "--op", "allgather, reducescatter or allreduce (what ForestColl's trees build)",
                              "'" + std::string(models::to_string(c)) + "'");
  }
  router_ = std::make_unique<models::Router>(cluster_);
  graph_ = synthesis_graph(cluster_, *router_, options_.gpus);
  const int n = static_cast<int>(options_.gpus.size());
  if (options_.method == Method::Greedy && n > kGreedyMaxRanks) {
    throw support::InputError({"<command line>", 0, 0}, "--method", fmt::format("greedy on at most {} ranks", kGreedyMaxRanks),
                              fmt::format("{} ranks", n), "use --method forest (or auto, which times the forest alone above that)");
  }
  // Above the tree-packing limit the node-level aggregated trees stand in for packed ones.
  // Not where the greedy runs (method auto up to kGreedyMaxRanks): its schedule is the answer there.
  const bool aggregate = !options_.forest.build_trees && (options_.method == Method::Forest ||
                                                          (options_.method == Method::Auto && static_cast<int>(options_.gpus.size()) > kGreedyMaxRanks));
  // The greedy alone still reports ForestColl's optimum (the forest column), not its trees.
  if (options_.method == Method::Greedy) options_.forest.build_trees = false;
  try {
    if (c != Collective::ReduceScatter) allgather_ = allgather_forest(graph_, options_.forest);
    if (c != Collective::AllGather) reducescatter_ = allgather_forest(graph_.reversed(), options_.forest);
  } catch (const SplittingFailed& e) {
    throw support::InputError({"<command line>", 0, 0}, "--ranks", "ranks whose fabric ForestColl's trees can be built on", e.what(),
                              "the optimum (and the lower bound) still hold: --max-tree-ranks below the rank count prints them");
  }
  if (!options_.forest.build_trees && options_.method == Method::Auto && !aggregate) {
    aggregated_refusal_ = fmt::format("method auto times the greedy at up to {} ranks (--method forest builds them)", kGreedyMaxRanks);
  }
  if (aggregate) {
    try {
      if (c != Collective::ReduceScatter) aggregated_ag_ = aggregated_forest(cluster_, *router_, options_.gpus, false, options_.forest);
      if (c != Collective::AllGather) aggregated_rs_ = aggregated_forest(cluster_, *router_, options_.gpus, true, options_.forest);
    } catch (const NotAggregatable& e) {
      aggregated_ag_.reset();
      aggregated_rs_.reset();
      aggregated_refusal_ = e.what();
    } catch (const SplittingFailed& e) {
      aggregated_ag_.reset();
      aggregated_rs_.reset();
      aggregated_refusal_ = std::string("an intra-node forest: ") + e.what();
    }
  }
  CollectiveOptions o;
  o.collective = c;
  o.gpus = options_.gpus;
  o.element_size = options_.element_size;
  o.engine = options_.engine;
  nccl_ = std::make_unique<CollectiveRunner>(cluster_, costs_, o);
  if (uses_greedy()) {
    // The greedy's latency per route: the step latency the engines charge the schedule's sends.
    routes_ = pair_routes(*router_, options_.gpus, costs_.params(Algorithm::Synthesized, Protocol::Simple, cluster_.topology).step_latency);
  }
  bound_ = lower_bound(cluster_, *router_, c, options_.gpus, 0);
}

SynthesisRunner::~SynthesisRunner() = default;

bool SynthesisRunner::uses_greedy() const {
  return options_.method != Method::Forest && static_cast<int>(options_.gpus.size()) <= kGreedyMaxRanks;
}

bool SynthesisRunner::uses_forest() const { return options_.method != Method::Greedy && options_.forest.build_trees; }

int SynthesisRunner::greedy_chunks(std::uint64_t bytes) const {
  const auto n = static_cast<double>(options_.gpus.size());
  int k = options_.chunks > 0 ? options_.chunks : greedy_default_chunks(bytes, static_cast<int>(options_.gpus.size()));
  // Per chunk and pair one send and one receive (twice for AllReduce), one copy per rank.
  const double per = options_.collective == Collective::AllReduce ? 4.0 : 2.0;
  const auto ops = [&](int chunks) { return per * n * (n - 1) * chunks + n; };
  while (k > 1 && ops(k) > static_cast<double>(kMaxScheduleOps)) --k;
  return k;
}

const Forest* SynthesisRunner::greedy_allgather(int chunks, std::uint64_t bytes) {
  if (options_.collective == Collective::ReduceScatter) return nullptr;
  auto& slot = greedy_[{chunks, bytes}].first;
  if (!slot) {
    const double chunk = static_cast<double>(bytes) / static_cast<double>(options_.gpus.size()) / chunks;
    slot = synthesis::greedy_allgather(*routes_, chunks, std::max(chunk, 1.0)).forest;
  }
  return &*slot;
}

const Forest* SynthesisRunner::greedy_reducescatter(int chunks, std::uint64_t bytes) {
  if (options_.collective == Collective::AllGather) return nullptr;
  auto& slot = greedy_[{chunks, bytes}].second;
  if (!slot) {
    const double chunk = static_cast<double>(bytes) / static_cast<double>(options_.gpus.size()) / chunks;
    slot = synthesis::greedy_allgather(reversed(*routes_), chunks, std::max(chunk, 1.0)).forest;
  }
  return &*slot;
}

models::Schedule SynthesisRunner::greedy_schedule(std::uint64_t bytes) {
  const int k = greedy_chunks(bytes);
  const Forest* ag = greedy_allgather(k, bytes);
  const Forest* rs = greedy_reducescatter(k, bytes);
  return forest_schedule(options_.collective, ag, rs, bytes, options_.element_size, 1);
}

GridSchedule SynthesisRunner::greedy_grid_schedule(std::uint64_t bytes) {
  const int k = greedy_chunks(bytes);
  GridSchedule g;
  g.grid = k;
  g.exact = true;
  const std::uint64_t grid_bytes = static_cast<std::uint64_t>(k) * options_.element_size * options_.gpus.size();
  g.schedule = forest_schedule(options_.collective, greedy_allgather(k, bytes), greedy_reducescatter(k, bytes), grid_bytes,
                               options_.element_size, 0);
  return g;
}

int SynthesisRunner::chunks(std::uint64_t bytes) const {
  std::size_t trees = 0;
  std::int64_t edges = 0;
  for (const Forest* f : {allgather(), reducescatter()}) {
    if (f == nullptr) continue;
    trees = std::max(trees, f->trees.size());
    for (const Tree& t : f->trees) edges += static_cast<std::int64_t>(t.edges.size());
  }
  int k = options_.chunks > 0 ? options_.chunks : default_chunks(bytes, static_cast<int>(options_.gpus.size()), trees);
  // Two ops (send, receive) per tree edge and chunk.
  const auto ops = [&](int chunks) { return 2.0 * static_cast<double>(edges) * chunks + static_cast<double>(options_.gpus.size()); };
  while (k > 1 && ops(k) > static_cast<double>(kMaxScheduleOps)) --k;
  if (ops(k) > static_cast<double>(kMaxScheduleOps)) {
    throw ScheduleTooLarge({"<command line>", 0, 0}, "--ranks", fmt::format("a schedule of at most {} ops", kMaxScheduleOps),
                           fmt::format("{:.0f} ops for one chunk per tree ({} tree edges)", ops(1), edges));
  }
  return k;
}

models::Schedule SynthesisRunner::schedule(std::uint64_t bytes) const {
  return forest_schedule(options_.collective, allgather(), reducescatter(), bytes, options_.element_size, chunks(bytes));
}

double SynthesisRunner::fluid_time(const models::Schedule& s) {
  std::unordered_map<models::LinkId, double> load;
  for (int r = 0; r < s.nranks; ++r) {
    for (const models::Op& op : s.ranks[static_cast<std::size_t>(r)].ops) {
      if (op.kind != models::OpKind::Send) continue;
      const auto& p = router_->route(options_.gpus[static_cast<std::size_t>(r)], options_.gpus[static_cast<std::size_t>(op.peer)]);
      for (models::LinkId l : p.links) load[l] += static_cast<double>(op.bytes());
    }
  }
  double t = 0;
  for (const auto& [l, bytes] : load) t = std::max(t, bytes / cluster_.topology.link(l).bandwidth);
  return t;
}

GridSchedule SynthesisRunner::grid_schedule() {
  GridSchedule g;
  int grid = 1;
  bool exact = true;
  for (const Forest* f : {allgather(), reducescatter()}) {
    if (f == nullptr) continue;
    const int e = exact_grid(*f, 8, 64);
    exact = exact && e > 0;
    grid = std::lcm(grid, e > 0 ? e : 64);
  }
  if (grid > 64) {  // two exact grids whose common multiple is too fine
    grid = 64;
    exact = false;
  }
  std::optional<Forest> ag, rs;
  if (allgather()) ag = on_grid(*allgather(), grid);
  if (reducescatter()) rs = on_grid(*reducescatter(), grid);
  const std::uint64_t bytes = static_cast<std::uint64_t>(grid) * options_.element_size * options_.gpus.size();
  g.schedule = forest_schedule(options_.collective, ag ? &*ag : nullptr, rs ? &*rs : nullptr, bytes, options_.element_size, 0);
  g.grid = grid;
  g.exact = exact;
  if (!exact) {
    const models::Schedule fine = forest_schedule(options_.collective, allgather(), reducescatter(), bytes * 64, options_.element_size, 1);
    g.fluid_ratio = fluid_time(g.schedule) * 64 / fluid_time(fine);
  }
  return g;
}

MscclFile read_msccl_file(const std::string& path, const support::SourceLocation& where, const std::string& key) {
  MscclFile f;
  f.path = path;
  f.text = support::read_input_file(path, support::InputFileRequest("an MSCCL XML schedule", support::kMaxInputFileBytes, where, key));
  const MscclHeader h = read_msccl_header(f.text, path);
  check_msccl_computes(f.text, h, path);
  f.collective = h.collective;
  f.ranks = h.ranks;
  f.chunks_per_loop = h.chunks_per_loop;
  return f;
}

void check_msccl_computes(const std::string& text, const MscclHeader& h, const std::string& path) {
  // The schedule's structure does not depend on the size: executed on integers at one element
  // per chunk, it proves (or refutes) the file for every size.
  const std::uint64_t smallest = static_cast<std::uint64_t>(h.chunks_per_loop) * 4;
  const models::Schedule at_smallest = from_msccl_xml(text, path, smallest, 4);
  // verify() holds one 64-bit integer per element of every rank's buffers.
  const models::BufferSizes b = models::buffer_sizes(h.collective, smallest, h.ranks);
  double elements = 0;
  for (const models::RankProgram& r : at_smallest.ranks) elements += static_cast<double>(b.input + b.output + r.scratch_bytes) / 4.0;
  if (elements * 8.0 > 4.0 * 1073741824.0) {
    throw support::InputError(h.where, "algo", "a schedule whose buffers at one element per chunk fit in 4 GiB to be checked",
                              fmt::format("{:.0f} elements over its {} ranks (nchunksperloop, s_chunks)", elements, h.ranks));
  }
  const models::VerifyResult v = models::verify(at_smallest);
  if (!v.ok) {
    throw support::InputError(h.where, "algo",
                              fmt::format("an MSCCL schedule that computes {} (checked on integers at one element per chunk)",
                                          models::to_string(h.collective)),
                              v.error);
  }
}

models::Schedule MscclFile::schedule(std::uint64_t bytes) const { return from_msccl_xml(text, path, bytes, 1); }

SynthesisChoice SynthesisRunner::best(std::uint64_t bytes) {
  if (!uses_forest() && !uses_greedy()) throw std::invalid_argument("no synthesized trees to build a schedule from");
  if (!engine_) engine_ = sim::make_engine(options_.engine, cluster_);
  std::optional<SynthesisChoice> out;
  const auto take = [&](Method m, int chunks, models::Schedule s) {
    const double t = nccl_->run_schedule(s, Algorithm::Synthesized, Protocol::Simple, *engine_).makespan;
    if (out && out->time <= t) return;
    out = SynthesisChoice{std::move(s), m, chunks, t};
  };
  if (uses_forest()) {
    const int k = chunks(bytes);
    take(Method::Forest, k, forest_schedule(options_.collective, allgather(), reducescatter(), bytes, options_.element_size, k));
  }
  if (uses_greedy()) take(Method::Greedy, greedy_chunks(bytes), greedy_schedule(bytes));
  return std::move(*out);
}

sim::CostParams SynthesisRunner::cost_params(const models::Schedule& s) const {
  return nccl_->cost_params(Algorithm::Synthesized, Protocol::Simple, s);
}

SynthesisRow SynthesisRunner::run(std::uint64_t bytes) {
  SynthesisRow row;
  row.bytes = bytes;
  if (!engine_ && (uses_forest() || uses_greedy())) engine_ = sim::make_engine(options_.engine, cluster_);
  const auto take = [&](Method m, int chunks, const models::Schedule& s) {
    const double t = nccl_->run_schedule(s, Algorithm::Synthesized, Protocol::Simple, *engine_).makespan;
    (m == Method::Forest ? row.forest_schedule_time : row.greedy_time) = t;
    if (row.time > 0 && row.time <= t) return;
    row.time = t;
    row.method = m;
    row.chunks = chunks;
    row.ops = s.op_count();
    row.fluid_time = fluid_time(s);
  };
  if (uses_forest()) {
    const int k = chunks(bytes);
    take(Method::Forest, k, forest_schedule(options_.collective, allgather(), reducescatter(), bytes, options_.element_size, k));
  }
  if (uses_greedy()) take(Method::Greedy, greedy_chunks(bytes), greedy_schedule(bytes));
  row.bound = bound_.time(static_cast<double>(bytes));
  const double block = static_cast<double>(bytes) / static_cast<double>(options_.gpus.size());
  for (const Forest* f : {allgather(), reducescatter()}) {
    if (f != nullptr) row.forest_time += block / f->rate();
  }
  for (const AggregatedForest* f : {aggregated_allgather(), aggregated_reducescatter()}) {
    if (f != nullptr) row.aggregated_time += block / f->rate;
  }
  row.nccl = nccl_->run(bytes);
  return row;
}

}  // namespace ccsim::planner::synthesis
