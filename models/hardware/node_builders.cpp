#include "models/hardware/node_builders.hpp"

#include <algorithm>
#include <limits>

namespace ccsim::models {
namespace {

LinkAttrs attrs_of(const LinkSpec& spec, int lanes = 1) {
  return LinkAttrs{spec.link_class, spec.name, lanes, spec.bandwidth * lanes, spec.latency, spec.lineage};
}

/// The slower of two PCIe generations: a link trains at the speed of its slower end.
const LinkSpec& slower(const LinkSpec& a, const LinkSpec& b) { return a.bandwidth <= b.bandwidth ? a : b; }

/// NIC `n` of a node: its own rail, under `pcie_switch` (kNoDevice: a CPU root port) and `cpu`.
Device nic_device(const NodeSpec& spec, int node, int n, DeviceId pcie_switch, DeviceId cpu) {
  Device d;
  d.kind = DeviceKind::Nic;
  d.node = node;
  d.local = n;
  d.rail = n;
  d.host_bounce = spec.nic_transport != NicTransport::Gdr;
  d.pcie_switch = pcie_switch;
  d.cpu = cpu;
  return d;
}

/// The explicit PCIe tree (`pcie.tree`): each entry's switch under its CPU (or the CPU's root
/// ports), its NICs and GPUs. A GPU's NIC is, as NCCL picks the closest NIC: one of its own
/// entry's NICs (the i-th of k GPUs takes NIC i·m/k of m), else one under the same CPU (the same
/// spread over that CPU's GPUs and NICs), else NIC g·nics/gpus of the node.
void attach_tree(Topology& t, const NodeSpec& spec, int node, NodeDevices& nd) {
  nd.nics.assign(static_cast<std::size_t>(spec.nics), kNoDevice);
  nd.gpus.assign(static_cast<std::size_t>(spec.gpus), kNoDevice);
  std::vector<DeviceId> parent_of_entry;
  int switch_local = 0;
  for (const PcieAttachSpec& a : spec.pcie_tree) {
    const DeviceId cpu = nd.cpus[static_cast<std::size_t>(a.cpu)];
    DeviceId parent = cpu;
    if (a.is_switch) {
      Device d;
      d.kind = DeviceKind::PcieSwitch;
      d.node = node;
      d.local = switch_local++;
      d.cpu = cpu;
      parent = t.add_device(d);
      nd.pcie_switches.push_back(parent);
      t.add_link(parent, cpu, attrs_of(a.link));
    }
    parent_of_entry.push_back(parent);
  }
  // NICs first, in index order, so that NIC device ids follow their local indices.
  std::vector<std::pair<std::size_t, int>> nic_entry(static_cast<std::size_t>(spec.nics));
  for (std::size_t e = 0; e < spec.pcie_tree.size(); ++e)
    for (int n : spec.pcie_tree[e].nics) nic_entry[static_cast<std::size_t>(n)] = {e, n};
  for (int n = 0; n < spec.nics; ++n) {
    const PcieAttachSpec& a = spec.pcie_tree[nic_entry[static_cast<std::size_t>(n)].first];
    const DeviceId parent = parent_of_entry[nic_entry[static_cast<std::size_t>(n)].first];
    const DeviceId id = t.add_device(nic_device(spec, node, n, a.is_switch ? parent : kNoDevice, nd.cpus[static_cast<std::size_t>(a.cpu)]));
    nd.nics[static_cast<std::size_t>(n)] = id;
    t.add_link(id, parent, attrs_of(a.nic_link));
  }
  // Per CPU, its GPUs and NICs in index order (the fallback affinity).
  std::vector<std::vector<int>> cpu_gpus(static_cast<std::size_t>(spec.cpus)), cpu_nics(static_cast<std::size_t>(spec.cpus));
  for (const PcieAttachSpec& a : spec.pcie_tree) {
    for (int g : a.gpus) cpu_gpus[static_cast<std::size_t>(a.cpu)].push_back(g);
    for (int n : a.nics) cpu_nics[static_cast<std::size_t>(a.cpu)].push_back(n);
  }
  for (auto& v : cpu_gpus) std::sort(v.begin(), v.end());
  for (auto& v : cpu_nics) std::sort(v.begin(), v.end());
  std::vector<std::pair<std::size_t, std::size_t>> gpu_entry(static_cast<std::size_t>(spec.gpus));
  for (std::size_t e = 0; e < spec.pcie_tree.size(); ++e)
    for (std::size_t i = 0; i < spec.pcie_tree[e].gpus.size(); ++i)
      gpu_entry[static_cast<std::size_t>(spec.pcie_tree[e].gpus[i])] = {e, i};
  const std::uint16_t gpu_model = t.add_gpu_model(spec.gpu.name);
  for (int g = 0; g < spec.gpus; ++g) {
    const auto [e, i] = gpu_entry[static_cast<std::size_t>(g)];
    const PcieAttachSpec& a = spec.pcie_tree[e];
    const DeviceId parent = parent_of_entry[e];
    Device d;
    d.kind = DeviceKind::Gpu;
    d.node = node;
    d.local = g;
    d.spec = gpu_model;
    d.p2p = spec.p2p;
    d.pcie_switch = a.is_switch ? parent : kNoDevice;
    d.cpu = nd.cpus[static_cast<std::size_t>(a.cpu)];
    if (spec.nics > 0) {
      int nic_index = 0;
      const std::vector<int>& same_cpu_gpus = cpu_gpus[static_cast<std::size_t>(a.cpu)];
      const std::vector<int>& same_cpu_nics = cpu_nics[static_cast<std::size_t>(a.cpu)];
      if (!a.nics.empty()) {
        nic_index = a.nics[i * a.nics.size() / a.gpus.size()];
      } else if (!same_cpu_nics.empty()) {
        const auto pos = static_cast<std::size_t>(std::lower_bound(same_cpu_gpus.begin(), same_cpu_gpus.end(), g) - same_cpu_gpus.begin());
        nic_index = same_cpu_nics[pos * same_cpu_nics.size() / same_cpu_gpus.size()];
      } else {
        nic_index = g * spec.nics / spec.gpus;
      }
      d.nic = nd.nics[static_cast<std::size_t>(nic_index)];
      d.rail = nic_index;
    }
    const DeviceId id = t.add_device(d);
    nd.gpus[static_cast<std::size_t>(g)] = id;
    t.add_link(id, parent, attrs_of(slower(spec.gpu.host_link, a.gpu_link)));
  }
}

/// CPUs, PCIe switches, GPUs and NICs, with PCIe and socket links.
NodeDevices build_host(Topology& t, const NodeSpec& spec, int node) {
  NodeDevices nd;
  nd.nic_link = spec.nic_link;
  nd.nic_transport_overhead = spec.nic_transport_overhead;
  const std::uint16_t gpu_model = t.add_gpu_model(spec.gpu.name);
  for (int c = 0; c < spec.cpus; ++c) {
    Device d;
    d.kind = DeviceKind::Cpu;
    d.node = node;
    d.local = c;
    nd.cpus.push_back(t.add_device(d));
  }
  if (spec.cpu) {
    // Half the sustained copy bandwidth each way: staged data is written once and read once.
    const LinkAttrs memory_link{LinkClass::Host, spec.cpu->memory_kind, spec.cpu->memory_channels,
                                spec.cpu->memory_sustained() / 2.0, spec.cpu->memory_latency, {}};
    for (int c = 0; c < spec.cpus; ++c) {
      Device m;
      m.kind = DeviceKind::Memory;
      m.node = node;
      m.local = c;
      m.cpu = nd.cpus[static_cast<std::size_t>(c)];
      const DeviceId id = t.add_device(m);
      nd.memories.push_back(id);
      t.device(m.cpu).memory = id;
      t.add_link(m.cpu, id, memory_link);
    }
  }
  // Sockets of one board (domain) are joined all-to-all; domains are not joined.
  for (int a = 0; a < spec.cpus; ++a)
    for (int b = a + 1; b < spec.cpus && b / spec.cpus_per_domain == a / spec.cpus_per_domain; ++b)
      t.add_link(nd.cpus[static_cast<std::size_t>(a)], nd.cpus[static_cast<std::size_t>(b)], attrs_of(spec.cpu_link));

  if (!spec.pcie_tree.empty()) {
    attach_tree(t, spec, node, nd);
    return nd;
  }
  for (int s = 0; s < spec.pcie_switches; ++s) {
    Device d;
    d.kind = DeviceKind::PcieSwitch;
    d.node = node;
    d.local = s;
    d.cpu = nd.cpus[static_cast<std::size_t>(s / (spec.pcie_switches / spec.cpus))];
    const DeviceId id = t.add_device(d);
    nd.pcie_switches.push_back(id);
    t.add_link(id, d.cpu, attrs_of(spec.pcie_link));
  }
  // Attachment points: the switches, or the CPU root ports when there are none.
  const std::vector<DeviceId>& parents = spec.pcie_switches > 0 ? nd.pcie_switches : nd.cpus;
  const int per_parent_gpus = spec.gpus / static_cast<int>(parents.size());
  const int per_parent_nics = spec.nics / static_cast<int>(parents.size());

  for (int n = 0; n < spec.nics; ++n) {
    // Fewer NICs than attachment points: one NIC on every k-th switch.
    const int parent_index = per_parent_nics > 0 ? n / per_parent_nics : n * static_cast<int>(parents.size()) / spec.nics;
    const DeviceId parent = parents[static_cast<std::size_t>(parent_index)];
    const DeviceId id = t.add_device(nic_device(spec, node, n, spec.pcie_switches > 0 ? parent : kNoDevice,
                                                spec.pcie_switches > 0 ? t.device(parent).cpu : parent));
    nd.nics.push_back(id);
    t.add_link(id, parent, attrs_of(spec.pcie_link));
  }
  for (int g = 0; g < spec.gpus; ++g) {
    const int parent_index = g / per_parent_gpus;
    const DeviceId parent = parents[static_cast<std::size_t>(parent_index)];
    Device d;
    d.kind = DeviceKind::Gpu;
    d.node = node;
    d.local = g;
    d.spec = gpu_model;
    d.p2p = spec.p2p;
    d.pcie_switch = spec.pcie_switches > 0 ? parent : kNoDevice;
    d.cpu = spec.pcie_switches > 0 ? t.device(parent).cpu : parent;
    if (spec.nics > 0) {
      // Same position under the same parent when there are as many NICs as GPUs there,
      // otherwise the NICs of the parent are shared in order.
      const int within = g % per_parent_gpus;
      const int nic_index = per_parent_nics > 0
                                ? parent_index * per_parent_nics + within * per_parent_nics / per_parent_gpus
                                : g * spec.nics / spec.gpus;
      d.nic = nd.nics[static_cast<std::size_t>(nic_index)];
      d.rail = nic_index;
    }
    const DeviceId id = t.add_device(d);
    nd.gpus.push_back(id);
    t.add_link(id, parent, attrs_of(slower(spec.gpu.host_link, spec.pcie_link)));
  }
  return nd;
}

}  // namespace

NodeDevices build_nvswitch_node(Topology& t, const NodeSpec& spec, int node) {
  NodeDevices nd = build_host(t, spec, node);
  Device sw;
  sw.kind = DeviceKind::NvSwitch;
  sw.node = node;
  sw.spec = static_cast<std::uint16_t>(spec.nvswitch_chips);
  sw.nvls = spec.nvls;
  nd.nvswitch = t.add_device(sw);
  for (DeviceId g : nd.gpus) t.add_link(g, nd.nvswitch, attrs_of(*spec.gpu.scaleup_link, spec.gpu.scaleup_links));
  return nd;
}

NodeDevices build_direct_node(Topology& t, const NodeSpec& spec, int node) {
  NodeDevices nd = build_host(t, spec, node);
  for (const GpuPairLinks& g : spec.gpu_links)
    t.add_link(nd.gpus[static_cast<std::size_t>(g.a)], nd.gpus[static_cast<std::size_t>(g.b)], attrs_of(g.link, g.count));
  return nd;
}

namespace {

/// NCCL's PCIe distance from a GPU to its NIC in ccsim's one-level PCIe trees: PIX under the
/// same switch, PHB through the same CPU's root complex, SYS across sockets.
PathType nic_distance(const Topology& t, const Device& gpu) {
  const Device& nic = t.device(gpu.nic);
  if (gpu.pcie_switch != kNoDevice && gpu.pcie_switch == nic.pcie_switch) return PathType::Pix;
  return gpu.cpu == nic.cpu ? PathType::Phb : PathType::Sys;
}

/// Compute capability × 10 of an "smXY" architecture (80 for sm80); 0 for other names.
int compute_capability(const std::string& arch) {
  if (arch.size() < 3 || arch.compare(0, 2, "sm") != 0) return 0;
  int cc = 0;
  for (std::size_t i = 2; i < arch.size(); ++i) {
    if (arch[i] < '0' || arch[i] > '9') return 0;
    cc = cc * 10 + (arch[i] - '0');
  }
  return cc;
}

/// GPUDirect RDMA per GPU and direction, as NCCL decides it (NCCL 2.30 src/graph/paths.cc
/// ncclTopoCheckGdr, used by src/transport/net.cc for sends with read = 1 and receives with
/// read = 0): off beyond NCCL_NET_GDR_LEVEL (spec.gdr_level); for sends also off with
/// NCCL_NET_GDR_READ=0, and by default (-2) before compute capability 8.0 unless the GPU has an
/// NVLink peer. A direction without it stages through host memory (Topology::route). A NIC
/// none of whose GPUs has it pays the port's verbs overhead instead of the GPUDirect one
/// (links.yaml transports), half a message's overhead per direction; where some of its GPUs
/// have it, NCCL's rings put their network sends and receives on those (the GPUs nearest the
/// NIC), so the port keeps the GPUDirect overhead (the smallest over its GPUs).
void apply_gdr(Topology& t, const NodeSpec& spec, NodeDevices& nd) {
  nd.nic_overheads.assign(nd.nics.size(), spec.nic_transport_overhead);
  if (nd.nics.empty() || spec.nic_transport != NicTransport::Gdr || !spec.nic_link) return;
  std::vector<double> smallest(nd.nics.size(), std::numeric_limits<double>::infinity());
  const double gdr = spec.nic_transport_overhead;
  const double bounce = spec.nic_link->transport_overhead[static_cast<std::size_t>(NicTransport::Verbs)].value_or(gdr);
  const bool nvlink_peer = spec.gpus == 1 || spec.layout == NodeLayout::NvSwitch || !spec.gpu_links.empty() || spec.bridge_links > 0;
  const bool read = spec.gdr_read.value_or(compute_capability(spec.gpu.arch) >= 80 || nvlink_peer);
  for (DeviceId g : nd.gpus) {
    Device& d = t.device(g);
    if (d.nic == kNoDevice) continue;
    const bool near = nic_distance(t, d) <= spec.gdr_level;
    d.gdr_recv = near;
    d.gdr_send = near && read;
    const int bounced = (d.gdr_recv ? 0 : 1) + (d.gdr_send ? 0 : 1);
    const auto n = static_cast<std::size_t>(std::find(nd.nics.begin(), nd.nics.end(), d.nic) - nd.nics.begin());
    if (n < smallest.size()) smallest[n] = std::min(smallest[n], gdr + (bounce - gdr) * bounced / 2.0);
  }
  for (std::size_t n = 0; n < smallest.size(); ++n)
    if (smallest[n] < std::numeric_limits<double>::infinity()) nd.nic_overheads[n] = smallest[n];
}

}  // namespace

NodeDevices add_node(Topology& t, const NodeSpec& spec, int node) {
  NodeDevices nd;
  switch (spec.layout) {
    case NodeLayout::NvSwitch: nd = build_nvswitch_node(t, spec, node); break;
    case NodeLayout::XgmiMesh:
    case NodeLayout::PcieBox:
    case NodeLayout::Direct: nd = build_direct_node(t, spec, node); break;
  }
  apply_gdr(t, spec, nd);
  return nd;
}

}  // namespace ccsim::models
