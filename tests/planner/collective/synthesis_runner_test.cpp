#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"
#include "planner/collective/synthesis_runner.hpp"
#include "planner/synthesis/forest_schedule.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "tests/planner/planner_test_support.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;

namespace {

/// The cluster of a scenario (relative to the source tree) with its what-if rules applied.
models::Cluster scenario_cluster(const std::string& relative) {
  return models::build_scenario_cluster(models::load_scenario(test::source_path(relative), test::shipped_catalog()));
}

planner::synthesis::SynthesisOptions options(const models::Cluster& c, Collective coll) {
  planner::synthesis::SynthesisOptions o;
  o.collective = coll;
  const auto& gpus = c.topology.gpus();
  o.gpus.assign(gpus.begin(), gpus.end());
  return o;
}

}  // namespace

// The invariant of ForestColl's trees: their schedule loads every link it crosses (on the
// router's routes, the paths the engines charge) at most at the optimum rate x*, so its
// fluid-limit time equals the forest cut's (S/N)/x* exactly, and the forest cut is the lower
// bound's bandwidth term (planner::lower_bound computes the same x*). At 64 MiB × N the trees'
// element shares round by at most one element in 2^24, far inside the 1e-6 asked.
//   shipped: one DGX H100 (NVSwitch), one DGX A100, one MI300X (xGMI mesh), 2 × 8 H100 on a
//   rail-optimized fat tree, 4 × DGX A100 rail-optimized (ForestColl's 266.67 GB/s case);
//   asymmetric: 4 + 6 GPUs on one switch, 2 × 8 H100 with one NIC each, 2 × 8 H100 with a NIC at
//   a quarter of its rate, one 8-GPU PCIe box with two PCIe islands.
TEST_CASE("synthesis: forest AllGather and ReduceScatter reach the forest cut exactly on the engines' routes", "[synthesis][forest]") {
  const std::vector<std::string> scenarios = {
      "scenarios/dgx-h100-1node.yaml",        "scenarios/dgx-a100-1node.yaml",
      "scenarios/mi300x-1node.yaml",          "scenarios/h100-2x8-200g.yaml",
      "scenarios/dgx-a100-4node-rail.yaml",   "tests/data/synthesis/unequal-4-6-gpus.yaml",
      "tests/data/synthesis/h100-2x8-one-nic.yaml", "tests/data/synthesis/h100-2x8-degraded-nic.yaml",
      "tests/data/synthesis/pcie-box-1node.yaml"};
  for (const std::string& path : scenarios) {
    const models::Cluster c = scenario_cluster(path);
    const planner::CostModel& costs = test::shipped_costs(c);
    for (Collective coll : {Collective::AllGather, Collective::ReduceScatter}) {
      INFO(path << " " << models::to_string(coll));
      planner::synthesis::SynthesisRunner runner(c, costs, options(c, coll));
      const int n = static_cast<int>(c.topology.gpus().size());
      const std::uint64_t bytes = std::uint64_t{64} << 20 << 0;
      const std::uint64_t size = bytes / (4ULL * n) * 4ULL * n;
      const models::Schedule s = runner.schedule(size);
      const planner::synthesis::Forest* f = coll == Collective::AllGather ? runner.allgather() : runner.reducescatter();
      REQUIRE(f != nullptr);
      const double forest_time = static_cast<double>(size) / n / f->rate();
      CHECK(runner.fluid_time(s) == Approx(forest_time).epsilon(1e-6));
      models::Router router(c);
      const planner::LowerBound b = planner::lower_bound(c, router, coll, options(c, coll).gpus, 0);
      CHECK(b.forest_rate == Approx(f->rate()).epsilon(1e-12));
      CHECK(models::verify(runner.schedule(static_cast<std::uint64_t>(n) * 4 * 64)).ok);
    }
  }
}

