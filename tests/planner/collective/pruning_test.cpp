// Exact pruning of the planner's candidates (planner/collective/candidate_bound.hpp):
//  * the bound of every candidate never exceeds the analytic engine's time for it, over many
//    fabrics (rail-optimized, ToR, 2:1 fat tree, NVL72, PCIe without P2P, MI300X xGMI mesh,
//    DGX H100), odd and even rank counts, every collective and sizes from 8 B to 8 GiB;
//  * the pruned choice (algorithm, protocol, granularity, time, transfers, links, notes) is
//    the one simulating every candidate gives, and fewer simulations run;
//  * a bound kept from one size and evaluated at another equals a bound built afresh.

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/collective/candidate_bound.hpp"
#include "planner/collective/collective_runner.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "tests/planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;
using planner::Protocol;

namespace {


using Case = test::Placement;

std::vector<Case> cases() {
  static test::TempDir dir;
  const auto shipped = [](const std::string& s) { return std::make_shared<models::Cluster>(test::shipped_cluster(s)); };
  const auto from_yaml = [&](const std::string& name, const std::string& yaml) {
    return std::make_shared<models::Cluster>(
        models::build_cluster(models::load_scenario(dir.write(name, yaml), test::shipped_catalog()).cluster));
  };
  // Four DGX H100, two per ToR leaf (every GPU of a node on one leaf), 2:1 to the spine.
  const auto tor = from_yaml("tor.yaml",
                             "cluster:\n  nodes:\n    - node: dgx-h100\n      count: 4\n  fabric:\n    kind: fat-tree\n"
                             "    wiring: tor\n    nodes_per_leaf: 2\n    oversubscription: 2\n");
  const auto rail = shipped("dgx-a100-4node-rail.yaml");
  const auto two_to_one = shipped("h100-1024gpu-2to1.yaml");
  const auto nvl72 = shipped("nvl72-4rack.yaml");
  const auto h100 = shipped("dgx-h100-1node.yaml");
  const auto mi300x = shipped("mi300x-1node.yaml");
  const auto pcie = shipped("pcie-2gpu-nop2p.yaml");
  const auto two_node = shipped("h100-2x8-200g.yaml");
  return {{"rail 4xA100 32", rail, 32},        {"rail 4xA100 24", rail, 24},   {"tor 4xH100 32", tor, 32},
          {"tor 4xH100 19", tor, 19},          {"2:1 1024 64", two_to_one, 64}, {"2:1 1024 40", two_to_one, 40},
          {"nvl72 72", nvl72, 72},             {"nvl72 13", nvl72, 13},        {"dgx-h100 8", h100, 8},
          {"dgx-h100 7", h100, 7},             {"mi300x 8", mi300x, 8},        {"mi300x 5", mi300x, 5},
          {"pcie 2", pcie, 2},                 {"2x8 200G 16", two_node, 16},  {"2x8 200G 11", two_node, 11}};
}

const std::vector<Collective> kCollectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                              Collective::Broadcast, Collective::Reduce,        Collective::AlltoAll,
                                              Collective::SendRecv};

}  // namespace

