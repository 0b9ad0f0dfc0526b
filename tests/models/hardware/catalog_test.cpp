#include <catch2/catch.hpp>

#include "test_support.hpp"

using ccsim::models::LinkClass;
using ccsim::models::NodeLayout;
using ccsim::test::shipped_catalog;

TEST_CASE("every catalog entry names its public source", "[catalog]") {
  const auto& c = shipped_catalog();
  for (const auto& n : c.link_names()) CHECK_FALSE(c.link(n).source.empty());
  for (const auto& n : c.gpu_names()) CHECK_FALSE(c.gpu(n).source.empty());
  for (const auto& n : c.node_names()) CHECK_FALSE(c.node(n).source.empty());
}

TEST_CASE("the catalog holds the GPUs and links the issue lists", "[catalog]") {
  const auto& c = shipped_catalog();
  for (const char* gpu : {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5", "H100-PCIe", "H200-SXM", "B200", "MI300X",
                          "L40S", "V100-SXM2", "RTX-2080Ti"}) {
    CHECK_NOTHROW(c.gpu(gpu));
  }
  for (const char* link : {"nvlink2", "nvlink3", "nvlink4", "nvlink5", "xgmi", "pcie-gen3", "pcie-gen4", "pcie-gen5",
                           "ib-hdr", "ib-ndr", "ib-xdr", "roce-100g", "roce-200g", "roce-400g"}) {
    CHECK_NOTHROW(c.link(link));
  }
  for (const char* node : {"dgx-a100", "dgx-h100", "hgx-h200", "mi300x-oam", "pcie-box", "nvl72"}) CHECK_NOTHROW(c.node(node));
}

TEST_CASE("GPU figures match the datasheets", "[catalog]") {
  const auto& c = shipped_catalog();
  const auto h100 = c.gpu("H100-SXM5");
  // 18 NVLink4 × 25 GB/s = 450 GB/s per direction (900 GB/s bidirectional, H100 datasheet).
  CHECK(h100.scaleup_links == 18);
  CHECK(h100.scaleup_bandwidth() == 450e9);
  CHECK(h100.bf16_flops == 989e12);
  CHECK(h100.fp8_flops == 1979e12);
  CHECK(h100.hbm_capacity == 80e9);
  CHECK(h100.host_link.name == "pcie-gen5");
  // A100: 12 × 25 GB/s = 300 GB/s per direction.
  CHECK(c.gpu("A100-SXM4-80GB").scaleup_bandwidth() == 300e9);
  // B200: 18 × 50 GB/s = 900 GB/s per direction.
  CHECK(c.gpu("B200").scaleup_bandwidth() == 900e9);
  // MI300X: 7 xGMI links × 64 GB/s = 448 GB/s per direction (896 GB/s bidirectional).
  CHECK(c.gpu("MI300X").scaleup_bandwidth() == 448e9);
  CHECK_FALSE(c.gpu("L40S").scaleup_link.has_value());
  // T4 (NVIDIA T4 datasheet; Turing whitepaper): 40 SMs of Turing (sm75), 65 TFLOPS FP16
  // tensor (no BF16, no FP8), 16 GB GDDR6 at 320 GB/s, PCIe Gen3 x16, no NVLink.
  const auto t4 = c.gpu("T4");
  CHECK(t4.arch == "sm75");
  CHECK(t4.sms == 40);
  CHECK(t4.bf16_flops == 65e12);
  CHECK(t4.fp8_flops == 0);
  CHECK(t4.hbm_capacity == 16e9);
  CHECK(t4.hbm_bandwidth == 320e9);
  CHECK(t4.host_link.name == "pcie-gen3");
  CHECK_FALSE(t4.scaleup_link.has_value());
}

TEST_CASE("entries inherit from their base and override fields", "[catalog]") {
  const auto& c = shipped_catalog();
  const auto h200 = c.gpu("H200-SXM");
  CHECK(h200.name == "H200-SXM");
  CHECK(h200.hbm_capacity == 141e9);         // overridden
  CHECK(h200.hbm_bandwidth == 4800e9);       // overridden
  CHECK(h200.bf16_flops == 989e12);          // inherited from H100-SXM5
  CHECK(h200.scaleup_bandwidth() == 450e9);  // inherited
  const auto a100_40 = c.gpu("A100-SXM4-40GB");
  CHECK(a100_40.hbm_capacity == 40e9);
  CHECK(a100_40.scaleup_links == 12);
  const auto hgx = c.node("hgx-h200");
  CHECK(hgx.gpu.name == "H200-SXM");
  CHECK(hgx.nics == 8);
  CHECK(hgx.nvls);
}

