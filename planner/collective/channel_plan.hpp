#pragma once
// The channels of one collective group, as NCCL's ncclTopoGraph holds them: the ring order of
// every ring channel, the searched rings of a direct-link node, the ranks of each node, and the
// tree pairs with the local rank whose NIC each pair uses. One pure function of the cluster and
// the group's GPUs builds it; the collective planner generates every candidate's request from
// it (AlgorithmEntry::channels says which parts an algorithm reads), and `ccsim collective
// --dump-channels` prints it.
//
// How the channels are chosen (as NCCL spreads channels over NICs and links):
//  * rings across nodes with the same number of ranks on each: one channel per local rank (at
//    most kMaxRingChannels); channel c walks every node once, every other node backwards, so
//    each node-to-node hop joins GPUs of the same local index — the same NIC rail. On a
//    direct-link node (xGMI, NVLink mesh) the walk inside a node is one of the searched
//    Hamiltonian paths (ring_search.hpp); otherwise it goes from local c+1 round to local c;
//  * rings across unequal nodes (or ranks not in node order): the same walk over each node's
//    ranks as they come, one channel per rank of the smallest node;
//  * one direct-link node: the searched rings, as many channels as the search found best;
//  * one NVSwitch node: NCCL's own ring channel count (ring_search.hpp,
//    nccl_nvswitch_ring_search: 16 on B200, 12 on H100 and A100, from NCCL's speed arrays and
//    channel duplication), every channel walking the ranks in order;
//  * trees: one chain/tree pair per NIC rail the first node's ranks reach across nodes (NCCL
//    builds its trees per NIC), headed by the first rank of each rail; inside one node, one
//    pair per searched ring on direct-link nodes, else one.
// The direct links are read from one node of each node class and choice of local GPUs among the
// ranks' nodes (Topology::node_class), pair by pair the weakest, so the rings suit every node.

#include <vector>

#include "models/hardware/cluster.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::planner {

/// At most this many channels per ring, and tree pairs (NCCL's MAXCHANNELS / 2 for rings).
inline constexpr int kMaxRingChannels = 16;

struct ChannelPlan {
  int ranks = 0;           ///< ranks of the group
  int nodes = 0;           ///< nodes the ranks span
  /// Ranks on every node when every node holds the same number in node-major order (rank r on
  /// node r / ranks_per_node); 0 otherwise.
  int ranks_per_node = 0;
  /// Ring channels: the `channels` asked for, else the automatic count above.
  int channels = 1;
  /// Ring order of each channel (channel c uses ring_orders[c % size]), each a permutation of
  /// the ranks. Empty: every ring is 0, 1, ..., ranks − 1.
  std::vector<std::vector<int>> ring_orders;
  /// Rings over the GPUs of one direct-link node found by the ring search, local indices 0 ..
  /// ranks_per_node − 1; empty when the node's GPUs are not joined by direct links.
  std::vector<std::vector<int>> node_orders;
  /// The ranks of each node, in node order and rank order, when ranks_per_node is 0.
  std::vector<std::vector<int>> node_groups;
  /// Tree chain/tree pairs (channels 2c and 2c + 1): the `channels` asked for, else as above.
  int tree_pairs = 1;
  /// Local index of the head of each tree pair (pair c uses tree_heads[c % size]), across
  /// nodes; empty on one node (the tree is then the chain alone, head c mod L).
  std::vector<int> tree_heads;

  bool operator==(const ChannelPlan&) const = default;
};

/// The channels of the ranks `gpus` (device ids of `cluster`'s GPUs, in rank order), with
/// `channels` ring channels and tree pairs when above 0 (else chosen as above). On one NVSwitch
/// node the NVLink bandwidth NCCL's search divides is each GPU's links to the switch at the
/// efficiency `costs` credits for the GPUs' architecture (nccl.yaml link_efficiency: NCCL's
/// topo.h figures), their raw bandwidth without `costs`. Throws std::invalid_argument for an
/// empty group.
ChannelPlan plan_channels(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus, int channels = 0,
                          const CostModel* costs = nullptr);

}  // namespace ccsim::planner
