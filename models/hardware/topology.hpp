#pragma once
// Topology: the devices of a cluster and the directed links between them (Boost.Graph).
//
// Vertices are devices (GPU, NVSwitch, PCIe switch, CPU socket, NIC, network switch); every
// physical link is two directed edges, one per direction, each with its own bandwidth per
// direction (bytes per second) and latency (seconds). Edge ids 2k and 2k+1 are the two
// directions of physical link k.
//
// Routing follows NCCL's ideas (src/graph/paths.cc): a path's bandwidth is the minimum over
// its links; GPUs are never transit devices; traffic enters the network only from the source's
// node and leaves it only at the destination's node (no host forwarding through a third node);
// GPUs without PCIe peer-to-peer stage data through host memory (NCCL's SHM transport: the
// sender writes into the receiving GPU's socket memory, the receiver reads it, so the data
// crosses that socket's memory link twice, once in each direction); NICs without GPUDirect
// RDMA (verbs, sockets) bounce data through the memory of the GPU's socket on both sides;
// traffic between two
// GPUs of different nodes leaves through the source GPU's own NIC and enters through the
// destination GPU's own NIC (NCCL's one-NIC-per-rank assignment, without PXN). Among allowed paths
// the route minimises, in order: total latency, the sum of link-class ranks
// (NVLink < PCIe < host < network, see kinds.hpp), and the hop count. Equal-cost paths are
// ECMP alternatives.

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "models/hardware/kinds.hpp"

namespace ccsim::models {

using DeviceId = std::uint32_t;
using LinkId = std::uint32_t;
inline constexpr DeviceId kNoDevice = std::numeric_limits<DeviceId>::max();

/// A device. Fields that do not apply to a kind keep their defaults.
struct Device {
  DeviceKind kind = DeviceKind::Gpu;
  std::int32_t node = -1;          ///< node (server) index; -1 for network switches
  std::int32_t local = 0;          ///< index among devices of its kind in its node, or in its tier
  std::int32_t rail = -1;          ///< NIC: its rail; GPU: the rail of its nearest NIC
  std::int32_t tier = 0;           ///< network switch: 1 = leaf, 2 = spine, 3 = core
  DeviceId cpu = kNoDevice;        ///< GPU, NIC, PCIe switch: the CPU socket above it
  DeviceId pcie_switch = kNoDevice;///< GPU, NIC: the PCIe switch it hangs from
  DeviceId nic = kNoDevice;        ///< GPU: its nearest NIC (same PCIe switch when possible)
  DeviceId memory = kNoDevice;     ///< CPU: its host memory device (kNoDevice: not modelled, the CPU stages)
  std::uint16_t spec = 0;          ///< GPU: index into Topology::gpu_models(); NVSwitch: chip count
  bool p2p = true;                 ///< GPU: PCIe peer-to-peer enabled
  bool nvls = false;               ///< NVSwitch: supports NVLink SHARP
  bool host_bounce = false;        ///< NIC: its transport has no GPUDirect RDMA (data goes through host memory)
  /// GPU: GPUDirect RDMA with its NIC for receives (the NIC writes GPU memory) and for sends
  /// (the NIC reads it); false: that direction stages through the memory of the GPU's socket
  /// (NCCL's ncclTopoCheckGdr: PCIe distance against NCCL_NET_GDR_LEVEL, NCCL_NET_GDR_READ).
  bool gdr_recv = true;
  bool gdr_send = true;
};

/// One direction of a physical link.
struct Link {
  LinkClass link_class = LinkClass::Network;
  std::uint16_t kind = 0;      ///< index into Topology::link_kinds() ("nvlink4", "pcie-gen5", ...)
  std::uint16_t lanes = 1;     ///< physical links bundled (18 NVLinks from an H100 to its NVSwitch)
  double bandwidth = 0.0;      ///< bytes per second in this direction, all lanes together
  double latency = 0.0;        ///< seconds
  bool failed = false;         ///< what-if: down (Topology::fail_link); routes, max-flow and out_links() skip it
};

/// Attributes of a new physical link; both directions get the same values.
struct LinkAttrs {
  LinkClass link_class = LinkClass::Network;
  std::string kind;
  int lanes = 1;
  double bandwidth = 0.0;  ///< bytes per second per direction (> 0)
  double latency = 0.0;    ///< seconds (>= 0)
  /// Catalog entries the kind derives from, nearest first (LinkSpec::lineage); the first link
  /// of a kind records it for the kind.
  std::vector<std::string> lineage;
};

/// A path: the directed links from source to destination.
struct Path {
  std::vector<LinkId> links;
  double latency = 0.0;    ///< seconds, sum over links
  double bandwidth = 0.0;  ///< bytes per second, minimum over links (0 for an empty path)
  PathType type = PathType::Nvl;
};

/// The route between two devices: the chosen path and its equal-cost alternatives.
struct Route {
  Path path;                       ///< the first equal-cost path in device and link order
  std::vector<Path> alternatives;  ///< up to the requested number of equal-cost paths, path first
  double ecmp_paths = 0.0;         ///< number of equal-cost paths (may exceed alternatives.size())
};

class Topology {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Device, LinkId>;

