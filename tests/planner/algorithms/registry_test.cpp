// The algorithm registry (planner/algorithms/registry.hpp): every entry's declared collectives,
// granularities and protocols agree with what its generator and the shipped cost table accept;
// names and aliases parse back; the cost-table names are the `algorithms:` keys of
// scenarios/calibration/nccl.yaml; the kernels and p2p build the schedules they stand for.

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/algorithms/vllm_allreduce.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using models::Granularity;
using planner::Algorithm;
using planner::AlgorithmRequest;

namespace {

const std::vector<Collective> kCollectives{Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                           Collective::Broadcast, Collective::Reduce,        Collective::AlltoAll,
                                           Collective::SendRecv};

/// Requests over rank counts and node shapes every generator's refusal has a case for: powers
/// of two and not (halving-doubling), odd and even (p2p), whole nodes of 2 and 4 ranks
/// (hierarchical, nvls-tree). Sizes are whole elements per rank (ReduceScatter, AllGather,
/// AlltoAll need it).
std::vector<AlgorithmRequest> requests(Collective c, Granularity g) {
  std::vector<AlgorithmRequest> out;
  for (int n : {1, 2, 3, 4, 6, 8}) {
    for (int per : {0, 2, 4}) {
      AlgorithmRequest r;
      r.collective = c;
      r.nranks = n;
      r.bytes = static_cast<std::uint64_t>(n) * 4 * 12;
      r.element_size = 4;
      r.ranks_per_node = per;
      r.granularity = g;
      r.pipeline_chunks = 2;
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every entry's collectives and granularities are what its generator accepts", "[algorithms][registry]") {
  for (const planner::AlgorithmEntry& e : planner::registry()) {
    if (e.selection == planner::Selection::Synthesized) {  // given whole: its generator refuses every request
      for (Collective c : kCollectives) {
        for (const AlgorithmRequest& r : requests(c, Granularity::Step)) CHECK_FALSE(planner::unsupported_reason(e.algorithm, r).empty());
      }
      CHECK(e.nccl_collectives.empty());
      continue;
    }
    bool any_phase = false;
    for (Collective c : kCollectives) {
      bool accepted = false;
      for (Granularity g : {Granularity::Step, Granularity::Phase}) {
        for (const AlgorithmRequest& r : requests(c, g)) {
          if (!planner::unsupported_reason(e.algorithm, r).empty()) continue;
          INFO(fmt::format("{} {} n={} per-node={} {}", e.name, models::to_string(c), r.nranks, r.ranks_per_node,
                           models::to_string(g)));
          accepted = true;
          any_phase = any_phase || g == Granularity::Phase;
          // What the generator accepts it builds, at the granularity asked, and (step) verifies;
          // p2p's one-way pairs are not verify()'s SendRecv (a shift by one around all ranks),
          // its own test below checks them.
          const models::Schedule s = planner::generate(e.algorithm, r);
          CHECK(s.granularity == g);
          CHECK(s.collective == c);
          if (g == Granularity::Step && e.algorithm != Algorithm::P2p) CHECK(models::verify(s).ok);
        }
      }
      INFO(fmt::format("{} {}", e.name, models::to_string(c)));
      CHECK(accepted == e.collectives.contains(c));
    }
    INFO(e.name);
    CHECK(any_phase == e.granularities.contains(Granularity::Phase));
    CHECK(e.granularities.contains(Granularity::Step));
    CHECK(e.granularities.contains(e.preferred_granularity));
    // NCCL considers an algorithm only for collectives it implements.
    for (Collective c : kCollectives) CHECK((!e.nccl_collectives.contains(c) || e.collectives.contains(c)));
  }
}

TEST_CASE("names and aliases parse back; the kernels and p2p are not library choices", "[algorithms][registry]") {
  // The library algorithms, in registry order: what `--algo` and strategy.algorithms accept.
  const std::vector<std::string_view> library{"ring",   "tree",     "halving-doubling", "recursive-doubling", "bruck",
                                              "direct", "pairwise", "hierarchical",     "nvls",               "nvls-tree",
                                              "pat"};
  CHECK(planner::algorithm_names() == library);
  CHECK(planner::all_algorithms().size() == library.size());
  std::set<std::string_view> seen;
  for (const planner::AlgorithmEntry& e : planner::registry()) {
    INFO(e.name);
    CHECK(&planner::algorithm_entry(e.algorithm) == &e);
    CHECK(planner::to_string(e.algorithm) == e.name);
    CHECK(seen.insert(e.name).second);
    const bool library_choice = e.selection == planner::Selection::Library;
    CHECK(planner::parse_algorithm(e.name) == (library_choice ? std::optional<Algorithm>(e.algorithm) : std::nullopt));
    for (std::string_view alias : e.aliases) {
      CHECK(seen.insert(alias).second);
      CHECK(planner::parse_algorithm(alias) == e.algorithm);
    }
  }
  CHECK(planner::parse_algorithm("rabenseifner") == Algorithm::HalvingDoubling);
  CHECK(planner::parse_algorithm("vllm-oneshot") == std::nullopt);
  CHECK(planner::parse_algorithm("p2p") == std::nullopt);
  CHECK(planner::parse_algorithm("rings") == std::nullopt);
  CHECK(planner::to_string(planner::VllmAllReduce::OneShot) == "vllm-oneshot");
  CHECK(planner::vllm_algorithm(planner::VllmAllReduce::TwoShot) == Algorithm::VllmTwoShot);
  CHECK(planner::vllm_algorithm(planner::VllmAllReduce::Nccl) == std::nullopt);
}

TEST_CASE("cost-table names are the algorithms keys of nccl.yaml, and every entry's protocols have figures", "[algorithms][registry]") {
  // scenarios/calibration/nccl.yaml's `algorithms:` section, in its order.
  const std::vector<std::string_view> tables{"ring", "tree", "nvls", "nvls-tree", "pat", "default"};
  CHECK(planner::cost_table_names() == tables);
  CHECK(planner::nvls_cost_tables() == std::vector<std::string_view>{"nvls", "nvls-tree"});
  const YAML::Node table = YAML::LoadFile(test::source_path("scenarios/calibration/nccl.yaml"));
  std::vector<std::string> keys;
  for (const auto& kv : table["algorithms"]) keys.push_back(kv.first.Scalar());
  CHECK(keys == std::vector<std::string>(tables.begin(), tables.end()));
  const planner::CostModel costs = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
  for (const planner::AlgorithmEntry& e : planner::registry()) {
    INFO(e.name);
    CHECK(std::find(tables.begin(), tables.end(), e.cost_table) != tables.end());
    CHECK(planner::CostModel::table_name(e.algorithm) == e.cost_table);
    for (planner::Protocol p : {planner::Protocol::LL, planner::Protocol::LL128, planner::Protocol::Simple}) {
      if (e.protocols.contains(p)) CHECK(costs.supports(e.algorithm, p));
    }
  }
  // Throughput caps apply to Ring and Tree only (NCCL's llMaxBws, perChMaxRingLL128Bw, perChMaxTreeBw).
  for (const planner::AlgorithmEntry& e : planner::registry()) {
    CHECK(e.capped == (e.algorithm == Algorithm::Ring || e.algorithm == Algorithm::Tree));
  }
}

TEST_CASE("vLLM's kernels as entries: the schedules of vllm_custom_allreduce and their op counts", "[algorithms][registry]") {
  // one-shot: per rank a copy, then per peer a send, a receive and a reduction: n(1 + 3(n − 1));
  // two-shot: one-shot's ops, plus a send and a receive per peer in stage 2: n(1 + 5(n − 1)).
  for (int n : {2, 4, 6, 8}) {
    AlgorithmRequest r;
    r.collective = Collective::AllReduce;
    r.nranks = n;
    r.bytes = 4096;
    r.element_size = 2;
    const double N = n;
    for (const auto& [a, kind, ops] : {std::tuple{Algorithm::VllmOneShot, planner::VllmAllReduce::OneShot, N * (1 + 3 * (N - 1))},
                                       std::tuple{Algorithm::VllmTwoShot, planner::VllmAllReduce::TwoShot, N * (1 + 5 * (N - 1))}}) {
      INFO(fmt::format("{} on {}", planner::to_string(a), n));
      const models::Schedule s = planner::generate(a, r);
      const models::Schedule direct = planner::vllm_custom_allreduce(kind, n, r.bytes, r.element_size);
      CHECK(s.algorithm == planner::to_string(a));
      CHECK(s.channels == direct.channels);
      CHECK(s.op_count() == direct.op_count());
      CHECK(s.bytes_sent() == direct.bytes_sent());
      CHECK(static_cast<double>(s.op_count()) == ops);
      CHECK(planner::estimated_ops(a, r) == ops);
      CHECK(models::verify(s).ok);
    }
  }
}

TEST_CASE("p2p: rank 2i sends its whole input to rank 2i+1", "[algorithms][registry]") {
  // Three pairs of 1,000 bytes: ranks 0, 2, 4 send 1,000 bytes each, ranks 1, 3, 5 send nothing;
  // one send or one receive per rank: 6 ops.
  AlgorithmRequest r;
  r.collective = Collective::SendRecv;
  r.nranks = 6;
  r.bytes = 1000;
  r.element_size = 1;
  const models::Schedule s = planner::generate(Algorithm::P2p, r);
  CHECK(s.algorithm == "p2p");
  CHECK(s.op_count() == 6);
  CHECK(s.bytes_sent() == std::vector<std::uint64_t>{1000, 0, 1000, 0, 1000, 0});
  for (int a = 0; a < 6; a += 2) {
    const models::Op& send = s.ranks[static_cast<std::size_t>(a)].ops.at(0);
    const models::Op& recv = s.ranks[static_cast<std::size_t>(a + 1)].ops.at(0);
    CHECK(send.kind == models::OpKind::Send);
    CHECK(send.peer == a + 1);
    CHECK(send.src.buffer == models::BufferKind::Input);
    CHECK(recv.kind == models::OpKind::Recv);
    CHECK(recv.peer == a);
    CHECK(recv.dst.buffer == models::BufferKind::Output);
    CHECK(recv.dst.bytes == 1000);
  }
  r.nranks = 5;
  CHECK(planner::unsupported_reason(Algorithm::P2p, r) == "p2p needs pairs of ranks (an even rank count)");
  r.nranks = 6;
  r.collective = Collective::AllReduce;
  CHECK(planner::unsupported_reason(Algorithm::P2p, r) == "p2p implements SendRecv");
}
