#pragma once
// Ring search on nodes whose GPUs are joined by direct links (xGMI meshes, NVLink meshes such
// as the 4-GPU HGX H100 board or the DGX-1's hybrid cube-mesh): which orders of the node's
// GPUs the channels of a ring walk, so that the channels together use the links' capacity.
//
// NCCL and RCCL search rings over the node's graph (NCCL src/graph/search.cc): each channel is
// a Hamiltonian cycle (one node) or a Hamiltonian path between the NICs it enters and leaves
// by (several nodes) that uses only GPU-to-GPU links, and every channel the search adds takes
// its share of each link it crosses. ccsim searches the same objects with the same goal: the
// set of K channels whose aggregate rate K × min over links (capacity / channels on the link)
// is highest, with the fewest channels among equals. Channels move equal shares of the data,
// so the most loaded link sets every channel's rate.
//
// The search is a depth-first branch and bound per channel (minimising the channel's most
// loaded link after it is added, then the sum of loads), repeated with deterministic
// shuffled neighbour orders; it stops early when the aggregate reaches the upper bound (every
// GPU's total outgoing capacity). Results are cached per link graph.

#include <vector>

namespace ccsim::planner {

/// The direct links among the n GPUs of one node: capacity[u × n + v] is the bandwidth of
/// the direct links from GPU u to GPU v, bytes per second per direction (0: none).
struct LinkGraph {
  int n = 0;
  std::vector<double> capacity;
  double at(int u, int v) const { return capacity[static_cast<std::size_t>(u * n + v)]; }
};

/// Rings over all n GPUs of the node (each a cycle listed from GPU 0, using direct links
/// only), at most `max_rings`. The number returned is the channel count that maximises the
/// aggregate rate. Empty when n < 3 or no Hamiltonian cycle over direct links was found.
std::vector<std::vector<int>> search_rings(const LinkGraph& graph, int max_rings);

/// `count` Hamiltonian paths over the node's GPUs using direct links only, one per channel of
/// a ring across nodes: a channel enters the node at its path's first GPU and leaves at its
/// last. Every GPU is the first of at most ⌈count / n⌉ paths and the last of at most as many,
/// so each NIC carries its share of channels. Empty when n < 2 or no set was found.
std::vector<std::vector<int>> search_paths(const LinkGraph& graph, int count);

/// NCCL's ring channels inside one node whose GPUs reach each other through an NVSwitch.
struct NvswitchRingSearch {
  int channels = 0;          ///< ring channels of NCCL's ring graph (after ncclTopoDupChannels)
  double bw_per_channel = 0; ///< the graph's bwIntra, GB/s (NCCL's units)
};

/// The ring graph NCCL's search (src/graph/search.cc, ncclTopoCompute, NCCL 2.30) reaches on one
/// NVSwitch node of GPUs with compute capability `compute_capability` (80 for sm80, 100 for
/// sm100) whose NVLinks to the switch carry `gpu_nvlink_gbps` GB/s per direction as NCCL credits
/// them (topo.h: links × 20 on sm80, × 20.6 on sm90, × 40.1 on sm100). Every channel of a ring
/// takes its speed from each GPU's links to and from the switch, so a speed s fits
/// ⌊bandwidth / s⌋ channels (at most `max_channels`, init.cc's MAXCHANNELS / 2). Pass 1 starts at
/// the fastest entry of the architecture's intra-node speed array (speedArrayIntra,
/// sm90SpeedArrayIntra, sm100SpeedArrayIntra) not above the bandwidth and keeps the graph of the
/// highest channels × speed, the first among equals, lowering the speed while the next one is
/// above 0.49 of the best found and stopping once channels × speed reaches the bandwidth;
/// ncclTopoDupChannels then doubles the channels at half the speed when the speed is at least 25
/// (and, above sm80, unless it is below 50 with more than 4 channels); pass 2 raises the speed
/// while the channel count still fits. NCCL's runtime doubles the channels again (connect.cc,
/// ncclTopoPostset: the same rings twice); its tuning model (tuning.cc) counts the graph's
/// channels, which are the ones this returns. Results: 8 × B200 (721.8 GB/s) 16 channels,
/// H100 (370.8) 12, A100 (240) 12 (24 at runtime, as NCCL's logs show).
NvswitchRingSearch nccl_nvswitch_ring_search(double gpu_nvlink_gbps, int compute_capability, int max_channels = 32);

/// Aggregate rate of a set of channels over `graph`, in bytes per second: K × min over used
/// links (capacity / channels using the link). `closed`: the orders are cycles.
double aggregate_rate(const LinkGraph& graph, const std::vector<std::vector<int>>& orders, bool closed);

}  // namespace ccsim::planner
