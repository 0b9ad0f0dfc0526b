// The greedy synthesizer (planner/synthesis/greedy.hpp): its trees are spanning trees whose
// schedules compute the collective, and its own timing follows the link-by-link matching in
// closed form on fabrics where the optimum is known by hand.

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "models/hardware/router.hpp"
#include "planner/collective/synthesis_runner.hpp"
#include "planner/synthesis/forest_schedule.hpp"
#include "planner/synthesis/greedy.hpp"
#include "tests/planner/planner_test_support.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
namespace syn = planner::synthesis;

namespace {

/// A bidirectional ring of n ranks with one link per direction between neighbours (links
/// 2i: i → i+1, 2i+1: i+1 → i), each `bw` bytes/s and `lat` seconds; only neighbours are
/// routes (TACOS' point-to-point links), `hops` > 1 also lists the pairs that many links apart
/// the shorter way (clockwise on a tie).
syn::PairRoutes ring_routes(int n, double bw, double lat, int hops = 1) {
  syn::PairRoutes p;
  p.ranks = n;
  p.links.resize(static_cast<std::size_t>(n * n));
  p.bandwidth.assign(static_cast<std::size_t>(n * n), bw);
  p.latency.assign(static_cast<std::size_t>(n * n), 0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const int cw = ((b - a) % n + n) % n;
      const bool clockwise = cw <= n - cw;
      if (std::min(cw, n - cw) > hops) continue;
      auto& links = p.links[p.index(a, b)];
      for (int h = 0, at = a; h < (clockwise ? cw : n - cw); ++h) {
        links.push_back(clockwise ? static_cast<models::LinkId>(2 * at) : static_cast<models::LinkId>(2 * ((at - 1 + n) % n) + 1));
        at = clockwise ? (at + 1) % n : (at - 1 + n) % n;
      }
      p.latency[p.index(a, b)] = lat * static_cast<double>(links.size());
    }
  }
  return p;
}

/// Every tree spans the ranks: each non-root rank a child exactly once, parents before children.
void check_spanning(const syn::Forest& f) {
  for (const syn::Tree& t : f.trees) {
    std::set<int> reached{t.root};
    for (const syn::TreeEdge& e : t.edges) {
      CHECK(reached.count(e.parent) == 1);
      CHECK(reached.insert(e.child).second);
    }
    CHECK(static_cast<int>(reached.size()) == f.ranks);
  }
}

}  // namespace

TEST_CASE("greedy: on a bidirectional ring AllGather floods both ways, ceil((n-1)/2) rounds", "[synthesis][greedy]") {
  // n = 8, one chunk per rank of c = 1 MB on 10 GB/s links of 1 us: every round each rank
  // receives one chunk from each neighbour (a link is free after its 100 us on the wire, but
  // the next chunk to forward arrives 1 us later), so the 7 chunks a rank lacks arrive in
  // ceil(7/2) = 4 rounds of (1 us + 1e6 / 1e10 s) = 101 us: 404 us. With 2 chunks per rank of
  // 0.5 MB the links stay busy (a rank's own second chunk fills the first latency): each
  // incoming link carries 7 chunks of 50 us back to back, the last arriving 1 us later: 351 us.
  const syn::PairRoutes ring = ring_routes(8, 1e10, 1e-6);
  const syn::GreedyResult one = syn::greedy_allgather(ring, 1, 1e6);
  CHECK(one.estimated_time == Approx(4 * 101e-6).epsilon(1e-9));
  CHECK(one.transfers == 8 * 7);
  check_spanning(one.forest);
  for (const syn::Tree& t : one.forest.trees)
    for (const syn::TreeEdge& e : t.edges) CHECK(e.links.size() == 1);  // one hop each
  const syn::GreedyResult two = syn::greedy_allgather(ring, 2, 5e5);
  CHECK(two.estimated_time == Approx(7 * 50e-6 + 1e-6).epsilon(1e-9));
  CHECK(two.transfers == 8 * 7 * 2);
  check_spanning(two.forest);
  CHECK(two.forest.weight_per_root == 2);
  CHECK(two.forest.trees.size() == 16);
}

TEST_CASE("greedy: on a full mesh of direct links AllGather is one round", "[synthesis][greedy]") {
  // MI300X: every GPU pair has its own xGMI link, so at t = 0 every rank sends its chunk to all
  // seven others at once: the greedy's time is one route's latency + chunk / bandwidth (two
  // event times: the links free, the chunks arrive).
  const models::Cluster c = test::shipped_cluster("mi300x-1node.yaml");
  models::Router router(c);
  const std::vector<models::DeviceId> gpus(c.topology.gpus().begin(), c.topology.gpus().end());
  const syn::PairRoutes routes = syn::pair_routes(router, gpus);
  const syn::GreedyResult g = syn::greedy_allgather(routes, 1, 1e6);
  const std::size_t i = routes.index(0, 1);
  CHECK(routes.links[i].size() == 1);
  CHECK(g.estimated_time == Approx(routes.latency[i] + 1e6 / routes.bandwidth[i]).epsilon(1e-9));
  CHECK(g.events == 2);
  check_spanning(g.forest);
}

TEST_CASE("greedy: on an NVSwitch every GPU receives one chunk at a time, back to back", "[synthesis][greedy]") {
  // DGX H100: every route is GPU -> NVSwitch -> GPU, so a GPU's way in carries one chunk at a
  // time and needs n - 1 = 7 arrivals: at least 7 wire times c/B and one latency, and the
  // greedy keeps every way in busy (a perfect matching of senders' own chunks each wire time):
  // exactly 7 c/B + latency.
  const models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  models::Router router(c);
  const std::vector<models::DeviceId> gpus(c.topology.gpus().begin(), c.topology.gpus().end());
  const syn::PairRoutes routes = syn::pair_routes(router, gpus);
  const syn::GreedyResult g = syn::greedy_allgather(routes, 1, 1e6);
  const std::size_t i = routes.index(0, 1);
  CHECK(g.estimated_time == Approx(7 * 1e6 / routes.bandwidth[i] + routes.latency[i]).epsilon(1e-9));
  check_spanning(g.forest);
}

