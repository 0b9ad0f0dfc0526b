#pragma once
// Synthesizes a collective's schedule for a placement and times it: the synthesis graph of the
// ranks (synthesis_graph.hpp), the ForestColl forests (forest.hpp: AllGather's, and
// ReduceScatter's on the reversed graph) and/or the greedy's trees per chunk count (greedy.hpp,
// on the router's routes), their Schedule per size (forest_schedule.hpp) timed on the analytic
// or flow engine with the cost table's `default` row and Simple (the Synthesized registry
// entry), beside what NCCL's tuner would run (CollectiveRunner in auto mode). Method auto times
// both per size and keeps the faster.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"
#include "planner/collective/bounds.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/synthesis/aggregated.hpp"
#include "planner/synthesis/forest.hpp"
#include "planner/synthesis/greedy.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "planner/synthesis/synthesis_graph.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::planner::synthesis {

/// How a schedule is synthesized.
enum class Method : std::uint8_t {
  Forest,  ///< ForestColl's throughput-optimal trees
  Greedy,  ///< the latency-aware greedy (greedy.hpp), re-run per chunk count
  Auto,    ///< both timed per size, the faster kept (the greedy only up to kGreedyMaxRanks)
};
std::string_view to_string(Method m);  ///< "forest", "greedy", "auto"

/// Ranks up to which the greedy runs (its matching wakes O(N²) routes per arrival, N²·chunks
/// arrivals; measured on 2 cores, AllGather on 128 H100 of h100-1024gpu-2to1.yaml: 0.4 s at
/// 1 MiB (1 chunk), 2.3 s at 512 MiB (8 chunks), schedule timing included). Above, method greedy is
/// refused and auto times the forest alone.
inline constexpr int kGreedyMaxRanks = 128;

/// Chunks per rank's block the greedy cuts at `bytes` (the size S) over `ranks` ranks when none
/// is asked for: one per 512 KiB of a block (NCCL's Simple chunk), 1 to 8.
int greedy_default_chunks(std::uint64_t bytes, int ranks);

struct SynthesisOptions {
  models::Collective collective = models::Collective::AllGather;
  std::vector<models::DeviceId> gpus;  ///< GPU of each rank, in rank order
  std::uint32_t element_size = 4;
  /// Forest: pipeline chunks per tree share; greedy: chunks per rank's block. 0: by size
  /// (default_chunks(), greedy_default_chunks()).
  int chunks = 0;
  models::EngineKind engine = models::EngineKind::Analytic;
  Method method = Method::Forest;
  ForestOptions forest;
};

/// The schedule on a chunk grid (forest_schedule's grid mode): what MSCCL XML can express.
struct GridSchedule {
  models::Schedule schedule;  ///< at the smallest size the grid allows (one element per chunk)
  int grid = 0;               ///< chunks per rank's block
  bool exact = false;         ///< the trees' weights are exact on the grid (else rounded: on_grid)
  double fluid_ratio = 1;     ///< the rounded schedule's fluid time ÷ the exact trees' (1 when exact)
};

/// One size: the synthesized schedule's time and what NCCL would run.
struct SynthesisRow {
  std::uint64_t bytes = 0;
  double time = 0;            ///< seconds, the synthesized schedule on the engine (0: no trees built)
  double bound = 0;           ///< seconds, planner::lower_bound (latency, volume, cuts, the forest cut)
  /// Seconds, the forests' bandwidth term: (S/N)/x* for AllGather and ReduceScatter (the max-flow
  /// bound's, ForestColl's optimum), their sum for AllReduce (RS + AG on optimal trees).
  double forest_time = 0;
  /// Seconds, the schedule's fluid-limit time on the engines' routes (fluid_time): forest_time
  /// when its trees load the links as the synthesis planned.
  double fluid_time = 0;
  /// Seconds, the node-level aggregated trees' bandwidth term (aggregated.hpp): (S/N)/rate on
  /// the engines' routes (AllReduce: ReduceScatter's plus AllGather's); 0 when they are not built
  /// (trees packed below --max-tree-ranks, or a placement they do not fit).
  double aggregated_time = 0;
  int chunks = 1;             ///< the chosen method's: pipeline chunks per tree (forest) or chunks per block (greedy)
  std::size_t ops = 0;
  Method method = Method::Forest;  ///< the method whose schedule `time` is (never Auto)
  double forest_schedule_time = 0; ///< seconds, the forest's schedule on the engine (0: not timed)
  double greedy_time = 0;          ///< seconds, the greedy's schedule on the engine (0: not timed)
  CollectiveResult nccl;      ///< NCCL's choice (auto) for the same ranks and size
};

