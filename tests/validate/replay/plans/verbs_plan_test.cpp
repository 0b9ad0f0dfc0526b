// The device-independent plans of the verbs replay backend (validate/replay/plans/verbs_plan.hpp):
// rank-to-NIC mapping, GID choice, queue pairs, memory layout, routes, queue depths, wire format.
// Compiled with or without libibverbs: none of it touches a device.

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "planner/algorithms/algorithms.hpp"
#include "validate/replay/plans/verbs_plan.hpp"

using namespace ccsim;
using namespace ccsim::validate::replay;
using models::BufferKind;
using models::OpKind;

namespace {

BackendOptions rails(std::vector<int> r, std::vector<std::string> nics = {}) {
  BackendOptions o;
  o.rail_of_rank = std::move(r);
  o.nics = std::move(nics);
  return o;
}

models::Op op(OpKind kind, int peer, int channel, models::Slice src, models::Slice dst) {
  models::Op o;
  o.kind = kind;
  o.peer = peer;
  o.channel = static_cast<std::uint16_t>(channel);
  o.src = src;
  o.dst = dst;
  return o;
}

/// The FIFO matching of models/collective/schedule.hpp written out here, independently of data.cpp: the
/// k-th Send a→b on channel c pairs with the k-th Recv / RecvReduce on b from a on channel c.
std::vector<std::vector<Partner>> fifo_partners(const models::Schedule& s) {
  std::map<std::tuple<int, int, int>, std::vector<std::uint32_t>> sends, recvs;  // (src, dst, ch) -> ops
  std::vector<std::vector<Partner>> out(s.ranks.size());
  for (int r = 0; r < s.nranks; ++r) {
    out[r].resize(s.ranks[r].ops.size());
    for (std::uint32_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      const auto& o = s.ranks[r].ops[i];
      if (o.kind == OpKind::Send) sends[{r, o.peer, o.channel}].push_back(i);
      if (o.kind == OpKind::Recv || o.kind == OpKind::RecvReduce) recvs[{o.peer, r, o.channel}].push_back(i);
    }
  }
  for (const auto& [key, list] : sends) {
    const auto [a, b, c] = key;
    const auto& other = recvs.at(key);
    REQUIRE(other.size() == list.size());
    for (std::uint32_t k = 0; k < list.size(); ++k) {
      out[a][list[k]] = {b, other[k], k};
      out[b][other[k]] = {a, list[k], k};
    }
  }
  return out;
}

}  // namespace

TEST_CASE("verbs: a rank's NIC is its rail's device", "[validate][replay][verbs]") {
  const std::vector<std::string> host = {"mlx5_1", "mlx5_0"};  // as listed, not in name order

  SECTION("no rails: every rank on rail 0, the first device by name") {
    for (int r = 0; r < 4; ++r) CHECK(rank_nic(r, 4, {}, host) == "mlx5_0");
  }
  SECTION("rail i is the i-th device in name order; more ranks than NICs share them") {
    const auto o = rails({0, 1, 0, 1, 1, 1, 0, 0});
    const char* expected[] = {"mlx5_0", "mlx5_1", "mlx5_0", "mlx5_1", "mlx5_1", "mlx5_1", "mlx5_0", "mlx5_0"};
    for (int r = 0; r < 8; ++r) CHECK(rank_nic(r, 8, o, host) == expected[r]);
  }
  SECTION("--nics names the device of each rail, in its own order") {
    const auto o = rails({0, 1}, {"mlx5_1", "mlx5_0"});
    CHECK(rank_nic(0, 2, o, host) == "mlx5_1");
    CHECK(rank_nic(1, 2, o, host) == "mlx5_0");
  }
  SECTION("--nics shorter than the rails used") {
    const auto o = rails({0, 1, 2}, {"mlx5_0", "mlx5_1"});
    CHECK(rank_nic(1, 3, o, host) == "mlx5_1");
    CHECK_THROWS_WITH(rank_nic(2, 3, o, host), Catch::Contains("rank 2 is on rail 2 but --nics names 2 device(s) (mlx5_0,mlx5_1)"));
  }
  SECTION("one --nics name serves every rail") {
    const auto o = rails({0, 1, 7}, {"mlx5_1"});
    for (int r = 0; r < 3; ++r) CHECK(rank_nic(r, 3, o, host) == "mlx5_1");
  }
  SECTION("more rails than the host's devices") {
    CHECK_THROWS_WITH(rank_nic(1, 2, rails({0, 2}), host),
                      Catch::Contains("rank 1 is on rail 2 but this host has 2 RDMA device(s) (mlx5_0,mlx5_1): name one device per rail "
                                      "with --nics, or one for all (--nics mlx5_0)"));
  }
  SECTION("a --nics name the host lacks") {
    CHECK_THROWS_WITH(rank_nic(0, 1, rails({}, {"mlx5_7"}), host),
                      Catch::Contains("--nics names mlx5_7 for rail 0, which is not an RDMA device of this host (devices: mlx5_0,mlx5_1)"));
  }
  SECTION("rails for another rank count, a negative rail, no device") {
    CHECK_THROWS_WITH(rank_nic(0, 4, rails({0, 1}), host), Catch::Contains("the rails give 2 ranks a NIC, expected one rail per rank (4)"));
    CHECK_THROWS_WITH(rank_nic(1, 2, rails({0, -1}), host), Catch::Contains("rank 1 has rail -1, expected a rail >= 0"));
    CHECK_THROWS_WITH(rank_nic(0, 1, {}, {}), Catch::Contains("no RDMA device"));
  }
}

