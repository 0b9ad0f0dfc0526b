#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/hardware/router.hpp"
#include "planner/collective/bounds.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using ccsim::test::shipped_cluster;

namespace {

constexpr double kGiB = 1073741824.0;  // 2^30 bytes

planner::LowerBound h100_bound(const models::Cluster& c, Collective coll, int root = 0) {
  models::Router router(c);
  const auto& gpus = c.topology.gpus();
  return planner::lower_bound(c, router, coll, std::vector<models::DeviceId>(gpus.begin(), gpus.end()), root);
}

const planner::CostModel& default_costs() {
  static const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  return costs;
}

}  // namespace

// One DGX H100, 8 ranks, rank i on GPU i, root 0. By hand:
//  * each GPU's links: 18 NVLink4 × 25 GB/s = 450 GB/s to the NVSwitch, plus one PCIe Gen5
//    x16 (63 GB/s) to its PCIe switch: 513 GB/s per direction per rank;
//  * latency to rank 0 (and from root 0): GPU → NVSwitch → GPU, 2 × 0.3 us = 0.6 us, the same
//    for every pair, so alpha_far = alpha_near = 0.6 us;
//  * cut GPUs 0-3 | 4-7: 4 × 450 GB/s over NVLink + 128 GB/s over PCIe → CPU0 → UPI → CPU1 →
//    PCIe (UPI the bottleneck) = 1.928 TB/s each way (tests/models/hardware/cluster_test.cpp).
// bound = max(alpha_far, per-rank volume / 513 GB/s + alpha_near, cut volume / 1.928 TB/s +
// alpha_near).
TEST_CASE("lower bound on 1 x DGX H100: ingredients", "[bounds]") {
  const models::Cluster c = shipped_cluster("dgx-h100-1node.yaml");
  const planner::LowerBound b = h100_bound(c, Collective::AllReduce);
  CHECK(b.nranks == 8);
  CHECK(b.half == 4);
  REQUIRE(b.egress.size() == 8);
  REQUIRE(b.ingress.size() == 8);
  for (int r = 0; r < 8; ++r) {
    CHECK(b.egress[static_cast<std::size_t>(r)] == Approx(513e9));   // 450 + 63 GB/s
    CHECK(b.ingress[static_cast<std::size_t>(r)] == Approx(513e9));
  }
  CHECK(b.alpha_far == Approx(0.6e-6));
  CHECK(b.alpha_near == Approx(0.6e-6));
  CHECK(b.flow_ab == Approx(1.928e12));  // 4 × 450e9 + 128e9
  CHECK(b.flow_ba == Approx(1.928e12));
}

TEST_CASE("lower bound on 1 x DGX H100 at 1 GiB: the per-rank volume term dominates", "[bounds]") {
  const models::Cluster c = shipped_cluster("dgx-h100-1node.yaml");
  const double S = kGiB;
  SECTION("AllReduce") {
    // Per rank: send S and receive S: 2^30 / 513e9 = 2.09306e-3 s.
    // Cut: S each way / 1.928e12 = 5.569e-4 s. Latency 0.6e-6 s. Per rank dominates:
    // 2.09306e-3 + 0.6e-6 = 2.09366e-3 s.
    CHECK(h100_bound(c, Collective::AllReduce).time(S) == Approx(2.0936640e-3));
    CHECK(h100_bound(c, Collective::AllReduce).time(S) == Approx(S / 513e9 + 0.6e-6));
  }
  SECTION("AllGather") {
    // Per rank: send S/8, receive 7S/8 = 939524096 B → / 513e9 = 1.83143e-3 s.
    // Cut: 4 ranks × S/8 = S/2 each way / 1.928e12 = 2.785e-4 s.
    // Forest cut (on the router's routes: peers over the NVSwitch only, the PCIe link carries
    // none of a one-node AllGather): one GPU takes in 7 blocks at 450 GB/s, 7S/8 / 450e9 =
    // 2.08784e-3 s. It dominates: 2.08784e-3 + 0.6e-6 = 2.08844e-3 s.
    CHECK(h100_bound(c, Collective::AllGather).time(S) == Approx(2.0884313e-3));
    CHECK(h100_bound(c, Collective::AllGather).time(S) == Approx(7 * S / 8 / 450e9 + 0.6e-6));
  }
  SECTION("ReduceScatter") {
    // Per rank: send 7S/8, receive S/8 → 1.83143e-3 s; cut S/2 each way → 2.785e-4 s.
    // Forest cut on the reversed graph: one GPU sends out 7 blocks at 450 GB/s → 2.08784e-3 s.
    // bound = 2.08784e-3 + 0.6e-6 = 2.08844e-3 s.
    CHECK(h100_bound(c, Collective::ReduceScatter).time(S) == Approx(2.0884313e-3));
    CHECK(h100_bound(c, Collective::ReduceScatter).time(S) == Approx(7 * S / 8 / 450e9 + 0.6e-6));
  }
  SECTION("Broadcast from rank 0") {
    // The root sends S, every other rank receives S: S / 513e9 = 2.09306e-3 s.
    // Cut: S from the root's half to the other / 1.928e12 = 5.569e-4 s.
    // bound = 2.09306e-3 + 0.6e-6 = 2.09366e-3 s.
    CHECK(h100_bound(c, Collective::Broadcast, 0).time(S) == Approx(2.0936640e-3));
    CHECK(h100_bound(c, Collective::Broadcast, 0).time(S) == Approx(S / 513e9 + 0.6e-6));
  }
  SECTION("AlltoAll") {
    // Per rank: send and receive 7S/8 → 1.83143e-3 s.
    // Cut: 4 × 4 pairs × S/8 = 2S each way / 1.928e12 = 1.11384e-3 s (< 1.83143e-3).
    // bound = 1.83143e-3 + 0.6e-6 = 1.83203e-3 s.
    CHECK(h100_bound(c, Collective::AlltoAll).time(S) == Approx(1.8320310e-3));
    CHECK(h100_bound(c, Collective::AlltoAll).time(S) == Approx(7 * S / 8 / 513e9 + 0.6e-6));
  }
}

