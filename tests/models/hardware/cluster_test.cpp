#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "models/hardware/topology_summary.hpp"
#include "test_support.hpp"

using namespace ccsim::models;
using ccsim::test::shipped_cluster;

namespace {

const LinkGroupSummary& link_group(const TopologySummary& s, const std::string& kind, const std::string& between) {
  const auto it = std::find_if(s.links.begin(), s.links.end(),
                               [&](const LinkGroupSummary& l) { return l.kind == kind && l.between == between; });
  REQUIRE(it != s.links.end());
  return *it;
}

const PositionSummary& position(const TopologySummary& s, const std::string& label) {
  const auto it = std::find_if(s.positions.begin(), s.positions.end(),
                               [&](const PositionSummary& p) { return p.position == label; });
  REQUIRE(it != s.positions.end());
  return *it;
}

int count_of(const TopologySummary& s, DeviceKind kind) {
  for (const auto& [k, n] : s.devices)
    if (k == kind) return n;
  return 0;
}

}  // namespace

TEST_CASE("1 x DGX H100: NVLink per GPU, bisection, paths", "[cluster]") {
  const Cluster c = shipped_cluster("dgx-h100-1node.yaml");
  const TopologySummary s = summarize(c);
  CHECK(s.gpus == 8);
  // 18 NVLink4 × 25 GB/s = 450 GB/s per direction per GPU; 8 GPUs → 3.6 TB/s in all.
  const auto& nvl = link_group(s, "nvlink4", "gpu-nvswitch");
  CHECK(nvl.per_gpu == 450e9);
  CHECK(nvl.total_bandwidth == 3.6e12);
  CHECK(nvl.lanes == 144);
  CHECK(s.nvswitch_chips == 4);
  // Halves GPUs 0-3 | 4-7. Over NVLink: 4 × 450 GB/s = 1.8 TB/s. All links add the one path
  // that avoids NVLink: PCIe up to CPU0, UPI (128 GB/s) to CPU1, PCIe down: 1.8 + 0.128 TB/s.
  CHECK(s.bisection_scaleup == Approx(1.8e12));
  CHECK(s.bisection == Approx(1.928e12));
  // GPU0 -> GPU1: GPU -> NVSwitch -> GPU, 2 × 0.3 us, 450 GB/s, NVL.
  const auto& p = position(s, "same NVSwitch, other PCIe switch, same CPU");
  CHECK(p.type == PathType::Nvl);
  CHECK(p.hops == 2);
  CHECK(p.latency == Approx(0.6e-6));
  CHECK(p.bandwidth == 450e9);
  CHECK(count_of(s, DeviceKind::Nic) == 8);
}

TEST_CASE("4 x DGX A100 on a rail-optimized fat tree", "[cluster]") {
  const TopologySummary s = summarize(shipped_cluster("dgx-a100-4node-rail.yaml"));
  CHECK(s.gpus == 32);
  // NVLink3: 12 × 25 GB/s = 300 GB/s per GPU.
  CHECK(link_group(s, "nvlink3", "gpu-nvswitch").per_gpu == 300e9);
  // 8 HDR NICs × 25 GB/s / 8 GPUs = 25 GB/s injection per GPU.
  CHECK(s.groups.at(0).injection_per_gpu == 25e9);
  // 8 rail leaves (one per NIC index), non-blocking: 8 × 4 × 25 GB/s up, spread over 4 spines.
  CHECK(count_of(s, DeviceKind::NetworkSwitch) == 8 + 4);
  CHECK(link_group(s, "ib-hdr", "leaf-spine").total_bandwidth == 800e9);
  // Bisection nodes 0-1 | 2-3 = 2 nodes × 8 × 25 GB/s = 400 GB/s (no oversubscription).
  CHECK(s.bisection == Approx(400e9));
  // Same rail, other node: GPU - PCIe sw - NIC - leaf - NIC - PCIe sw - GPU:
  // 4 PCIe × 0.5 us + 2 network × 0.35 us = 2.7 us; bottleneck the 25 GB/s NIC port.
  const auto& rail = position(s, "other node, same rail, same leaf");
  CHECK(rail.type == PathType::Net);
  CHECK(rail.hops == 6);
  CHECK(rail.latency == Approx(2.7e-6));
  CHECK(rail.bandwidth == 25e9);
  // Each GPU uses its own NIC (two NICs share GPU0's switch, but NIC1 is GPU1's): one path.
  CHECK(rail.ecmp_paths == 1.0);
  // Other rail: out through NIC0 to leaf 0, over one of the 4 spines, down leaf 1 to NIC1:
  // 4 PCIe × 0.5 us + 4 network × 0.35 us = 3.4 us, 4 equal-cost paths.
  const auto& other = position(s, "other node, other rail, other leaf");
  CHECK(other.hops == 8);
  CHECK(other.latency == Approx(3.4e-6));
  CHECK(other.ecmp_paths == 4.0);
  // PCIe: 2 GPUs per switch → "same PCIe switch" is a position.
  CHECK(position(s, "same NVSwitch, same PCIe switch").type == PathType::Nvl);
}

