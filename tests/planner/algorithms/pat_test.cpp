// NCCL's PAT (planner/algorithms/pat.cpp): the schedules compute AllGather and ReduceScatter on
// every rank count, each rank sends what a ring sends, a small collective takes ⌈log2 n⌉
// latency-bearing messages per rank and a large one n − 1, as NCCL's aggregation rule says
// (src/include/collectives.h PatAGAlgorithm: aggFactor doubles while chunkSize / (channel block
// × aggFactor) ≥ 2 and aggFactor < n / 2).

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/generators.hpp"
#include "planner/algorithms/registry.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;
using planner::AlgorithmRequest;

namespace {

AlgorithmRequest pat_request(Collective c, int n, std::uint64_t bytes, int channels = 1, std::uint64_t chunk = 0, int chunks = 64) {
  AlgorithmRequest r;
  r.collective = c;
  r.nranks = n;
  r.bytes = bytes;
  r.element_size = 4;
  r.channels = channels;
  r.chunk_bytes = chunk;
  r.pipeline_chunks = chunks;
  return r;
}

/// Sends of rank `rank` that pay a step latency (the first block of each message of loop 0).
int latency_sends(const models::Schedule& s, int rank) {
  int count = 0;
  for (const models::Op& op : s.ranks[static_cast<std::size_t>(rank)].ops)
    if (op.kind == models::OpKind::Send && op.steps > 0) ++count;
  return count;
}

}  // namespace

TEST_CASE("pat: AllGather and ReduceScatter verify on every rank count, loops and aggregation", "[algorithms][pat]") {
  int checked = 0;
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 32, 33}) {
      for (int channels : {1, 3}) {
        // Per rank 12 elements (48 bytes): chunk 0 (512 KiB) aggregates everything; a 16-byte
        // chunk loops 3 times over a channel's block with no aggregation; 64 bytes aggregates 2.
        for (std::uint64_t chunk : {std::uint64_t{0}, std::uint64_t{16}, std::uint64_t{64}}) {
          const AlgorithmRequest r = pat_request(c, n, static_cast<std::uint64_t>(n) * 48, channels, chunk);
          REQUIRE(planner::unsupported_reason(Algorithm::Pat, r).empty());
          const models::Schedule s = planner::generate(Algorithm::Pat, r);
          const models::VerifyResult v = models::verify(s);
          INFO(fmt::format("{} n={} channels={} chunk={}: {}", models::to_string(c), n, channels, chunk, v.error));
          REQUIRE(v.ok);
          // The op estimate the planner's limit uses is exact.
          CHECK(static_cast<double>(s.op_count()) == planner::estimated_ops(Algorithm::Pat, r));
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 2 * 16 * 2 * 3);
}

TEST_CASE("pat: every rank sends (n − 1)/n of the size, as a ring does", "[algorithms][pat]") {
  // S = 10 · 4 · 100 bytes on 10 ranks: blocks of 400 bytes, each rank sends 9 · 400 = 3600.
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    const models::Schedule s = planner::generate(Algorithm::Pat, pat_request(c, 10, 4000, 2, 128));
    for (std::uint64_t sent : s.bytes_sent()) CHECK(sent == 3600);
  }
}

TEST_CASE("pat: latency-bearing messages follow NCCL's aggregation rule", "[algorithms][pat]") {
  // n = 16, one channel, Simple's 512 KiB chunk, which PAT halves while chunk × 32 exceeds the
  // size (enqueue.cc), not below 64 KiB.
  // Small: S = 16 KiB, blocks of 1 KiB, chunk 64 KiB: 64/1 ≥ 2 doubles aggFactor up to 8 = n / 2:
  // one message per dimension, ⌈log2 16⌉ = 4 latency-bearing sends per rank (the dimensions
  // carry 1, 2, 4, 8 blocks).
  const auto small = planner::generate(Algorithm::Pat, pat_request(Collective::AllGather, 16, 16 * 1024));
  for (int r = 0; r < 16; ++r) CHECK(latency_sends(small, r) == 4);
  // Middle: S = 256 KiB, blocks of 16 KiB, chunk 64 KiB: 64/16 = 4 ≥ 2 → 2, 64/32 = 2 ≥ 2 → 4,
  // 64/64 = 1 stops: messages of up to 4 blocks; the dimensions of 1, 2, 4, 8 blocks take
  // 1 + 1 + 1 + 2 = 5 messages.
  const auto middle = planner::generate(Algorithm::Pat, pat_request(Collective::AllGather, 16, 16 * 16 * 1024));
  for (int r = 0; r < 16; ++r) CHECK(latency_sends(middle, r) == 5);
  // Large ReduceScatter: S = 64 MiB ≥ 512 KiB × 16 keeps the 512 KiB chunk; blocks of 4 MiB,
  // 8 chunk loops, no aggregation: n − 1 = 15 messages in the first loop, the later loops stream
  // behind it.
  const auto large = planner::generate(Algorithm::Pat, pat_request(Collective::ReduceScatter, 16, 16ULL * 4 * 1024 * 1024));
  for (int r = 0; r < 16; ++r) CHECK(latency_sends(large, r) == 15);
  int sends = 0;
  for (const models::Op& op : large.ranks[0].ops) sends += op.kind == models::OpKind::Send ? 1 : 0;
  CHECK(sends == 15 * 8);
}