TEST_CASE("greedy: its AllGather, ReduceScatter and AllReduce schedules compute the collective", "[synthesis][greedy]") {
  for (const char* scenario : {"h100-2x8-200g.yaml", "dgx-a100-4node-rail.yaml", "mixed-a100-h100.yaml", "pcie-2gpu-nop2p.yaml"}) {
    const models::Cluster c = test::shipped_cluster(scenario);
    for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
      for (int chunks : {1, 3}) {
        INFO(scenario << " " << models::to_string(coll) << " chunks " << chunks);
        syn::SynthesisOptions o;
        o.collective = coll;
        // Past 32 GPUs (the mixed A100 + H100 cluster) the first 8 and the last 8.
        const auto& all = c.topology.gpus();
        if (all.size() <= 32) o.gpus.assign(all.begin(), all.end());
        else {
          o.gpus.assign(all.begin(), all.begin() + 8);
          o.gpus.insert(o.gpus.end(), all.end() - 8, all.end());
        }
        o.method = syn::Method::Greedy;
        o.chunks = chunks;
        syn::SynthesisRunner runner(c, test::shipped_costs(c), o);
        const int n = static_cast<int>(o.gpus.size());
        const std::uint64_t bytes = static_cast<std::uint64_t>(n) * 4 * 12;
        const models::Schedule s = runner.greedy_schedule(bytes);
        const models::VerifyResult v = models::verify(s);
        INFO(v.error);
        CHECK(v.ok);
        // One send per chunk and ordered pair (each rank receives every other rank's chunks
        // once), twice for AllReduce (ReduceScatter then AllGather).
        std::size_t sends = 0;
        for (const auto& prog : s.ranks)
          for (const models::Op& op : prog.ops) sends += op.kind == models::OpKind::Send ? 1 : 0;
        CHECK(sends == static_cast<std::size_t>(n * (n - 1) * chunks * (coll == Collective::AllReduce ? 2 : 1)));
      }
    }
  }
}

TEST_CASE("synthesis auto: the greedy at small sizes, ForestColl's trees at large", "[synthesis][greedy]") {
  // 2 x 8 H100, 200G rail: at 1 KiB the greedy's trees are shallow (about log2 16 hops where the
  // forest's are 8 deep); at 256 MiB only the forest reaches the max-flow bound's bandwidth.
  const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  syn::SynthesisOptions o;
  o.collective = Collective::AllGather;
  o.gpus.assign(c.topology.gpus().begin(), c.topology.gpus().end());
  o.method = syn::Method::Auto;
  syn::SynthesisRunner runner(c, test::shipped_costs(c), o);
  const syn::SynthesisRow small = runner.run(16 * 64);
  CHECK(small.method == syn::Method::Greedy);
  CHECK(small.greedy_time < small.forest_schedule_time);
  CHECK(small.time == small.greedy_time);
  const syn::SynthesisRow large = runner.run(std::uint64_t{256} << 20);
  CHECK(large.method == syn::Method::Forest);
  CHECK(large.forest_schedule_time < large.greedy_time);
}

TEST_CASE("greedy: refused above kGreedyMaxRanks, with --method named", "[synthesis][greedy]") {
  const models::Cluster c = test::shipped_cluster("h100-1024gpu-2to1.yaml");
  syn::SynthesisOptions o;
  o.collective = Collective::AllGather;
  o.gpus.assign(c.topology.gpus().begin(), c.topology.gpus().begin() + syn::kGreedyMaxRanks + 8);
  o.method = syn::Method::Greedy;
  o.forest.build_trees = false;
  CHECK_THROWS_WITH(syn::SynthesisRunner(c, test::shipped_costs(c), o), Catch::Contains("greedy on at most 128 ranks"));
}

TEST_CASE("greedy: bad arguments", "[synthesis][greedy]") {
  const syn::PairRoutes ring = ring_routes(4, 1e10, 1e-6);
  CHECK_THROWS_AS(syn::greedy_allgather(ring, 0, 1e6), std::invalid_argument);
  CHECK_THROWS_AS(syn::greedy_allgather(ring, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(syn::greedy_allgather(ring_routes(1, 1e10, 1e-6), 1, 1e6), std::invalid_argument);
  // Two ranks with no route between them: refused, not a hang or a partial forest.
  syn::PairRoutes cut = ring_routes(2, 1e10, 1e-6);
  cut.links[cut.index(0, 1)].clear();
  CHECK_THROWS_WITH(syn::greedy_allgather(cut, 1, 1e6), Catch::Contains("do not connect"));
}

TEST_CASE("greedy: a size's schedule does not depend on the sizes timed before it", "[synthesis][greedy]") {
  // The greedy's matching depends on the chunk's bytes, so trees made for a small size (same
  // chunk count) must not be reused at a larger one: 8 MiB alone and after 1 KiB time alike.
  const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  syn::SynthesisOptions o;
  o.collective = Collective::AllGather;
  o.gpus.assign(c.topology.gpus().begin(), c.topology.gpus().end());
  o.method = syn::Method::Greedy;
  o.chunks = 1;
  syn::SynthesisRunner alone(c, test::shipped_costs(c), o);
  syn::SynthesisRunner after(c, test::shipped_costs(c), o);
  (void)after.run(16 * 64);
  CHECK(after.run(std::uint64_t{8} << 20).greedy_time == alone.run(std::uint64_t{8} << 20).greedy_time);
}
