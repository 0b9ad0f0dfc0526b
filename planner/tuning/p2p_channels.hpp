#pragma once
// NCCL's point-to-point channels: how many channels a send or receive to one peer uses
// (p2pnChannelsPerPeer) out of the p2p channels of the communicator (p2pnChannels), by release.
// Read from NCCL's src/graph/paths.cc (ncclTopoGetNchannels, ncclTopoComputeP2pChannels[PerPeer])
// and src/graph/connect.cc (ncclTopoPostset doubles the searched channels: comm->nChannels),
// releases 2.19.3, 2.20.3, 2.21.5 ... 2.28.3, 2.29.2, 2.30.7:
//
//   p2pnChannels = pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS))
//   a peer on the same node: 2 × max(1, NVLinks of the pair) over NVLink, else 2
//   a peer on another node (NCCL_NCHANNELS_PER_NET_PEER when set, else):
//     <= 2.19        2 (the variable's default)
//     2.20 .. 2.28   c = 2, halved while c × nRanks > 4 × p2pnChannels (to 1); then max(NICs, c)
//     >= 2.29        max(NICs, ceil(NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14))
//   p2pnChannelsPerPeer = pow2Up(min over peers), at most p2pnChannels; from 2.29 on, across nodes
//   and without the variable, halved while perPeer × ceil(nRanks / 8) > p2pnChannels
//   (8: NCCL_MAX_DEV_WORK_P2P_PER_BATCH).
//
// MAXCHANNELS is 32 up to 2.24 and 64 from 2.25 (src/include/device.h). The 2.29 cap of
// p2pnChannels by the kernel argument bytes (ncclDevMaxChannelsForArgsBytes) is not modelled: at
// NCCL's default it allows more than MAXCHANNELS. A large send uses every channel of its peer
// (enqueue.cc, nChannelsMax = p2pnChannelsPerPeer), each with 1/k of the bytes.

#include <optional>
#include <vector>

#include "models/collective/nccl_settings.hpp"
#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"

namespace ccsim::planner {

/// What NCCL's rules read of one communicator.
struct P2pChannelInputs {
  models::NcclVersion version;
  int ranks = 1;          ///< nRanks
  int nodes = 1;          ///< nNodes
  int coll_channels = 1;  ///< comm->nChannels: the collective channels after ncclTopoPostset
  /// The fewest channels of a peer on the same node (2 × NVLinks, or 2); 0: no such peer.
  int local_channels = 0;
  int nics = 1;                  ///< NICs the GPU uses (getLocalNetCountByBw); 0: none
  double nic_bandwidth = 0;      ///< bytes per second of those NICs together (NCCL's netBw)
  std::optional<int> per_net_peer;  ///< NCCL_NCHANNELS_PER_NET_PEER
};

struct P2pChannels {
  int channels = 1;  ///< p2pnChannels
  int per_peer = 1;  ///< p2pnChannelsPerPeer
  int net_peer = 0;  ///< the channels NCCL's rule gives a peer on another node (0: none)
};

/// NCCL's p2p channel counts for `in` (the rules above). Throws std::invalid_argument on
/// counts below 1 (ranks, nodes, coll_channels) or a per_net_peer outside 1 .. 64.
P2pChannels nccl_p2p_channels(const P2pChannelInputs& in);

/// The inputs of the ranks `gpus` (device ids of `cluster`, rank order) with NCCL's collective
/// channels `coll_channels`: nodes and ranks counted, the local peers' NVLink counts read from
/// their routes (the fewest lanes of the path's scale-up links), the NIC of each GPU (ccsim
/// gives a rank one NIC: Device::nic) and its network link's bandwidth, the least over the ranks.
P2pChannelInputs p2p_channel_inputs(const models::Cluster& cluster, models::Router& router, const std::vector<models::DeviceId>& gpus,
                                    int coll_channels, const models::NcclSettings& settings);

}  // namespace ccsim::planner