/// The schedule a method synthesized at one size, and its time alone on the runner's engine.
struct SynthesisChoice {
  models::Schedule schedule;       ///< Step granularity, one group
  Method method = Method::Forest;  ///< never Auto
  int chunks = 1;                  ///< as SynthesisRow::chunks
  double time = 0;                 ///< seconds
};

/// An MSCCL XML file as a lowering reads it (strategy.algorithms synth:PATH): what it says about
/// itself, and its text for the schedules.
struct MscclFile {
  std::string path;
  std::string text;
  models::Collective collective = models::Collective::AllGather;
  int ranks = 0;
  std::int64_t chunks_per_loop = 1;
  /// The file's Schedule at nccl-tests size `bytes` (a whole number of loops of its chunks, one
  /// byte per element). Throws what from_msccl_xml throws.
  models::Schedule schedule(std::uint64_t bytes) const;
};

/// Reads the MSCCL XML file `path` and proves it computes its collective (check_msccl_computes).
/// Throws support::InputError at `where` under `key` when it cannot be read (missing, a
/// directory, a FIFO or other special file, too large), and what read_msccl_header and
/// check_msccl_computes throw (at the file's own line and column).
MscclFile read_msccl_file(const std::string& path, const support::SourceLocation& where, const std::string& key);

/// Executes the MSCCL schedule `text` (header `h`, from `path`) on integers at one element per
/// chunk: its structure does not depend on the size, so this proves or refutes it for every size.
/// Throws support::InputError at the <algo> element (key "algo") when it does not compute its
/// collective (a wrong offset, a deadlock, unmatched sends) or its buffers would exceed 4 GiB.
void check_msccl_computes(const std::string& text, const MscclHeader& h, const std::string& path);

class SynthesisRunner {
 public:
  /// Builds the graph and the forests (the optimum alone for method greedy). Throws
  /// support::InputError for a collective the method cannot synthesize (key --op), ranks it
  /// cannot join (synthesis_graph), method greedy above kGreedyMaxRanks (key --method), what
  /// allgather_forest throws otherwise.
  SynthesisRunner(const models::Cluster& cluster, const CostModel& costs, SynthesisOptions options);
  SynthesisRunner(const SynthesisRunner&) = delete;
  SynthesisRunner& operator=(const SynthesisRunner&) = delete;
  ~SynthesisRunner();

