// The planner's cost for sweeps: candidates are bounded at a size without generating
// their schedules when a bound computed at a smaller size of the same shape already prunes
// them (CollectiveRunner::run, shape_independent_of_size). These tests check that
//  * the generators the planner trusts with it really make the same ops at every size, each
//    op's bytes non-decreasing in the size;
//  * a bound computed at a smaller size never exceeds the engine's time at a larger one;
//  * sweeps choose exactly what simulating every candidate chooses (algorithm, protocol,
//    granularity, time, transfers, notes), upwards and downwards, on odd rank counts and an
//    AMD node as well as NVIDIA ones.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/collective/candidate_bound.hpp"
#include "planner/collective/collective_runner.hpp"
#include "tests/planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;
using planner::Protocol;

namespace {


using Case = test::Placement;

std::vector<Case> cases() {
  const auto shipped = [](const std::string& s) { return std::make_shared<models::Cluster>(test::shipped_cluster(s)); };
  const auto h100 = shipped("dgx-h100-1node.yaml");
  const auto mi300x = shipped("mi300x-1node.yaml");
  const auto rail = shipped("dgx-a100-4node-rail.yaml");
  const auto two_to_one = shipped("h100-1024gpu-2to1.yaml");
  const auto two_node = shipped("h100-2x8-200g.yaml");
  return {{"dgx-h100 8", h100, 8},     {"dgx-h100 7", h100, 7},       {"mi300x 8", mi300x, 8},
          {"mi300x 5", mi300x, 5},     {"rail 4xA100 24", rail, 24},  {"2x8 200G 11", two_node, 11},
          {"2:1 1024 40", two_to_one, 40}, {"2:1 1024 96", two_to_one, 96}};
}

const std::vector<Collective> kCollectives = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                              Collective::Broadcast, Collective::Reduce, Collective::AlltoAll};

/// Sizes 8 B ... 1 GiB, every `factor`-th power of two.
std::vector<std::uint64_t> sweep(std::uint64_t factor) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = 8; s <= (1ULL << 30); s *= factor) out.push_back(s);
  return out;
}

}  // namespace

TEST_CASE("plancost: shape-independent generators make the same ops at every size, bytes growing with it", "[plancost]") {
  int compared = 0;
  for (const Case& c : cases()) {
    models::Router router(*c.cluster);
    for (Collective coll : kCollectives) {
      planner::CollectiveRunner runner(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, coll));
      std::vector<Algorithm> algos = {Algorithm::Ring, Algorithm::Tree, Algorithm::Nvls, Algorithm::NvlsTree,
                                      Algorithm::Direct, Algorithm::Hierarchical};
      for (Algorithm a : algos) {
        for (Protocol p : {Protocol::LL, Protocol::Simple}) {
          for (models::Granularity g : {models::Granularity::Step, models::Granularity::Phase}) {
            if (g == models::Granularity::Step && c.ranks > 40) continue;  // hundreds of thousands of ops per size
            std::optional<models::Schedule> previous;
            planner::AlgorithmRequest previous_req;
            for (std::uint64_t size : sweep(4)) {
              const std::uint64_t bytes = test::nccl_tests_bytes(coll, c.ranks, size);
              if (bytes == 0) continue;
              const planner::AlgorithmRequest req = runner.request(a, p, bytes, g);
              if (!planner::unsupported_reason(a, req).empty()) continue;
              models::Schedule s = planner::generate(a, req);
              if (previous && planner::shape_independent_of_size(a, previous_req, req)) {
                INFO(fmt::format("{}: {} {}/{} {} at {} B after {} B", c.name, models::to_string(coll), planner::to_string(a),
                                 planner::to_string(p), models::to_string(g), bytes, previous_req.bytes));
                sim::Plan plan;
                plan.schedule = &*previous;
                plan.rank_gpu = test::placement_options(c, coll).gpus;
                std::unique_ptr<planner::ScheduleBound> shape;
                try {
                  shape = std::make_unique<planner::ScheduleBound>(plan, router);
                } catch (const std::invalid_argument&) {
                  break;  // NVLS without an NVSwitch: the planner never runs it here
                }
                REQUIRE(shape->matches(s));
                bool growing = true;
                for (std::size_t r = 0; r < s.ranks.size(); ++r)
                  for (std::size_t i = 0; i < s.ranks[r].ops.size(); ++i)
                    growing = growing && previous->ranks[r].ops[i].bytes() <= s.ranks[r].ops[i].bytes();
                CHECK(growing);
                ++compared;
              }
              previous = std::move(s);
              previous_req = req;
            }
          }
        }
      }
    }
  }
  CHECK(compared > 300);
}

TEST_CASE("plancost: shape_independent_of_size refuses other shapes and size-dependent generators", "[plancost]") {
  planner::AlgorithmRequest x;
  x.collective = Collective::AllReduce;
  x.nranks = 8;
  x.bytes = 1024;
  x.pipeline_chunks = 2;
  planner::AlgorithmRequest y = x;
  y.bytes = 1 << 20;
  CHECK(planner::shape_independent_of_size(Algorithm::Ring, x, y));
  CHECK(planner::shape_independent_of_size(Algorithm::Tree, x, y));
  // The recursive algorithms skip empty transfers: their ops depend on the size.
  CHECK_FALSE(planner::shape_independent_of_size(Algorithm::HalvingDoubling, x, y));
  CHECK_FALSE(planner::shape_independent_of_size(Algorithm::RecursiveDoubling, x, y));
  CHECK_FALSE(planner::shape_independent_of_size(Algorithm::Bruck, x, y));
  y.pipeline_chunks = 3;
  CHECK_FALSE(planner::shape_independent_of_size(Algorithm::Tree, x, y));
  y = x;
  y.granularity = models::Granularity::Phase;
  CHECK_FALSE(planner::shape_independent_of_size(Algorithm::Ring, x, y));
  y = x;
  y.ring_orders = {{1, 0, 2, 3, 4, 5, 6, 7}};
  CHECK_FALSE(planner::shape_independent_of_size(Algorithm::Ring, x, y));
}

