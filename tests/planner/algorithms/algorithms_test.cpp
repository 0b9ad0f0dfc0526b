#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "planner/algorithms/algorithms.hpp"
#include "planner/tuning/cost_model.hpp"

#include <cmath>

using namespace ccsim;
using models::Collective;
using planner::Algorithm;
using planner::AlgorithmRequest;

namespace {

const std::vector<int> kRankCounts{1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17};
const std::vector<Collective> kCollectives{Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                           Collective::Broadcast, Collective::Reduce,        Collective::AlltoAll,
                                           Collective::SendRecv};

/// Element counts to try: for collectives whose size is a total over ranks, per-rank counts
/// times n; otherwise counts that are not multiples of n (and smaller than n).
std::vector<std::uint64_t> element_counts(Collective c, int n) {
  if (c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::AlltoAll) {
    return {static_cast<std::uint64_t>(n), 3ULL * n, 5ULL * n};
  }
  return {1, 7, 3ULL * n + 1, 64};
}

}  // namespace

TEST_CASE("every algorithm computes its collectives (verify on integers)", "[algorithms][property]") {
  int checked = 0;
  for (Algorithm a : planner::all_algorithms()) {
    for (Collective c : kCollectives) {
      for (int n : kRankCounts) {
        for (std::uint64_t count : element_counts(c, n)) {
          for (int channels : {1, 2}) {
            for (int root : {0, n - 1, n / 2}) {
              AlgorithmRequest req;
              req.collective = c;
              req.nranks = n;
              req.root = root;
              req.bytes = count * 4;
              req.element_size = 4;
              req.channels = channels;
              req.pipeline_chunks = 3;
              req.ranks_per_node = n % 4 == 0 ? 4 : (n % 2 == 0 ? 2 : 1);
              if (!planner::unsupported_reason(a, req).empty()) continue;
              if (!models::has_root(c) && root != 0) continue;
              const auto schedule = planner::generate(a, req);
              const auto result = models::verify(schedule);
              INFO(fmt::format("{} {} n={} count={} channels={} root={}", planner::to_string(a), models::to_string(c), n,
                               count, channels, root));
              INFO(result.error);
              REQUIRE(result.ok);
              ++checked;
            }
          }
        }
      }
    }
  }
  // Every algorithm contributes: 9 algorithms over their collectives, 11 rank counts, sizes,
  // channel counts and roots.
  CHECK(checked > 1500);
}

TEST_CASE("support matrix", "[algorithms]") {
  AlgorithmRequest req;
  req.nranks = 6;
  req.bytes = 6 * 4 * 10;
  req.collective = Collective::ReduceScatter;
  CHECK_FALSE(planner::unsupported_reason(Algorithm::HalvingDoubling, req).empty());  // 6 is not a power of two
  req.nranks = 8;
  req.bytes = 8 * 4 * 10;
  CHECK(planner::unsupported_reason(Algorithm::HalvingDoubling, req).empty());
  req.collective = Collective::AlltoAll;
  CHECK_FALSE(planner::unsupported_reason(Algorithm::Ring, req).empty());
  req.collective = Collective::AllReduce;
  req.ranks_per_node = 3;
  CHECK_FALSE(planner::unsupported_reason(Algorithm::Hierarchical, req).empty());  // 8 ranks are not whole nodes of 3
  CHECK_THROWS_AS(planner::generate(Algorithm::Hierarchical, req), std::invalid_argument);
  CHECK(planner::parse_algorithm("rabenseifner") == Algorithm::HalvingDoubling);
}

