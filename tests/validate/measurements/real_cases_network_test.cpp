// Measured point-to-point and network cases from users' hardware against ccsim's model of how
// NCCL uses the network per peer (planner/tuning/p2p_channels.hpp). Each case states the
// measurement, its public source, the model's closed-form value and the error budget (the error
// measured when the model was written, rounded up; docs/accuracy.md, real cases).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "models/hardware/router.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

constexpr double kGB = 1e9;

const planner::CostModel& default_costs() {
  static const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  return costs;
}

models::Cluster real_case(const std::string& file) {
  return models::build_cluster(
      models::load_scenario(test::source_path("tests/data/real-cases/" + file), test::shipped_catalog()).cluster);
}

struct SendRecvRun {
  double busbw = 0;  ///< GB/s: nccl-tests' sendrecv busbw = S / t
  int per_peer = 0;  ///< channels of each peer
};

/// sendrecv_perf over the first `ranks` GPUs (rank r sends S to r + 1), S = 512 MiB (-b 512M).
SendRecvRun sendrecv(const models::Cluster& c, int ranks, models::NcclSettings nccl, int channels = 0) {
  constexpr std::uint64_t kBytes = 512ULL << 20;
  planner::CollectiveOptions o;
  o.collective = models::Collective::SendRecv;
  o.nccl = nccl;
  o.channels = channels;
  for (int r = 0; r < ranks; ++r) o.gpus.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
  planner::CollectiveRunner runner(c, default_costs(), o);
  const planner::CollectiveResult res = runner.run(kBytes);
  return {static_cast<double>(kBytes) / res.time / kGB, runner.channels()};
}

double error_pct(double simulated, double measured) { return (simulated - measured) / measured * 100.0; }

// The model's bottlenecks (independent of the simulator): a rank's NIC, 200 Gb/s = 25 GB/s each
// way, and one p2p channel across nodes, 14 GB/s (NCCL_P2P_PER_CHANNEL_NET_BW, the table's
// p2p.net_channel_bandwidth). k channels per peer: min(25, 14 k) GB/s, less the latency (~0.1 %).
constexpr double kNic = 25.0;
constexpr double kChannel = 14.0;
// Budgets, percent. Measured (analytic engine): 2 channels 24.97 GB/s against 24.24 (+3.0 %) and
// 24.2 (+3.2 %); 1 channel 13.99 GB/s against 18.32 (−23.6 %: the measured single channel on
// Slingshot with aws-ofi-nccl drives more than NCCL's 14 GB/s sizing figure).
constexpr double kBudgetTwoChannels = 4;
constexpr double kBudgetOneChannel = 24;

}  // namespace

TEST_CASE("p2p channels per peer: 8 x 4 GH200 on Slingshot, NCCL 2.19 vs 2.20 (nccl#1272)", "[validate][real-cases][p2p]") {
  // Source: NVIDIA/nccl issue #1272: sendrecv_perf -g 1 -b 512M -e 512M, one rank per GPU:
  // 8 nodes 24.2382 GB/s on NCCL 2.19.4, 18.3153 on 2.20.5, 24.2-24.3 on 2.20.5 with
  // NCCL_NCHANNELS_PER_NET_PEER=4; 2 and 4 nodes 24.2 on either release.
  const models::Cluster c = real_case("gh200-4gpu-slingshot.yaml");
  const models::NcclSettings v2_19{.version = models::NcclVersion{2, 19}};
  const models::NcclSettings v2_20{.version = models::NcclVersion{2, 20}};
  models::NcclSettings v2_20_four = v2_20;
  v2_20_four.nchannels_per_net_peer = 4;

  // 2.19: 2 channels per network peer at any size: min(25, 28) = 25 GB/s.
  const SendRecvRun old = sendrecv(c, 32, v2_19);
  CHECK(old.per_peer == 2);
  CHECK(old.busbw == Approx(kNic).epsilon(0.005));
  CHECK(std::abs(error_pct(old.busbw, 24.2382)) < kBudgetTwoChannels);

  // 2.20 on 32 ranks: 2 × 32 > 4 × 8 p2p channels, so 1 channel: 14 GB/s.
  const SendRecvRun drop = sendrecv(c, 32, v2_20);
  CHECK(drop.per_peer == 1);
  CHECK(drop.busbw == Approx(kChannel).epsilon(0.005));
  CHECK(std::abs(error_pct(drop.busbw, 18.3153)) < kBudgetOneChannel);
  CHECK(drop.busbw < old.busbw);  // the regression's direction

  // NCCL_NCHANNELS_PER_NET_PEER=4 restores it: min(25, 56) = 25 GB/s.
  const SendRecvRun four = sendrecv(c, 32, v2_20_four);
  CHECK(four.per_peer == 4);
  CHECK(std::abs(error_pct(four.busbw, 24.25)) < kBudgetTwoChannels);

  // --channels sets the channels of each peer outright: 2 restore 25 GB/s on 2.20, 1 on 2.19 drops to 14.
  const SendRecvRun forced_two = sendrecv(c, 32, v2_20, 2);
  CHECK(forced_two.per_peer == 2);
  CHECK(forced_two.busbw == Approx(kNic).epsilon(0.005));
  const SendRecvRun forced_one = sendrecv(c, 32, v2_19, 1);
  CHECK(forced_one.per_peer == 1);
  CHECK(forced_one.busbw == Approx(kChannel).epsilon(0.005));

  // 2 and 4 nodes on 2.20 keep 2 channels (2 × 16 <= 4 × 8): 25 GB/s, as on 2.19.
  for (int nodes : {2, 4}) {
    INFO(nodes << " nodes");
    const SendRecvRun small = sendrecv(c, 4 * nodes, v2_20);
    CHECK(small.per_peer == 2);
    CHECK(std::abs(error_pct(small.busbw, 24.2)) < kBudgetTwoChannels);
  }
}