TEST_CASE("plancost: a bound kept from a smaller size is at most the engine's time at a larger one", "[plancost]") {
  int checked = 0;
  for (const Case& c : cases()) {
    if (c.ranks > 40) continue;
    for (Collective coll : {Collective::AllReduce, Collective::AllGather, Collective::Broadcast}) {
      planner::CollectiveRunner runner(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, coll));
      for (const auto& [a, p] : runner.candidates()) {
        planner::CollectiveOptions fixed = test::placement_options(c, coll);
        fixed.algorithm = a;
        fixed.protocol = p;
        planner::CollectiveRunner one(*c.cluster, test::shipped_costs(*c.cluster), fixed);
        const std::vector<std::uint64_t> sizes = {8, 4096, 1ULL << 20, 64ULL << 20};
        for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
          const std::uint64_t small = test::nccl_tests_bytes(coll, c.ranks, sizes[i]), large = test::nccl_tests_bytes(coll, c.ranks, sizes[i + 1]);
          if (small == 0) continue;
          double kept = 0, time = 0;
          try {
            kept = runner.candidate_bound(a, p, small);
            time = one.run(large).time;
          } catch (const std::invalid_argument&) {
            continue;
          }
          INFO(fmt::format("{}: {} {}/{}: bound at {} B {:.12g} s, engine at {} B {:.12g} s", c.name, models::to_string(coll),
                           planner::to_string(a), planner::to_string(p), small, kept, large, time));
          CHECK(kept <= time * (1 + 1e-9));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100);
}

namespace {
void compare_sweep(const Case& c, Collective coll, const std::vector<std::uint64_t>& sizes, int& simulated, int& all) {
  planner::CollectiveOptions every = test::placement_options(c, coll);
  every.prune = false;
  planner::CollectiveRunner pruned(*c.cluster, test::shipped_costs(*c.cluster), test::placement_options(c, coll));
  planner::CollectiveRunner reference(*c.cluster, test::shipped_costs(*c.cluster), every);
  for (std::uint64_t size : sizes) {
    const std::uint64_t bytes = test::nccl_tests_bytes(coll, c.ranks, size);
    if (bytes == 0) continue;
    planner::CollectiveResult x, y;
    try {
      y = reference.run(bytes);
    } catch (const std::exception& e) {
      CHECK_THROWS_WITH(pruned.run(bytes), Catch::Contains(std::string(e.what()).substr(0, 40)));
      continue;
    }
    x = pruned.run(bytes);
    INFO(fmt::format("{}: {} {} B: pruned {}/{} {:.12g} s, all {}/{} {:.12g} s", c.name, models::to_string(coll), bytes,
                     planner::to_string(x.algorithm), planner::to_string(x.protocol), x.time, planner::to_string(y.algorithm),
                     planner::to_string(y.protocol), y.time));
    CHECK(x.algorithm == y.algorithm);
    CHECK(x.protocol == y.protocol);
    CHECK(x.granularity == y.granularity);
    CHECK(x.time == y.time);
    CHECK(x.transfers == y.transfers);
    CHECK(x.links.size() == y.links.size());
    CHECK(x.notes == y.notes);
    CHECK(x.simulated <= y.simulated);
    simulated += x.simulated;
    all += y.simulated;
  }
}
}  // namespace

TEST_CASE("plancost: a sweep chooses what simulating every candidate chooses", "[plancost]") {
  int simulated = 0, all = 0;
  for (const Case& c : cases()) {
    if (c.ranks > 40) continue;
    for (Collective coll : kCollectives) {
      compare_sweep(c, coll, sweep(2), simulated, all);
      // Downwards: bounds kept from larger sizes must not be used.
      std::vector<std::uint64_t> down = sweep(8);
      std::reverse(down.begin(), down.end());
      compare_sweep(c, coll, down, simulated, all);
    }
  }
  CHECK(simulated < all / 2);
}

TEST_CASE("plancost: a 1,024-rank AllReduce sweep chooses what simulating every candidate chooses", "[plancost][heavy]") {
  const Case c{"2:1 1024", std::make_shared<models::Cluster>(test::shipped_cluster("h100-1024gpu-2to1.yaml")), 1024};
  int simulated = 0, all = 0;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 8; s <= (8ULL << 30); s *= 8) sizes.push_back(s);
  compare_sweep(c, Collective::AllReduce, sizes, simulated, all);
  CHECK(simulated < all / 2);
}

TEST_CASE("plancost: the protocol context from the engine's router equals the one from topology searches", "[plancost]") {
  for (const Case& c : cases()) {
    models::Router router(*c.cluster);
    const auto gpus = c.cluster->topology.gpus();
    for (int ranks : {2, c.ranks, static_cast<int>(gpus.size())}) {
      const std::vector<models::DeviceId> group(gpus.begin(), gpus.begin() + ranks);
      const planner::ProtocolContext searched = planner::protocol_context(*c.cluster, group);
      const planner::ProtocolContext routed = planner::protocol_context(*c.cluster, group, &router);
      INFO(fmt::format("{}: {} ranks", c.name, ranks));
      CHECK(routed.intra == searched.intra);
      CHECK(routed.inter == searched.inter);
      CHECK(routed.nodes == searched.nodes);
      CHECK(routed.archs == searched.archs);
    }
  }
}
