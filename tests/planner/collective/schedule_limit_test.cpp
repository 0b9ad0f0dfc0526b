// The schedule size limit: closed-form op counts match what the generators make, the
// generator stops at AlgorithmRequest::max_ops, and the runner skips a candidate that is too
// large when another fits, and refuses (ScheduleTooLarge, an InputError) when none does.

#include <catch2/catch.hpp>

#include <cmath>

#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;

namespace {
/// Bruck AlltoAll's ops counted by hand, block by block (independent of estimated_ops' formula).
double bruck_all_to_all_ops(int n) {
  double per_rank = 2.0 * n;
  for (int d = 1; d < n; d *= 2) {
    int moving = 0;
    for (int i = 0; i < n; ++i) moving += (i & d) != 0 ? 1 : 0;
    per_rank += 3 + 2 * moving;
  }
  return n * per_rank;
}
}  // namespace

TEST_CASE("estimated_ops is the generated op count of the quadratic schedules", "[planner][limit]") {
  // direct AlltoAll/AllGather: n copies + n(n−1) sends + n(n−1) receives = n + 2n(n−1);
  // pairwise: n copies + n(n−1) × (send, receive, join) = n + 3n(n−1);
  // ring at step granularity, c channels: ReduceScatter/AllGather c·n·2(n−1), AllReduce twice that;
  // bruck AllGather: n(n + 1 + 3⌈log2 n⌉); bruck AlltoAll: n(2n + Σ_d (3 + 2·#{i < n : i & d})),
  // d = 1, 2, 4, ... < n (n = 5: d = 1, 2, 4 move 2, 2, 1 blocks: 5·(10 + 7 + 7 + 5) = 145).
  for (int n : {2, 5, 8, 13}) {
    struct Case {
      Algorithm a;
      Collective c;
      int channels;
      double expected;
    };
    const double N = n;
    for (const Case& k : {Case{Algorithm::Direct, Collective::AlltoAll, 1, N + 2 * N * (N - 1)},
                          Case{Algorithm::Direct, Collective::AllGather, 1, N + 2 * N * (N - 1)},
                          Case{Algorithm::Pairwise, Collective::AlltoAll, 1, N + 3 * N * (N - 1)},
                          Case{Algorithm::Ring, Collective::AllReduce, 2, 2 * N * 4 * (N - 1)},
                          Case{Algorithm::Ring, Collective::ReduceScatter, 2, 2 * N * 2 * (N - 1)},
                          Case{Algorithm::Ring, Collective::AllGather, 3, 3 * N * 2 * (N - 1)},
                          Case{Algorithm::Bruck, Collective::AllGather, 1, N * (N + 1 + 3 * std::ceil(std::log2(N)))},
                          Case{Algorithm::Bruck, Collective::AlltoAll, 1, bruck_all_to_all_ops(n)}}) {
      planner::AlgorithmRequest req;
      req.collective = k.c;
      req.nranks = n;
      req.channels = k.channels;
      req.bytes = static_cast<std::uint64_t>(n) * 4 * 64;
      INFO(planner::to_string(k.a) << " " << models::to_string(k.c) << " on " << n);
      CHECK(planner::estimated_ops(k.a, req) == k.expected);
      // Ring's step schedule adds a local copy or reduction here and there: the estimate counts
      // the transfers' two ops, within 10 % of everything.
      const double generated = static_cast<double>(planner::generate(k.a, req).op_count());
      if (k.a == Algorithm::Ring) {
        CHECK(generated >= k.expected);
        CHECK(generated <= 1.1 * k.expected + 2 * N * k.channels);
      } else {
        CHECK(generated == k.expected);
      }
    }
  }
  planner::AlgorithmRequest big;
  big.collective = Collective::AlltoAll;
  big.nranks = 16384;
  CHECK(planner::estimated_ops(Algorithm::Direct, big) == 536854528.0);  // 16384 + 2·16384·16383
  CHECK(bruck_all_to_all_ops(5) == 145.0);
}

TEST_CASE("generate stops at max_ops", "[planner][limit]") {
  planner::AlgorithmRequest req;
  req.collective = Collective::AlltoAll;
  req.nranks = 8;
  req.bytes = 8 * 4 * 16;
  req.max_ops = 8 + 2 * 8 * 7;  // exactly what it needs
  CHECK(planner::generate(Algorithm::Direct, req).op_count() == req.max_ops);
  req.max_ops -= 1;
  CHECK_THROWS_AS(planner::generate(Algorithm::Direct, req), planner::ScheduleTooLarge);
  // Generic: the tree's size has no closed form here, the limit still holds.
  req.collective = Collective::AllReduce;
  req.max_ops = 10;
  CHECK_THROWS_AS(planner::generate(Algorithm::Tree, req), planner::ScheduleTooLarge);
}

TEST_CASE("the runner skips a too-large candidate when another fits, refuses when none does", "[planner][limit]") {
  // 1,024 H100 at step granularity: ring AllReduce has 8 channels × 1024 × 4 × 1023 = 33.5 M
  // ops (> 8.4 M), so auto skips it and keeps NCCL's Tree (pipeline bounded by the chunk
  // budget); an explicit ring is refused with the alternative named.
  const models::Cluster c = test::shipped_cluster("h100-1024gpu-2to1.yaml");
  const auto costs = planner::CostModel::load(planner::CostModel::default_path(c));
  planner::CollectiveOptions o;
  o.gpus = c.topology.gpus();
  o.granularity = models::Granularity::Step;
  o.check_bound = false;
  o.protocol = planner::Protocol::Simple;
  const planner::CollectiveResult r = planner::CollectiveRunner(c, costs, o).run(1 << 20);
  CHECK(r.algorithm != Algorithm::Ring);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] == "ring/Simple skipped: ring AllReduce on 1024 ranks at step granularity: 33,521,664 ops");
  o.algorithm = Algorithm::Ring;
  try {
    planner::CollectiveRunner(c, costs, o).run(1 << 20);
    FAIL("expected ScheduleTooLarge");
  } catch (const planner::ScheduleTooLarge& e) {
    CHECK(e.key() == "--ranks");
    CHECK(e.found() == "ring AllReduce on 1024 ranks at step granularity: 33,521,664 ops");
    // 32·n(n−1) ≤ 8,388,608 up to n = 512 (512·511 = 261,632 ≤ 262,144 < 513·512).
    CHECK(e.hint() == "use --granularity phase, or fewer ranks (--ranks; ring fits up to 512)");
  }
}