TEST_CASE("2-GPU PCIe box without P2P routes through host memory", "[cluster]") {
  const TopologySummary s = summarize(shipped_cluster("pcie-2gpu-nop2p.yaml"));
  REQUIRE(s.positions.size() == 1);
  const auto& p = s.positions[0];
  CHECK(p.position == "same PCIe switch");
  // GPU0 -> switch -> CPU -> memory -> CPU -> switch -> GPU1: 4 PCIe Gen3 links (4 × 0.5 us,
  // 15.75 GB/s) and the CPU's memory link written then read (2 × 0.1 us, desktop-ddr4:
  // 2 × 21.33 GB/s × 0.75 / 2 = 16 GB/s each way): 6 hops, 2.2 us, bottleneck 15.75 GB/s.
  CHECK(p.type == PathType::Phb);
  CHECK(p.hops == 6);
  CHECK(p.latency == Approx(2.2e-6));
  CHECK(p.bandwidth == 15.75e9);
  CHECK(s.bisection_scaleup == 0.0);
}

TEST_CASE("1,024 H100 GPUs with a 2:1 oversubscribed spine", "[cluster]") {
  const TopologySummary s = summarize(shipped_cluster("h100-1024gpu-2to1.yaml"));
  CHECK(s.nodes == 128);
  CHECK(s.gpus == 1024);
  // 8 rails × 128/32 node groups = 32 leaves; uplink ports per leaf = 32 / 2 = 16 spines.
  CHECK(count_of(s, DeviceKind::NetworkSwitch) == 32 + 16);
  CHECK(s.groups.at(0).injection_per_gpu == 50e9);
  // Bisection = half the nodes × per-node uplink ÷ oversubscription = 64 × 8 × 50 GB/s / 2.
  CHECK(s.bisection == Approx(64 * 8 * 50e9 / 2));
  CHECK(s.bisection == Approx(12.8e12));
  // Same rail in another leaf group crosses the spine: 16 equal-cost paths, one per spine;
  // latency 4 PCIe × 0.5 us + 4 network × 1 us (the scenario sets 1 us per tier) = 6 us.
  // Each leaf-spine bundle carries
  // 32 × 50 GB/s / 2 / 16 = 50 GB/s.
  const auto& far = position(s, "other node, same rail, other leaf");
  CHECK(far.ecmp_paths == 16.0);
  CHECK(far.latency == Approx(6e-6));
  CHECK(far.bandwidth == 50e9);
  CHECK(link_group(s, "ib-ndr", "leaf-spine").bandwidth_per_link == 50e9);
}

TEST_CASE("a partly filled last leaf keeps whole-port uplinks", "[cluster]") {
  // GPT-3 scenario: 128 DGX A100, 20 nodes per leaf -> 7 leaf groups, the last with 8 nodes.
  // Every leaf is cabled as a full one: 20 HDR ports up (non-blocking), one per spine, so
  // every leaf-spine link runs at the 25 GB/s port rate — 8 rails × 7 groups × 20 = 1,120
  // links, none slower than a port (the partial leaf used to get 8 × 25 / 20 = 10 GB/s links).
  const TopologySummary s = summarize(shipped_cluster("workloads/gpt3-175b-train-1024xa100.yaml"));
  const auto& up = link_group(s, "ib-hdr", "leaf-spine");
  CHECK(up.links == 1120);
  CHECK(up.bandwidth_per_link == 25e9);
  for (const auto& l : s.links) CHECK_FALSE((l.kind == "ib-hdr" && l.bandwidth_per_link < 25e9));
}

TEST_CASE("heterogeneous cluster keeps each group's hardware", "[cluster]") {
  const Cluster c = shipped_cluster("mixed-a100-h100.yaml");
  const TopologySummary s = summarize(c);
  CHECK(s.gpus == 256);
  REQUIRE(s.groups.size() == 2);
  CHECK(s.groups[0].gpu == "A100-SXM4-80GB");
  CHECK(s.groups[1].gpu == "H100-SXM5");
  // HDR NICs into NDR leaf ports run at the slower 25 GB/s; NDR NICs at 50 GB/s.
  CHECK(s.groups[0].injection_per_gpu == 25e9);
  CHECK(s.groups[1].injection_per_gpu == 50e9);
  // Per-GPU link figures are per GPU that has such links, not diluted by the other group.
  CHECK(link_group(s, "nvlink3", "gpu-nvswitch").per_gpu == 300e9);
  CHECK(link_group(s, "nvlink4", "gpu-nvswitch").per_gpu == 450e9);
  CHECK(link_group(s, "ib-hdr", "nic-leaf").per_gpu == 25e9);
  // GPU models are recorded per device: rank 0 is an A100, rank 255 an H100.
  const Topology& t = c.topology;
  CHECK(t.gpu_models().at(t.device(t.gpus().front()).spec) == "A100-SXM4-80GB");
  CHECK(t.gpu_models().at(t.device(t.gpus().back()).spec) == "H100-SXM5");
}

