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
//
// Three-tier fat tree (`nodes_per_pod` set): the nodes are cut into pods of `nodes_per_pod`
// nodes (whole leaf groups). Each pod is a two-tier leaf/spine fabric as above with its own
// `spines` spines (its leaves connect to its spines only); every spine of every pod connects
// to every core switch. A spine's uplink bandwidth is its downlink bandwidth divided by
// `pod_oversubscription`, shared evenly by the cores. This is the three-layer Clos of Meta's
// Llama 3 RoCE clusters (Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783,
// section 3.3.1: ToR switches, "cluster switches" joining 192 racks into a 3,072-GPU pod at
// full bisection, "aggregation switches" joining 8 pods into 24K GPUs at 1:7
// oversubscription); here the cluster switches are the spines and the aggregation switches
// the cores. A partly filled last pod is cabled as a full one (its spines keep the uplinks
// of a full pod's), as a partly filled last leaf is.
//
//                      core0 ... coreC-1                    (tier 3)
//                     /    |______|     |
//          spine(p0,0)..spine(p0,S-1)   spine(p1,0)..       (tier 2, per pod)
//               leaves of pod 0            leaves of pod 1    (tier 1)
//
// Bandwidth per GPU between pods: NIC bandwidth ÷ oversubscription ÷ pod_oversubscription.
//
// Path choice among the equal-cost spines (and cores), `ecmp`:
//  * hash (default): each connection (source rank, destination rank, channel: one queue pair)
//    takes the spine its header hash picks, as static ECMP does in RoCE fabrics and as
//    hash-based static routing does in InfiniBand. Connections collide: some uplinks carry
//    more flows than others, and the flows on them run slower.
//  * balanced: the spine is a rotation of the endpoints' port positions. With i the source
//    NIC's port on its leaf (of P ports, S uplinks), j the destination NIC's port on its leaf
//    c the channel and a, b the source and destination leaves' indices, spine index =
//    (σ(⌊i·S/P⌋) + j + a + b + c) mod S (a + b: fixed between two leaves; it spreads small
//    rail-optimized leaves, where σ(⌊i·S/P⌋) + j alone is the same for every cross-rail flow), σ the bit reversal of
//    log2 S bits when S is a power of two (else the identity). Between two full leaves every
//    (source port, destination leaf) pair then uses each uplink equally often and every
//    (source leaf, destination port) pair each spine downlink, so a full AlltoAll loads every
//    leaf uplink and every spine downlink with the same number of flows: the even spread of
//    adaptive routing (InfiniBand AR, NVIDIA Spectrum-X), without ECMP collisions. ⌊i·S/P⌋
//    spreads a partly cabled leaf's ports over all its uplinks, and σ does the same for the
//    first P/2^k ports of a leaf (the GPUs a run over a cluster's first nodes uses); other
//    subsets of ports are spread less evenly. Exact with ToR wiring; with rail-optimized wiring
//    a GPU's flows to its own node's other GPUs stay on NVLink, so the rotation's (i, i) pairs
//    between rails are missing, and an additive rotation over an even number of spines cannot
//    spread that gap evenly (Z_S, S even, has no complete mapping): uplinks differ by up to
//    about 2 × (rails − 1) × P ÷ S flows per channel (tested), a few per cent of a full
//    AlltoAll's load on a 32-port leaf. Between pods the core is
//    the rotation continued, core = (⌊rotation ÷ S⌋ + source leaf + destination leaf) mod
//    cores, and the destination pod's spine has the source spine's index; the even spread is
//    tested on two-tier fabrics only.

#include <optional>
#include <vector>

#include "models/hardware/specs.hpp"
#include "models/hardware/node_builders.hpp"
#include "models/hardware/topology.hpp"

namespace ccsim::models {

enum class FabricKind { None, SingleSwitch, FatTree };
enum class Wiring { RailOptimized, Tor };
/// How a flow's spine (and core) is chosen among the equal-cost ones (see above).
enum class Ecmp { Hash, Balanced };

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
  /// Three tiers: nodes per pod, a multiple of nodes_per_leaf (0: two tiers, no pods).
  int nodes_per_pod = 0;
  int cores = 0;                       ///< core switches; 0: one per spine uplink port
  double pod_oversubscription = 1.0;   ///< spine downlink bandwidth ÷ spine uplink (to the cores) bandwidth (>= 1)
  FabricTier core;                     ///< spine <-> core
  Ecmp ecmp = Ecmp::Hash;              ///< spine/core choice: per-connection hash, or the balanced rotation

  /// Pods of the fabric over `node_count` nodes: ceil(node_count / nodes_per_pod), 1 without pods.
  int pods(int node_count) const;
};

std::string_view to_string(FabricKind kind);
std::string_view to_string(Wiring wiring);
std::string_view to_string(Ecmp ecmp);

/// Adds the fabric's switches and links for the NICs of `nodes`: leaves are tier 1, spines
/// tier 2 (numbered pod by pod), cores tier 3. Throws std::invalid_argument when nodes have
/// NICs but the fabric is None and there is more than one node, or when nodes_per_pod is not
/// a multiple of nodes_per_leaf.
void add_fabric(Topology& topology, const FabricSpec& spec, const std::vector<NodeDevices>& nodes);

}  // namespace ccsim::models