TEST_CASE("verbs: the GID index prefers RoCE v2 with an IPv4 address", "[validate][replay][verbs]") {
  using T = GidEntry::Type;
  GidEntry link_local_v1{0, T::RoceV1, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7}};
  GidEntry link_local_v2{1, T::RoceV2, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7}};
  GidEntry ipv4_v1{2, T::RoceV1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}};
  GidEntry ipv4_v2{3, T::RoceV2, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}};
  GidEntry empty{4, T::RoceV2, {}};
  // A ConnectX port with an IPv4 address: indices 0..3 as above (v1/v2 × link-local/IPv4).
  CHECK(choose_gid_index(std::vector{link_local_v1, link_local_v2, ipv4_v1, ipv4_v2}) == 3);
  // soft-RoCE (rxe) without IPv4 on the netdev: its IPv6 link-local RoCE v2 entry.
  CHECK(choose_gid_index(std::vector{empty, link_local_v2}) == 1);
  // InfiniBand: one GID (subnet prefix + port GUID), type InfiniBand.
  GidEntry ib{0, T::InfiniBand, {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0c, 0x42, 0xa1, 0, 0, 0, 0, 1}};
  CHECK(choose_gid_index(std::vector{ib}) == 0);
  CHECK_THROWS_WITH(choose_gid_index(std::vector{empty}), Catch::Contains("GID table has no address (1 entries, all zero)"));
}

TEST_CASE("verbs: queue pairs are exactly the ring neighbours, per channel, consistent across ranks", "[validate][replay][verbs]") {
  // Ring AllReduce over n ranks and 2 channels (ring 0, 1, ..., n−1 on both): every rank sends
  // to r+1 and receives from r−1, 2(n−1) steps per channel (n−1 reduce-scatter, n−1 allgather).
  for (int n : {2, 3, 4, 8}) {
    planner::AlgorithmRequest req;
    req.nranks = n;
    req.channels = 2;
    req.bytes = std::uint64_t(n) * 2 * 4 * 64;
    const auto s = planner::generate(planner::Algorithm::Ring, req);
    std::vector<std::vector<RdmaConnection>> all;
    for (int r = 0; r < n; ++r) all.push_back(rank_connections(s, r));
    for (int r = 0; r < n; ++r) {
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      std::set<std::pair<int, int>> expected, found;
      for (int c = 0; c < 2; ++c) expected.insert({next, c}), expected.insert({prev, c});
      for (const auto& q : all[r]) found.insert({q.peer, q.channel});
      CHECK(found == expected);
      CHECK(all[r].size() == expected.size());  // no duplicates
      for (std::size_t q = 1; q < all[r].size(); ++q) {
        CHECK(std::pair{all[r][q - 1].peer, all[r][q - 1].channel} < std::pair{all[r][q].peer, all[r][q].channel});
      }
      for (const auto& q : all[r]) {
        const std::size_t sends = q.peer == next ? 2 * (n - 1) : 0;
        const std::size_t recvs = q.peer == prev ? 2 * (n - 1) : 0;
        CHECK(q.send_ops.size() == sends);
        CHECK(q.recv_ops.size() == recvs);
        // The peer holds the same queue pair, with the directions swapped.
        const int back = find_connection(all[q.peer], r, q.channel);
        REQUIRE(back >= 0);
        CHECK(all[q.peer][back].recv_ops.size() == q.send_ops.size());
        CHECK(all[q.peer][back].send_ops.size() == q.recv_ops.size());
        for (auto i : q.send_ops) CHECK(s.ranks[r].ops[i].kind == OpKind::Send);
      }
    }
  }
}

TEST_CASE("verbs: switch ops and self messages are refused", "[validate][replay][verbs]") {
  models::Schedule s;
  s.nranks = 2;
  s.ranks.resize(2);
  s.ranks[0].add(op(OpKind::SwitchSend, models::kSwitch, 0, {BufferKind::Input, 0, 4}, {}));
  CHECK_THROWS_WITH(rank_connections(s, 0), Catch::Contains("in-switch reduction (NVLS); the verbs backend has no in-switch reduction: use --algo other than nvls"));
  s.ranks[1].add(op(OpKind::Send, 1, 0, {BufferKind::Input, 0, 4}, {}));
  CHECK_THROWS_WITH(rank_connections(s, 1), Catch::Contains("rank 1 op 0 has peer 1, expected another rank in 0..1"));
}

