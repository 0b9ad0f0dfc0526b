#pragma once
// Device and link kinds of a cluster Topology, in NCCL's total order.
//
// NCCL's src/graph/topo.h orders link and path types from closest to farthest
// (NVLink < PCIe switch < host bridge < system interconnect < network) and compares
// paths by that order. ccsim keeps the same order as enum classes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccsim::models {

/// The class of a physical link, closest first. The numeric order is the route tie-break
/// order: NVLink/xGMI < PCIe < host (CPU socket interconnect) < network.
enum class LinkClass : std::uint8_t {
  ScaleUp = 0,  ///< NVLink, NVLink bridge, xGMI (Infinity Fabric)
  Pcie = 1,     ///< PCIe lanes: GPU/NIC to PCIe switch, switch to root complex
  Host = 2,     ///< CPU socket interconnect (UPI, Infinity Fabric between sockets)
  Network = 3,  ///< InfiniBand, RoCE, Ethernet: NIC to switch, switch to switch
};

enum class DeviceKind : std::uint8_t {
  Gpu,
  NvSwitch,       ///< one logical NVSwitch fabric per NVLink domain (NCCL's NVS node)
  PcieSwitch,
  Cpu,            ///< CPU socket with its root complex and host memory
  Nic,
  NetworkSwitch,  ///< leaf (tier 1) or spine (tier 2)
  Memory,         ///< host memory (DRAM) of one CPU socket: where staged and bounced data lands
};

/// How a NIC moves GPU data (NCCL's net transports), fastest first.
enum class NicTransport : std::uint8_t {
  Gdr,     ///< IB/RoCE verbs with GPUDirect RDMA: the NIC reads and writes GPU memory directly
  Verbs,   ///< IB/RoCE verbs without GPUDirect RDMA: data bounces through host memory
  Socket,  ///< TCP sockets (NCCL's socket transport): host memory and the kernel's network stack
};

/// NCCL's path types (topo.h PATH_*), closest first, for reporting how two GPUs connect.
enum class PathType : std::uint8_t {
  Nvl,  ///< NVLink only (directly or through NVSwitch / xGMI)
  Pix,  ///< through one PCIe switch
  Pxb,  ///< through several PCIe switches, not the CPU
  Phb,  ///< through one CPU's root complex (host bridge)
  Sys,  ///< across the CPU socket interconnect
  Net,  ///< through the network
};

std::string_view to_string(LinkClass c);
std::string_view to_string(DeviceKind k);
std::string_view to_string(PathType t);
std::string_view to_string(NicTransport t);
/// Parses "gdr", "verbs", "socket"; nullopt for anything else.
std::optional<NicTransport> parse_nic_transport(std::string_view s);
/// Parses "scale-up", "pcie", "host", "network"; nullopt for anything else.
std::optional<LinkClass> parse_link_class(std::string_view s);

}  // namespace ccsim::models