TEST_CASE("link figures: NICs in bytes per second per direction", "[catalog]") {
  const auto& c = shipped_catalog();
  CHECK(c.link("ib-hdr").bandwidth == 25e9);   // 200 Gb/s
  CHECK(c.link("ib-ndr").bandwidth == 50e9);   // 400 Gb/s
  CHECK(c.link("ib-xdr").bandwidth == 100e9);  // 800 Gb/s
  CHECK(c.link("roce-100g").bandwidth == 12.5e9);
  CHECK(c.link("pcie-gen3").bandwidth == 15.75e9);
  CHECK(c.link("ib-ndr").link_class == LinkClass::Network);
  CHECK(c.link("nvlink4").link_class == LinkClass::ScaleUp);
}

TEST_CASE("node templates describe the published systems", "[catalog]") {
  const auto& c = shipped_catalog();
  const auto a100 = c.node("dgx-a100");
  CHECK(a100.layout == NodeLayout::NvSwitch);
  CHECK(a100.gpus == 8);
  CHECK(a100.pcie_switches == 4);
  CHECK(a100.nics == 8);
  CHECK(a100.nic_link->name == "ib-hdr");
  CHECK_FALSE(a100.nvls);
  const auto h100 = c.node("dgx-h100");
  CHECK(h100.nvswitch_generation == 3);
  CHECK(h100.nvls);
  CHECK(h100.nic_link->bandwidth == 50e9);
  CHECK(c.node("nvl72").gpus == 72);
  CHECK(c.node("mi300x-oam").layout == NodeLayout::XgmiMesh);
  CHECK_FALSE(c.node("pcie-box-2080ti").p2p);
}

TEST_CASE("catalog: a GPU's lineage names the entries it derives from, nearest first", "[catalog]") {
  // H200-SXM is `base: H100-SXM5` in scenarios/hardware/gpus.yaml; an inline GPU derived from it
  // carries both, its own name first (the names per-GPU calibration entries are looked up by).
  const YAML::Node node = YAML::Load("{base: dgx-h100, gpu: {base: H200-SXM, name: H200-slow, bf16_flops: 400TFLOPS}}");
  const ccsim::models::NodeSpec spec = shipped_catalog().node(ccsim::support::YamlSource{node, nullptr}, "node");
  CHECK(spec.gpu.kind_names() == std::vector<std::string>{"H200-slow", "H200-SXM", "H100-SXM5"});
  CHECK(shipped_catalog().node("dgx-h100").gpu.kind_names() == std::vector<std::string>{"H100-SXM5"});
}

TEST_CASE("PCIe Gen6 and the XDR host that uses it", "[catalog]") {
  const auto& c = shipped_catalog();
  // PCIe 6.0: 64 GT/s per lane (PAM4), FLIT mode: 242 of every 256 FLIT bytes are TLP + DLP
  // (8 B CRC and 6 B FEC are the code's overhead, as 128b/130b is Gen3-5's).
  // x16: 64e9 × 16 / 8 = 128 GB/s × 242/256 = 121 GB/s per direction.
  const auto gen6 = c.link("pcie-gen6");
  CHECK(gen6.link_class == LinkClass::Pcie);
  CHECK(gen6.bandwidth == Approx(64e9 * 16 / 8 * 242.0 / 256.0).epsilon(1e-12));
  // Modelled as Gen5 is (32e9 × 16 / 8 × 128/130 = 63 GB/s): the same rule, twice the rate, a
  // lighter code.
  CHECK(c.link("pcie-gen5").bandwidth == Approx(32e9 * 16 / 8 * 128.0 / 130.0).epsilon(1e-3));
  CHECK(gen6.bandwidth / c.link("pcie-gen5").bandwidth == Approx(2 * (242.0 / 256.0) / (128.0 / 130.0)).epsilon(1e-3));
  // B300 (Blackwell Ultra): B200's compute and NVLink5, 288 GB, a Gen6 host interface.
  const auto b300 = c.gpu("B300");
  CHECK(b300.host_link.name == "pcie-gen6");
  CHECK(b300.hbm_capacity == 288e9);
  CHECK(b300.bf16_flops == c.gpu("B200").bf16_flops);
  CHECK(b300.scaleup_bandwidth() == 900e9);
  // DGX B300: 8 ConnectX-8 (XDR, 100 GB/s) behind Gen6 switches: neither x16 link (121 GB/s)
  // caps the port.
  const auto node = c.node("dgx-b300");
  CHECK(node.gpu.name == "B300");
  CHECK(node.pcie_link.name == "pcie-gen6");
  REQUIRE(node.nic_link);
  CHECK(node.nic_link->name == "ib-xdr");
  CHECK(node.nics == 8);
  CHECK(node.nic_link->bandwidth < gen6.bandwidth);
}
