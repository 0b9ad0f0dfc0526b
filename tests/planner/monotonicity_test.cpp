// Property (issue 8, fault 2): raising the bandwidth of any one link never increases a fixed
// algorithm's time. For every AllReduce algorithm on small topologies of three kinds, every
// physical link that carries traffic is made 4x faster (both directions) in turn, and the
// collective re-simulated with the same algorithm, protocol, channels and granularity.

#include <catch2/catch.hpp>

#include <set>

#include <fmt/format.h>

#include "planner/collective_runner.hpp"
#include "test_support.hpp"

using namespace ccsim;
using planner::Algorithm;

namespace {

const planner::CostModel& costs() {
  static const planner::CostModel c = planner::CostModel::load(planner::CostModel::default_path());
  return c;
}

planner::CollectiveOptions options_for(const models::Cluster& c, Algorithm a, const std::string& engine) {
  planner::CollectiveOptions o;
  o.collective = models::Collective::AllReduce;
  o.algorithm = a;
  o.protocol = planner::Protocol::Simple;
  o.gpus = c.topology.gpus();
  o.granularity = "step";
  o.engine = engine;
  o.check_bound = false;
  return o;
}

void check_monotone(const std::string& scenario, Algorithm a, const std::string& engine) {
  const std::uint64_t bytes = 16ULL << 20;
  const models::Cluster base = test::cluster_at(scenario);
  planner::CollectiveRunner runner(base, costs(), options_for(base, a, engine));
  const planner::CollectiveResult before = runner.run(bytes);
  std::set<models::LinkId> physical;
  for (const auto& l : before.links) physical.insert(l.link & ~1U);
  REQUIRE(!physical.empty());
  for (models::LinkId id : physical) {
    models::Cluster faster = base;
    faster.topology.set_bandwidth(id, 4 * base.topology.link(id).bandwidth);
    faster.topology.set_bandwidth(id | 1U, 4 * base.topology.link(id | 1U).bandwidth);
    planner::CollectiveRunner r(faster, costs(), options_for(faster, a, engine));
    const double after = r.run(bytes).time;
    INFO(fmt::format("{} {} ({} engine): {} 4x faster: {:.9g} s -> {:.9g} s", scenario, planner::to_string(a), engine,
                     base.topology.name(base.topology.link_source(id)) + " <-> " + base.topology.name(base.topology.link_target(id)),
                     before.time, after));
    CHECK(after <= before.time * (1 + 1e-9));
  }
}

}  // namespace

TEST_CASE("a faster link never slows a fixed algorithm (analytic engine)", "[property][monotone]") {
  for (const char* scenario : {"tests/data/real-cases/mi300x-4gpu-2node.yaml", "tests/data/real-cases/h100-4gpu-2node.yaml",
                               "scenarios/pcie-2gpu-nop2p.yaml"}) {
    for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::RecursiveDoubling,
                        Algorithm::Hierarchical, Algorithm::NvlsTree}) {
      const models::Cluster c = test::cluster_at(scenario);
      planner::CollectiveOptions o = options_for(c, a, "analytic");
      try {
        planner::CollectiveRunner probe(c, costs(), o);
        if (probe.candidates().empty()) continue;
      } catch (const std::invalid_argument&) {
        continue;  // the algorithm does not apply here (e.g. NVLS-tree without NVSwitch)
      }
      check_monotone(scenario, a, "analytic");
    }
  }
}

TEST_CASE("a faster link never slows a fixed algorithm (flow engine)", "[property][monotone][flow]") {
  check_monotone("tests/data/real-cases/mi300x-4gpu-2node.yaml", Algorithm::Ring, "flow");
}
