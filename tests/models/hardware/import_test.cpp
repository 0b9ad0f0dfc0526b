// ccsim import (models/hardware/import/): NCCL topology XML, nvidia-smi topo -m and host lists
// into node templates and node counts. Inputs: tests/data/real-cases/import/ (README there
// gives each file's source: Azure's NDv4/NDv5 NCCL_TOPO_FILEs byte for byte, the rest written
// from public specs).
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <set>

#include <yaml-cpp/yaml.h>

#include "models/hardware/import/hostfile.hpp"
#include "models/hardware/import/nccl_topo_xml.hpp"
#include "models/hardware/import/node_template_writer.hpp"
#include "models/hardware/import/nvidia_smi_topo.hpp"
#include "models/hardware/node_builders.hpp"
#include "support/yaml_fields.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::import::ImportOptions;

namespace {

std::string data(const std::string& name) { return test::source_path("tests/data/real-cases/import/" + name); }

/// The imported template read back through the catalog, as a scenario's inline node.
models::NodeSpec node_of(const models::import::ImportedNode& imported) {
  YAML::Node wrapper(YAML::NodeType::Map);
  wrapper["node"] = YAML::Load(imported.yaml);
  return test::shipped_catalog().node(support::Fields({{wrapper, nullptr}}, ""), "node");
}

models::Topology one_node(const models::NodeSpec& spec) {
  models::Topology t;
  models::add_node(t, spec, 0);
  return t;
}

/// Per GPU: the rail of its NIC, the bottleneck bandwidth GPU -> its NIC, GPU -> GPU 0 over the
/// scale-up fabric, and which other GPUs share its PCIe switch.
struct GpuView {
  int rail;
  double to_nic;
  double to_gpu0;
  std::set<int> switch_mates;
  bool operator==(const GpuView&) const = default;
};

std::vector<GpuView> view(const models::Topology& t) {
  std::vector<GpuView> out;
  const auto& gpus = t.gpus();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const models::Device& d = t.device(gpus[g]);
    GpuView v{d.rail, t.route(gpus[g], d.nic).path.bandwidth, g == 0 ? 0.0 : t.route(gpus[g], gpus[0]).path.bandwidth, {}};
    for (std::size_t h = 0; h < gpus.size(); ++h)
      if (h != g && t.device(gpus[h]).pcie_switch == d.pcie_switch) v.switch_mates.insert(static_cast<int>(h));
    out.push_back(v);
  }
  return out;
}

}  // namespace

TEST_CASE("import nccl-topo: Azure NDv4 matches the catalog's dgx-a100 in bandwidths and GPU-NIC affinity", "[import]") {
  const models::import::HostDescription host = models::import::read_nccl_topo_xml(data("ndv4-topo.xml"));
  CHECK(host.cpus.size() == 4);
  CHECK(host.gpus.size() == 8);
  CHECK(host.nics.size() == 8);
  CHECK_FALSE(host.scaleup_stated);  // NCCL_TOPO_FILE of a cloud image: NVLink left to NVML
  // GPUs in bus-id order: 0001, 0002 share the switch of NUMA node 1 with NICs 0101, 0102.
  CHECK(host.gpus[0].busid == "0001:00:00.0");
  CHECK(host.nics[0].busid == "0101:00:00.0");
  CHECK(host.gpus[0].attach == host.nics[0].attach);
  CHECK(host.gpus[0].link == models::import::PcieLinkInfo{16.0, 16});

  ImportOptions o;
  o.gpu = "A100-SXM4-80GB";
  o.nic = "ib-hdr";
  o.nvlink = "nvswitch";
  const models::import::ImportedNode imported = models::import::write_node_template(host, test::shipped_catalog(), o);
  const models::NodeSpec spec = node_of(imported);
  const models::NodeSpec dgx = test::shipped_catalog().node("dgx-a100");
  CHECK(spec.layout == models::NodeLayout::NvSwitch);
  CHECK(spec.nvswitch_generation == dgx.nvswitch_generation);
  CHECK(spec.pcie_switches == dgx.pcie_switches);  // 4
  CHECK(spec.nics == dgx.nics);
  CHECK(spec.nic_link->bandwidth == dgx.nic_link->bandwidth);  // 25 GB/s
  CHECK(spec.pcie_link.name == "pcie-gen4");
  // Same rail per GPU (GPU i <-> NIC i, both on one switch with its neighbour), same GPU -> NIC
  // bottleneck (PCIe Gen4 x16, 31.5 GB/s), same NVLink path to GPU 0 (12 x 25 GB/s).
  const std::vector<GpuView> a = view(one_node(spec)), b = view(one_node(dgx));
  REQUIRE(a.size() == 8);
  for (std::size_t g = 0; g < 8; ++g) {
    INFO("GPU " << g);
    CHECK(a[g].rail == static_cast<int>(g));
    CHECK(a[g].rail == b[g].rail);
    CHECK(a[g].to_nic == Approx(31.5e9));
    CHECK(a[g].to_nic == Approx(b[g].to_nic));
    if (g > 0) CHECK(a[g].to_gpu0 == Approx(b[g].to_gpu0));
    CHECK(a[g].switch_mates == b[g].switch_mates);
  }
}

