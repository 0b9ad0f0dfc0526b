#pragma once
// The figures `ccsim topo` prints: what a user checks against their hardware before trusting
// any simulated time. Pure functions of a Cluster.

#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/hardware/cluster.hpp"

namespace ccsim::models {

/// Physical links of one kind between one pair of device kinds.
struct LinkGroupSummary {
  std::string kind;              ///< "nvlink4", "pcie-gen5", "ib-ndr", ...
  LinkClass link_class = LinkClass::Network;
  std::string between;           ///< "gpu-nvswitch", "nic-leaf", "leaf-spine", ...
  int links = 0;                 ///< physical links (each has two directions)
  int lanes = 0;                 ///< physical lanes bundled in them (NVLinks, switch ports)
  double bandwidth_per_link = 0; ///< bytes/s per direction of one link (all links of a group are alike)
  double total_bandwidth = 0;    ///< bytes/s per direction, summed over links
  /// bytes/s per direction per GPU: for links ending at GPUs, what each such GPU has on them;
  /// for other links, the total divided by the GPUs of the nodes they serve (all GPUs for
  /// switch-to-switch links)
  double per_gpu = 0;
};

/// The route from GPU 0 to a representative GPU of one kind of position.
struct PositionSummary {
  std::string position;  ///< "same NVSwitch, same PCIe switch", "other node, same rail, same leaf", ...
  int rank = 0;          ///< global rank of the representative GPU (the first one in that position)
  std::string device;    ///< its device name
  PathType type = PathType::Nvl;
  int hops = 0;
  double latency = 0;    ///< seconds
  double bandwidth = 0;  ///< bytes/s per direction, bottleneck of the path
  double ecmp_paths = 0;
};

/// One link on the way from a node's GPUs into the fabric (GPU -> its NIC -> the NIC's network
/// port), as it limits what each GPU can inject.
struct InjectionLink {
  std::string kind;       ///< link kind: "pcie-gen5", "ib-xdr", ...
  std::string between;    ///< "gpu-pcie-switch", "nic-pcie-switch", "nic-leaf", ... (as the links table)
  double bandwidth = 0;   ///< bytes/s per direction of the link (all lanes; a NIC's network ports summed)
  double efficiency = 1;  ///< fraction of it credited (the calibration's link_efficiency of the kind; 1 without one)
  int gpus = 1;           ///< the node's GPUs whose way into the fabric crosses it (they share it equally)
  bool nic_port = false;  ///< the NIC's network port(s), i.e. its line rate
  /// bytes/s per direction one GPU gets from this link: bandwidth × efficiency ÷ gpus
  double per_gpu() const { return bandwidth * efficiency / gpus; }
};

/// Which limit binds a node's injection into the fabric. Each GPU sends through its own NIC
/// (Device::nic, NCCL's GPU-NIC affinity) along its route to it; every link on these ways is
/// shared equally by the GPUs that cross it, and a GPU gets the smallest share on its way.
struct InjectionLimit {
  double line_rate_per_gpu = 0;  ///< bytes/s: the NICs' network ports ÷ GPUs (NodeGroupSummary::injection_per_gpu)
  double per_gpu = 0;            ///< bytes/s: the smallest share over the node's GPUs (0: no GPU reaches a NIC)
  bool nic_binds = false;        ///< the NIC's own port is among the binding links
  std::vector<InjectionLink> binding;  ///< the links whose share is per_gpu, on the way of the first GPU at the minimum
};

/// The injection limit of the first node of node group `group`; `efficiency` holds a fraction
/// per link kind (index into Topology::link_kinds(); missing entries are 1, an empty span gives
/// catalog bandwidths). Cost: one route per GPU of the node.
InjectionLimit injection_limit(const Cluster& cluster, std::size_t group, std::span<const double> efficiency = {});

/// One line for people: "the NIC line rate (ib-ndr, 50 GB/s per GPU)" or "pcie-gen5 (the
/// gpu-pcie-switch and nic-pcie-switch links, 63 GB/s each, 1 GPU per link)"; with credited
/// figures (`credited`: an efficiency below 1 applies) the link's credited bandwidth follows.
std::string describe_binding(const InjectionLimit& limit);

struct NodeGroupSummary {
  std::string node;      ///< template name
  int count = 0;
  std::string gpu;
  int gpus_per_node = 0;
  int nics_per_node = 0;
  double injection_per_gpu = 0;  ///< bytes/s per direction into the fabric, per GPU (NIC ports ÷ GPUs)
  int cpus_per_node = 0;
  std::string cpu;               ///< CPU model; empty when the node names none (host memory not modelled)
  std::string memory;            ///< "8 x ddr5-4800"
  double memory_peak = 0;        ///< bytes/s per socket, reads and writes together
  double memory_sustained = 0;   ///< bytes/s per socket, reads and writes together (the model's budget)
  std::string nic_transport;     ///< "gdr", "verbs", "socket"; empty without NICs
  double nic_transport_overhead = 0;  ///< seconds per message
  InjectionLimit raw;       ///< injection limit on the catalog's bandwidths
  InjectionLimit credited;  ///< the same with the calibration's link efficiencies (summarize's `efficiency`)
};

struct TopologySummary {
  std::string name;
  int nodes = 0;
  int gpus = 0;
  std::string fabric;  ///< one-line description
  std::vector<NodeGroupSummary> groups;
  std::vector<std::pair<DeviceKind, int>> devices;
  int nvswitch_chips = 0;  ///< physical NVSwitch chips in all nodes
  std::vector<LinkGroupSummary> links;
  double bisection = 0;          ///< bytes/s per direction, max-flow between the halves
  double bisection_scaleup = 0;  ///< the same over scale-up links only (single-node clusters)
  std::string halves;            ///< "nodes 0-63 | nodes 64-127" or "GPUs 0-3 | GPUs 4-7"
  int pods = 0;                  ///< pods of a three-tier fat tree (0: no pods)
  int nodes_per_pod = 0;
  /// bytes/s per direction per GPU out of a full pod: the spine-core bandwidth of pod 0
  /// divided by its GPUs (0 without pods)
  double between_pods_per_gpu = 0;
  std::vector<PositionSummary> positions;
  std::string calibration;  ///< the table whose link efficiencies give NodeGroupSummary::credited (file name); empty: none
};

/// Computes the summary. Cost: one max-flow and a few routes on the Topology (one per GPU of a
/// node for the injection limits). `efficiency` and `calibration`: the link efficiencies per
/// link kind of the calibration table named `calibration` (see injection_limit); empty: none.
TopologySummary summarize(const Cluster& cluster, std::span<const double> efficiency = {}, const std::string& calibration = {});

/// The text report (fixed layout, deterministic).
std::string render_text(const TopologySummary& summary);
/// The same figures as JSON (bandwidths in bytes/s, latencies in seconds).
nlohmann::json to_json(const TopologySummary& summary);
/// Graphviz DOT of the whole topology: one cluster per node, one edge per physical link
/// labelled with its kind and bandwidth per direction.
void write_dot(const Cluster& cluster, std::ostream& out);

}  // namespace ccsim::models
