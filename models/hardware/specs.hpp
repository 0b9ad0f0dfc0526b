#pragma once
// The hardware a catalog entry describes, fully resolved: link kinds, CPU sockets, GPUs and
// node templates (how a node's GPUs, PCIe switches, CPUs and NICs connect). Read from the
// catalog (catalog.hpp); built into a Topology by node_builders.hpp. Bandwidths in bytes per
// second per direction, latencies in seconds, capacities in bytes.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/kinds.hpp"

namespace ccsim::models {

/// A kind of physical link. Bandwidth is per direction, per physical link (one NVLink, one
/// PCIe x16 port, one NIC port).
struct LinkSpec {
  std::string name;        ///< catalog name, for example "nvlink4" or "ib-ndr"
  LinkClass link_class = LinkClass::Network;
  double bandwidth = 0.0;  ///< bytes per second, per direction
  double latency = 0.0;    ///< seconds, one traversal of the link
  /// Network links (NIC ports): the extra per-message latency, seconds, of each NIC transport
  /// the port supports, indexed by NicTransport (GPUDirect RDMA is the reference, usually 0);
  /// nullopt = not supported. Catalog key `transports: {gdr: 0us, verbs: 3.5us, socket: 16.5us}`.
  std::array<std::optional<double>, 3> transport_overhead{};
  std::string source;
  /// The catalog entries this kind derives from through `base:`, nearest first, ending at the
  /// root entry (["nvlink3"] for `{base: nvlink3, name: my-bridge}`; ["nvlink3"] for nvlink3
  /// itself). Calibration figures keyed by catalog name follow this chain.
  std::vector<std::string> lineage;

  bool operator==(const LinkSpec&) const = default;
};

/// A CPU socket: the host side that traffic through host memory shares (GPUs without PCIe
/// peer-to-peer, NICs without GPUDirect RDMA). One per socket; every socket of a node is alike.
struct CpuSpec {
  std::string name;
  std::string memory_kind;             ///< "ddr5-4800", ...: the memory link's kind in the topology
  int memory_channels = 0;             ///< DRAM channels per socket
  double channel_bandwidth = 0.0;      ///< bytes per second, peak of one channel (MT/s × 8 bytes)
  double memory_efficiency = 0.0;      ///< sustained copy bandwidth ÷ peak, in (0, 1]
  double memory_latency = 0.0;         ///< seconds, one access (write or read) of host memory
  std::string source;

  /// Peak DRAM bandwidth of one socket, bytes per second, reads and writes together.
  double memory_peak() const { return memory_channels * channel_bandwidth; }
  /// Sustained copy bandwidth of one socket, bytes per second, reads and writes together.
  double memory_sustained() const { return memory_peak() * memory_efficiency; }

  bool operator==(const CpuSpec&) const = default;
};

struct GpuSpec {
  std::string name;
  std::string vendor;
  std::string arch;                ///< "sm80", "sm90", "gfx942", ...
  double bf16_flops = 0.0;         ///< dense BF16/FP16 tensor peak, FLOP per second
  double fp8_flops = 0.0;          ///< dense FP8 peak, FLOP per second; 0 when unsupported
  double hbm_capacity = 0.0;       ///< bytes
  double hbm_bandwidth = 0.0;      ///< bytes per second
  /// Streaming multiprocessors (NVIDIA SMs, AMD compute units) that run GEMM / attention
  /// thread blocks; the compute model's wave quantization divides work into waves of this many
  /// tiles (planner/workload/workload_runner.hpp). 0 = unknown (no wave quantization). Catalog key
  /// `sms`, from the architecture whitepaper named in the entry's `source`.
  int sms = 0;
  std::optional<LinkSpec> scaleup_link;  ///< NVLink generation or xGMI; none for PCIe-only GPUs
  int scaleup_links = 0;           ///< number of scale-up links (18 NVLink4 on H100)
  LinkSpec host_link;              ///< PCIe generation of the host interface (x16)
  std::string source;
  /// The catalog entries this GPU derives from through `base:`, nearest first, ending at the
  /// root entry (["H100-SXM5"] for `{base: H100-SXM5, name: H100-halfspeed}` and for H100-SXM5
  /// itself). Per-GPU figures of the calibration tables follow this chain (kind_names()).
  std::vector<std::string> lineage;

  /// Its name, then the entries of its lineage not equal to it: the names a per-GPU table entry
  /// is looked up by, nearest first (a derived GPU takes its base's compute constants).
  std::vector<std::string> kind_names() const {
    std::vector<std::string> names{name};
    for (const std::string& n : lineage)
      if (n != name) names.push_back(n);
    return names;
  }

  /// Aggregate scale-up bandwidth per direction, bytes per second (links × per-link).
  double scaleup_bandwidth() const { return scaleup_link ? scaleup_links * scaleup_link->bandwidth : 0.0; }

