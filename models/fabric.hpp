#pragma once
// Scale-out fabrics joining the NICs of a cluster's nodes.
//
// Single switch: every NIC port goes to one switch.
//
//      node0: NIC0..NICk   node1: NIC0..NICk   ...
//            \   |   /           \  |  /
//             +----------- switch ----------+
//
// Two-tier leaf/spine fat tree. Leaves hold `nodes_per_leaf` nodes. With rail-optimized
// wiring NIC r of every node goes to the leaf of rail r of its node group, so GPUs with the
// same local rank are one switch hop apart (NVIDIA's DGX SuperPOD design); with ToR wiring
// all NICs of a node go to one top-of-rack leaf. Every leaf connects to every spine; the
// leaf's uplink bandwidth is its downlink bandwidth divided by the oversubscription ratio,
// shared evenly by the spines.
//
//                 spine0      spine1     ...     spineS-1
//                 /  |  \ ____/  |  \___   ____/   |
//               leaf(g0,r0)  leaf(g0,r1) ...  leaf(g1,r0) ...    (rail-optimized)
//               /   |   \      /  |  \   ...
//         n0.NIC0 n1.NIC0 ... n0.NIC1 n1.NIC1 ...
//
// Bisection of the natural halves (first half of the nodes against the second) is
// (nodes/2) × per-node NIC bandwidth ÷ oversubscription when each half fills whole leaves.

#include <optional>
#include <vector>

#include "models/catalog.hpp"
#include "models/node_builders.hpp"
#include "models/topology.hpp"

namespace ccsim::models {

enum class FabricKind { None, SingleSwitch, FatTree };
enum class Wiring { RailOptimized, Tor };

/// One tier of switch ports: the port kind (default: the NICs' link kind) and the link
/// latency (default: that kind's latency).
struct FabricTier {
  std::optional<LinkSpec> link;
  std::optional<double> latency;  ///< seconds
};

struct FabricSpec {
  FabricKind kind = FabricKind::None;
  Wiring wiring = Wiring::RailOptimized;
  int nodes_per_leaf = 0;         ///< 0: one leaf per rail (rail-optimized) or one leaf (ToR) for all nodes
  int spines = 0;                 ///< 0: one spine per leaf uplink port
  double oversubscription = 1.0;  ///< leaf downlink bandwidth ÷ uplink bandwidth (>= 1)
  FabricTier leaf;                ///< NIC <-> leaf (or the single switch)
  FabricTier spine;               ///< leaf <-> spine
};

std::string_view to_string(FabricKind kind);
std::string_view to_string(Wiring wiring);

/// Adds the fabric's switches and links for the NICs of `nodes`. Throws std::invalid_argument
/// when nodes have NICs but the fabric is None and there is more than one node.
void add_fabric(Topology& topology, const FabricSpec& spec, const std::vector<NodeDevices>& nodes);

}  // namespace ccsim::models
