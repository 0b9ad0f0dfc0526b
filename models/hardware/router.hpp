#pragma once
// Fast routes for engines: the same answers as Topology::route() for the pairs engines ask
// about, at scale. Routes inside a node are computed once per node class and position, on the
// class's representative, and shifted to the other nodes of the class (Topology::node_class:
// their devices and links are alike and laid out identically; a node perturbed after the
// router was made has a class of its own, so it gets its own routes); routes between nodes are composed from the GPU -> NIC route, the NIC's leaf
// link, a leaf-spine-leaf hop chosen among the ECMP spines by a flow hash (in a three-tier
// fabric, between pods: leaf-spine-core-spine-leaf, the source pod's spine, the core and the
// destination pod's spine each chosen by the flow hash), and the NIC -> GPU route. Anything
// else falls back to Topology::route() with a cache. With `ecmp: balanced` (FabricSpec) the
// spine and core come from the balanced rotation of the NICs' leaf ports and the channel
// instead of the hash (models/hardware/fabric.hpp).

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "models/hardware/cluster.hpp"

namespace ccsim::models {

class Router {
 public:
  explicit Router(const Cluster& cluster);

  /// Path from device `src` to device `dst` (GPU, NIC or NVSwitch). With hashed ECMP (the
  /// default) `flow` selects among equal-cost spine (and core) paths (flows with equal hashes
  /// take the same switches); with balanced ECMP `channel` and the NICs' leaf ports do
  /// (FabricSpec::ecmp). The reference is valid until the next call. Throws
  /// std::runtime_error when no path exists. Routes leaving a node are cached per device pair
  /// with the bandwidth and latency of their first computation: change links through
  /// Topology::set_bandwidth before making the router.
  ///
  /// `pxn`: the route of an NCCL point-to-point send (AlltoAll, SendRecv) with PXN on
  /// (NCCL_PXN_DISABLE unset): between GPUs of two nodes it leaves through the NIC of pxn_relay()
  /// when there is one, instead of the source GPU's own NIC; it arrives through the destination
  /// GPU's own NIC either way (NCCL uses PXN for sends only).
  const Path& route(DeviceId src, DeviceId dst, std::uint64_t flow = 0, std::uint32_t channel = 0, bool pxn = false);

  /// NCCL's PXN relay for a point-to-point send from GPU `src` to GPU `dst` on another node
  /// (src/graph/search.cc ncclTopoGetNetDev, NCCL 2.30, NCCL_P2P_PXN_LEVEL's default 2): the GPU
  /// of src's node with dst's local index (the same nvmlDev: on alike nodes, the GPU of dst's
  /// rail), when it is not src, is joined to src by NVLink only, reaches its own NIC without the
  /// CPU (PIX or PXB) and sends to it with GPUDirect RDMA. The data then goes src -> relay over
  /// NVLink and relay -> its NIC over PCIe. kNoDevice when there is no such GPU (src uses its
  /// own NIC, as with NCCL_PXN_DISABLE=1).
  DeviceId pxn_relay(DeviceId src, DeviceId dst);

  const Topology& topology() const { return cluster_.topology; }

 private:
  struct NodeLayout {
    DeviceId first_device = 0;
    LinkId first_link = 0;
  };
  const Path& local(DeviceId src, DeviceId dst);
  const Path& fallback(DeviceId src, DeviceId dst);
  void compose(std::vector<LinkId>& out, const Path& p) const { out.insert(out.end(), p.links.begin(), p.links.end()); }

  const Cluster& cluster_;
  std::vector<NodeLayout> nodes_;
  std::vector<std::vector<DeviceId>> node_gpus_;   ///< per node: its GPUs by local index
  std::vector<LinkId> nic_uplink_;                 ///< per device: NIC -> leaf link (or ~0)
  std::vector<std::uint32_t> leaf_port_;           ///< per device (NIC): its port's position among its leaf's NIC ports
  std::vector<std::uint32_t> leaf_ports_;          ///< per device (leaf): its NIC ports
  std::vector<std::uint32_t> source_turn_;         ///< per device (NIC): its term of the balanced rotation as a source
  bool balanced_ = false;                          ///< ECMP by the balanced rotation instead of the hash
  std::vector<std::vector<LinkId>> leaf_up_;       ///< per device (leaf): links to each spine, spine order
  std::vector<std::vector<LinkId>> spine_down_;    ///< per device (spine): links to each leaf, indexed by leaf local
  std::vector<std::vector<LinkId>> spine_up_;      ///< per device (spine): links to each core, core order
  std::vector<std::vector<LinkId>> core_down_;     ///< per device (core): links to each spine, indexed by spine local
  std::unordered_map<std::uint64_t, Path> local_cache_;    ///< (node class, local src, local dst) -> links relative to the node
  std::unordered_map<std::uint64_t, Path> fallback_cache_;
  Path scratch_;
};

}  // namespace ccsim::models