TEST_CASE("import nccl-topo: NDv5 gives one switch per GPU-NIC pair on PCIe Gen5", "[import]") {
  ImportOptions o;
  o.gpu = "H100-SXM5";
  o.nic = "ib-ndr";
  o.nvlink = "nvswitch";
  const models::NodeSpec spec =
      node_of(models::import::write_node_template(models::import::read_nccl_topo_xml(data("ndv5-topo.xml")), test::shipped_catalog(), o));
  const models::NodeSpec dgx = test::shipped_catalog().node("dgx-h100");
  CHECK(spec.pcie_switches == 8);
  CHECK(spec.pcie_link.name == "pcie-gen5");
  CHECK(spec.cpu_link.name == "upi");  // GenuineIntel model 143 (Sapphire Rapids)
  const std::vector<GpuView> a = view(one_node(spec)), b = view(one_node(dgx));
  for (std::size_t g = 0; g < 8; ++g) {
    CHECK(a[g].rail == b[g].rail);
    CHECK(a[g].to_nic == Approx(b[g].to_nic));  // 63 GB/s
    CHECK(a[g].switch_mates.empty());
  }
}

TEST_CASE("import nccl-topo: a dump with NVLink, NIC speeds and a management port", "[import]") {
  const models::import::HostDescription host = models::import::read_nccl_topo_xml(data("dgx-h100-dump.xml"));
  CHECK(host.scaleup_stated);
  CHECK(host.gpus.size() == 8);
  CHECK(host.nics.size() == 9);  // 8 x 400G + eth0 at 25G
  CHECK(host.nics[0].speed == 400e9);
  CHECK(host.nics[0].nic_class == models::import::NicClass::Infiniband);
  // GPU 1 sits two bridges deep: flattened into the top switch with NIC mlx5_1.
  CHECK(host.gpus[1].attach == host.nics[1].attach);
  ImportOptions o;
  o.gpu = "H100-SXM5";
  const models::import::ImportedNode imported = models::import::write_node_template(host, test::shipped_catalog(), o);
  const models::NodeSpec spec = node_of(imported);
  CHECK(spec.layout == models::NodeLayout::NvSwitch);  // nvlink tclass 0x068000
  CHECK(spec.nvls);
  CHECK(spec.nic_link->name == "ib-ndr");  // 400000 Mb/s InfiniBand
  CHECK(spec.nics == 8);                   // eth0 left out, with a note
  bool noted = false;
  for (const std::string& n : imported.notes) noted = noted || n.find("eth0") != std::string::npos;
  CHECK(noted);
  // --nvlink is refused where the file says how GPUs join.
  o.nvlink = "none";
  CHECK_THROWS_WITH(models::import::write_node_template(host, test::shipped_catalog(), o), Catch::Contains("--nvlink"));
}

