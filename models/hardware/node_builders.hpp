#pragma once
// Builders that add one node (server) of a NodeSpec to a Topology.
//
// Host side, common to every layout: CPU sockets joined by the socket interconnect, each with
// its host memory (when the node names a CPU model) on a link of class host, PCIe
// switches spread evenly over the sockets, GPUs and NICs spread evenly over the switches
// (over the sockets' root ports when there are no switches). A GPU's nearest NIC is the
// NIC with the same position under the same switch; its rail is that NIC's index.
// Link bandwidth between two devices is the slower end's (a Gen4 GPU in a Gen5 switch
// trains at Gen4).
//
// Host memory. DRAM bandwidth is one budget shared by reads and writes; data staged through
// host memory is written once and read once, so the CPU <-> memory link carries half the
// socket's sustained copy bandwidth in each direction (writes CPU -> memory, reads memory ->
// CPU), and n staged flows on a socket get at most sustained / (2 n) each:
//
//      GPU0   GPU1        staged GPU0 -> GPU1:  GPU0 -> CPU0 -> mem0 -> CPU0 -> GPU1
//        \    /
//        CPU0 ---- socket link ---- CPU1
//         |                          |
//        mem0  (sustained / 2       mem1
//               each direction)
//
// Figures come from the NodeSpec (catalog, scenarios/hardware/nodes.yaml, cpus.yaml), never from code.

#include <optional>
#include <vector>

#include "models/hardware/specs.hpp"
#include "models/hardware/topology.hpp"

namespace ccsim::models {

/// The devices one node contributes, by kind, in local order.
struct NodeDevices {
  std::vector<DeviceId> gpus;
  std::vector<DeviceId> nics;
  std::vector<DeviceId> cpus;
  std::vector<DeviceId> memories;    ///< host memory of each CPU, same order (empty: not modelled)
  std::vector<DeviceId> pcie_switches;
  DeviceId nvswitch = kNoDevice;
  std::optional<LinkSpec> nic_link;  ///< the NICs' network port kind (for the fabric builder)
  double nic_transport_overhead = 0; ///< seconds per message, split over the two ends' ports by the fabric builder
  /// Per NIC (same order as `nics`): its transport's per-message overhead, seconds, raised to the
  /// catalog's verbs figure in the directions where a GPU using it has no GPUDirect RDMA
  /// (Device::gdr_send / gdr_recv); the fabric builder splits it over the two ends' ports.
  std::vector<double> nic_overheads;
};

/// Adds node number `node_index` built from `spec` (dispatching on spec.layout).
NodeDevices add_node(Topology& topology, const NodeSpec& spec, int node_index);

/// NVSwitch layout (DGX/HGX A100, H100, H200, B200, GB200 NVL72): every GPU has all its
/// NVLinks into one logical NVSwitch (NCCL's NVS node), so any two GPUs of the node see the
/// GPU's full NVLink bandwidth. Physical chips (6 on DGX A100, 4 on DGX H100, 18 in NVL72)
/// are recorded, not drawn.
///
///   dgx-a100 (4 PCIe Gen4 switches, 2 GPUs + 2 × 200G NICs each):
///
///        +-------------------- NVSwitch (6 × gen2) --------------------+
///        | 12 × NVLink3 per GPU = 300 GB/s per direction               |
///      GPU0 GPU1     GPU2 GPU3     GPU4 GPU5     GPU6 GPU7
///        \  /  NIC0,1  \  /  NIC2,3  \  /  NIC4,5  \  /  NIC6,7
///       PCIe sw0      PCIe sw1      PCIe sw2      PCIe sw3
///            \         /                 \         /
///             CPU0 ---------- socket link ------ CPU1
///
///   dgx-h100 / hgx-h200 (8 PCIe Gen5 switches, each GPU paired with one 400G NIC):
///
///        +------------ NVSwitch (4 × gen3, NVLS) ------------+
///        | 18 × NVLink4 per GPU = 450 GB/s per direction     |
///      GPU0   GPU1   GPU2   GPU3   GPU4   GPU5   GPU6   GPU7
///       |NIC0  |NIC1  |NIC2  |NIC3  |NIC4  |NIC5  |NIC6  |NIC7
///      sw0    sw1    sw2    sw3    sw4    sw5    sw6    sw7
///        \______\______\_____/      \______\______\_____/
///                 CPU0 -------- socket link ------- CPU1
NodeDevices build_nvswitch_node(Topology& topology, const NodeSpec& spec, int node_index);

/// Direct-link layouts: the host side as above, plus the GPU-to-GPU links of
/// spec.gpu_links, one physical link bundle (count lanes) per listed pair. The xgmi-mesh and
/// pcie-box layouts are shorthands that expand to such lists (node_template.cpp):
///
///   xgmi-mesh (AMD MI300X OAM, HGX H100 4-GPU): every pair joined, `links_per_peer` each
///      GPU0 ----- GPU1        every GPU has one xGMI link to each of the 7 others
///       | \     / |           (64 GB/s per direction each): 8 GPUs, 28 links
///       |   \ /   |
///       |   / \   |
///      GPU3 ----- GPU2   ...  GPU4..GPU7 likewise, all pairs connected
///
///   pcie-box: optional NVLink bridges joining (0,1), (2,3), ...; without peer-to-peer
///   (spec.p2p = false) GPU traffic is staged through CPU memory.
///      GPU0 ==bridge== GPU1      GPU2 ==bridge== GPU3     (bridges optional)
///         \           /             \           /
///          PCIe sw0                  PCIe sw1      NIC0
///               \___________   _________/         /
///                           CPU0 ----------------
///
///   direct, e.g. dgx1-v100 (hybrid cube-mesh, `nvidia-smi topo -m`: NV1 / NV2 / SYS):
///      GPU0 =NV2= GPU3        two quads {0,1,2,3} and {4,5,6,7}, fully joined inside
///       |  \   /  |           (NV1 or NV2 per pair), and GPU i joined to GPU i+4
///      GPU1 =NV2= GPU2        (NV2 for 0-4 and 1-5, NV1 for 2-6 and 3-7); 16 pairs,
///       ||         |           6 NVLink2 per GPU; other pairs (SYS) go through the CPUs
///      GPU5 ...   GPU6 ...
NodeDevices build_direct_node(Topology& topology, const NodeSpec& spec, int node_index);

}  // namespace ccsim::models
