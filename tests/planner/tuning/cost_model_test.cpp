// Calibration tables per vendor and generation and link efficiencies that
// follow `base:`. Expected values are the tables' published figures, restated here
// with their source, not read back from the code under test.

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "support/input_error.hpp"
#include "models/scenario/scenario.hpp"
#include "models/hardware/topology_summary.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/tuning/protocol_rules.hpp"
#include "test_support.hpp"

using namespace ccsim;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using planner::Algorithm;
using planner::Protocol;

namespace {

using test::TempDir;

const planner::CostModel& nccl() {
  static const planner::CostModel m = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
  return m;
}
const planner::CostModel& rccl() {
  static const planner::CostModel m = planner::CostModel::load(test::source_path("scenarios/calibration/rccl.yaml"));
  return m;
}

models::Cluster cluster_from(const TempDir& dir, const std::string& yaml) {
  const std::string file = dir.write("s.yaml", yaml);
  return models::build_cluster(models::load_scenario(file, test::shipped_catalog()).cluster);
}

std::vector<models::DeviceId> first_gpus(const models::Cluster& c, std::size_t n, std::size_t from = 0) {
  const auto& all = c.topology.gpus();
  return {all.begin() + static_cast<std::ptrdiff_t>(from), all.begin() + static_cast<std::ptrdiff_t>(from + n)};
}

bool offers(const planner::CollectiveRunner& r, Protocol p) {
  for (const auto& [a, q] : r.candidates())
    if (q == p) return true;
  return false;
}

/// The error a calibration table `text` raises, or "" when it loads.
std::string load_error(const TempDir& dir, const std::string& text) {
  const std::string file = dir.write("table.yaml", text);
  try {
    planner::CostModel::load(file);
  } catch (const support::InputError& e) {
    return e.what();
  }
  return "";
}

// The smallest valid table; the bad-input tests append one bad section to it.
const std::string kMinimalTable = R"(protocols:
  LL: {chunk: 64KiB}
  LL128: {chunk: 256KiB}
  Simple: {chunk: 512KiB}
algorithms:
  default:
    base_latency: {Simple: 8.4us}
    step_overhead: {}
    bandwidth_factor: {Simple: 1.0}
)";

}  // namespace

TEST_CASE("architecture families follow NCCL's compCapIndex and RCCL's gfx names", "[cost][arch]") {
  // NCCL tuning.cc: compCapIndex = cc >= 100 Blackwell : cc >= 90 Hopper : cc >= 80 Ampere : Volta.
  CHECK(planner::architecture_family("sm70") == "volta");
  CHECK(planner::architecture_family("sm75") == "volta");
  CHECK(planner::architecture_family("sm80") == "ampere");
  CHECK(planner::architecture_family("sm86") == "ampere");
  CHECK(planner::architecture_family("sm89") == "ampere");
  CHECK(planner::architecture_family("sm90") == "hopper");
  CHECK(planner::architecture_family("sm100") == "blackwell");
  CHECK(planner::architecture_family("sm120") == "blackwell");
  CHECK(planner::architecture_family("gfx942") == "gfx942");
  CHECK(planner::architecture_family("").empty());
  CHECK(planner::architecture_family("smx").empty());
  CHECK(planner::compute_capability("sm86") == 86);
  CHECK_FALSE(planner::compute_capability("gfx942"));
  // NCCL tunes a communicator by its lowest compute capability (minCompCap).
  CHECK(planner::tuning_architecture({"sm90", "sm80"}) == "sm80");
  CHECK(planner::tuning_architecture({"sm100", "sm90"}) == "sm90");
  CHECK(planner::tuning_architecture({"gfx942"}) == "gfx942");
}