TEST_CASE("xGMI mesh: one link per GPU pair", "[cluster]") {
  const TopologySummary s = summarize(shipped_cluster("mi300x-1node.yaml"));
  // 8 GPUs fully connected: 8·7/2 = 28 links of 64 GB/s; each GPU has 7 × 64 = 448 GB/s
  // (both ends of a GPU-GPU link count for per-GPU figures).
  const auto& x = link_group(s, "xgmi", "gpu-gpu");
  CHECK(x.links == 28);
  CHECK(x.total_bandwidth == 28 * 64e9);
  CHECK(x.per_gpu == 448e9);
  // Bisection over xGMI: 4 × 4 cross pairs × 64 GB/s = 1.024 TB/s.
  CHECK(s.bisection_scaleup == Approx(1.024e12));
  CHECK(position(s, "xGMI peer, other PCIe switch, same CPU").hops == 1);
}

TEST_CASE("DOT output has every device and physical link", "[cluster]") {
  const Cluster c = shipped_cluster("dgx-a100-4node-rail.yaml");
  std::ostringstream out;
  write_dot(c, out);
  const std::string dot = out.str();
  std::size_t links = 0;
  for (std::size_t pos = dot.find(" -- "); pos != std::string::npos; pos = dot.find(" -- ", pos + 1)) ++links;
  CHECK(links == c.topology.num_links() / 2);
  CHECK(dot.rfind("graph \"dgx-a100-4node-rail\" {", 0) == 0);
  CHECK(dot.find("subgraph cluster_node3") != std::string::npos);
}

TEST_CASE("injection limit: which link binds a GPU's way into the fabric", "[cluster][injection]") {
  // Each DGX H100 / HGX H200 GPU reaches its own NIC through two PCIe Gen5 x16 links (GPU -
  // PCIe switch - NIC), one GPU per link: 63 GB/s each (32 GT/s x 16 x 128/130 / 8).
  const Cluster ndr = shipped_cluster("h100-1024gpu-2to1.yaml");  // 128 x DGX H100, NDR
  const InjectionLimit raw = injection_limit(ndr, 0);
  CHECK(raw.line_rate_per_gpu == 50e9);  // one 400 Gb/s port per GPU
  CHECK(raw.per_gpu == 50e9);            // the NIC (50 GB/s) binds below PCIe's 63
  CHECK(raw.nic_binds);
  REQUIRE(raw.binding.size() == 1);
  CHECK(raw.binding[0].kind == "ib-ndr");
  CHECK(raw.binding[0].between == "nic-leaf");
  CHECK(raw.binding[0].gpus == 1);
  // With NCCL's figures (nccl.yaml: PCIe Gen5 48 / 63 = 0.7619, NICs at line rate) PCIe binds:
  // 63 GB/s x 0.7619 = 48.0 GB/s < 50 GB/s, on both PCIe links of the way.
  std::vector<double> eff(ndr.topology.link_kinds().size(), 1.0);
  for (std::size_t k = 0; k < eff.size(); ++k)
    if (ndr.topology.link_kinds()[k] == "pcie-gen5") eff[k] = 0.7619;
  const InjectionLimit credited = injection_limit(ndr, 0, eff);
  CHECK(credited.per_gpu == Approx(63e9 * 0.7619).epsilon(1e-12));
  CHECK_FALSE(credited.nic_binds);
  REQUIRE(credited.binding.size() == 2);
  CHECK(credited.binding[0].kind == "pcie-gen5");
  CHECK(credited.binding[0].between == "gpu-pcie-switch");
  CHECK(credited.binding[1].between == "nic-pcie-switch");
  CHECK(describe_binding(credited) ==
        "pcie-gen5 (gpu-pcie-switch and nic-pcie-switch links: 48 GB/s credited of 63 GB/s per link, 1 GPU each)");

  // The same node with XDR NICs (100 GB/s): PCIe Gen5 binds even at its catalog figure, 63 GB/s.
  const TopologySummary xdr = summarize(ccsim::test::cluster_at("tests/data/sweep/h200-4node-llama3-70b-xdr.yaml"));
  REQUIRE(xdr.groups.size() == 1);
  CHECK(xdr.groups[0].injection_per_gpu == 100e9);
  CHECK(xdr.groups[0].raw.per_gpu == 63e9);
  CHECK_FALSE(xdr.groups[0].raw.nic_binds);

  // DGX A100: 2 GPUs and 2 HDR NICs per PCIe Gen4 switch, each GPU with its own NIC: the 25 GB/s
  // port binds below the 31.5 GB/s Gen4 links.
  const InjectionLimit a100 = injection_limit(shipped_cluster("dgx-a100-4node-rail.yaml"), 0);
  CHECK(a100.per_gpu == 25e9);
  CHECK(a100.nic_binds);
  // One node, no fabric: nothing to inject into.
  CHECK(injection_limit(shipped_cluster("dgx-h100-1node.yaml"), 0).per_gpu == 0);
}