// ForestColl's DGX A100 vectors on ccsim's own topology: 8 x A100 on the NVSwitch (12 NVLink3
// x 25 GB/s = 300 GB/s), 8 x HDR 200 Gb/s (25 GB/s) NICs, rail-optimized. The optimum by hand
// (forest_test.cpp): 4 nodes 32·200/24 = 266.67 GB/s, 8 nodes 64·200/56 = 228.57 GB/s. (With
// two nodes ForestColl's 346.67 needs each GPU's NIC credited in full besides NVLink: ccsim's
// rail leaf reaches only the same-rail GPU, so there the per-GPU cut is 300 + 25 as well:
// 16·325/15.)
TEST_CASE("synthesis: ForestColl's A100 optima on ccsim's DGX A100 rail-optimized fabrics", "[synthesis][forest]") {
  const models::Cluster four = test::shipped_cluster("dgx-a100-4node-rail.yaml");
  models::Router r4(four);
  const auto g4 = four.topology.gpus();
  CHECK(planner::lower_bound(four, r4, Collective::AllGather, {g4.begin(), g4.end()}, 0).forest_rate * 32 / 1e9 == Approx(32.0 * 200 / 24));
  const models::Cluster eight = test::cluster_at("tests/data/synthesis/dgx-a100-8node-rail.yaml");
  models::Router r8(eight);
  const auto g8 = eight.topology.gpus();
  CHECK(planner::lower_bound(eight, r8, Collective::AllGather, {g8.begin(), g8.end()}, 0).forest_rate * 64 / 1e9 == Approx(64.0 * 200 / 56));
  const std::vector<models::DeviceId> two(g4.begin(), g4.begin() + 16);
  CHECK(planner::lower_bound(four, r4, Collective::AllGather, two, 0).forest_rate * 16 / 1e9 == Approx(16.0 * 325 / 15));
}

// Where the ring is already optimal (one NVSwitch node: every GPU takes in N − 1 blocks over
// its 450 GB/s), the trees' bandwidth equals the ring's, N·450/(N−1) GB/s of algbw; where it is
// not (2 × 8 H100 with one 400G NIC per node: a ring crosses the NIC twice per channel, trees
// send each block across once), the trees' optimum is the node cut's 16 · 50 / 8 = 100 GB/s.
TEST_CASE("synthesis: the trees equal the ring on one NVSwitch node and beat it with one NIC per node", "[synthesis][forest]") {
  const models::Cluster one = test::shipped_cluster("dgx-h100-1node.yaml");
  planner::synthesis::SynthesisRunner r1(one, test::shipped_costs(one), options(one, Collective::AllGather));
  CHECK(r1.allgather()->rate() * 8 == Approx(8.0 * 450e9 / 7));
  const models::Cluster nic = test::cluster_at("tests/data/synthesis/h100-2x8-one-nic.yaml");
  planner::synthesis::SynthesisRunner r2(nic, test::shipped_costs(nic), options(nic, Collective::AllGather));
  CHECK(r2.allgather()->rate() * 16 == Approx(100e9));
  const planner::synthesis::SynthesisRow row = r2.run(std::uint64_t{64} << 20);
  CHECK(row.time < row.nccl.time);  // the trees' schedule beats NCCL's choice on the engine
}

// MSCCL XML: the grid schedule exported, imported at the same size, exported again gives the same
// text (the import is the schedule up to op order, and verify() proves it computes the collective).
TEST_CASE("synthesis: MSCCL XML export, import and export again is a fixed point", "[synthesis][msccl]") {
  const models::Cluster c = test::shipped_cluster("h100-2x8-200g.yaml");
  for (Collective coll : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce}) {
    INFO(models::to_string(coll));
    planner::synthesis::SynthesisRunner runner(c, test::shipped_costs(c), options(c, coll));
    const planner::synthesis::GridSchedule g = runner.grid_schedule();
    const std::string x1 = planner::synthesis::to_msccl_xml(g.schedule, "t", 0, 1 << 30);
    const models::Schedule back = planner::synthesis::from_msccl_xml(x1, "t.xml", g.schedule.bytes, 4);
    CHECK(models::verify(back).ok);
    CHECK(back.op_count() == g.schedule.op_count());
    CHECK(planner::synthesis::to_msccl_xml(back, "t", 0, 1 << 30) == x1);
    const models::Schedule twice = planner::synthesis::from_msccl_xml(x1, "t.xml", g.schedule.bytes * 8, 4);
    CHECK(models::verify(twice).ok);
  }
}