TEST_CASE("import nccl-topo: a VM's 2.5 GT/s x1 bridge is 0.25 GB/s raw, 0.1875 GB/s as NCCL credits it", "[import]") {
  const models::import::HostDescription host = models::import::read_nccl_topo_xml(data("vm-gen1-bridge.xml"));
  CHECK(host.attaches.front().link == models::import::PcieLinkInfo{2.5, 1});
  ImportOptions o;
  o.gpu = "A100-SXM4-80GB";
  o.nvlink = "none";
  const models::NodeSpec spec = node_of(models::import::write_node_template(host, test::shipped_catalog(), o));
  REQUIRE(spec.pcie_tree.size() == 1);
  // x1 of Gen1: 4 GB/s (x16) / 16 = 0.25 GB/s; nccl.yaml credits pcie-gen1 at 0.75 (NCCL:
  // 1 lane x 15 x 100 Mb/s / 8 = 0.1875 GB/s).
  CHECK(spec.pcie_tree[0].link.bandwidth == Approx(0.25e9));
  CHECK(spec.pcie_tree[0].link.lineage.back() == "pcie-gen1");
  CHECK(spec.pcie_tree[0].gpu_link.name == "pcie-gen4");  // the GPUs' own links stay x16 Gen4
  const models::Topology t = one_node(spec);
  const models::DeviceId cpu = t.device(t.gpus()[0]).cpu;
  CHECK(t.route(t.gpus()[0], cpu).path.bandwidth == Approx(0.25e9));
  CHECK(t.route(t.gpus()[0], t.gpus()[1]).path.bandwidth == Approx(31.5e9));  // under the bridge
}

TEST_CASE("import nvidia-smi-topo: DGX A100 matrix with NIC columns and legend", "[import]") {
  const models::import::HostDescription host = models::import::read_nvidia_smi_topo(data("dgx-a100-topo-m.txt"));
  CHECK(host.gpus.size() == 8);
  CHECK(host.nics.size() == 10);
  CHECK(host.nics[4].name == "mlx5_4");
  ImportOptions o;
  o.gpu = "A100-SXM4-80GB";
  o.nic = "ib-hdr";
  o.pcie = "pcie-gen4";
  o.cpu_link = "amd-socket-xgmi";
  o.skip_nics = {"mlx5_4", "mlx5_5"};  // the storage NICs
  const models::NodeSpec spec = node_of(models::import::write_node_template(host, test::shipped_catalog(), o));
  CHECK(spec.layout == models::NodeLayout::NvSwitch);  // NV12 x 7 peers > A100's 12 links: a switch
  CHECK(spec.nics == 8);
  const std::vector<GpuView> a = view(one_node(spec)), b = view(one_node(test::shipped_catalog().node("dgx-a100")));
  for (std::size_t g = 0; g < 8; ++g) {
    CHECK(a[g].rail == b[g].rail);
    CHECK(a[g].to_nic == Approx(b[g].to_nic));
    CHECK(a[g].switch_mates == b[g].switch_mates);
  }
  // Without --cpu-link the import stops and names it: the matrix does not say the CPU vendor.
  o.cpu_link.clear();
  CHECK_THROWS_WITH(models::import::write_node_template(host, test::shipped_catalog(), o), Catch::Contains("--cpu-link"));
  o.cpu_link = "amd-socket-xgmi";
  o.skip_nics = {"mlx5_42"};
  CHECK_THROWS_WITH(models::import::write_node_template(host, test::shipped_catalog(), o), Catch::Contains("mlx5_42"));
}

TEST_CASE("import nvidia-smi-topo: older layout; a 4-GPU NV6 mesh is direct, not a switch", "[import]") {
  const models::import::HostDescription host = models::import::read_nvidia_smi_topo(data("h100-topo-m-old.txt"));
  REQUIRE(host.cpus.size() == 2);  // NUMA 0 and 1
  ImportOptions o;
  o.gpu = "H100-SXM5";
  o.cpu_link = "upi";
  const models::NodeSpec spec = node_of(models::import::write_node_template(host, test::shipped_catalog(), o));
  CHECK(spec.layout == models::NodeLayout::NvSwitch);  // NV18 x 7 > 18
  CHECK(spec.nics == 0);

  const std::string mesh =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV6\tNV6\tNV6\t0-55\t0\n"
      "GPU1\tNV6\t X \tNV6\tNV6\t0-55\t0\n"
      "GPU2\tNV6\tNV6\t X \tNV6\t56-111\t1\n"
      "GPU3\tNV6\tNV6\tNV6\t X \t56-111\t1\n";
  const models::NodeSpec hgx = node_of(
      models::import::write_node_template(models::import::parse_nvidia_smi_topo(mesh, "hgx4.txt"), test::shipped_catalog(), o));
  CHECK(hgx.layout == models::NodeLayout::Direct);  // 6 x 3 = 18 links: a mesh (HGX H100 4-GPU)
  CHECK(hgx.gpu_links.size() == 6);
  CHECK(hgx.gpu_links.front().count == 6);
}