TEST_CASE("verbs: region layout and routes", "[validate][replay][verbs]") {
  // Rank 0 sends two 64-byte messages to rank 1 on channel 0 and a 36-byte one on channel 1;
  // rank 1 receives the first into its output at 128, reduces the second into output 0
  // (input 0 + message) and the third into output 64 (input 64 + message).
  models::Schedule s;
  s.nranks = 2;
  s.ranks.resize(2);
  s.ranks[0].add(op(OpKind::Send, 1, 0, {BufferKind::Input, 0, 64}, {}));
  s.ranks[0].add(op(OpKind::Send, 1, 0, {BufferKind::Input, 64, 64}, {}));
  s.ranks[0].add(op(OpKind::Send, 1, 1, {BufferKind::Scratch, 0, 36}, {}));
  s.ranks[1].add(op(OpKind::Recv, 0, 0, {}, {BufferKind::Output, 128, 64}));
  s.ranks[1].add(op(OpKind::RecvReduce, 0, 0, {BufferKind::Input, 0, 64}, {BufferKind::Output, 0, 64}));
  s.ranks[1].add(op(OpKind::RecvReduce, 0, 1, {BufferKind::Input, 64, 36}, {BufferKind::Output, 64, 36}));

  // Rank 1: input 5000 B, output 10 000 B, no scratch. Pages of 4096: input [0, 5000) →
  // output at 8192, [8192, 18192) → scratch at 20480 (empty) → staging at 20480. Slots:
  // op 1 at 20480 (64 B), op 2 at 20480 + 64 (36 B): 100 staging bytes → region 24576.
  const auto l1 = region_layout(s, 1, {5000, 10000, 0});
  CHECK(l1.input == 0);
  CHECK(l1.output == 8192);
  CHECK(l1.scratch == 20480);
  CHECK(l1.staging == 20480);
  CHECK(l1.staging_bytes == 100);
  CHECK(l1.bytes == 24576);
  CHECK(l1.staging_of_op == std::vector<std::uint64_t>{kNoStaging, 20480, 20544});
  CHECK(l1.offset_of({BufferKind::Output, 128, 64}) == 8320);
  // Rank 0: 128 B input, no output, 36 B scratch: input 0, output 4096, scratch 4096, staging 8192, 1 page more.
  const auto l0 = region_layout(s, 0, {128, 0, 36});
  CHECK(std::tuple{l0.output, l0.scratch, l0.staging, l0.staging_bytes, l0.bytes} == std::tuple{4096u, 4096u, 8192u, 0u, 8192u});
  // A 63-byte RecvReduce before a 1-byte one: the second slot starts at the next cache line.
  models::Schedule odd = s;
  odd.ranks[1].ops[1].dst.bytes = 63;
  odd.ranks[1].ops[2].dst.bytes = 1;
  CHECK(region_layout(odd, 1, {5000, 10000, 0}).staging_of_op[2] == 20480 + 64);

  const std::vector<RegionLayout> layouts = {l0, l1};
  const auto partners = fifo_partners(s);
  const auto c0 = rank_connections(s, 0);
  const auto c1 = rank_connections(s, 1);
  REQUIRE(c0.size() == 2);
  const auto r0 = op_routes(s, 0, c0, partners, layouts);
  // Send 0 → rank 1's Recv into output + 128: 8192 + 128. Send 1 → op 1's staging slot. Send 2
  // is message 0 of channel 1's connection → op 2's slot.
  CHECK(std::tuple{r0[0].connection, r0[0].sequence, r0[0].remote_offset} == std::tuple{0, 0u, 8320u});
  CHECK(std::tuple{r0[1].connection, r0[1].sequence, r0[1].remote_offset} == std::tuple{0, 1u, 20480u});
  CHECK(std::tuple{r0[2].connection, r0[2].sequence, r0[2].remote_offset} == std::tuple{1, 0u, 20544u});
  const auto r1 = op_routes(s, 1, c1, partners, layouts);
  CHECK(std::tuple{r1[0].connection, r1[0].sequence} == std::tuple{0, 0u});
  CHECK(std::tuple{r1[1].connection, r1[1].sequence} == std::tuple{0, 1u});
  CHECK(std::tuple{r1[2].connection, r1[2].sequence} == std::tuple{1, 0u});

  SECTION("a message whose sizes differ") {
    models::Schedule bad = s;
    bad.ranks[1].ops[0].dst.bytes = 32;
    CHECK_THROWS_WITH(op_routes(bad, 0, c0, fifo_partners(bad), layouts),
                      Catch::Contains("rank 0 op 0 sends 64 bytes but rank 1 op 0 receives 32"));
  }
  SECTION("a matching out of FIFO order") {
    auto swapped = partners;
    std::swap(swapped[0][0], swapped[0][1]);
    CHECK_THROWS_WITH(op_routes(s, 0, c0, swapped, layouts),
                      Catch::Contains("rank 0 op 0: the message matching pairs it with rank 1 message 1, expected rank 1 message 0"));
  }
}

