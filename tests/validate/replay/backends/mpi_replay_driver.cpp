// Test driver of the mpi replay backend, run under mpirun by tests/validate/replay/backends/mpi_replay_test.sh
// (ctest label mpi). Every rank runs the same checks; rank 0 judges and prints, and exits 1 when
// one failed (mpirun then exits non-zero):
//   1. the matrix (tests/validate/replay/replay_matrix.hpp): every algorithm of every collective at
//      uneven sizes replays with 0 wrong elements, one iteration time per timed iteration
//      (positive), and one MeasuredOp per op of every rank per iteration;
//   2. other element types (8-bit wrapping sums, int32, uint64, double) on ring and nvls
//      AllReduce and ReduceScatter;
//   3. a ring AllReduce with one Recv's destination shifted by an element reports wrong > 0
//      and names the first wrong element;
//   4. a schedule for one rank more than mpirun started throws ReplayError with the message
//      "schedule has N+1 ranks, mpirun started N: use --ranks N or mpirun -n N+1".
// Usage: mpi_replay_driver [--small]   (--small: leave out the 1 MiB-scale sizes)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "tests/validate/replay/replay_matrix.hpp"
#include "validate/replay/replay.hpp"

using namespace ccsim;
using validate::replay::DataType;

namespace {

int failures = 0;

void fail(bool reporter, const std::string& what) {
  ++failures;
  if (reporter) std::fprintf(stderr, "FAIL %s\n", what.c_str());
}

/// Replays `c` and, on rank 0, checks its result; returns the result.
validate::replay::SizeResult replay_case(validate::replay::Backend& backend, const test::ReplayCase& c, DataType type, bool expect_correct) {
  validate::replay::ReplayConfig config;
  config.type = type;
  config.warmup = 1;
  config.iters = 2;
  const validate::replay::SizeResult r = backend.run(c.schedule, config);
  if (!backend.reporter()) return r;
  const std::string name = fmt::format("{} ({})", c.name, validate::replay::to_string(type));
  if (expect_correct && r.wrong != 0) fail(true, fmt::format("{}: {} wrong elements, first: {}", name, r.wrong, r.first_wrong));
  if (r.iteration_times.size() != 2) fail(true, fmt::format("{}: {} iteration times, expected 2", name, r.iteration_times.size()));
  for (double t : r.iteration_times)
    if (!(t > 0)) fail(true, fmt::format("{}: iteration time {} s, expected > 0", name, t));
  if (r.ops.size() != 2) {
    fail(true, fmt::format("{}: op records of {} iterations, expected 2", name, r.ops.size()));
  } else {
    for (const auto& iteration : r.ops) {
      if (iteration.size() != c.schedule.op_count()) {
        fail(true, fmt::format("{}: {} op records, expected {} (every op of every rank)", name, iteration.size(), c.schedule.op_count()));
        break;
      }
      for (const auto& op : iteration) {
        if (op.rank < 0 || op.rank >= c.schedule.nranks || op.op >= c.schedule.ranks[static_cast<std::size_t>(op.rank)].ops.size() || op.end < op.start) {
          fail(true, fmt::format("{}: bad op record rank {} op {} [{}, {}]", name, op.rank, op.op, op.start, op.end));
          break;
        }
      }
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  std::unique_ptr<validate::replay::Backend> backend;
  try {
    backend = validate::replay::make_backend("mpi");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL make_backend(\"mpi\"): %s\n", e.what());
    return 1;
  }
  const int n = backend->world_ranks();
  const bool reporter = backend->reporter();
  if (reporter) std::printf("%s\n", backend->describe(n).c_str());
  try {
    // 1. The matrix.
    const std::vector<test::ReplayCase> cases = test::replay_matrix(n, 4, !small);
    for (const auto& c : cases) {
      const auto begin = std::chrono::steady_clock::now();
      replay_case(*backend, c, DataType::Float, true);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      if (reporter && seconds > 1) std::printf("slow: %s took %.1f s\n", c.name.c_str(), seconds);
    }
    const auto nvls = std::count_if(cases.begin(), cases.end(), [](const test::ReplayCase& c) { return !c.schedule.switch_groups.empty(); });
    if (nvls == 0) fail(reporter, "the matrix holds no schedule with in-switch ops (nvls): the switch emulation went untested");
    if (reporter) std::printf("%zu schedules replayed, %zu with in-switch ops\n", cases.size(), static_cast<std::size_t>(nvls));

    // 2. Element types.
    for (DataType t : {DataType::Int8, DataType::Uint8, DataType::Int32, DataType::Uint64, DataType::Double}) {
      const std::uint32_t e = validate::replay::size_of(t);
      for (planner::Algorithm a : {planner::Algorithm::Ring, planner::Algorithm::Nvls}) {
        for (models::Collective coll : {models::Collective::AllReduce, models::Collective::ReduceScatter}) {
          const std::uint64_t bytes = 1021 * e * static_cast<std::uint64_t>(n);  // 1021 elements per rank: past vector widths
          test::ReplayCase c{fmt::format("{} {} {} ranks {} B", models::to_string(coll), planner::to_string(a), n, bytes),
                             planner::generate(a, test::replay_request(coll, n, bytes, 2, e))};
          replay_case(*backend, c, t, true);
        }
      }
    }

    // 3. A corrupted schedule is caught: a shifted Recv leaves one element of rank 1's
    //    output unwritten (poison) and writes one past its slice.
    {
      test::ReplayCase c{"corrupted ring AllReduce", test::corrupted_ring_allreduce(n, static_cast<std::uint64_t>(n) * 4 * 16)};
      const auto r = replay_case(*backend, c, DataType::Float, false);
      if (reporter && (r.wrong == 0 || r.first_wrong.empty())) {
        fail(true, fmt::format("corrupted schedule: expected wrong > 0 and a first wrong element, found {} and '{}'", r.wrong, r.first_wrong));
      }
      if (reporter) std::printf("corrupted schedule: %llu wrong, first: %s\n", static_cast<unsigned long long>(r.wrong), r.first_wrong.c_str());
    }

    // 4. A schedule for another rank count is refused on every rank.
    {
      const models::Schedule other =
          planner::generate(planner::Algorithm::Ring, test::replay_request(models::Collective::AllReduce, n + 1, 64, 1, 4));
      const std::string expected = fmt::format("schedule has {} ranks, mpirun started {}: use --ranks {} or mpirun -n {}", n + 1, n, n, n + 1);
      try {
        backend->run(other, {});
        fail(reporter, "a schedule of n + 1 ranks: expected ReplayError, it ran");
      } catch (const validate::replay::ReplayError& e) {
        if (expected != e.what()) fail(reporter, fmt::format("rank count message: expected '{}', found '{}'", expected, e.what()));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL (rank error): %s\n", e.what());
    return 1;
  }
  if (reporter) std::printf("%s\n", failures == 0 ? "all passed" : fmt::format("{} failures", failures).c_str());
  return failures == 0 ? 0 : 1;
}