TEST_CASE("pat: NCCL's placement and protocol rules", "[algorithms][pat]") {
  const planner::AlgorithmEntry& e = planner::algorithm_entry(Algorithm::Pat);
  planner::GroupShape one_per_node{.collective = Collective::AllGather, .ranks = 8, .nodes = 8, .ranks_per_node = 1};
  planner::GroupShape two_per_node{.collective = Collective::AllGather, .ranks = 8, .nodes = 4, .ranks_per_node = 2};
  CHECK(e.nccl_placement(one_per_node));
  CHECK_FALSE(e.nccl_placement(two_per_node));
  CHECK(e.placement_refusal(one_per_node).empty());
  CHECK(e.placement_refusal(two_per_node).find("one rank per node") != std::string::npos);
  CHECK(e.protocols.contains(planner::Protocol::Simple));
  CHECK_FALSE(e.protocols.contains(planner::Protocol::LL128));
  CHECK_FALSE(e.nccl_collectives.contains(Collective::AllReduce));
  AlgorithmRequest ar = pat_request(Collective::AllReduce, 8, 8 * 4);
  CHECK(planner::unsupported_reason(Algorithm::Pat, ar).find("AllGather and ReduceScatter") != std::string::npos);
}

TEST_CASE("pat: the phase form is one loop with the same bytes and step latencies", "[algorithms][pat]") {
  // ReduceScatter and AllGather, n = 16, S = 64 MiB: the step form loops 8 times (4 MiB blocks in
  // 512 KiB chunks); the phase form sends each block once: 15 sends per rank, 15 of them paying a
  // step latency, 15 · 4 MiB bytes out of every rank in both forms.
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    AlgorithmRequest r = pat_request(c, 16, 16ULL * 4 * 1024 * 1024);
    r.granularity = models::Granularity::Phase;
    REQUIRE(planner::unsupported_reason(Algorithm::Pat, r).empty());
    const models::Schedule phase = planner::generate(Algorithm::Pat, r);
    // Phase schedules are timed, not verified (models::verify); the step form verifies above,
    // and the phase form is the same trees with one loop, so its bytes match the step form's.
    r.granularity = models::Granularity::Step;
    CHECK(phase.bytes_sent() == planner::generate(Algorithm::Pat, r).bytes_sent());
    r.granularity = models::Granularity::Phase;
    CHECK(static_cast<double>(phase.op_count()) == planner::estimated_ops(Algorithm::Pat, r));
    int sends = 0;
    for (const models::Op& op : phase.ranks[3].ops) sends += op.kind == models::OpKind::Send ? 1 : 0;
    CHECK(sends == 15);
    CHECK(latency_sends(phase, 3) == 15);
    for (std::uint64_t sent : phase.bytes_sent()) CHECK(sent == 15ULL * 4 * 1024 * 1024);
  }
}

TEST_CASE("pat: refused past kPatMaxRanks ranks, not simulated for minutes", "[algorithms][pat]") {
  constexpr int n = planner::detail::kPatMaxRanks;
  const AlgorithmRequest at = pat_request(Collective::AllGather, n, std::uint64_t{n} * 64);
  const AlgorithmRequest past = pat_request(Collective::AllGather, n + 1, std::uint64_t{n + 1} * 64);
  INFO(planner::unsupported_reason(Algorithm::Pat, past));
  CHECK(planner::unsupported_reason(Algorithm::Pat, at).empty());
  CHECK(planner::unsupported_reason(Algorithm::Pat, past).find("pat is simulated up to 256 ranks") != std::string::npos);
}
