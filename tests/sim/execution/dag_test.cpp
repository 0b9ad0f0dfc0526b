// The DAG in compressed rows and its fixed-duration earliest-start schedule
// (sim/execution/dag.hpp), on hand-made graphs whose times follow by hand.

#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/execution/dag.hpp"

using namespace ccsim;
using Nodes = std::vector<std::uint32_t>;

namespace {

Nodes successors(const sim::Dag& d, std::uint32_t node) {
  const auto s = d.successors(node);
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("Dag: successors in ascending order, dependency counts from the rows", "[dag]") {
  // 2 <- {0, 1}, 3 <- {0}, 4 <- {3, 2}, 5 <- {0, 0} (named twice: counted twice).
  const Nodes begin = {0, 0, 0, 2, 3, 5, 7};
  const Nodes preds = {0, 1, 0, 3, 2, 0, 0};
  const sim::Dag d(begin, preds);
  REQUIRE(d.size() == 6);
  CHECK(d.dependency_counts() == Nodes{0, 0, 2, 1, 2, 2});
  CHECK(successors(d, 0) == Nodes{2, 3, 5, 5});
  CHECK(successors(d, 1) == Nodes{2});
  CHECK(successors(d, 2) == Nodes{4});
  CHECK(successors(d, 3) == Nodes{4});
  CHECK(successors(d, 4).empty());
  CHECK(successors(d, 5).empty());
}

TEST_CASE("Dag: earliest start of fixed durations", "[dag]") {
  // Durations (s): d0 = 1, d1 = 2, d2 = 3, d3 = 0.5, d4 = 1; edges 0->2, 1->2, 0->3, 2->4, 3->4.
  //   s0 = s1 = 0;  e0 = 1, e1 = 2
  //   s2 = max(e0, e1) = 2, e2 = 5;  s3 = e0 = 1, e3 = 1.5
  //   s4 = max(e2, e3) = 5, e4 = 6
  // (dyadic numbers: every sum is exact).
  const Nodes begin = {0, 0, 0, 2, 3, 5};
  const Nodes preds = {0, 1, 0, 2, 3};
  const sim::Dag d(begin, preds);
  const std::vector<double> duration = {1, 2, 3, 0.5, 1};
  const sim::DagSchedule s = sim::earliest_start(d, duration);
  CHECK(s.scheduled == 5);
  const std::vector<double> start = {0, 0, 2, 1, 5}, end = {1, 2, 5, 1.5, 6};
  for (std::size_t i = 0; i < 5; ++i) {
    INFO("node " << i);
    CHECK(s.timing[i].start == start[i]);
    CHECK(s.timing[i].end == end[i]);
  }
}

TEST_CASE("Dag: a chain adds up, a node with no work ends where it starts", "[dag]") {
  // 0 -> 1 -> 2 with 0.25, 0, 0.75 s: starts 0, 0.25, 0.25; ends 0.25, 0.25, 1.
  const sim::Dag d(Nodes{0, 0, 1, 2}, Nodes{0, 1});
  const sim::DagSchedule s = sim::earliest_start(d, std::vector<double>{0.25, 0, 0.75});
  REQUIRE(s.scheduled == 3);
  CHECK(s.timing[1].start == 0.25);
  CHECK(s.timing[1].end == 0.25);
  CHECK(s.timing[2].start == 0.25);
  CHECK(s.timing[2].end == 1.0);
}

TEST_CASE("Dag: nodes on or behind a cycle never run", "[dag]") {
  // 1 <- {0, 2}, 2 <- {1}, 3 <- {2}: only node 0 becomes ready.
  const sim::Dag d(Nodes{0, 0, 2, 3, 4}, Nodes{0, 2, 1, 2});
  const sim::DagSchedule s = sim::earliest_start(d, std::vector<double>{1, 1, 1, 1});
  CHECK(s.scheduled == 1);
  CHECK(s.timing[0].end == 1.0);
  CHECK(s.timing[3].start == 0.0);
  CHECK(s.timing[3].end == 0.0);
}

TEST_CASE("Dag: malformed rows and durations are refused", "[dag]") {
  CHECK_THROWS_AS(sim::Dag(Nodes{}, Nodes{}), std::invalid_argument);
  CHECK_THROWS_AS(sim::Dag(Nodes{0, 1}, Nodes{}), std::invalid_argument);        // ends past the predecessors
  CHECK_THROWS_AS(sim::Dag(Nodes{0, 2, 1}, Nodes{0}), std::invalid_argument);    // decreases
  CHECK_THROWS_WITH(sim::Dag(Nodes{0, 0, 1}, Nodes{2}), "DAG: node 1 depends on 2, which is not one of the 2 nodes");
  const sim::Dag d(Nodes{0, 0, 1}, Nodes{0});
  CHECK_THROWS_WITH(sim::earliest_start(d, std::vector<double>{1}), "DAG schedule: 1 durations for 2 nodes");
  CHECK(sim::Dag().size() == 0);
}