namespace {

/// alltoall_perf over the given GPUs at 1 GiB, rounded down to whole float blocks per rank as
/// nccl-tests does (busbw = S/t × (n−1)/n).
double alltoall_busbw(const models::Cluster& c, const std::vector<models::DeviceId>& gpus, bool pxn, int channels = 0) {
  const std::uint64_t block = 4 * static_cast<std::uint64_t>(gpus.size());
  const std::uint64_t kBytes = (1ULL << 30) / block * block;
  planner::CollectiveOptions o;
  o.collective = models::Collective::AlltoAll;
  o.nccl.pxn_disable = !pxn;
  o.channels = channels;
  o.gpus = gpus;
  planner::CollectiveRunner runner(c, default_costs(), o);
  const auto n = static_cast<double>(gpus.size());
  const planner::CollectiveResult res = runner.run(kBytes);
  return static_cast<double>(res.bytes) / res.time / kGB * (n - 1) / n;
}

std::vector<models::DeviceId> all_gpus(const models::Cluster& c) { return c.topology.gpus(); }

// One NIC per GPU pair: the NIC's PCIe Gen4 x16 link, 31.5 × 0.7619 = 24 GB/s (below HDR's
// 25), shared by the two GPUs of its switch: 12 GB/s per GPU. An AlltoAll of n ranks on
// nodes of 8 moves (n − 8)/n of each rank's bytes S over the network, so
// t = S (n − 8)/n / 12 and busbw = S/t × (n − 1)/n = 12 (n − 1)/(n − 8) GB/s.
double alltoall_nic_bound(int n) { return 12.0 * (n - 1) / (n - 8); }

// Budgets, percent (the errors measured when PXN was modelled, rounded up). The model is the
// NIC bound in both PXN modes on a non-blocking fabric; what the measurements lose beyond it
// (25 % at 14 nodes without PXN, 11 % at 8 nodes with PXN) is not modelled (docs/accuracy.md).
constexpr double kBudget14NoPxn = 43;  // 12.81 vs 9 (+42.3 %)
constexpr double kBudget8Pxn = 13;     // 13.50 vs 12 (+12.5 %)
constexpr double kBudget8NoPxn = 36;   // 13.50 vs 10 (+35.0 %)

}  // namespace

