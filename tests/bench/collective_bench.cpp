// Benchmark: one collective simulation (schedule generation + engine run), timed, with peak
// memory of this process and of the flow engine's simulation child. Run by scripts/bench.
//
// Usage: ccsim_bench_collective SCENARIO ENGINE ALGORITHM GRANULARITY RANKS BYTES [REPEATS] [CHANNELS]
//   e.g. ccsim_bench_collective scenarios/h100-16k-rail.yaml flow ring phase 16384 1073741824 3
// ENGINE: analytic, flow, or analytic-reference (the analytic engine re-solving every flow at
// every event, as before its incremental sharing). direct and pairwise run AlltoAll, the
// other algorithms AllReduce.
// Prints: ranks, ops, transfers, simulated time, median wall time of the runs, peak RSS.
// GRANULARITY phase falls back to step for an algorithm without a phase form (as the planner's
// auto mode does); the line names the granularity that ran.
// A schedule over the planner's size limit (planner::kMaxScheduleOps, e.g. direct AlltoAll above
// 2,048 ranks) is refused as `ccsim collective` refuses it: "refused: ..." on stderr, exit 2.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/engine.hpp"

int main(int argc, char** argv) {
  using namespace ccsim;
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s SCENARIO ENGINE ALGORITHM GRANULARITY RANKS BYTES [REPEATS] [CHANNELS]\n", argv[0]);
    return 2;
  }
  const auto catalog = models::Catalog::load(models::Catalog::default_dir());
  const auto cluster = models::build_cluster(models::load_scenario(argv[1], catalog).cluster);
  const std::string engine_name = argv[2];
  const auto algorithm = planner::parse_algorithm(argv[3]);
  const std::string granularity = argv[4];
  const int ranks = std::atoi(argv[5]);
  const auto bytes = static_cast<std::uint64_t>(std::strtoull(argv[6], nullptr, 10));
  const int repeats = argc > 7 ? std::max(1, std::atoi(argv[7])) : 3;
  const int channels = argc > 8 ? std::max(1, std::atoi(argv[8])) : 1;  // rings / tree pairs (default 1)
  if (!algorithm || ranks < 1 || static_cast<std::size_t>(ranks) > cluster.topology.gpus().size()) {
    std::fprintf(stderr, "bad algorithm or rank count\n");
    return 2;
  }
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  planner::AlgorithmRequest req;
  req.nranks = ranks;
  req.channels = channels;
  if (*algorithm == planner::Algorithm::Direct || *algorithm == planner::Algorithm::Pairwise) {
    req.collective = models::Collective::AlltoAll;
  }
  req.bytes = bytes;
  req.ranks_per_node = 8;
  req.granularity = granularity == "phase" ? models::Granularity::Phase : models::Granularity::Step;
  if (req.granularity == models::Granularity::Phase && !planner::unsupported_reason(*algorithm, req).empty()) {
    req.granularity = models::Granularity::Step;
  }
  if (const std::string why = planner::unsupported_reason(*algorithm, req); !why.empty()) {
    std::fprintf(stderr, "%s cannot run here: %s\n", argv[3], why.c_str());
    return 2;
  }
  // The planner's schedule limit, checked as CollectiveRunner::simulate checks it.
  req.max_ops = planner::kMaxScheduleOps;
  if (const double estimate = planner::estimated_ops(*algorithm, req); estimate > static_cast<double>(planner::kMaxScheduleOps)) {
    std::fprintf(stderr, "refused: %s on %d ranks: %.0f ops, above the limit of %llu\n", argv[3], ranks, estimate,
                 static_cast<unsigned long long>(planner::kMaxScheduleOps));
    return 2;
  }
  sim::Plan plan;
  plan.rank_gpu.assign(cluster.topology.gpus().begin(), cluster.topology.gpus().begin() + ranks);
  plan.cost = costs.params(*algorithm, planner::Protocol::Simple, cluster.topology);
  std::unique_ptr<sim::Engine> engine =
      engine_name == "analytic-reference"
          ? std::make_unique<sim::AnalyticEngine>(cluster, sim::AnalyticEngine::Sharing::Reference)
          : sim::make_engine(engine_name, cluster);
  std::vector<double> wall;
  double simulated = 0;
  std::size_t ops = 0, transfers = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    models::Schedule schedule;
    try {
      schedule = planner::generate(*algorithm, req);
    } catch (const planner::ScheduleTooLarge&) {
      std::fprintf(stderr, "refused: %s on %d ranks: more than %llu ops\n", argv[3], ranks,
                   static_cast<unsigned long long>(planner::kMaxScheduleOps));
      return 2;
    }
    plan.schedule = &schedule;
    const sim::Timeline tl = engine->run(plan);
    const auto t1 = std::chrono::steady_clock::now();
    wall.push_back(std::chrono::duration<double>(t1 - t0).count());
    simulated = tl.makespan;
    ops = schedule.op_count();
    transfers = tl.transfers;
  }
  std::sort(wall.begin(), wall.end());
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  std::printf("%-8s %-12s %-6s %6d ranks  %9zu ops  %9zu transfers  simulated %.6g s  wall median %.6f s  RSS %.0f MiB (child %.0f MiB)\n",
              engine_name.c_str(), argv[3], std::string(models::to_string(req.granularity)).c_str(), ranks, ops, transfers, simulated, wall[wall.size() / 2],
              static_cast<double>(self.ru_maxrss) / 1024.0, static_cast<double>(children.ru_maxrss) / 1024.0);
  return 0;
}