TEST_CASE("import: bad NCCL XML and topo matrices are located errors", "[import][bad-input]") {
  using models::import::parse_nccl_topo_xml;
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system><cpu>", "x.xml"), Catch::Contains("x.xml:1:") && Catch::Contains("well-formed XML"));
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<algo/>", "x.xml"), Catch::Contains("<system"));
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system version=\"1\"><cpu/></system>", "x.xml"), Catch::Contains("at least one GPU"));
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system><cpu><pci busid=\"0000:01:00.0\" class=\"0x0302\" link_speed=\"7 GT/s\"/></cpu></system>", "x.xml"),
                    Catch::Contains("link_speed") && Catch::Contains("x.xml:1:"));
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system><cpu><pci busid=\"zz\" class=\"0x0302\"/></cpu></system>", "x.xml"), Catch::Contains("busid"));
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system><cpu><pci busid=\"0000:01:00.0\" class=\"0x0302\" link_width=\"-3\"/></cpu></system>", "x.xml"),
                    Catch::Contains("link_width"));
  // Numbers past any bound, decimal or hex, are refused without overflowing.
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system><cpu><pci busid=\"0000:01:00.0\" class=\"0x0302\" link_width=\"9223372036854775808\"/></cpu></system>", "x.xml"),
                    Catch::Contains("link_width"));
  CHECK_THROWS_WITH(parse_nccl_topo_xml("<system><cpu numaid=\"0xffffffffffffffffff\"/></system>", "x.xml"), Catch::Contains("numaid"));
  std::string many = "<system><cpu>";
  for (int i = 0; i < 300; ++i) many += "<pci busid=\"0000:01:00.0\" class=\"0x0108\"/>";
  CHECK_THROWS_WITH(parse_nccl_topo_xml(many + "</cpu></system>", "x.xml"), Catch::Contains("256 elements"));

  using models::import::parse_nvidia_smi_topo;
  CHECK_THROWS_WITH(parse_nvidia_smi_topo("hello\n", "t.txt"), Catch::Contains("GPU0"));
  CHECK_THROWS_WITH(parse_nvidia_smi_topo("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV3\t X \n", "t.txt"), Catch::Contains("symmetric"));
  CHECK_THROWS_WITH(parse_nvidia_smi_topo("\tGPU0\tGPU1\nGPU0\t X \tQQQ\nGPU1\tPIX\t X \n", "t.txt"),
                    Catch::Contains("t.txt:2:") && Catch::Contains("QQQ"));
  CHECK_THROWS_WITH(parse_nvidia_smi_topo("\tGPU0\tGPU1\nGPU0\t X \tPIX\n", "t.txt"), Catch::Contains("a row for every header column"));
  // Colour escapes as nvidia-smi prints them on a terminal are ignored.
  const auto host = parse_nvidia_smi_topo("\t\x1b[4mGPU0\tGPU1\x1b[0m\nGPU0\t X \tPIX\nGPU1\tPIX\t X \n", "t.txt");
  CHECK(host.gpus.size() == 2);
  CHECK(host.attaches.size() == 1);  // one switch (PIX)
}

TEST_CASE("import: hostfiles and Slurm nodelists give host and slot counts", "[import]") {
  const models::import::HostList mpi = models::import::read_hostfile(data("hosts-openmpi.txt"));
  CHECK(mpi.hosts.size() == 4);
  CHECK(mpi.slots == std::vector<int>{8, 8, 8, 8});
  const models::import::HostList pbs = models::import::read_hostfile(data("hosts-pbs.txt"));
  CHECK(pbs.hosts == std::vector<std::string>{"gpu01", "gpu02"});
  CHECK(pbs.slots == std::vector<int>{4, 4});  // one line per slot
  const models::import::HostList mpich = models::import::parse_hostfile("a:4\nb:4\n", "h");
  CHECK(mpich.slots == std::vector<int>{4, 4});
  const std::vector<std::string> hosts = models::import::expand_nodelist("gpu[001-016,020],login-a[1-2]", {"<cmd>", 1, 1});
  REQUIRE(hosts.size() == 19);  // 16 + 1 + 2
  CHECK(hosts.front() == "gpu001");
  CHECK(hosts[16] == "gpu020");
  CHECK(hosts.back() == "login-a2");
  CHECK_THROWS_WITH(models::import::expand_nodelist("gpu[5-3]", {"<cmd>", 1, 1}), Catch::Contains("<cmd>:1:5"));
  CHECK_THROWS_WITH(models::import::expand_nodelist("gpu[1-3", {"<cmd>", 1, 1}), Catch::Contains("']'"));
  CHECK_THROWS_WITH(models::import::expand_nodelist("gpu[0-99999999]", {"<cmd>", 1, 1}), Catch::Contains("1048576"));
  CHECK_THROWS_WITH(models::import::parse_hostfile("a slots=0\n", "h"), Catch::Contains("h:1:3"));
  CHECK_THROWS_WITH(models::import::parse_hostfile("a slots=8\na slots=8\n", "h"), Catch::Contains("again"));
  CHECK_THROWS_WITH(models::import::parse_hostfile("a foo\n", "h"), Catch::Contains("slots=N"));
}