TEST_CASE("traffic conservation: bytes each rank sends", "[algorithms]") {
  // Ring AllReduce: each rank sends 2(n−1) chunks of S/n: 2(n−1)/n · S.
  // n = 8, S = 8 · 4 · 1000 bytes → 2 · 7 · 4000 = 56000 bytes per rank.
  AlgorithmRequest req;
  req.nranks = 8;
  req.bytes = 8 * 4 * 1000;
  const auto ring = planner::generate(Algorithm::Ring, req);
  for (auto sent : ring.bytes_sent()) CHECK(sent == 56000);
  // The phase-granularity ring sends the same bytes per rank in 2 ops instead of 14.
  req.granularity = models::Granularity::Phase;
  const auto phase = planner::generate(Algorithm::Ring, req);
  for (auto sent : phase.bytes_sent()) CHECK(sent == 56000);
  CHECK(phase.ranks[0].ops.size() == 4);   // send + recv per phase
  CHECK(ring.ranks[0].ops.size() == 28);   // 14 sends + 14 receives
  // NVLS AllReduce: every rank sends S for the reductions plus S/n multicast: S (1 + 1/n).
  req.granularity = models::Granularity::Step;
  const auto nvls = planner::generate(Algorithm::Nvls, req);
  for (auto sent : nvls.bytes_sent()) CHECK(sent == 32000 + 4000);
  // Direct AlltoAll: each rank sends n−1 blocks of S/n.
  req.collective = Collective::AlltoAll;
  const auto a2a = planner::generate(Algorithm::Direct, req);
  for (auto sent : a2a.bytes_sent()) CHECK(sent == 7 * 4000);
}

TEST_CASE("verify catches broken schedules", "[algorithms]") {
  AlgorithmRequest req;
  req.nranks = 4;
  req.bytes = 4 * 4 * 4;
  auto s = planner::generate(Algorithm::Ring, req);
  REQUIRE(models::verify(s).ok);
  // Drop the last op of rank 2 (a receive): the sends no longer pair up.
  auto broken = s;
  broken.ranks[2].ops.pop_back();
  CHECK_FALSE(models::verify(broken).ok);
  // Redirect a reduction to the wrong chunk: some output is wrong or never written.
  auto wrong = s;
  // (rank 1's second reduction is chunk (1 − 1 − 1) mod 4 = 3 of 16 bytes, at offset 48; move it to chunk 0)
  int seen = 0;
  for (auto& op : wrong.ranks[1].ops) {
    if (op.kind == models::OpKind::RecvReduce && ++seen == 2) {
      REQUIRE(op.dst.offset == 48);
      op.dst.offset = 0;
      op.src.offset = 0;
    }
  }
  CHECK_FALSE(models::verify(wrong).ok);
  // Phase schedules are not data-exact.
  req.granularity = models::Granularity::Phase;
  CHECK_FALSE(models::verify(planner::generate(Algorithm::Ring, req)).ok);
}

TEST_CASE("calibration: NCCL's protocol bandwidth caps as per-transfer rates", "[cost]") {
  const auto costs = planner::CostModel::load(planner::CostModel::default_path());
  // Ring LL on Hopper over 2 nodes: llMaxBws 45 GB/s per rank; 8 channels -> 5.625 GB/s of
  // data per transfer; LL moves 2 wire bytes per data byte -> 11.25 GB/s of wire bytes.
  CHECK(costs.max_rate(planner::Algorithm::Ring, planner::Protocol::LL, "sm90", 2, 8) == Approx(45e9 / 8 / 0.5));
  // Ring LL128 per channel 36.7 GB/s on Hopper; wire factor 1/0.92.
  CHECK(costs.max_rate(planner::Algorithm::Ring, planner::Protocol::LL128, "sm90", 1, 16) == Approx(36.7e9 / 0.92));
  // More than two nodes, Ampere, tree Simple: 17.8 GB/s per channel, wire factor 1/0.92.
  CHECK(costs.max_rate(planner::Algorithm::Tree, planner::Protocol::Simple, "sm80", 4, 1) == Approx(17.8e9 / 0.92));
  // No cap: ring Simple, NVLS, unknown architectures.
  CHECK(std::isinf(costs.max_rate(planner::Algorithm::Ring, planner::Protocol::Simple, "sm90", 1, 8)));
  CHECK(std::isinf(costs.max_rate(planner::Algorithm::Nvls, planner::Protocol::Simple, "sm90", 1, 8)));
  CHECK(std::isinf(costs.max_rate(planner::Algorithm::Ring, planner::Protocol::LL, "gfx942", 1, 8)));
}