TEST_CASE("NVLink efficiency by GPU: NCCL credits sm86 12 GB/s per link", "[cost][arch][efficiency]") {
  const models::Cluster a100 = test::shipped_cluster("dgx-a100-1node.yaml");
  const auto& kinds = a100.topology.link_kinds();
  const auto k = static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), "nvlink3") - kinds.begin());
  REQUIRE(k < kinds.size());
  // topo.h ncclTopoNVLinkBw: sm86 SM86_NVLINK_BW 12, other sm8x SM80_NVLINK_BW 20; catalog
  // nvlink3 25 GB/s per link: 12 / 25 = 0.48, 20 / 25 = 0.8.
  CHECK(nccl().params(Algorithm::Ring, Protocol::Simple, a100.topology, "sm86").link_efficiency[k] == Approx(0.48));
  CHECK(nccl().params(Algorithm::Ring, Protocol::Simple, a100.topology, "sm80").link_efficiency[k] == Approx(0.8));
  CHECK(nccl().params(Algorithm::Ring, Protocol::Simple, a100.topology).link_efficiency[k] == Approx(0.8));
}

TEST_CASE("protocol caps: sm75 / sm86 / sm89 take NCCL's Volta / Ampere rows", "[cost][arch]") {
  // Ring LL128, Ampere row, 20 GB/s per channel; wire factor 1 / 0.92.
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL128, "sm86", 1, 4) == Approx(20.0e9 / 0.92));
  // Tree Simple, Ampere row, more than two nodes: 17.8 GB/s per channel; wire factor 1 / 0.92.
  CHECK(nccl().max_rate(Algorithm::Tree, Protocol::Simple, "sm89", 4, 1) == Approx(17.8e9 / 0.92));
  // Ring LL, Volta row, one node: llMaxBws 39 GB/s per rank over 8 channels; LL moves 2 wire
  // bytes per data byte: 39e9 / 8 / 0.5.
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL, "sm75", 1, 8) == Approx(39.0e9 / 8 / 0.5));
}

TEST_CASE("protocol caps: Blackwell has NCCL's LL128 and Tree rows", "[cost][arch]") {
  // NCCL 2.30.7 ncclTunerConstantsDefaults, Blackwell: perChMaxRingLL128Bws 40.0 (2.29+),
  // perChMaxTreeLL128Bws {55.6, 31.67, 20.0}, perChMaxTreeBws {70.0, 42.8, 24.0}.
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL128, "sm100", 1, 8) == Approx(40.0e9 / 0.92));
  // Two Blackwell ranks on one node: × 0.60 (NVIDIA/nccl PR #2343); not on two nodes, not on Hopper.
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL128, "sm100", 1, 16, 2) == Approx(0.60 * 40.0e9 / 0.92));
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL128, "sm100", 1, 16, 3) == Approx(40.0e9 / 0.92));
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL128, "sm100", 2, 16, 2) == Approx(40.0e9 / 0.92));
  CHECK(nccl().max_rate(Algorithm::Ring, Protocol::LL128, "sm90", 1, 16, 2) == Approx(36.7e9 / 0.92));
  CHECK(nccl().max_rate(Algorithm::Tree, Protocol::LL128, "sm100", 2, 1) == Approx(31.67e9 / 0.92));
  CHECK(nccl().max_rate(Algorithm::Tree, Protocol::Simple, "sm100", 8, 1) == Approx(24.0e9 / 0.92));
  // RCCL applies none of NCCL's caps on AMD GPUs.
  CHECK(std::isinf(rccl().max_rate(Algorithm::Ring, Protocol::LL, "gfx942", 1, 8)));
}