TEST_CASE("pcie.tree: every GPU and NIC once, CPUs in range, exclusive with switches", "[import][catalog][bad-input]") {
  const auto parse = [](const std::string& tree) {
    const std::string y = "layout: nvswitch\ngpu: H100-SXM5\ngpus: 2\nnvswitch: {chips: 4, generation: 3, nvls: true}\n"
                          "cpus: 2\ncpu_link: upi\nnics: {link: ib-ndr, count: 2}\npcie: {link: pcie-gen5, " + tree + "}\n";
    YAML::Node wrapper(YAML::NodeType::Map);
    wrapper["node"] = YAML::Load(y);
    return test::shipped_catalog().node(support::Fields({{wrapper, nullptr}}, ""), "node");
  };
  const models::NodeSpec ok = parse("tree: [{cpu: 0, gpus: [0], nics: [1]}, {cpu: 1, switch: false, gpus: [1], nics: [0]}]");
  CHECK(ok.pcie_switches == 1);
  const models::Topology t = one_node(ok);
  CHECK(t.device(t.gpus()[0]).rail == 1);  // its entry's NIC
  CHECK(t.device(t.gpus()[1]).pcie_switch == models::kNoDevice);
  CHECK_THROWS_WITH(parse("tree: [{cpu: 0, gpus: [0, 0], nics: [0, 1]}]"), Catch::Contains("GPU 0 again"));
  CHECK_THROWS_WITH(parse("tree: [{cpu: 0, gpus: [0], nics: [0, 1]}]"), Catch::Contains("GPU 1 is in none"));
  CHECK_THROWS_WITH(parse("tree: [{cpu: 2, gpus: [0, 1], nics: [0, 1]}]"), Catch::Contains("cpu"));
  CHECK_THROWS_WITH(parse("tree: [{cpu: 0, gpus: [0, 1], nics: [0, 2]}]"), Catch::Contains("NIC indices from 0 to 1"));
  CHECK_THROWS_WITH(parse("switches: 2, tree: [{cpu: 0, gpus: [0, 1], nics: [0, 1]}]"), Catch::Contains("no switches count"));
  CHECK_THROWS_WITH(parse("tree: [{cpu: 0, gpus: [0, 1], nics: [0, 1], link: nvlink4}]"), Catch::Contains("class pcie"));
}

TEST_CASE("import nccl-topo: NVLink-C2C in MB/s per link, as the GPU's link to its CPU", "[import]") {
  // GH200-like: one GPU on the Grace CPU's root port with 10 C2C links of 45,000 MB/s (NVML's
  // figure; NCCL: 45000 x 10 / 1000 = 450 GB/s per direction, NVIDIA's 900 GB/s both ways).
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"arm64\" vendor=\"NVIDIA\">"
      "<pci busid=\"0009:01:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"90\"><c2c bw=\"45000\" count=\"10\"/></gpu></pci></cpu></system>";
  const models::import::HostDescription host = models::import::parse_nccl_topo_xml(xml, "gh200.xml");
  CHECK(host.gpus[0].c2c_bandwidth == Approx(450e9));
  ImportOptions o;
  o.gpu = "H100-SXM5";
  o.nvlink = "none";
  const models::NodeSpec spec = node_of(models::import::write_node_template(host, test::shipped_catalog(), o));
  CHECK(spec.gpu.host_link.bandwidth == Approx(450e9));
  REQUIRE(spec.pcie_tree.size() == 1);
  CHECK_FALSE(spec.pcie_tree[0].is_switch);
  const models::Topology t = one_node(spec);
  CHECK(t.route(t.gpus()[0], t.device(t.gpus()[0]).cpu).path.bandwidth == Approx(450e9));
}