TEST_CASE("pruning: every candidate's bound is at most its simulated time", "[pruning][heavy]") {
  int checked = 0;
  for (const Case& c : cases()) {
    // Fewer sizes on the larger placements (8 B ... 8 GiB on the small ones).
    const std::vector<std::uint64_t> sizes = c.ranks > 32 ? std::vector<std::uint64_t>{8, 1ULL << 20, 8ULL << 30}
                                                          : std::vector<std::uint64_t>{8, 4096, 1ULL << 20, 64ULL << 20, 8ULL << 30};
    for (Collective coll : kCollectives) {
      planner::CollectiveRunner runner(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, coll));
      for (std::uint64_t size : sizes) {
        const std::uint64_t bytes = test::nccl_tests_bytes(coll, c.ranks, size);
        if (bytes == 0) continue;
        for (const auto& [a, p] : runner.candidates()) {
          planner::CollectiveOptions fixed = test::placement_options(c, coll);
          fixed.algorithm = a;
          fixed.protocol = p;
          double bound = 0, time = 0;
          try {
            planner::CollectiveRunner one(*c.cluster, test::shipped_costs(*c.cluster), fixed);
            bound = runner.candidate_bound(a, p, bytes);
            time = one.run(bytes).time;
          } catch (const std::invalid_argument&) {
            continue;  // not at this size
          } catch (const planner::ScheduleTooLarge&) {
            continue;  // too large to simulate
          }
          INFO(fmt::format("{}: {} {} B, {}/{}: bound {:.12g} s, simulated {:.12g} s", c.name, models::to_string(coll), bytes,
                           planner::to_string(a), planner::to_string(p), bound, time));
          CHECK(bound > 0.0);
          CHECK(bound <= time * (1 + 1e-9));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 500);
}

TEST_CASE("pruning: the reference sharing loop is bounded too", "[pruning]") {
  for (const int index : {2, 4}) {  // ToR 32 ranks, 2:1 64 ranks
    const Case c = cases()[static_cast<std::size_t>(index)];
    sim::AnalyticEngine reference(*c.cluster, sim::AnalyticEngine::Sharing::Reference);
    for (Collective coll : {Collective::AllReduce, Collective::AlltoAll, Collective::AllGather}) {
      planner::CollectiveRunner runner(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, coll));
      for (std::uint64_t size : {std::uint64_t{4096}, std::uint64_t{256} << 20}) {
        const std::uint64_t bytes = test::nccl_tests_bytes(coll, c.ranks, size);
        for (const auto& [a, p] : runner.candidates()) {
          planner::CollectiveOptions fixed = test::placement_options(c, coll);
          fixed.algorithm = a;
          fixed.protocol = p;
          planner::CollectiveRunner one(*c.cluster, test::shipped_costs(*c.cluster), fixed, &reference);
          const double time = one.run(bytes).time;
          const double bound = runner.candidate_bound(a, p, bytes);
          INFO(fmt::format("{}: {} {} B, {}/{}: bound {:.12g} s, reference {:.12g} s", c.name, models::to_string(coll), bytes,
                           planner::to_string(a), planner::to_string(p), bound, time));
          CHECK(bound <= time * (1 + 1e-9));
        }
      }
    }
  }
}

TEST_CASE("pruning: the pruned choice is the unpruned choice, with fewer simulations", "[pruning][heavy]") {
  int simulated = 0, candidates = 0;
  for (const Case& c : cases()) {
    for (Collective coll : kCollectives) {
      planner::CollectiveOptions all = test::placement_options(c, coll);
      all.prune = false;
      planner::CollectiveRunner pruned(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, coll));
      planner::CollectiveRunner reference(*c.cluster, test::shipped_costs(*c.cluster), all);
      // A sweep as `ccsim collective` runs it (-b 8 -e 8G -f 32): the bounds are reused across sizes.
      for (std::uint64_t size = 8; size <= (8ULL << 30); size *= (c.ranks > 32 ? 256 : 32)) {
        const std::uint64_t bytes = test::nccl_tests_bytes(coll, c.ranks, size);
        if (bytes == 0) continue;
        planner::CollectiveResult x, y;
        try {
          y = reference.run(bytes);
        } catch (const std::exception& e) {
          // Refused (no candidate fits): the pruned runner refuses the same way.
          CHECK_THROWS_WITH(pruned.run(bytes), Catch::Contains(std::string(e.what()).substr(0, 40)));
          continue;
        }
        x = pruned.run(bytes);
        INFO(fmt::format("{}: {} {} B: pruned {}/{} {:.12g} s, all {}/{} {:.12g} s", c.name, models::to_string(coll), bytes,
                         planner::to_string(x.algorithm), planner::to_string(x.protocol), x.time,
                         planner::to_string(y.algorithm), planner::to_string(y.protocol), y.time));
        CHECK(x.algorithm == y.algorithm);
        CHECK(x.protocol == y.protocol);
        CHECK(x.granularity == y.granularity);
        CHECK(x.time == y.time);
        CHECK(x.transfers == y.transfers);
        CHECK(x.links.size() == y.links.size());
        CHECK(x.notes == y.notes);
        CHECK(x.simulated <= y.simulated);
        simulated += x.simulated;
        candidates += y.simulated;
      }
    }
  }
  // Pruning does its job: well under every candidate is simulated.
  CHECK(simulated < candidates * 3 / 4);
}

TEST_CASE("pruning: a kept bound evaluated at another size equals a fresh one", "[pruning]") {
  const Case c = cases()[0];  // rail 4xA100, 32 ranks
  planner::CollectiveRunner runner(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, Collective::AllReduce));
  models::Router router(*c.cluster);
  int matched = 0;
  for (const auto& [a, p] : runner.candidates()) {
    const planner::AlgorithmRequest req1 = runner.request(a, p, 1ULL << 30, models::Granularity::Phase);
    if (!planner::unsupported_reason(a, req1).empty()) continue;
    const models::Schedule s1 = planner::generate(a, req1);
    sim::Plan plan;
    plan.schedule = &s1;
    plan.rank_gpu = test::placement_options(c, Collective::AllReduce).gpus;
    plan.cost = test::shipped_costs(*c.cluster).params(a, p, c.cluster->topology, "sm80");
    const planner::ScheduleBound kept(plan, router);
    for (std::uint64_t bytes : {std::uint64_t{8}, std::uint64_t{12345} * 4, std::uint64_t{1} << 30, std::uint64_t{3} << 32}) {
      planner::AlgorithmRequest req = req1;
      req.bytes = bytes;
      const models::Schedule s = planner::generate(a, req);
      if (!kept.matches(s)) continue;  // evaluate() is only used on a match
      ++matched;
      sim::Plan fresh = plan;
      fresh.schedule = &s;
      CHECK(kept.evaluate(s) == planner::engine_lower_bound(fresh, router));
    }
    // Another structure (a different chunk count, where chunks make ops) is not matched.
    planner::AlgorithmRequest other = req1;
    other.granularity = models::Granularity::Step;
    other.pipeline_chunks = 3;
    if (planner::unsupported_reason(a, other).empty()) CHECK_FALSE(kept.matches(planner::generate(a, other)));
  }
  CHECK(matched >= 8);  // ring and tree, every protocol, most sizes
}
