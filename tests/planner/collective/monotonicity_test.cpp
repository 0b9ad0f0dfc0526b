// Property: raising the bandwidth of any one link never increases a fixed
// algorithm's time. For every AllReduce algorithm on small topologies of three kinds, every
// physical link that carries traffic is made 4x faster (both directions) in turn, and the
// collective re-simulated with the same algorithm, protocol, channels and granularity.

#include <catch2/catch.hpp>

#include <set>

#include <fmt/format.h>

#include "planner/collective/collective_runner.hpp"
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
  o.granularity = models::Granularity::Step;
  o.engine = *models::parse_engine_kind(engine);
  o.check_bound = false;
  return o;
}

void check_monotone(const std::string& scenario, Algorithm a, const std::string& engine, double tolerance = 1e-9) {
  // The schedule is generated once, on the unchanged cluster, and timed on each changed one:
  // the planner's own choices (searched rings, channels) may legitimately follow the links.
  const std::uint64_t bytes = 16ULL << 20;
  const models::Cluster base = test::cluster_at(scenario);
  planner::CollectiveRunner runner(base, costs(), options_for(base, a, engine));
  const models::Schedule schedule =
      planner::generate(a, runner.request(a, planner::Protocol::Simple, bytes, models::Granularity::Step));
  const auto before_engine = sim::make_engine(engine, base);
  const sim::Timeline before = runner.run_schedule(schedule, a, planner::Protocol::Simple, *before_engine);
  std::set<models::LinkId> physical;
  for (const auto& l : before.links) physical.insert(l.link & ~1U);
  REQUIRE(!physical.empty());
  for (models::LinkId id : physical) {
    models::Cluster faster = base;
    faster.topology.set_bandwidth(id, 4 * base.topology.link(id).bandwidth);
    faster.topology.set_bandwidth(id | 1U, 4 * base.topology.link(id | 1U).bandwidth);
    planner::CollectiveRunner r(faster, costs(), options_for(faster, a, engine));
    const auto e = sim::make_engine(engine, faster);
    const double after = r.run_schedule(schedule, a, planner::Protocol::Simple, *e).makespan;
    INFO(fmt::format("{} {} ({} engine): {} 4x faster: {:.9g} s -> {:.9g} s", scenario, planner::to_string(a), engine,
                     base.topology.name(base.topology.link_source(id)) + " <-> " + base.topology.name(base.topology.link_target(id)),
                     before.makespan, after));
    CHECK(after <= before.makespan * (1 + tolerance));
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
      // NCCL's Tree: two pipelined trees share the NIC and NVLink/xGMI links with max-min fair
      // rates, and a faster link can shift shares so the critical chunk finishes up to ~1.2 %
      // later (a scheduling anomaly in Graham's sense, "Bounds on multiprocessing timing
      // anomalies", 1969: here, 4x faster xGMI links on the MI300X pair). Allowed: 2 %; the
      // a ring send that does not wait on its connection gives 20 %. Every other algorithm is strictly monotone.
      check_monotone(scenario, a, "analytic", a == Algorithm::Tree ? 0.02 : 1e-9);
    }
  }
}

TEST_CASE("a faster link never slows a fixed algorithm (flow engine)", "[property][monotone][flow]") {
  check_monotone("tests/data/real-cases/mi300x-4gpu-2node.yaml", Algorithm::Ring, "flow");
}