  const SynthesisGraph& graph() const { return graph_; }
  /// AllGather's forest (AllGather, AllReduce), else null.
  const Forest* allgather() const { return allgather_ ? &*allgather_ : nullptr; }
  /// ReduceScatter's forest, on the reversed graph (ReduceScatter, AllReduce), else null.
  const Forest* reducescatter() const { return reducescatter_ ? &*reducescatter_ : nullptr; }
  /// Without packed trees (options.forest.build_trees false, method forest or auto): the
  /// node-level aggregated trees of AllGather / ReduceScatter (aggregated.hpp), else null.
  const AggregatedForest* aggregated_allgather() const { return aggregated_ag_ ? &*aggregated_ag_ : nullptr; }
  const AggregatedForest* aggregated_reducescatter() const { return aggregated_rs_ ? &*aggregated_rs_ : nullptr; }
  /// Why the aggregated trees were not built (NotAggregatable's reason); empty when they were or were not tried.
  const std::string& aggregated_refusal() const { return aggregated_refusal_; }
  /// Pipeline chunks at `bytes`: the option, else default_chunks(), lowered until the schedule
  /// fits kMaxScheduleOps. Throws ScheduleTooLarge when one chunk does not fit.
  int chunks(std::uint64_t bytes) const;
  /// The forest's Step-granularity Schedule at `bytes` (a whole number of elements per rank).
  models::Schedule schedule(std::uint64_t bytes) const;
  /// Whether the greedy runs here (method greedy or auto, at most kGreedyMaxRanks ranks).
  bool uses_greedy() const;
  /// Whether the forest's trees are built (method forest or auto, options.forest.build_trees).
  bool uses_forest() const;
  /// Chunks per block the greedy cuts at `bytes`: the option, else greedy_default_chunks(),
  /// lowered until its schedule fits kMaxScheduleOps.
  int greedy_chunks(std::uint64_t bytes) const;
  /// The greedy's Step-granularity Schedule at `bytes` (a whole number of elements per rank).
  models::Schedule greedy_schedule(std::uint64_t bytes);
  /// The greedy's AllGather / ReduceScatter trees for `chunks` chunks per block at `bytes`
  /// (computed once per chunk count and size; null for a collective that does not use them).
  const Forest* greedy_allgather(int chunks, std::uint64_t bytes);
  const Forest* greedy_reducescatter(int chunks, std::uint64_t bytes);
  /// The schedule on the smallest chunk grid of at least 8 chunks per block that holds the trees'
  /// weights exactly, at most 64; else on 64 chunks with the weights rounded (on_grid).
  GridSchedule grid_schedule();
  /// The greedy's schedule on its own grid (chunks per block at `bytes`, exact): what --out
  /// writes when the greedy is the method chosen at the largest size.
  GridSchedule greedy_grid_schedule(std::uint64_t bytes);
  /// Times the schedule at `bytes` and NCCL's choice beside it. Without trees
  /// (options.forest.build_trees false) only the bound, the optimum's time and NCCL's choice:
  /// time, fluid_time, chunks and ops stay 0.
  SynthesisRow run(std::uint64_t bytes);
  /// The synthesized schedule at `bytes` alone (no NCCL run, no bound): the method's, or under
  /// Auto the faster of the forest's and the greedy's on the runner's engine. Throws
  /// std::invalid_argument when no trees are built (options.forest.build_trees false), and what
  /// schedule() and greedy_schedule() throw.
  SynthesisChoice best(std::uint64_t bytes);
  /// The cost parameters the runner times schedule `s` with (the Synthesized entry, Simple).
  sim::CostParams cost_params(const models::Schedule& s) const;
  /// Fluid-limit time of `s` on this placement: the largest bytes ÷ bandwidth over the links its
  /// sends cross on the routes the engines take (models::Router, the first ECMP hash). A schedule
  /// reaching the forests' bandwidth term has forest_time == fluid_time.
  double fluid_time(const models::Schedule& s);

 private:
  const models::Cluster& cluster_;
  const CostModel& costs_;
  SynthesisOptions options_;
  std::unique_ptr<models::Router> router_;
  SynthesisGraph graph_;
  std::optional<Forest> allgather_, reducescatter_;
  std::optional<AggregatedForest> aggregated_ag_, aggregated_rs_;
  std::string aggregated_refusal_;
  std::optional<PairRoutes> routes_;
  /// Greedy trees by (chunks per block, size): AllGather's, ReduceScatter's. The size is in
  /// the key because the greedy's matching depends on the chunk's bytes, not only their count.
  std::map<std::pair<int, std::uint64_t>, std::pair<std::optional<Forest>, std::optional<Forest>>> greedy_;
  std::unique_ptr<CollectiveRunner> nccl_;
  std::unique_ptr<sim::Engine> engine_;  ///< times the synthesized schedules (its route caches persist)
  LowerBound bound_;
};

}  // namespace ccsim::planner::synthesis