TEST_CASE("NVLS bandwidth factor by generation: 0.85 on Hopper, 0.74 on Blackwell", "[cost][arch]") {
  const models::Cluster h100 = test::shipped_cluster("dgx-h100-1node.yaml");
  TempDir dir;
  const models::Cluster b200 = cluster_from(dir, "cluster:\n  nodes:\n    - node: dgx-b200\n");
  // NCCL tuning.cc nvlsEfficiency[compCapIndex] = {0, 0, 0.85, 0.74}; ccsim moves 1 / factor
  // wire bytes per data byte.
  CHECK(nccl().params(Algorithm::Nvls, Protocol::Simple, h100.topology, "sm90").wire_factor == Approx(1 / 0.85));
  CHECK(nccl().params(Algorithm::Nvls, Protocol::Simple, b200.topology, "sm100").wire_factor == Approx(1 / 0.74));
  CHECK(nccl().params(Algorithm::NvlsTree, Protocol::Simple, b200.topology, "sm100").wire_factor == Approx(1 / 0.74));
  // Ampere has no NVLS figure: a clear error, not a silent 1.
  CHECK_THROWS_WITH(nccl().params(Algorithm::Nvls, Protocol::Simple, h100.topology, "sm80"),
                    Contains("no bandwidth factor for nvls with Simple on sm80 (family 'ampere')"));

  // End to end on one DGX B200: NVLS AllReduce of 1 GiB is bandwidth-bound. Its time with the
  // Blackwell factor is 0.85 / 0.74 times the same run costed at Hopper's 0.85 (a table that
  // differs only in that figure), to within the latency terms (< 1 %).
  const std::string hopper_factor_everywhere = [] {
    std::ifstream in(test::source_path("scenarios/calibration/nccl.yaml"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::size_t at; (at = text.find("blackwell: 0.74")) != std::string::npos;) text.replace(at, 15, "blackwell: 0.85");
    return text;
  }();
  const planner::CostModel as_hopper = planner::CostModel::load(dir.write("hopper.yaml", hopper_factor_everywhere));
  planner::CollectiveOptions o;
  o.gpus = first_gpus(b200, 8);
  o.algorithm = Algorithm::Nvls;
  o.check_bound = false;
  const double t074 = planner::CollectiveRunner(b200, nccl(), o).run(1ULL << 30).time;
  const double t085 = planner::CollectiveRunner(b200, as_hopper, o).run(1ULL << 30).time;
  CHECK(t074 / t085 == Approx(0.85 / 0.74).epsilon(0.01));
}

TEST_CASE("AMD GPUs get RCCL's table and its base latency", "[cost][arch][rccl]") {
  const models::Cluster mi300x = test::shipped_cluster("mi300x-1node.yaml");
  const models::Cluster h100 = test::shipped_cluster("dgx-h100-1node.yaml");
  CHECK_THAT(planner::CostModel::default_path(mi300x), EndsWith("calibration/rccl.yaml"));
  CHECK_THAT(planner::CostModel::default_path(h100), EndsWith("calibration/nccl.yaml"));
  const planner::CostModel amd = planner::CostModel::load(planner::CostModel::default_path(mi300x));
  // RCCL tuning.cc baseLat: Tree and Ring {LL 12, LL128 12, Simple 17} us (NCCL: 6.6 / 14 / 8.4).
  CHECK(amd.params(Algorithm::Ring, Protocol::Simple, mi300x.topology).base_latency == Approx(17e-6));
  CHECK(amd.params(Algorithm::Ring, Protocol::LL, mi300x.topology).base_latency == Approx(12e-6));
  CHECK(amd.params(Algorithm::Tree, Protocol::LL128, mi300x.topology).base_latency == Approx(12e-6));
  CHECK(nccl().params(Algorithm::Ring, Protocol::Simple, h100.topology).base_latency == Approx(8.4e-6));
  CHECK_FALSE(amd.supports(Algorithm::Nvls, Protocol::Simple));

  // End to end: an 8-byte ring LL AllReduce over the 8 MI300X is RCCL's latency model,
  // baseLat + 2(n-1) x hwLat(xGMI, Ring, LL) = 12 + 14 x 0.8 = 23.2 us (tuning_model_5), plus
  // 8 bytes' transfer time (negligible).
  planner::CollectiveOptions o;
  o.gpus = first_gpus(mi300x, 8);
  o.algorithm = Algorithm::Ring;
  o.protocol = Protocol::LL;
  CHECK(planner::CollectiveRunner(mi300x, amd, o).run(8).time == Approx(23.2e-6).epsilon(0.01));
}

TEST_CASE("LL128 is offered only where the library enables it by default", "[cost][ll128]") {
  TempDir dir;
  planner::CollectiveOptions o;

  SECTION("not through the host: two RTX 2080 Ti without peer-to-peer") {
    const models::Cluster c = test::shipped_cluster("pcie-2gpu-nop2p.yaml");
    o.gpus = first_gpus(c, 2);
    const planner::ProtocolContext ctx = planner::protocol_context(c, o.gpus);
    CHECK(ctx.intra == models::PathType::Phb);  // staged through the CPU's memory
    CHECK_THAT(nccl().default_refusal(Protocol::LL128, ctx), Contains("intra-node path PHB is farther than NVL"));
    const planner::CollectiveRunner r(c, nccl(), o);
    CHECK_FALSE(offers(r, Protocol::LL128));
    CHECK(offers(r, Protocol::LL));
    CHECK(offers(r, Protocol::Simple));
    // As NCCL_PROTO=LL128 does, an explicit --protocol LL128 still runs it.
    o.protocol = Protocol::LL128;
    CHECK(offers(planner::CollectiveRunner(c, nccl(), o), Protocol::LL128));
  }
  SECTION("not over PCIe only: eight L40S under PCIe switches") {
    const models::Cluster c = cluster_from(dir, "cluster:\n  nodes:\n    - node: pcie-box\n");
    o.gpus = first_gpus(c, 8);
    CHECK_FALSE(offers(planner::CollectiveRunner(c, nccl(), o), Protocol::LL128));
  }
  SECTION("on NVLink: DGX H100, and two nodes whose GPUs sit next to their NIC") {
    const models::Cluster one = test::shipped_cluster("dgx-h100-1node.yaml");
    o.gpus = first_gpus(one, 8);
    CHECK(offers(planner::CollectiveRunner(one, nccl(), o), Protocol::LL128));
    const models::Cluster two = test::shipped_cluster("h100-2x8-200g.yaml");
    o.gpus = first_gpus(two, 16);
    const planner::ProtocolContext ctx = planner::protocol_context(two, o.gpus);
    CHECK(ctx.inter == models::PathType::Pix);
    CHECK(offers(planner::CollectiveRunner(two, nccl(), o), Protocol::LL128));
  }
  SECTION("not across architectures: an A100 node and an H100 node") {
    const models::Cluster c = test::shipped_cluster("mixed-a100-h100.yaml");
    o.gpus = first_gpus(c, 16, 15 * 8);  // node 15 (A100) and node 16 (H100)
    const planner::ProtocolContext ctx = planner::protocol_context(c, o.gpus);
    REQUIRE(ctx.archs.size() == 2);
    CHECK_THAT(nccl().default_refusal(Protocol::LL128, ctx), Contains("different GPU architectures"));
  }
  SECTION("RCCL: gfx942 over xGMI yes, other AMD architectures no") {
    const models::Cluster c = test::shipped_cluster("mi300x-1node.yaml");
    o.gpus = first_gpus(c, 8);
    CHECK(offers(planner::CollectiveRunner(c, rccl(), o), Protocol::LL128));
    planner::ProtocolContext ctx = planner::protocol_context(c, o.gpus);
    ctx.archs = {"gfx1100"};
    CHECK_THAT(rccl().default_refusal(Protocol::LL128, ctx), Contains("not enabled on gfx1100"));
    ctx.archs = {"sm60"};  // NCCL: compute capability below 7.0
    CHECK_THAT(nccl().default_refusal(Protocol::LL128, ctx), Contains("not enabled on sm60"));
  }
}

TEST_CASE("link efficiency follows base: a renamed NVLink bridge keeps NVLink's figure", "[cost][efficiency]") {
  TempDir dir;
  // Two RTX 2080 Ti joined by a 2-link NVLink2 bridge; the scenario renames the bridge kind.
  const std::string node = R"(cluster:
  nodes:
    - node:
        base: pcie-box-2080ti
        pcie: {p2p: true}
        bridges: {links: 2}
)";
  const models::Cluster renamed =
      cluster_from(dir, node + "        gpu: {scaleup: {link: {base: nvlink2, name: my-bridge}}}\n");
  const models::Cluster plain = cluster_from(dir, node);
  const auto& kinds = renamed.topology.link_kinds();
  const auto it = std::find(kinds.begin(), kinds.end(), "my-bridge");
  REQUIRE(it != kinds.end());
  const auto k = static_cast<std::size_t>(it - kinds.begin());
  CHECK(renamed.topology.link_kind_lineage(k) == std::vector<std::string>{"nvlink2"});
  // nccl.yaml: nvlink2 0.8 (SM70_NVLINK_BW 20 / 25 GB/s).
  CHECK(nccl().link_efficiency(renamed.topology, k) == Approx(0.8));
  CHECK(nccl().params(Algorithm::Ring, Protocol::Simple, renamed.topology).link_efficiency[k] == Approx(0.8));

  // Ring Simple AllReduce of 256 MiB over 2 ranks moves S bytes each way over the bridge
  // (2(n-1)/n x S = S) at 2 links x 25 GB/s x 0.8 = 40 GB/s: 268435456 / 40e9 = 6.71 ms, plus
  // microseconds of latency. Without the efficiency it would be 5.37 ms (+25 % bandwidth).
  planner::CollectiveOptions o;
  o.gpus = first_gpus(renamed, 2);
  o.algorithm = Algorithm::Ring;
  o.protocol = Protocol::Simple;
  const double t_renamed = planner::CollectiveRunner(renamed, nccl(), o).run(256ULL << 20).time;
  o.gpus = first_gpus(plain, 2);
  const double t_plain = planner::CollectiveRunner(plain, nccl(), o).run(256ULL << 20).time;
  CHECK(t_renamed == Approx(268435456.0 / 40e9).epsilon(0.01));
  CHECK(t_renamed == Approx(t_plain));
}