  bool operator==(const GpuSpec&) const = default;
};

/// How the GPUs of a node connect; each layout is one builder in node_builders.hpp.
///   nvswitch   every GPU on one NVSwitch domain
///   xgmi-mesh  every pair of GPUs joined by `xgmi.links_per_peer` scale-up links (shorthand)
///   pcie-box   PCIe only, optional NVLink bridges joining pairs (0,1), (2,3), ... (shorthand)
///   direct     the GPU pairs listed in `gpu_links`, as `nvidia-smi topo -m` shows them
///              (NV1, NV2, ...; SYS pairs have no direct link), e.g. the DGX-1's hybrid cube-mesh
enum class NodeLayout { NvSwitch, XgmiMesh, PcieBox, Direct };

/// Direct scale-up links between two GPUs of a node (both directions).
struct GpuPairLinks {
  int a = 0, b = 0;   ///< local GPU indices, a < b
  int count = 1;      ///< physical links between them (NV2 = 2)
  LinkSpec link;      ///< kind of each link (the GPU's scale-up link unless given)
  bool operator==(const GpuPairLinks&) const = default;
};

/// One attachment point of an explicit PCIe tree (`pcie.tree` of a node template, what `ccsim
/// import` writes from an NCCL topology file or `nvidia-smi topo -m`): a PCIe switch under a CPU
/// (NUMA node) root port, or that root port itself, with the GPUs and NICs attached to it.
/// Nested switches are flattened into the one under the CPU: a path between two devices of one
/// entry crosses that switch only, and each device's link is the slowest link of its branch.
struct PcieAttachSpec {
  int cpu = 0;                  ///< index of the CPU (NUMA node) the entry hangs from
  bool is_switch = true;        ///< false: the devices sit on the CPU's root ports directly
  LinkSpec link;                ///< switch-to-CPU link (its generation and width)
  LinkSpec gpu_link;            ///< each GPU's link to the switch (or CPU)
  LinkSpec nic_link;            ///< each NIC's link to the switch (or CPU)
  std::vector<int> gpus;        ///< local GPU indices, in order
  std::vector<int> nics;        ///< local NIC indices, in order
  bool operator==(const PcieAttachSpec&) const = default;
};

/// A node template, fully resolved. Equal NodeSpecs (every field) build identical nodes, which
/// build_cluster puts in one node class (Topology::node_class).
struct NodeSpec {
  std::string name;
  NodeLayout layout = NodeLayout::NvSwitch;
  std::string source;
  GpuSpec gpu;
  int gpus = 0;
  // NVSwitch layouts: one logical switch per node; `nvswitch_chips` physical chips.
  int nvswitch_chips = 0;
  int nvswitch_generation = 0;
  bool nvls = false;               ///< NVLink SHARP (in-switch reduction and multicast)
  // xGMI mesh: links between each pair of GPUs.
  int xgmi_links_per_peer = 0;
  // PCIe box: optional NVLink bridges joining GPU pairs (0,1), (2,3), ...
  int bridge_links = 0;
  /// Direct GPU-to-GPU links of every non-NVSwitch layout: the `gpu_links` list of a direct
  /// node, or what the xgmi-mesh and bridges shorthands expand to. Empty on NVSwitch nodes.
  std::vector<GpuPairLinks> gpu_links;
  // Host side.
  LinkSpec pcie_link;              ///< PCIe generation of switch ports
  int pcie_switches = 0;           ///< GPUs and NICs are spread evenly over the switches
  /// Explicit PCIe tree (`pcie.tree`); when non-empty it replaces the even spread, and
  /// pcie_switches counts its switch entries. Every GPU and NIC index appears exactly once.
  std::vector<PcieAttachSpec> pcie_tree;
  int cpus = 1;
  int cpus_per_domain = 1;         ///< CPUs joined all-to-all by cpu_link (2 on a dual-socket board)
  LinkSpec cpu_link;               ///< socket interconnect between CPUs of one domain
  std::optional<CpuSpec> cpu;      ///< the sockets' model (host memory); none: memory not modelled
  bool p2p = true;                 ///< PCIe peer-to-peer between devices under a switch
  // Scale-out.
  std::optional<LinkSpec> nic_link;
  int nics = 0;
  /// How the NICs move GPU data. Default: GPUDirect RDMA when the port supports it and the
  /// GPUs do PCIe peer-to-peer, else verbs through host memory, else sockets.
  NicTransport nic_transport = NicTransport::Gdr;
  /// Extra per-message latency of nic_transport on nic_link, seconds (see LinkSpec).
  double nic_transport_overhead = 0.0;
  /// GPUDirect RDMA eligibility by PCIe distance (NCCL_NET_GDR_LEVEL, `nics.gdr_level`): a
  /// GPU whose path to its NIC is farther than this stages its network data through host
  /// memory. NCCL's default is PXB (src/graph/paths.cc ncclTopoCheckGdr; PATH_P2C on C2C
  /// systems with NCCL_NET_GDR_C2C=1, which ccsim classifies PHB: the catalog's C2C nodes set PHB).
  PathType gdr_level = PathType::Pxb;
  /// GPUDirect RDMA for sends, i.e. the NIC reading GPU memory (NCCL_NET_GDR_READ,
  /// `nics.gdr_read`): nullopt is NCCL's default (-2): on from compute capability 8.0, before
  /// it only when the GPU has an NVLink peer (ncclTopoCheckGdr).
  std::optional<bool> gdr_read;

  bool operator==(const NodeSpec&) const = default;
};


/// The layout's catalog word: "nvswitch", "xgmi-mesh", "pcie-box", "direct".
std::string_view to_string(NodeLayout layout);

}  // namespace ccsim::models
