#pragma once
// A node's hardware as a tool of the field describes it (NCCL's topology XML, `nvidia-smi topo
// -m`), before it becomes a ccsim node template: CPUs (NUMA nodes), PCIe attachment points
// (switches or root ports), GPUs, NICs and GPU scale-up links, each as the file states it. The
// readers (nccl_topo_xml.hpp, nvidia_smi_topo.hpp) fill it; node_template_writer.hpp turns it
// into a node template with the catalog's link kinds.
#include <optional>
#include <string>
#include <vector>

namespace ccsim::models::import {

/// A PCIe link as a file states it: transfer rate per lane (GT/s: 2.5, 5, 8, 16, 32, 64) and
/// lanes. 0 = not stated.
struct PcieLinkInfo {
  double gts = 0.0;
  int width = 0;
  bool operator==(const PcieLinkInfo&) const = default;
};

/// A CPU, as NCCL sees one: a NUMA node (a socket in NPS1 mode, a quarter of one in NPS4).
struct HostCpu {
  int numa = 0;
  std::string arch;    ///< "x86_64", "arm64", "ppc64"; empty when not stated
  std::string vendor;  ///< "GenuineIntel", "AuthenticAMD", ...; empty when not stated
  int family = -1;     ///< x86 family id, -1 when not stated
  int model = -1;      ///< x86 model id, -1 when not stated
};

/// Where GPUs and NICs attach: a PCIe switch below a CPU (nested switches flattened into the
/// top one), or the CPU's root ports.
struct HostAttach {
  int cpu = 0;              ///< index into HostDescription::cpus
  bool is_switch = true;
  PcieLinkInfo link;        ///< the switch's link to the CPU (unused for root ports)
  std::string name;         ///< bus id of the switch, or "" for root ports
};

/// What a GPU's scale-up link leads to.
enum class ScaleUpTarget { Gpu, NvSwitch, Cpu };

struct HostScaleUpLink {
  std::string target;   ///< bus id of the peer (a GPU, an NVSwitch, a CPU)
  ScaleUpTarget kind = ScaleUpTarget::Gpu;
  int count = 1;        ///< links bonded (NV12 = 12)
};

struct HostGpu {
  std::string busid;    ///< normalised lower-case "dddd:bb:dd.f"
  int attach = 0;       ///< index into HostDescription::attaches
  PcieLinkInfo link;    ///< slowest PCIe link between the GPU and its attachment point
  int dev = -1;         ///< CUDA / NVML device index when the file states it
  int sm = 0;           ///< compute capability × 10 (80 = A100) when stated
  std::vector<HostScaleUpLink> scaleup;
  double c2c_bandwidth = 0.0;  ///< NVLink-C2C to the CPU, bytes per second per direction (0: none)
};

enum class NicClass { Infiniband, Ethernet, Unknown };

struct HostNic {
  std::string busid;    ///< normalised bus id, or "" for a NIC the file lists without PCI
  std::string name;     ///< "mlx5_0" when stated
  int attach = 0;
  PcieLinkInfo link;
  NicClass nic_class = NicClass::Unknown;
  double speed = 0.0;   ///< line rate, bits per second (0: not stated)
  int dev = -1;         ///< NCCL's net device index when stated
  int gdr = -1;         ///< NCCL's gdr attribute (GPUDirect RDMA support): 1, 0, or -1 when not stated
};

/// One node as the file describes it. GPUs and NICs are in the order ccsim numbers them
/// (device index, else bus id).
struct HostDescription {
  std::string file;     ///< where it came from, for messages and comments
  std::string format;   ///< "NCCL topology XML", "nvidia-smi topo -m"
  std::vector<HostCpu> cpus;
  std::vector<HostAttach> attaches;
  std::vector<HostGpu> gpus;
  std::vector<HostNic> nics;
  /// True when the file says how GPUs join (NVLink / xGMI elements or NV# entries), even when
  /// the answer is "not at all"; false when it is silent (NCCL_TOPO_FILE files of cloud images
  /// leave NVLink to NVML).
  bool scaleup_stated = false;
  std::vector<std::string> notes;  ///< what the reader noticed, for the import's notes
};

/// "0000:07:00.0" from what a file writes ("0000:07:00.0", "00000000:07:00.0", upper case).
std::string normalise_busid(const std::string& busid);

/// Sorts GPUs by (dev, bus id) and NICs by (dev, bus id, name): the order CUDA's
/// PCI_BUS_ID numbering and NCCL's net devices give.
void sort_devices(HostDescription& host);

}  // namespace ccsim::models::import
