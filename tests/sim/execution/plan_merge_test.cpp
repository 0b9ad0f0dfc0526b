// Several collectives in one engine run (sim/execution/plan_merge.hpp): the parts share the
// links they have in common under max-min fair sharing, each with its own costs and start, on
// both engines.
// Expected values are closed-form α-β times computed by hand in the comments.

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <vector>

#include "models/hardware/router.hpp"
#include "sim/engine.hpp"
#include "sim/execution/plan_merge.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

const models::Cluster& two_nodes() {
  static const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  return c;
}

/// One send of `bytes` from rank 0 to rank 1.
std::shared_ptr<models::Schedule> one_send(std::uint64_t bytes) {
  auto s = std::make_shared<models::Schedule>();
  s->collective = models::Collective::SendRecv;
  s->algorithm = "p2p";
  s->nranks = 2;
  s->bytes = bytes;
  s->ranks.resize(2);
  test::add_send_recv(*s, 0, 1, bytes, 0);
  return s;
}

/// node0/gpu0 -> node1/gpu0: one send of `bytes` over node0's NIC of rail 0.
sim::PlanPart nic_send(std::uint64_t bytes) {
  sim::PlanPart p;
  p.schedule = one_send(bytes);
  const auto gpus = two_nodes().topology.gpus();
  p.rank_gpu = {gpus[0], gpus[8]};
  return p;
}

struct PathFigures {
  double alpha = 0;      ///< seconds: the route's latency
  double bandwidth = 0;  ///< bytes/s: its slowest link
};

PathFigures path_figures() {
  models::Router router(two_nodes());
  const auto gpus = two_nodes().topology.gpus();
  const models::Path& path = router.route(gpus[0], gpus[8]);
  PathFigures f;
  f.alpha = path.latency;
  f.bandwidth = 1e300;
  for (models::LinkId id : path.links) f.bandwidth = std::min(f.bandwidth, two_nodes().topology.link(id).bandwidth);
  return f;
}

}  // namespace

TEST_CASE("merged plans: two sends through one NIC each get half of it", "[engine][contention]") {
  // Two collectives (say a DP bucket and a PP send) each move S = 100 MB from node0/gpu0 to
  // node1/gpu0, over the same GPU -> NIC -> leaf path whose slowest link has bandwidth B
  // (the 200 Gb/s NIC: 25 GB/s) and latency α. Alone: T = α + S/B. Together, from the same
  // start: each flows at B/2, both end at α + 2S/B.
  const std::uint64_t S = 100000000;
  const PathFigures f = path_figures();
  REQUIRE(f.bandwidth == Approx(25e9));
  const sim::PlanPart a = nic_send(S), b = nic_send(S);
  const std::vector<const sim::PlanPart*> parts{&a, &b};
  for (const char* name : {"analytic", "flow"}) {
  INFO(name);
  auto engine = sim::make_engine(name, two_nodes());
  {
    const std::vector<const sim::PlanPart*> alone{&a};
    const auto m = sim::merge_plans(alone, std::vector<double>{0.0});
    CHECK(engine->run(m->plan).makespan == Approx(f.alpha + S / f.bandwidth).epsilon(1e-9));
  }
  const auto m = sim::merge_plans(parts, std::vector<double>{0.0, 0.0});
  const sim::Timeline tl = engine->run(m->plan);
  const std::vector<double> end = sim::part_ends(m->plan, tl);
  REQUIRE(end.size() == 2);
  CHECK(end[0] == Approx(f.alpha + 2 * S / f.bandwidth).epsilon(1e-9));
  CHECK(end[1] == Approx(f.alpha + 2 * S / f.bandwidth).epsilon(1e-9));
  // Conservation: the NIC's link carried 2S in 2S/B seconds of flow.
  for (const auto& l : tl.links) {
    if (two_nodes().topology.link(l.link).bandwidth != f.bandwidth) continue;
    CHECK(l.bytes == Approx(2.0 * S));
    CHECK(l.busy == Approx(2 * S / f.bandwidth).epsilon(1e-9));
  }
  }
}

TEST_CASE("merged plans: a later part shares only while both flow", "[engine][contention]") {
  // Part b starts d = 1 ms after part a (d < S/B = 4 ms). a flows alone at B from α to d + α
  // (moves B·d), then at B/2 while b flows: a ends at d + α + 2(S − B·d)/B = α + 2S/B − d.
  // The NIC is busy from α to the end, so b ends at α + 2S/B.
  const std::uint64_t S = 100000000;
  const double d = 1e-3;
  const PathFigures f = path_figures();
  const sim::PlanPart a = nic_send(S), b = nic_send(S);
  const std::vector<const sim::PlanPart*> parts{&a, &b};
  const auto m = sim::merge_plans(parts, std::vector<double>{0.0, d});
  for (const char* name : {"analytic", "flow"}) {
    INFO(name);
    const std::vector<double> end = sim::part_ends(m->plan, sim::make_engine(name, two_nodes())->run(m->plan));
    CHECK(end[0] == Approx(f.alpha + 2 * S / f.bandwidth - d).epsilon(1e-9));
    CHECK(end[1] == Approx(f.alpha + 2 * S / f.bandwidth).epsilon(1e-9));
  }
}

TEST_CASE("merged plans: each part keeps its own costs", "[engine][contention]") {
  // Part a is capped at B/4 per connection (an LL protocol's cap), part b is not; b also pays a
  // base latency L = 10 us before it starts, and a wire factor of 2 (half-efficient protocol).
  // Max-min: a at B/4, b at 3B/4 until b's 2S wire bytes are through at
  // t_b = L + α + 2S/(3B/4) = L + α + 8S/(3B); a has moved (t_b − α)·B/4 by then and goes on
  // alone at its cap B/4: a ends at α + 4S/B.
  const std::uint64_t S = 100000000;
  const PathFigures f = path_figures();
  sim::PlanPart a = nic_send(S), b = nic_send(S);
  a.cost.max_rate = f.bandwidth / 4;
  b.cost.base_latency = 10e-6;
  b.cost.wire_factor = 2.0;
  const std::vector<const sim::PlanPart*> parts{&a, &b};
  const auto m = sim::merge_plans(parts, std::vector<double>{0.0, 0.0});
  for (const char* name : {"analytic", "flow"}) {
    INFO(name);
    const std::vector<double> end = sim::part_ends(m->plan, sim::make_engine(name, two_nodes())->run(m->plan));
    CHECK(end[1] == Approx(10e-6 + f.alpha + 8.0 * S / (3 * f.bandwidth)).epsilon(1e-9));
    CHECK(end[0] == Approx(f.alpha + 4.0 * S / f.bandwidth).epsilon(1e-9));
  }
}

TEST_CASE("merged plans: bad parts are refused", "[engine][contention]") {
  const sim::PlanPart a = nic_send(1000);
  const std::vector<const sim::PlanPart*> one{&a};
  CHECK_THROWS_AS(sim::merge_plans(std::vector<const sim::PlanPart*>{}, std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(sim::merge_plans(one, std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(sim::merge_plans(one, std::vector<double>{-1.0}), std::invalid_argument);
  sim::PlanPart short_gpus = nic_send(1000);
  short_gpus.rank_gpu.pop_back();
  CHECK_THROWS_AS(sim::merge_plans(std::vector<const sim::PlanPart*>{&short_gpus}, std::vector<double>{0.0}), std::invalid_argument);
}