TEST_CASE("import: hostile names, duplicates and NVLink islands are refused or made safe", "[import][bad-input]") {
  const std::string gpu = "<pci busid=\"0000:0B:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"/>";
  // Two GPUs with one bus id.
  CHECK_THROWS_WITH(models::import::parse_nccl_topo_xml("<system><cpu>" + gpu + gpu + "</cpu></system>", "d.xml"),
                    Catch::Contains("busid") && Catch::Contains("0000:0b:00.0' twice"));
  // A NIC name with a line break cannot leave its YAML comment.
  const std::string nic = "<pci busid=\"0000:0c:00.0\" class=\"0x020700\" link_speed=\"16 GT/s\" link_width=\"16\"><nic>"
                          "<net name=\"mlx5_0&#10;gpus: 99&#10;#\" dev=\"0\" speed=\"200000\"/></nic></pci>";
  const auto host = models::import::parse_nccl_topo_xml("<system><cpu>" + gpu + nic + "</cpu></system>", "n.xml");
  ImportOptions o;
  o.gpu = "A100-SXM4-80GB";
  o.nvlink = "none";
  const models::import::ImportedNode imported = models::import::write_node_template(host, test::shipped_catalog(), o);
  CHECK(node_of(imported).nics == 1);
  CHECK(imported.yaml.find("mlx5_0?gpus: 99?#") != std::string::npos);
  // --name must be a catalog key.
  o.name = "a: b";
  CHECK_THROWS_WITH(models::import::write_node_template(host, test::shipped_catalog(), o), Catch::Contains("--name"));
  // NVLink islands: two groups of 4 GPUs, NV12 inside each (36 links on an H100 with 18).
  std::string m = "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNUMA Affinity\n";
  for (int a = 0; a < 8; ++a) {
    m += "GPU" + std::to_string(a);
    for (int b = 0; b < 8; ++b) m += a == b ? "\t X " : a / 4 == b / 4 ? "\tNV12" : "\tSYS";
    m += "\t" + std::to_string(a / 4) + "\n";
  }
  ImportOptions h;
  h.gpu = "H100-SXM5";
  h.cpu_link = "upi";
  CHECK_THROWS_WITH(models::import::write_node_template(models::import::parse_nvidia_smi_topo(m, "islands.txt"), test::shipped_catalog(), h),
                    Catch::Contains("islands.txt") && Catch::Contains("NVLink islands"));
  // A header column GPU99999999999 is no GPU: refused as an unknown row, not a crash.
  CHECK_THROWS_WITH(models::import::parse_nvidia_smi_topo("\tGPU0\tGPU99999999999\nGPU0\t X \tPIX\nGPU99999999999\tPIX\t X \n", "g.txt"),
                    Catch::Contains("g.txt:1:7") && Catch::Contains("GPU0 to GPU9999"));
  // Slurm nodelists name each host once.
  CHECK_THROWS_WITH(models::import::expand_nodelist("gpu[1-3],gpu2", {"<cmd>", 1, 1}), Catch::Contains("gpu2 twice"));
}

TEST_CASE("import nccl-topo: NICs the file marks gdr=\"0\" import as the verbs transport", "[import]") {
  // NCCL reads <net gdr="0"/> as a NIC without GPUDirect RDMA (net.gdrSupport, ncclTopoCheckGdr):
  // the node's NICs then move GPU data through host memory, ccsim's verbs transport.
  std::ifstream in(data("dgx-h100-dump.xml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ImportOptions o;
  o.gpu = "H100-SXM5";
  const models::NodeSpec with_gdr =
      node_of(models::import::write_node_template(models::import::parse_nccl_topo_xml(text, "dump.xml"), test::shipped_catalog(), o));
  CHECK(with_gdr.nic_transport == models::NicTransport::Gdr);  // the file says gdr="1"
  for (std::size_t at = text.find("maxconn=\"131072\" gdr=\"1\""); at != std::string::npos; at = text.find("maxconn=\"131072\" gdr=\"1\"", at)) {
    text.replace(at, 24, "maxconn=\"131072\" gdr=\"0\"");
  }
  const models::import::HostDescription host = models::import::parse_nccl_topo_xml(text, "dump.xml");
  REQUIRE(host.nics[0].gdr == 0);
  const models::import::ImportedNode imported = models::import::write_node_template(host, test::shipped_catalog(), o);
  CHECK(imported.yaml.find("transport: verbs") != std::string::npos);
  CHECK(node_of(imported).nic_transport == models::NicTransport::Verbs);
}