TEST_CASE("a renamed NVLink still builds an NVSwitch node and keeps NVLink's efficiency", "[cost][efficiency]") {
  TempDir dir;
  const models::Cluster c = cluster_from(dir, R"(cluster:
  nodes:
    - node:
        base: dgx-h100
        gpu: {scaleup: {link: {base: nvlink4, name: nvlink4-custom}}}
)");
  const auto& kinds = c.topology.link_kinds();
  const auto k = static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), "nvlink4-custom") - kinds.begin());
  REQUIRE(k < kinds.size());
  // nccl.yaml nvlink4: SM90_NVLINK_BW 20.6 / 25 = 0.824.
  CHECK(nccl().params(Algorithm::Ring, Protocol::Simple, c.topology, "sm90").link_efficiency[k] == Approx(0.824));
}

TEST_CASE("a link kind without efficiency is a warning naming it, once", "[cost][efficiency]") {
  TempDir dir;
  // MI300X with its xGMI renamed, costed with NCCL's table (which has no xGMI row).
  const models::Cluster c = cluster_from(dir, R"(cluster:
  nodes:
    - node:
        base: mi300x-oam
        gpu: {scaleup: {link: {base: xgmi, name: fabric-x}}}
)");
  planner::CostModel costs = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
  std::vector<std::string> warnings;
  costs.set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
  planner::CollectiveOptions o;
  o.gpus = first_gpus(c, 8);
  planner::CollectiveRunner(c, costs, o).run(1 << 20);
  planner::CollectiveRunner(c, costs, o).run(1 << 24);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("link kind 'fabric-x' (based on xgmi) has no link_efficiency"));
  // The renamed kind is still described as xGMI (ccsim topo), through its lineage.
  const models::TopologySummary summary = models::summarize(c);
  CHECK(std::any_of(summary.positions.begin(), summary.positions.end(),
                    [](const models::PositionSummary& p) { return p.position == "xGMI peer, other PCIe switch, same CPU"; }));

  // Every kind of a shipped NVIDIA and AMD system has a row in its default table: no warning.
  for (const char* scenario : {"dgx-h100-1node.yaml", "h100-2x8-200g.yaml", "mi300x-1node.yaml", "pcie-2gpu-nop2p.yaml"}) {
    const models::Cluster shipped = test::shipped_cluster(scenario);
    planner::CostModel defaults = planner::CostModel::load(planner::CostModel::default_path(shipped));
    std::vector<std::string> none;
    defaults.set_warning_sink([&](const std::string& w) { none.push_back(w); });
    o.gpus = first_gpus(shipped, shipped.topology.gpus().size());
    planner::CollectiveRunner(shipped, defaults, o).run(1 << 24);
    INFO(scenario);
    CHECK(none.empty());
  }
}

