#include "planner/tuning/p2p_channels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace ccsim::planner {
namespace {

int pow2_up(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

int div_up(int a, int b) { return (a + b - 1) / b; }

/// NCCL's MAXCHANNELS for the release (src/include/device.h: 32 up to 2.24, 64 from 2.25).
int max_channels(models::NcclVersion v) { return v < models::NcclVersion{2, 25} ? 32 : 64; }

/// NCCL_P2P_PER_CHANNEL_NET_BW's default, GB/s (paths.cc, 2.29 and later).
constexpr int kPerChannelNetGBps = 14;
/// NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h, 2.29 and later).
constexpr int kP2pPerBatch = 8;

}  // namespace

P2pChannels nccl_p2p_channels(const P2pChannelInputs& in) {
  if (in.ranks < 1 || in.nodes < 1 || in.coll_channels < 1) throw std::invalid_argument("p2p channels: ranks, nodes and channels must be at least 1");
  if (in.per_net_peer && (*in.per_net_peer < 1 || *in.per_net_peer > models::kMaxNcclChannelsPerNetPeer)) {
    throw std::invalid_argument("NCCL_NCHANNELS_PER_NET_PEER must be 1 .. 64");
  }
  const models::NcclVersion v = in.version;
  const bool v2_20 = v >= models::NcclVersion{2, 20};
  const bool v2_29 = v >= models::NcclVersion{2, 29};
  // p2pnChannels before its rounding: min(nChannels, NCCL_MAX_P2P_NCHANNELS), at least 1.
  const int p2p = std::max(1, std::min(in.coll_channels, max_channels(v)));
  P2pChannels out;
  if (in.nodes > 1) {
    if (in.per_net_peer) {
      out.net_peer = *in.per_net_peer;
    } else if (!v2_20) {
      out.net_peer = 2;  // NCCL_PARAM(NChannelsPerNetPeer, "NCHANNELS_PER_NET_PEER", 2)
    } else if (!v2_29) {
      int c = 2;  // "start from 2 channels per NIC and reduce with scale"
      while (c * in.ranks > p2p * 4 && c > 1) c /= 2;
      out.net_peer = std::max(in.nics, c);
    } else {
      const int gbps = static_cast<int>(in.nic_bandwidth / 1e9);  // NCCL's (int)netBw, GB/s
      out.net_peer = in.nics > 0 ? std::max(in.nics, div_up(gbps, kPerChannelNetGBps)) : 2;
    }
  }
  // The fewest channels over the peers; before 2.29 the search starts from p2pnChannels.
  int fewest = v2_29 ? max_channels(v) : p2p;
  if (in.local_channels > 0) fewest = std::min(fewest, in.local_channels);
  if (out.net_peer > 0) fewest = std::min(fewest, out.net_peer);
  out.channels = pow2_up(p2p);
  out.per_peer = pow2_up(fewest);
  if (v2_29) {
    if (in.nodes > 1 && !in.per_net_peer) {
      while (out.per_peer * div_up(in.ranks, kP2pPerBatch) > out.channels && out.per_peer > 1) out.per_peer /= 2;
    } else {
      out.per_peer = std::min(out.channels, out.per_peer);
    }
  }
  return out;
}

P2pChannelInputs p2p_channel_inputs(const models::Cluster& cluster, models::Router& router, const std::vector<models::DeviceId>& gpus,
                                    int coll_channels, const models::NcclSettings& settings) {
  const models::Topology& t = cluster.topology;
  P2pChannelInputs in;
  in.version = settings.release();
  in.per_net_peer = settings.nchannels_per_net_peer;
  in.ranks = static_cast<int>(gpus.size());
  in.coll_channels = coll_channels;
  std::map<int, std::vector<models::DeviceId>> by_node;
  for (models::DeviceId g : gpus) by_node[t.device(g).node].push_back(g);
  in.nodes = static_cast<int>(by_node.size());
  // Local peers: 2 × max(1, NVLinks) over an NVLink path (NCCL: path bw / one NVLink's bw), else 2.
  int local = std::numeric_limits<int>::max();
  for (const auto& [node, ranks] : by_node) {
    for (models::DeviceId a : ranks) {
      for (models::DeviceId b : ranks) {
        if (a == b) continue;
        const models::Path& p = router.route(a, b);
        int links = 0;
        if (p.type == models::PathType::Nvl) {
          links = std::numeric_limits<int>::max();
          for (models::LinkId id : p.links) {
            const models::Link& l = t.link(id);
            if (l.link_class == models::LinkClass::ScaleUp) links = std::min(links, static_cast<int>(l.lanes));
          }
          if (links == std::numeric_limits<int>::max()) links = 1;
        }
        local = std::min(local, 2 * std::max(1, links));
      }
    }
  }
  in.local_channels = local == std::numeric_limits<int>::max() ? 0 : local;
  // The NIC of each rank and its network link; the least bandwidth over the ranks.
  double nic_bw = std::numeric_limits<double>::infinity();
  bool every_nic = true;
  for (models::DeviceId g : gpus) {
    const models::DeviceId nic = t.device(g).nic;
    if (nic == models::kNoDevice) {
      every_nic = false;
      continue;
    }
    for (models::LinkId id : t.out_links(nic)) {
      const models::Link& l = t.link(id);
      if (l.link_class == models::LinkClass::Network) nic_bw = std::min(nic_bw, l.bandwidth);
    }
  }
  in.nics = every_nic && std::isfinite(nic_bw) ? 1 : 0;
  in.nic_bandwidth = in.nics > 0 ? nic_bw : 0;
  return in;
}

}  // namespace ccsim::planner
