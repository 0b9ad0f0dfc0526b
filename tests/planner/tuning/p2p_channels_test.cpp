// NCCL's p2p channels per peer (planner/tuning/p2p_channels.hpp), each expectation worked by
// hand from NCCL's src/graph/paths.cc of the release named.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "planner/tuning/p2p_channels.hpp"

using namespace ccsim;
using planner::P2pChannelInputs;
using planner::nccl_p2p_channels;

namespace {

/// GH200 nodes of nccl#1272: 4 ranks per node, NVLink pairs of 6 links (2 × 6 = 12 local
/// channels), one 200 Gb/s NIC per GPU (25 GB/s), 4 searched rings doubled: nChannels 8.
P2pChannelInputs gh200(int nodes, models::NcclVersion v) {
  P2pChannelInputs in;
  in.version = v;
  in.nodes = nodes;
  in.ranks = 4 * nodes;
  in.coll_channels = 8;
  in.local_channels = 12;
  in.nics = 1;
  in.nic_bandwidth = 25e9;
  return in;
}

}  // namespace

TEST_CASE("p2p channels: NCCL 2.19 gives a network peer 2 channels at any size", "[planner][p2p]") {
  // 2.19: NCCL_NCHANNELS_PER_NET_PEER defaults to 2; perPeer = pow2Up(min(p2pnChannels 8, 12, 2)) = 2.
  for (int nodes : {2, 4, 8, 64}) {
    const auto c = nccl_p2p_channels(gh200(nodes, {2, 19}));
    CHECK(c.net_peer == 2);
    CHECK(c.per_peer == 2);
    CHECK(c.channels == 8);
  }
}

TEST_CASE("p2p channels: NCCL 2.20 halves a network peer's channels with the job size", "[planner][p2p]") {
  // 2.20: c = 2, halved while c × nRanks > 4 × p2pnChannels (4 × 8 = 32): 8 ranks (16 <= 32) and
  // 16 ranks (32 <= 32) keep 2; 32 ranks (64 > 32) get 1. nccl#1272: the drop at 8 nodes only.
  CHECK(nccl_p2p_channels(gh200(2, {2, 20})).per_peer == 2);
  CHECK(nccl_p2p_channels(gh200(4, {2, 20})).per_peer == 2);
  CHECK(nccl_p2p_channels(gh200(8, {2, 20})).per_peer == 1);
  CHECK(nccl_p2p_channels(gh200(8, {2, 28})).per_peer == 1);
  // NCCL_NCHANNELS_PER_NET_PEER=4: min(p2pnChannels 8, local 12, 4) = 4.
  P2pChannelInputs four = gh200(8, {2, 20});
  four.per_net_peer = 4;
  CHECK(nccl_p2p_channels(four).per_peer == 4);
  // More NICs than the halving leaves: max(NICs, c) = 2.
  P2pChannelInputs two_nics = gh200(8, {2, 20});
  two_nics.nics = 2;
  CHECK(nccl_p2p_channels(two_nics).per_peer == 2);
}

TEST_CASE("p2p channels: NCCL 2.29 sizes by NIC bandwidth and batches of 8 peers", "[planner][p2p]") {
  // 2.29: max(1 NIC, ceil(25 / 14)) = 2; perPeer 2 × ceil(nRanks / 8) > p2pnChannels 8 halves:
  // 8 ranks: 2 × 1 = 2; 32 ranks: 2 × 4 = 8 (kept); 64 ranks: 2 × 8 = 16 > 8 -> 1.
  CHECK(nccl_p2p_channels(gh200(2, {2, 29})).per_peer == 2);
  CHECK(nccl_p2p_channels(gh200(8, {2, 29})).per_peer == 2);
  CHECK(nccl_p2p_channels(gh200(16, {2, 30})).per_peer == 1);
  // 400 Gb/s (50 GB/s): ceil(50 / 14) = 4 on 2 nodes of 8 ranks (nChannels 16): 4 × 2 <= 16.
  P2pChannelInputs ndr = gh200(2, {2, 30});
  ndr.ranks = 16;
  ndr.coll_channels = 16;
  ndr.nic_bandwidth = 50e9;
  CHECK(nccl_p2p_channels(ndr).per_peer == 4);
  // 100 Gb/s (12.5 GB/s, NCCL's (int) 12): max(1, ceil(12 / 14)) = 1.
  P2pChannelInputs edr = gh200(2, {2, 30});
  edr.nic_bandwidth = 12.5e9;
  CHECK(nccl_p2p_channels(edr).per_peer == 1);
}

TEST_CASE("p2p channels: one node takes the local peers' count, rounded to a power of two", "[planner][p2p]") {
  // One node, 2.30: min(MAXCHANNELS 64, 12) = 12 -> pow2Up 16, at most p2pnChannels pow2Up(8) = 8.
  P2pChannelInputs one = gh200(1, {2, 30});
  CHECK(nccl_p2p_channels(one).per_peer == 8);
  CHECK(nccl_p2p_channels(one).net_peer == 0);
  // 2.20 starts the minimum from p2pnChannels (8): min(8, 12) = 8.
  one.version = {2, 20};
  CHECK(nccl_p2p_channels(one).per_peer == 8);
  // PCIe peers: 2.
  one.local_channels = 2;
  CHECK(nccl_p2p_channels(one).per_peer == 2);
}

TEST_CASE("p2p channels: bad inputs are refused", "[planner][p2p]") {
  P2pChannelInputs in = gh200(8, {2, 20});
  in.per_net_peer = 0;
  CHECK_THROWS_AS(nccl_p2p_channels(in), std::invalid_argument);
  in.per_net_peer = 65;
  CHECK_THROWS_AS(nccl_p2p_channels(in), std::invalid_argument);
  in.per_net_peer.reset();
  in.coll_channels = 0;
  CHECK_THROWS_AS(nccl_p2p_channels(in), std::invalid_argument);
}

TEST_CASE("NCCL versions are read in NCCL's spellings", "[models][p2p]") {
  CHECK(models::parse_nccl_version("2.20") == models::NcclVersion{2, 20});
  CHECK(models::parse_nccl_version("2.20.5") == models::NcclVersion{2, 20});
  CHECK(models::parse_nccl_version("2.19.4-1") == models::NcclVersion{2, 19});
  CHECK(models::to_string(models::NcclVersion{2, 9}) == "2.9");
  CHECK(models::NcclVersion{2, 9} < models::NcclVersion{2, 20});
  for (const char* bad : {"", "2", "2.", "v2.20", "2.20x", "1.9", "2.20.5-", "2.-1", "2.20.5.1"}) {
    INFO(bad);
    CHECK_FALSE(models::parse_nccl_version(bad).has_value());
  }
}