TEST_CASE("lower bound on 1 x DGX H100 at 8 bytes: the latency term dominates", "[bounds]") {
  // Latency 0.6e-6 s; the volume terms are 8 B / 513e9 = 1.56e-11 s (AllReduce, Broadcast)
  // or 7 B / 513e9 = 1.36e-11 s (receive 7S/8 for AllGather, send 7S/8 for ReduceScatter and
  // AlltoAll), and the cut terms are smaller still (8 B / 1.928e12 = 4.1e-12 s): under 3e-5 of
  // the latency.
  const models::Cluster c = shipped_cluster("dgx-h100-1node.yaml");
  const double S = 8;
  for (Collective coll : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
                          Collective::AlltoAll}) {
    INFO(std::string(models::to_string(coll)));
    CHECK(h100_bound(c, coll).time(S) == Approx(0.6e-6).epsilon(1e-4));
  }
  // Exactly: 0.6e-6 + the per-rank term (AllGather, ReduceScatter: the forest cut, 7 B / 450e9).
  CHECK(h100_bound(c, Collective::AllReduce).time(S) == Approx(0.6e-6 + 8 / 513e9).epsilon(1e-12));
  CHECK(h100_bound(c, Collective::Broadcast).time(S) == Approx(0.6e-6 + 8 / 513e9).epsilon(1e-12));
  CHECK(h100_bound(c, Collective::AllGather).time(S) == Approx(0.6e-6 + 7 / 450e9).epsilon(1e-12));
  CHECK(h100_bound(c, Collective::ReduceScatter).time(S) == Approx(0.6e-6 + 7 / 450e9).epsilon(1e-12));
  CHECK(h100_bound(c, Collective::AlltoAll).time(S) == Approx(0.6e-6 + 7 / 513e9).epsilon(1e-12));
}

TEST_CASE("every candidate's simulated time is at least the lower bound", "[bounds][property]") {
  // For each (algorithm, protocol) pair NCCL-like auto selection considers, simulated alone
  // (explicit --algo/--protocol), and for the auto choice: no std::logic_error from the
  // runner's bound check, and time >= bound. Sizes 8 B, 1 MiB, 64 MiB; ReduceScatter,
  // AllGather and AlltoAll need whole floats per rank, so their 8 B becomes n × 4 B (32 B on
  // 8 ranks, 128 B on 32), the smallest size nccl-tests would run.
  int checked = 0;
  for (const char* scenario : {"dgx-h100-1node.yaml", "mi300x-1node.yaml", "dgx-a100-4node-rail.yaml"}) {
    const models::Cluster cluster = shipped_cluster(scenario);
    const auto& gpus = cluster.topology.gpus();
    const int n = static_cast<int>(gpus.size());
    for (Collective coll : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll}) {
      planner::CollectiveOptions opts;
      opts.collective = coll;
      opts.gpus.assign(gpus.begin(), gpus.end());
      opts.element_size = 4;
      const bool per_rank = coll != Collective::AllReduce;
      const std::uint64_t unit = per_rank ? 4ULL * static_cast<std::uint64_t>(n) : 4ULL;
      std::vector<std::uint64_t> sizes;
      for (std::uint64_t s : {8ULL, 1ULL << 20, 64ULL << 20}) sizes.push_back(std::max<std::uint64_t>(unit, s / unit * unit));

      planner::CollectiveRunner auto_runner(cluster, default_costs(), opts);
      const auto candidates = auto_runner.candidates();
      REQUIRE_FALSE(candidates.empty());
      for (std::uint64_t bytes : sizes) {
        INFO(fmt::format("{} {} auto, {} B", scenario, models::to_string(coll), bytes));
        planner::CollectiveResult best;
        REQUIRE_NOTHROW(best = auto_runner.run(bytes));
        CHECK(best.bound > 0.0);
        CHECK(best.time >= best.bound);
        for (const auto& [algo, proto] : candidates) {
          INFO(fmt::format("candidate {} {}", planner::to_string(algo), planner::to_string(proto)));
          planner::CollectiveOptions one = opts;
          one.algorithm = algo;
          one.protocol = proto;
          planner::CollectiveRunner runner(cluster, default_costs(), one);
          planner::CollectiveResult r;
          REQUIRE_NOTHROW(r = runner.run(bytes));
          CHECK(r.algorithm == algo);
          CHECK(r.protocol == proto);
          CHECK(r.bound == Approx(best.bound));
          CHECK(r.time >= r.bound);
          // Auto picks the least time among the candidates.
          CHECK(best.time <= r.time);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 0);
}