// Bad input: a rank cut off from the others (every link of GPU 3 down), a collective the trees
// do not build; both are refusals naming the reason, not internal errors.
TEST_CASE("synthesis: a disconnected group and an unsupported collective are refused with the reason", "[synthesis][bad]") {
  models::Cluster c = test::shipped_cluster("dgx-h100-1node.yaml");
  const models::DeviceId gpu3 = c.topology.gpus()[3];
  for (models::LinkId id : c.topology.out_links(gpu3)) {
    c.topology.fail_link(id);
    c.topology.fail_link(models::Topology::reverse(id));
  }
  try {
    planner::synthesis::SynthesisRunner runner(c, test::shipped_costs(c), options(c, Collective::AllGather));
    FAIL("a disconnected group was synthesized");
  } catch (const support::InputError& e) {
    CHECK(e.key() == "--ranks");
    CHECK_THAT(e.found(), Catch::Contains("rank 3 (node0/gpu3) cannot reach") || Catch::Contains("cannot reach rank 3 (node0/gpu3)"));
  }
  const models::Cluster ok = test::shipped_cluster("dgx-h100-1node.yaml");
  CHECK_THROWS_AS(planner::synthesis::SynthesisRunner(ok, test::shipped_costs(ok), options(ok, Collective::Broadcast)), support::InputError);
}

// Bad MSCCL XML: each refusal names the file, line and column, the element or attribute, what
// was expected and what was found.
TEST_CASE("synthesis: bad MSCCL XML is refused with line, column and reason", "[synthesis][msccl][bad]") {
  const auto error_of = [](const std::string& text) {
    try {
      (void)planner::synthesis::from_msccl_xml(text, "f.xml", 64, 4);
    } catch (const support::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string head = R"(<algo name="a" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)";
  const std::string gpu0 = R"(<gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0"><tb id="0" send="1" recv="-1" chan="0"><step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="-1" cnt="1" depid="-1" deps="-1" hasdep="0"/></tb></gpu>)";
  CHECK_THAT(error_of("<algo"), Catch::StartsWith("f.xml:1:") && Catch::Contains("expected well-formed XML"));
  CHECK_THAT(error_of("<foo/>"), Catch::Contains("expected an MSCCL file: a top-level <algo> element, found <foo>"));
  CHECK_THAT(error_of(R"(<algo name="a"/>)"), Catch::Contains("algo.proto: expected a 'proto' attribute on <algo>, found none"));
  std::string bad_coll = head;
  bad_coll.replace(bad_coll.find("allgather"), 9, "gather");
  CHECK_THAT(error_of(bad_coll + "</algo>"), Catch::Contains("algo.coll: expected allgather, reducescatter, allreduce, broadcast, reduce or alltoall, found 'gather'"));
  CHECK_THAT(error_of(head + "\n" + gpu0 + "</algo>"), Catch::Contains("a <gpu> for each of the 2 ranks, found no gpu 1"));
  std::string far = gpu0;
  far.replace(far.find(R"(srcoff="0")"), 10, R"(srcoff="5")");
  CHECK_THAT(error_of(head + "\n" + far + "</algo>"), Catch::StartsWith("f.xml:2:") && Catch::Contains("srcoff: expected an offset from 0 with 1 chunks inside the buffer's 1, found 5"));
  std::string self = gpu0;
  self.replace(self.find(R"(send="1")"), 8, R"(send="0")");
  CHECK_THAT(error_of(head + self + "</algo>"), Catch::Contains("peers other than the thread block's own GPU"));
  std::string gap = gpu0;
  gap.replace(gap.find(R"(tb id="0")"), 9, R"(tb id="1")");
  CHECK_THAT(error_of(head + gap + "</algo>"), Catch::Contains("thread block ids 0 to 0 without gaps, found no thread block 0"));
  std::string dep = gpu0;
  dep.replace(dep.find(R"(depid="-1")"), 10, R"(depid="4")");
  CHECK_THAT(error_of(head + dep + "</algo>"), Catch::Contains("expected a step of a thread block of this GPU, found thread block 4"));
  CHECK_THAT(error_of(head + gpu0 + "</algo>").substr(0, 0) + [&] {
    try {
      (void)planner::synthesis::from_msccl_xml(head + gpu0 + "</algo>", "f.xml", 63, 4);
    } catch (const support::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  }(), Catch::Contains("size: expected a size whose loop buffer"));
}