TEST_CASE("calibration: bad architecture keys and protocol rules name file, key, expected, found", "[cost][input]") {
  TempDir dir;
  SECTION("a cap keyed by architecture instead of family") {
    const std::string e = load_error(dir, kMinimalTable + R"(bandwidth_caps:
  ring:
    LL:
      per: rank
      sm90: [1GB/s, 1GB/s, 1GB/s]
)");
    CHECK_THAT(e, Contains("table.yaml:14:7: error: bandwidth_caps.ring.LL.sm90: expected an architecture family (volta, "
                           "ampere, hopper, blackwell) or an AMD architecture such as gfx942, found 'sm90'; NCCL keys sm90 as 'hopper'"));
  }
  SECTION("a two-rank cap factor above 1, and one keyed by architecture") {
    std::string e = load_error(dir, kMinimalTable + R"(bandwidth_caps:
  ring:
    LL128:
      per: channel
      blackwell: [40GB/s, 40GB/s, 40GB/s]
      two_ranks: {blackwell: 1.6}
)");
    CHECK_THAT(e, Contains("table.yaml:15:"));
    CHECK_THAT(e, Contains("bandwidth_caps.ring.LL128.two_ranks.blackwell: expected a factor above 0 and at most 1"));
    e = load_error(dir, kMinimalTable + R"(bandwidth_caps:
  ring:
    LL128:
      per: channel
      blackwell: [40GB/s, 40GB/s, 40GB/s]
      two_ranks: {sm100: 0.6}
)");
    CHECK_THAT(e, Contains("table.yaml:15:19: error: bandwidth_caps.ring.LL128.two_ranks.sm100: expected an architecture family"));
  }
  SECTION("a bandwidth factor keyed by an unknown family") {
    const std::string e = load_error(dir, kMinimalTable + R"(  nvls:
    base_latency: {Simple: 0us}
    step_overhead: {}
    bandwidth_factor: {Simple: {kepler: 0.5}}
)");
    CHECK_THAT(e, Contains("table.yaml:13:33: error: algorithms.nvls.bandwidth_factor.Simple.kepler: expected an architecture "
                           "family"));
    CHECK_THAT(e, Contains("found 'kepler'"));
  }
  SECTION("a family factor above 1") {
    const std::string e = load_error(dir, kMinimalTable + R"(  nvls:
    base_latency: {Simple: 0us}
    step_overhead: {}
    bandwidth_factor: {Simple: {hopper: 1.5}}
)");
    CHECK_THAT(e, Contains("algorithms.nvls.bandwidth_factor.Simple.hopper: expected a fraction of the link bandwidth in [0.01, 1], found '1.5'"));
  }
  SECTION("a protocol rule with an unknown path type") {
    const std::string e = load_error(dir, kMinimalTable + R"(protocol_rules:
  LL128: {archs: [hopper], max_intra_path: PCIE, max_inter_path: PXB}
)");
    CHECK_THAT(e, Contains("table.yaml:11:"));
    CHECK_THAT(e, Contains("protocol_rules.LL128.max_intra_path: expected a path type: NVL, PIX, PXB, PHB, SYS or NET, found 'PCIE'"));
  }
  SECTION("a protocol rule naming something that is not an architecture") {
    const std::string e = load_error(dir, kMinimalTable + R"(protocol_rules:
  LL128: {archs: [hopper, rtx], max_intra_path: NVL, max_inter_path: PXB}
)");
    CHECK_THAT(e, Contains("table.yaml:11:27: error: protocol_rules.LL128.archs: expected architectures (sm80, gfx942) or "
                           "families (volta, ampere, hopper, blackwell), found 'rtx'"));
  }
  SECTION("a link efficiency keyed by something that is not an architecture") {
    const std::string e = load_error(dir, kMinimalTable + R"(link_efficiency:
  nvlink3: {default: 0.8, turing: 0.5}
)");
    CHECK_THAT(e, Contains("table.yaml:11:27: error: link_efficiency.nvlink3.turing: expected an architecture (sm86, gfx942), a "
                           "family (volta, ampere, hopper, blackwell) or default, found 'turing'"));
  }
  SECTION("the shipped tables load") {
    CHECK(load_error(dir, kMinimalTable).empty());
    CHECK_NOTHROW(planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml")));
    CHECK_NOTHROW(planner::CostModel::load(test::source_path("scenarios/calibration/rccl.yaml")));
  }
}