TEST_CASE("verbs: queue depths fit the device's limits", "[validate][replay][verbs]") {
  std::vector<RdmaConnection> qs(2);
  qs[0].send_ops = {0, 1, 2, 3, 4, 5};  // 10 messages
  qs[0].recv_ops = {6, 7, 8, 9};
  qs[1].recv_ops = {10, 11, 12};        // 3 messages
  // Room for everything: depth = messages, CQ = 2 · (10 + 3).
  auto d = queue_depths(qs, 1000, 1000);
  CHECK(d.work_requests == std::vector<std::uint32_t>{10, 3});
  CHECK(d.completion_entries == 26);
  // max_qp_wr 5: min(10, 5) and 3; CQ 2 · 8.
  d = queue_depths(qs, 5, 1000);
  CHECK(d.work_requests == std::vector<std::uint32_t>{5, 3});
  CHECK(d.completion_entries == 16);
  // max_cqe 20: the largest cap c with 2 · (min(10, c) + min(3, c)) ≤ 20 is 7.
  d = queue_depths(qs, 1000, 20);
  CHECK(d.work_requests == std::vector<std::uint32_t>{7, 3});
  CHECK(d.completion_entries == 20);
  CHECK_THROWS_WITH(queue_depths(qs, 1000, 3), Catch::Contains("2 queue pairs need 4 completion queue entries at depth 1, the device allows 3"));
}

TEST_CASE("verbs: connection information survives the wire and bad lengths are rejected", "[validate][replay][verbs]") {
  RankEndpoint e;
  e.rank = 0x01020304;
  e.lid = 0xbeef;
  for (int i = 0; i < 16; ++i) e.gid[i] = static_cast<std::uint8_t>(0xf0 + i);
  e.mtu = 5;
  e.ethernet = 1;
  e.region_address = 0x00007f1234567000ull;
  e.rkey = 0xdeadbeef;
  e.region_bytes = 1ull << 33;
  e.qps = {{3, 7, 0xabcdef, 0x123456}, {-1, 65535, 1, 0xffffff}};
  const auto wire = serialize(e);
  REQUIRE(wire.size() == kEndpointHeaderBytes + 2 * kQpEndpointBytes);  // 54 + 28
  CHECK(std::string(wire.begin(), wire.begin() + 4) == "CCVB");
  CHECK(std::vector<std::uint8_t>(wire.begin() + 4, wire.begin() + 10) == std::vector<std::uint8_t>{1, 0, 4, 3, 2, 1});  // version 1, rank LE

  const auto back = parse_endpoint(wire, "rank 1");
  CHECK(back.rank == e.rank);
  CHECK(back.lid == e.lid);
  CHECK(back.gid == e.gid);
  CHECK(back.mtu == 5);
  CHECK(back.ethernet == 1);
  CHECK(back.region_address == e.region_address);
  CHECK(back.rkey == e.rkey);
  CHECK(back.region_bytes == e.region_bytes);
  REQUIRE(back.qps.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(std::tuple{back.qps[i].peer, back.qps[i].channel, back.qps[i].qp_num, back.qps[i].psn} ==
          std::tuple{e.qps[i].peer, e.qps[i].channel, e.qps[i].qp_num, e.qps[i].psn});
  }

  auto cut = wire;
  cut.pop_back();
  CHECK_THROWS_WITH(parse_endpoint(cut, "rank 1"), Catch::Contains("from rank 1 is 81 bytes, expected 82 (header and 2 queue pairs)"));
  auto longer = wire;
  longer.push_back(0);
  CHECK_THROWS_WITH(parse_endpoint(longer, "rank 1"), Catch::Contains("is 83 bytes, expected 82"));
  CHECK_THROWS_WITH(parse_endpoint(std::span(wire).first(20), "rank 2"), Catch::Contains("from rank 2 is 20 bytes, expected at least a 54-byte header"));
  auto magic = wire;
  magic[0] = 'X';
  CHECK_THROWS_WITH(parse_endpoint(magic, "rank 1"), Catch::Contains("does not start with \"CCVB\""));
  auto version = wire;
  version[4] = 2;
  CHECK_THROWS_WITH(parse_endpoint(version, "rank 1"), Catch::Contains("has format version 2, expected 1"));
}
