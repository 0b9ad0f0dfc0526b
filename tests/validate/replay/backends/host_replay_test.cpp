// The host replay backend (validate/replay/backends/host_backend.cpp) across the test matrix of
// tests/validate/replay/replay_matrix.hpp on 2-8 ranks: every algorithm of every collective at uneven
// sizes computes the collective (0 wrong elements, checked against data.hpp's defined results),
// with one time per timed iteration and one MeasuredOp per op of every rank; a corrupted
// schedule is caught. The mpi backend runs the same matrix under mpirun
// (tests/validate/replay/backends/mpi_replay_driver.cpp); here, without a launcher, it must refuse to start.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "tests/validate/replay/replay_matrix.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/replay.hpp"

using namespace ccsim;
using validate::replay::DataType;

namespace {

validate::replay::ReplayConfig one_iteration(DataType t = DataType::Float) {
  validate::replay::ReplayConfig c;
  c.type = t;
  c.warmup = 0;
  c.iters = 1;
  return c;
}

/// Replays the matrix of `n` ranks on the host backend and checks every case.
void check_matrix(int n, bool large) {
  const auto backend = validate::replay::make_backend("host");
  const auto cases = test::replay_matrix(n, 4, large);
  REQUIRE(cases.size() >= 20);  // ring alone: 5 collectives × 2 channel counts × 2 sizes
  for (const auto& c : cases) {
    INFO(c.name);
    // The generator's own integer check first (small sizes: it takes seconds at 1 MiB): a
    // failure below is then the backend's.
    if (c.schedule.bytes < 65536) {
      const models::VerifyResult v = models::verify(c.schedule);
      INFO(v.error);
      CHECK(v.ok);
    }
    const auto r = backend->run(c.schedule, one_iteration());
    INFO(r.first_wrong);
    CHECK(r.wrong == 0);
    CHECK(r.bytes == c.schedule.bytes);
    REQUIRE(r.iteration_times.size() == 1);
    CHECK(r.iteration_times[0] > 0);
    REQUIRE(r.ops.size() == 1);
    CHECK(r.ops[0].size() == c.schedule.op_count());
  }
}

}  // namespace

// The small uneven sizes on every count from 2 to 8 ranks; the 1 MiB-scale sizes on 4 and 7
// (a power of two and an odd count) are [heavy] (ctest label heavy: seconds here, a minute in
// the sanitizer build, which runs the small ones through the same code).
TEST_CASE("host backend replays every algorithm of every collective on 2 and 3 ranks", "[replay]") {
  check_matrix(2, false);
  check_matrix(3, false);
}
TEST_CASE("host backend replays every algorithm of every collective on 4 and 5 ranks", "[replay]") {
  check_matrix(4, false);
  check_matrix(5, false);
}
TEST_CASE("host backend replays every algorithm of every collective on 6, 7 and 8 ranks", "[replay]") {
  check_matrix(6, false);
  check_matrix(7, false);
  check_matrix(8, false);
}
TEST_CASE("host backend replays every algorithm of every collective on 4 ranks, 1 MiB-scale sizes", "[replay][heavy]") { check_matrix(4, true); }
TEST_CASE("host backend replays every algorithm of every collective on 7 ranks, 1 MiB-scale sizes", "[replay][heavy]") { check_matrix(7, true); }

TEST_CASE("host backend: element types with real arithmetic", "[replay]") {
  const auto backend = validate::replay::make_backend("host");
  // int8 sums wrap modulo 2^8 over 5 ranks (inputs up to 61: sums up to 305); the others are exact.
  for (DataType t : {DataType::Int8, DataType::Uint8, DataType::Int32, DataType::Uint32, DataType::Int64, DataType::Uint64, DataType::Double}) {
    const std::uint32_t e = validate::replay::size_of(t);
    for (planner::Algorithm a : {planner::Algorithm::Ring, planner::Algorithm::HalvingDoubling, planner::Algorithm::Nvls}) {
      const models::Schedule s = planner::generate(a, test::replay_request(models::Collective::AllReduce, 5, 41 * e, 2, e));
      const auto r = backend->run(s, one_iteration(t));
      INFO(std::string(validate::replay::to_string(t)) + " " + std::string(planner::to_string(a)) + ": " + r.first_wrong);
      CHECK(r.wrong == 0);
    }
  }
}

TEST_CASE("host backend: a corrupted schedule reports wrong elements", "[replay]") {
  const auto backend = validate::replay::make_backend("host");
  for (int n : {2, 3, 4}) {
    // Rank 1's first receive lands one element off: the element it should have written keeps
    // the poison (-1), so at least one element of rank 1's output is wrong.
    const auto r = backend->run(test::corrupted_ring_allreduce(n, static_cast<std::uint64_t>(n) * 64), one_iteration());
    CHECK(r.wrong > 0);
    CHECK(r.first_wrong.rfind("rank ", 0) == 0);
  }
}

TEST_CASE("the replay's expected values, computed by hand", "[replay]") {
  // in(r, i) = 1 + (29 r + 7 i + ⌊i/61⌋) mod 61 (validate/replay/data.hpp).
  CHECK(validate::replay::input_value(0, 0) == 1);
  CHECK(validate::replay::input_value(1, 0) == 30);
  CHECK(validate::replay::input_value(2, 1) == 1 + (58 + 7) % 61);  // 5
  // AllReduce over 2 ranks, element 0: 1 + 30 = 31 on both; 31 on rank 0 is right, 30 wrong.
  float out[1] = {31};
  std::string first;
  CHECK(validate::replay::count_wrong(DataType::Float, models::Collective::AllReduce, 0, 0, 2, out, 1, first) == 0);
  out[0] = 30;
  CHECK(validate::replay::count_wrong(DataType::Float, models::Collective::AllReduce, 0, 0, 2, out, 1, first) == 1);
  CHECK(first == "rank 0 element 0: expected 31, found 30");
}

#ifdef CCSIM_HAVE_MPI
TEST_CASE("mpi backend refuses to start without an MPI launcher", "[replay]") {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr) {
    WARN("started by an MPI launcher: the no-launcher refusal is not testable here");
    return;
  }
  CHECK_THROWS_WITH(validate::replay::make_backend("mpi"), Catch::Matchers::StartsWith("the mpi backend runs under mpirun: mpirun -n N ccsim replay ..."));
}
#endif