  DeviceId add_device(const Device& device);
  /// Adds the two directions of a physical link a <-> b. Returns the id of a -> b (b -> a is +1).
  /// Throws std::invalid_argument on a non-positive bandwidth, negative latency or bad ids.
  LinkId add_link(DeviceId a, DeviceId b, const LinkAttrs& attrs);
  /// Registers a GPU model name; returns the index to store in Device::spec.
  std::uint16_t add_gpu_model(const std::string& name);

  std::size_t num_devices() const { return boost::num_vertices(graph_); }
  std::size_t num_links() const { return links_.size(); }  ///< directed links
  const Device& device(DeviceId id) const { return graph_[id]; }
  Device& device(DeviceId id) { return graph_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  /// What-if: sets one direction's bandwidth (bytes per second). Routes do not depend on
  /// bandwidth, so cached routes stay valid; a link with an end in a node gives that node a
  /// class of its own (split_node_class), so nothing cached for its old class is used for it.
  /// Throws std::invalid_argument unless > 0 and finite.
  void set_bandwidth(LinkId id, double bytes_per_second);
  /// What-if: takes one direction of a link down. Routes, max_flow and out_links() no longer see
  /// it (a route that needed it takes another path or fails), and a node at either end gets a
  /// class of its own. Throws std::invalid_argument for a link that does not exist. Meant for
  /// before anything is cached (the router's caches are built on first use).
  void fail_link(LinkId id);
  DeviceId link_source(LinkId id) const { return ends_[id].first; }
  DeviceId link_target(LinkId id) const { return ends_[id].second; }
  static LinkId reverse(LinkId id) { return id ^ 1U; }
  const std::string& link_kind_name(const Link& l) const { return link_kinds_[l.kind]; }
  const std::vector<std::string>& link_kinds() const { return link_kinds_; }
  /// Catalog ancestry of link kind `kind` (index into link_kinds()), nearest first; empty for
  /// kinds added without one.
  const std::vector<std::string>& link_kind_lineage(std::size_t kind) const { return link_kind_lineage_[kind]; }
  const std::vector<std::string>& gpu_models() const { return gpu_models_; }
  const Graph& graph() const { return graph_; }

  /// GPUs in creation order; the position is the GPU's global rank. In a job's view of the
  /// cluster (restrict_gpus) the job's GPUs in its rank order instead.
  const std::vector<DeviceId>& gpus() const { return gpus_; }
  /// A job's view (several jobs on one fabric): gpus() becomes `gpus`, in that order, so a
  /// workload's rank r runs on gpus[r]; devices, links, routes and node classes are unchanged
  /// (the other jobs' GPUs stay in the fabric, and their traffic is added where the jobs run
  /// together). Throws std::invalid_argument for an empty list, an id that is not a GPU, or a
  /// GPU listed twice.
  void restrict_gpus(std::vector<DeviceId> gpus);
  /// Links leaving a device that are up (not failed), in creation order.
  std::vector<LinkId> out_links(DeviceId d) const;
  /// Number of nodes (servers): one more than the largest Device::node.
  int num_nodes() const { return num_nodes_; }

  /// Node equivalence classes. Nodes of one class have the same devices and links, with the
  /// same attributes, in the same relative order, so a cache may compute a result on the
  /// class's representative and shift it to any member (the router's routes inside a node,
  /// the protocol rules, a workload's per-node costs). Every cache that treats nodes as alike
  /// keys on this class and nothing weaker. A node gets a class of its own when it is added;
  /// build_cluster merges nodes with equal NodeSpecs (set_node_classes); a perturbation
  /// (set_bandwidth, split_node_class) gives the touched node a fresh class. Class ids are
  /// never reused, so a result cached under an old id is never served to a changed node.
  int node_class(int node) const { return node_class_.at(static_cast<std::size_t>(node)); }
  /// The lowest-numbered node of class `cls` (a class always has one). Throws std::out_of_range
  /// for an id never issued or one whose every node was split off.
  int class_representative(int cls) const;
  /// Class ids issued so far (ids are 0 .. this − 1; split-off classes may be empty).
  int num_node_classes() const { return static_cast<int>(representative_.size()); }
  /// Sets every node's class: `classes[n]` for node n, ids 0 .. k−1, each used. Meant for the
  /// cluster builder, before anything is cached; throws std::invalid_argument on a wrong size
  /// or an id outside 0 .. k−1 or unused.
  void set_node_classes(const std::vector<int>& classes);
  /// Gives `node` a fresh class of its own (a perturbation of that node); returns its id.
  /// Throws std::out_of_range for a node that does not exist.
  int split_node_class(int node);
  /// Whether `node` was split off by a perturbation (split_node_class, set_bandwidth). The node
  /// templates are built symmetric in their GPUs (each GPU with the same links to the node's
  /// switches, NICs and CPU), so a cache may treat GPUs at different positions of an unperturbed
  /// node as alike; on a perturbed node (a slow NVLink, a failed NIC) a GPU's position matters.
  bool node_perturbed(int node) const { return perturbed_.at(static_cast<std::size_t>(node)) != 0; }

  /// Human-readable device name, e.g. "node3/gpu5", "leaf12", "spine0".
  std::string name(DeviceId id) const;

  /// Route from `src` to `dst` (distinct devices). At most `max_alternatives` ECMP paths
  /// are listed; routes through waypoints (staging CPU, the GPUs' own NICs) list only the
  /// first path but count all. Throws std::runtime_error when no path exists.
  Route route(DeviceId src, DeviceId dst, std::size_t max_alternatives = 8) const;

  /// Maximum flow from the device set `sources` to the disjoint set `sinks`, in bytes per
  /// second, over links whose class is in `classes` (bit i set = LinkClass i allowed), with
  /// the same transit rules as route(). Computed with Boost's push-relabel algorithm on
  /// capacities rounded to whole bytes per second.
  double max_flow(std::span<const DeviceId> sources, std::span<const DeviceId> sinks,
                  unsigned classes = 0xFU) const;

  /// Classifies a path as NCCL does (NVL, PIX, PXB, PHB, SYS, NET). The link between a CPU and
  /// its own memory does not make a path SYS; only the socket interconnect does.
  PathType classify(const std::vector<LinkId>& links) const;
  /// Fills latency, bandwidth and type of a path from its links.
  Path make_path(std::vector<LinkId> links) const;

 private:
  Route search(DeviceId src, DeviceId dst, std::size_t max_alternatives) const;

  Graph graph_;
  std::vector<Link> links_;
  std::vector<std::pair<DeviceId, DeviceId>> ends_;
  std::vector<std::string> link_kinds_;
  std::vector<std::vector<std::string>> link_kind_lineage_;  ///< parallel to link_kinds_
  std::vector<std::string> gpu_models_;
  std::vector<DeviceId> gpus_;
  int num_nodes_ = 0;
  std::vector<int> node_class_;      ///< per node
  std::vector<int> representative_;  ///< per class id: its lowest-numbered node, or −1 when empty
  std::vector<char> perturbed_;      ///< per node: split off by a perturbation
};

}  // namespace ccsim::models