TEST_CASE("AlltoAll: one NIC per GPU, 14 and 8 nodes of 8 x A800 with 4 HDR NICs (nccl-tests#187)", "[validate][real-cases][p2p]") {
  // Source: NVIDIA/nccl-tests issue #187 (= NVIDIA/nccl #1116): alltoall_perf busbw ~9 GB/s on
  // 14 nodes with PXN off; 12 GB/s (PXN on) and 10 GB/s (off) on 8 nodes.
  const models::Cluster c14 = real_case("a800-14node-4nic-alltoall.yaml");
  const models::Cluster c8 = real_case("a800-8node-4nic-alltoall.yaml");

  const double off14 = alltoall_busbw(c14, all_gpus(c14), false);
  CHECK(off14 == Approx(alltoall_nic_bound(112)).epsilon(0.01));  // 12.81
  CHECK(std::abs(error_pct(off14, 9.0)) < kBudget14NoPxn);

  const double on8 = alltoall_busbw(c8, all_gpus(c8), true);
  const double off8 = alltoall_busbw(c8, all_gpus(c8), false);
  CHECK(on8 == Approx(alltoall_nic_bound(64)).epsilon(0.01));  // 13.5
  CHECK(off8 == Approx(alltoall_nic_bound(64)).epsilon(0.01));
  CHECK(std::abs(error_pct(on8, 12.0)) < kBudget8Pxn);
  CHECK(std::abs(error_pct(off8, 10.0)) < kBudget8NoPxn);

  // The rule that an AlltoAll does not aggregate NICs: one GPU per node on 8 nodes, its node's
  // other three NICs idle, drives its own NIC only: 24 GB/s (the NIC's PCIe link), not 4 × 24.
  std::vector<models::DeviceId> one_per_node;
  for (int node = 0; node < 8; ++node) one_per_node.push_back(c8.topology.gpus()[static_cast<std::size_t>(8 * node)]);
  CHECK(alltoall_busbw(c8, one_per_node, true) == Approx(24.0).epsilon(0.01));

  // An AlltoAll runs on the p2p channels: two ranks on two nodes, half the bytes cross the
  // network. NCCL's rule gives 2 channels per peer here (28 GB/s of channel caps > the NIC's
  // 24): busbw 24; with one channel (--channels 1) the cap binds: 14 GB/s.
  const std::vector<models::DeviceId> pair{c8.topology.gpus()[0], c8.topology.gpus()[8]};
  CHECK(alltoall_busbw(c8, pair, true) == Approx(24.0).epsilon(0.01));
  CHECK(alltoall_busbw(c8, pair, true, 1) == Approx(kChannel).epsilon(0.01));
}

TEST_CASE("AlltoAll: PXN keeps cross-rail sends off an oversubscribed spine", "[validate][p2p][pxn]") {
  // The 14 A800 nodes above on a 2:1 rail-optimized fat tree (one leaf per rail, balanced ECMP
  // so that the spines are shared evenly). Per GPU and rate x: its NIC carries 2x (two GPUs)
  // <= 24; without PXN 3/4 of a NIC's network traffic is cross-rail (6 of the 8 GPUs of each
  // other node sit on another rail) and climbs to a spine: a leaf's 14 NICs send
  // 14 × 2x × 3/4 = 21x over uplinks of 14 × 25 / 2 = 175 GB/s, x <= 8.33, busbw =
  // 8.33 × 111/104 = 8.89 GB/s. With PXN a send leaves through the NIC of the GPU on the
  // destination's rail (NVLink first), on the destination's leaf: no spine, the NIC bound
  // 12 × 111/104 = 12.81 GB/s.
  models::Scenario s = models::load_scenario(test::source_path("tests/data/real-cases/a800-14node-4nic-alltoall.yaml"), test::shipped_catalog());
  s.cluster.fabric.oversubscription = 2;
  s.cluster.fabric.ecmp = models::Ecmp::Balanced;
  const models::Cluster c = models::build_cluster(s.cluster);
  const double off = alltoall_busbw(c, all_gpus(c), false);
  const double on = alltoall_busbw(c, all_gpus(c), true);
  CHECK(off == Approx(175.0 / 21 * 111 / 104).epsilon(0.01));
  CHECK(on == Approx(alltoall_nic_bound(112)).epsilon(0.01));

  // The relay: GPU 0 of node 0 sending to GPU 5 of node 1 goes over NVLink to GPU 5 of node 0
  // and leaves through its NIC (rail 2); without PXN through GPU 0's own NIC (rail 0).
  models::Router router(c);
  const auto gpu = [&](int node, int local) { return c.topology.gpus()[static_cast<std::size_t>(8 * node + local)]; };
  CHECK(router.pxn_relay(gpu(0, 0), gpu(1, 5)) == gpu(0, 5));
  CHECK(router.pxn_relay(gpu(0, 5), gpu(1, 5)) == models::kNoDevice);  // already on the rail
  CHECK(router.pxn_relay(gpu(0, 0), gpu(0, 5)) == models::kNoDevice);  // same node
  const auto nic_of = [&](const models::Path& p) {
    for (models::LinkId id : p.links) {
      if (c.topology.device(c.topology.link_source(id)).kind == models::DeviceKind::Nic) return c.topology.link_source(id);
    }
    return models::kNoDevice;
  };
  CHECK(nic_of(router.route(gpu(0, 0), gpu(1, 5), 0, 0, true)) == c.topology.device(gpu(0, 5)).nic);
  CHECK(nic_of(router.route(gpu(0, 0), gpu(1, 5), 0, 0, false)) == c.topology.device(gpu(0, 0)).nic);
}
