// The replay's shared data rules (validate/replay/data.hpp): the input pattern, the result check
// of every collective, element arithmetic, type names, the replayability checks and FIFO message
// matching. Every expected output below is built from the collective's definition
// (models/collective/schedule.hpp's verify() comment), not from the code under test.

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "models/collective/schedule.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/replay.hpp"

using namespace ccsim;
using models::BufferKind;
using models::Collective;
using models::Op;
using models::OpKind;
using validate::replay::DataType;
namespace replay = validate::replay;

namespace {

/// in(r, i) = 1 + (r·29 + i·7 + ⌊i/61⌋) mod 61 (data.hpp), written out again here.
std::int64_t in(int r, std::uint64_t i) { return 1 + static_cast<std::int64_t>((static_cast<std::uint64_t>(r) * 29 + i * 7 + i / 61) % 61); }

std::int64_t sum_in(int nranks, std::uint64_t i) {
  std::int64_t s = 0;
  for (int j = 0; j < nranks; ++j) s += in(j, i);
  return s;
}

/// Rank `rank`'s correct output of `c` over `n` ranks with `count` output elements (float).
std::vector<float> defined_output(Collective c, int root, int rank, int n, std::uint64_t count) {
  std::vector<float> out(count);
  const std::uint64_t block = count / static_cast<std::uint64_t>(n);
  for (std::uint64_t i = 0; i < count; ++i) {
    switch (c) {
      case Collective::AllReduce:
      case Collective::Reduce: out[i] = static_cast<float>(sum_in(n, i)); break;
      // Rank r holds block r of the sum: element r·count + i of the full vector.
      case Collective::ReduceScatter: out[i] = static_cast<float>(sum_in(n, static_cast<std::uint64_t>(rank) * count + i)); break;
      // Concatenation: block j is rank j's input of `block` elements.
      case Collective::AllGather: out[i] = static_cast<float>(in(static_cast<int>(i / block), i % block)); break;
      case Collective::Broadcast: out[i] = static_cast<float>(in(root, i)); break;
      // Transpose: block j of rank r is block r of rank j.
      case Collective::AlltoAll: out[i] = static_cast<float>(in(static_cast<int>(i / block), static_cast<std::uint64_t>(rank) * block + i % block)); break;
      case Collective::SendRecv: out[i] = static_cast<float>(in((rank + n - 1) % n, i)); break;
    }
  }
  return out;
}

Op make_op(OpKind kind, int peer, int channel, models::Slice src, models::Slice dst) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.channel = static_cast<std::uint16_t>(channel);
  op.src = src;
  op.dst = dst;
  return op;
}

/// A SendRecv over `n` ranks of `bytes` (float): rank r sends its input to r+1 and receives
/// rank r-1's into its output — a correct Step schedule.
models::Schedule sendrecv_ring(int n, std::uint64_t bytes) {
  models::Schedule s;
  s.collective = Collective::SendRecv;
  s.algorithm = "hand";
  s.nranks = n;
  s.bytes = bytes;
  s.element_size = 4;
  s.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& p = s.ranks[static_cast<std::size_t>(r)];
    p.add(make_op(OpKind::Send, (r + 1) % n, 0, {BufferKind::Input, 0, bytes}, {}));
    p.add(make_op(OpKind::Recv, (r + n - 1) % n, 0, {}, {BufferKind::Output, 0, bytes}));
  }
  return s;
}

std::string replay_error(const models::Schedule& s, DataType t) {
  try {
    replay::check_replayable(s, t);
  } catch (const replay::ReplayError& e) {
    return e.what();
  }
  FAIL("check_replayable accepted the schedule");
  return {};
}

}  // namespace

TEST_CASE("replay data: the input pattern, by hand", "[validate][replay]") {
  CHECK(replay::input_value(0, 0) == 1);     // 1 + 0
  CHECK(replay::input_value(1, 0) == 30);    // 1 + 29
  CHECK(replay::input_value(2, 0) == 59);    // 1 + 58
  CHECK(replay::input_value(3, 0) == 27);    // 1 + 87 mod 61 = 1 + 26
  CHECK(replay::input_value(0, 1) == 8);     // 1 + 7
  CHECK(replay::input_value(0, 61) == 2);    // 1 + (427 + 1) mod 61 = 1 + 1
  CHECK(replay::input_value(5, 100) == 54);  // 1 + (145 + 700 + 1) mod 61 = 1 + 846 - 793
  // Every value lies in [1, 61]: a sum over 2^16 ranks stays below 2^24 (exact in float).
  for (int r = 0; r < 70; ++r)
    for (std::uint64_t i = 0; i < 200; ++i) {
      const auto v = replay::input_value(r, i);
      REQUIRE((v >= 1 && v <= 61));
    }
  // fill_input converts the same values.
  std::vector<std::int32_t> buf(4);
  replay::fill_input(DataType::Int32, 2, buf.data(), buf.size());
  CHECK(buf == std::vector<std::int32_t>{59, 5, 12, 19});  // 1 + (58 + 7i) mod 61
}

TEST_CASE("replay data: count_wrong of every collective on outputs built from the definition", "[validate][replay]") {
  const int n = 4;
  const std::uint64_t count = 24;  // output elements per rank (6 per block)
  const int root = 2;
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast, Collective::Reduce,
                       Collective::AlltoAll, Collective::SendRecv}) {
    INFO(models::to_string(c));
    for (int r = 0; r < n; ++r) {
      INFO("rank " << r);
      std::vector<float> out = defined_output(c, root, r, n, count);
      std::string first;
      CHECK(replay::count_wrong(DataType::Float, c, root, r, n, out.data(), count, first) == 0);
      CHECK(first.empty());
      // Corrupt k = 3 elements (5, 9, 17): exactly 3 wrong, except a Reduce's non-root ranks,
      // which have no defined output.
      const float was5 = out[5];
      out[5] += 1;
      out[9] = 0;
      out[17] = -7;
      const std::uint64_t expected_wrong = (c == Collective::Reduce && r != root) ? 0 : 3;
      CHECK(replay::count_wrong(DataType::Float, c, root, r, n, out.data(), count, first) == expected_wrong);
      if (expected_wrong > 0) {
        CHECK(first == "rank " + std::to_string(r) + " element 5: expected " + std::to_string(static_cast<int>(was5)) + ", found " +
                           std::to_string(static_cast<int>(was5 + 1)));
        // A description already there is kept (the first wrong element of all ranks).
        std::string kept = "earlier";
        replay::count_wrong(DataType::Float, c, root, r, n, out.data(), count, kept);
        CHECK(kept == "earlier");
      } else {
        CHECK(first.empty());
      }
    }
  }
}

TEST_CASE("replay data: 8-bit sums wrap modulo 2^8", "[validate][replay]") {
  // 300 ranks: element sums reach ~9,000, far beyond 255; the expected byte is the true sum's
  // low 8 bits (two's complement for int8).
  const int n = 300;
  const std::uint64_t count = 70;
  std::vector<std::uint8_t> u(count);
  std::vector<std::int8_t> s(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::int64_t total = sum_in(n, i);
    REQUIRE(total > 255);
    u[i] = static_cast<std::uint8_t>(total % 256);
    s[i] = static_cast<std::int8_t>(static_cast<std::uint8_t>(total % 256));
  }
  std::string first;
  CHECK(replay::count_wrong(DataType::Uint8, Collective::AllReduce, 0, 0, n, u.data(), count, first) == 0);
  CHECK(replay::count_wrong(DataType::Int8, Collective::AllReduce, 0, 0, n, s.data(), count, first) == 0);
  CHECK(first.empty());
  // Without the wrap-around (the sum saturated at 255) nearly every element is wrong.
  std::vector<std::uint8_t> saturated(count, 255);
  CHECK(replay::count_wrong(DataType::Uint8, Collective::AllReduce, 0, 0, n, saturated.data(), count, first) >= count - 2);
  // add() wraps the same way, so a reduction done pairwise gives the same bytes.
  std::vector<std::uint8_t> acc(count, 0), one(count);
  std::vector<std::int8_t> acc8(count, 0), one8(count);
  for (int r = 0; r < n; ++r) {
    replay::fill_input(DataType::Uint8, r, one.data(), count);
    replay::add(DataType::Uint8, acc.data(), acc.data(), one.data(), count);
    replay::fill_input(DataType::Int8, r, one8.data(), count);
    replay::add(DataType::Int8, acc8.data(), acc8.data(), one8.data(), count);
  }
  CHECK(acc == u);
  CHECK(acc8 == s);
}

TEST_CASE("replay data: add() for every type", "[validate][replay]") {
  const auto check = [](DataType t, auto a, auto b, auto expected) {
    using T = decltype(a);
    T x[2] = {a, b}, y[2] = {b, a}, d[2] = {};
    replay::add(t, d, x, y, 2);
    CHECK(d[0] == expected);
    CHECK(d[1] == expected);
    replay::add(t, x, x, y, 2);  // dst aliasing a
    CHECK(x[0] == expected);
  };
  check(DataType::Int8, std::int8_t{100}, std::int8_t{100}, std::int8_t{-56});     // 200 - 256
  check(DataType::Int8, std::int8_t{-3}, std::int8_t{5}, std::int8_t{2});
  check(DataType::Uint8, std::uint8_t{200}, std::uint8_t{100}, std::uint8_t{44});  // 300 - 256
  check(DataType::Int32, std::int32_t{-70000}, std::int32_t{123456}, std::int32_t{53456});
  check(DataType::Uint32, std::uint32_t{3000000000u}, std::uint32_t{1000000000u}, std::uint32_t{4000000000u});
  check(DataType::Int64, std::int64_t{1} << 40, std::int64_t{-5}, (std::int64_t{1} << 40) - 5);
  check(DataType::Uint64, std::uint64_t{1} << 63, std::uint64_t{7}, (std::uint64_t{1} << 63) + 7);
  check(DataType::Float, 1.5f, 2.25f, 3.75f);
  check(DataType::Double, 0.5, 1e10, 1e10 + 0.5);
}

TEST_CASE("replay data: type names round trip; half and bfloat16 refused", "[validate][replay]") {
  const std::pair<DataType, std::uint32_t> all[] = {{DataType::Int8, 1},  {DataType::Uint8, 1},  {DataType::Int32, 4}, {DataType::Uint32, 4},
                                                    {DataType::Int64, 8}, {DataType::Uint64, 8}, {DataType::Float, 4}, {DataType::Double, 8}};
  for (const auto& [t, bytes] : all) {
    DataType back{};
    REQUIRE(replay::parse_data_type(replay::to_string(t), back));
    CHECK(back == t);
    CHECK(replay::size_of(t) == bytes);
  }
  CHECK(replay::to_string(DataType::Float) == "float");
  CHECK(replay::to_string(DataType::Uint64) == "uint64");
  // nccl-tests' aliases.
  DataType t{};
  CHECK((replay::parse_data_type("char", t) && t == DataType::Int8));
  CHECK((replay::parse_data_type("int", t) && t == DataType::Int32));
  CHECK((replay::parse_data_type("float64", t) && t == DataType::Double));
  for (const char* refused : {"half", "float16", "bfloat16", "fp8", "", "Float"}) {
    INFO(refused);
    CHECK_FALSE(replay::parse_data_type(refused, t));
  }
}

TEST_CASE("replay data: check_replayable accepts a correct schedule", "[validate][replay]") {
  CHECK_NOTHROW(replay::check_replayable(sendrecv_ring(3, 64), DataType::Float));
  models::Schedule s = sendrecv_ring(3, 64);
  s.element_size = 8;
  CHECK_NOTHROW(replay::check_replayable(s, DataType::Double));
}

TEST_CASE("replay data: check_replayable refuses what cannot be replayed", "[validate][replay]") {
  using Catch::Matchers::Contains;
  SECTION("phase granularity") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.granularity = models::Granularity::Phase;
    CHECK_THAT(replay_error(s, DataType::Float), Contains("phase-granularity") && Contains("step granularity"));
  }
  SECTION("element size") {
    // Lowered for 4-byte floats, replayed as 8-byte doubles.
    CHECK(replay_error(sendrecv_ring(3, 64), DataType::Double) ==
          "schedule was lowered for 4-byte elements, the replay's type double has 8 bytes");
  }
  SECTION("slice out of bounds") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[1].ops[1].dst.offset = 8;  // [8, +64) in a 64-byte output
    CHECK(replay_error(s, DataType::Float) == "rank 1 op 1: destination slice [8, +64) outside its buffer of 64 bytes");
  }
  SECTION("misaligned slice") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[2].ops[0].src = {BufferKind::Input, 2, 60};
    CHECK(replay_error(s, DataType::Float) == "rank 2 op 0: source slice [2, +60) is not whole 4-byte elements");
  }
  SECTION("unpaired send") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[1].ops[1].peer = 2;  // rank 1 now receives from 2 (which sends to 0): 0 -> 1 has no receiver
    CHECK_THAT(replay_error(s, DataType::Float), Contains("rank 0 sends 1 messages to rank 1 on channel 0, which receives 0"));
  }
  SECTION("unpaired receive") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[2].ops[1].channel = 1;  // 1 -> 2 on channel 0 is sent, received on channel 1
    CHECK_THAT(replay_error(s, DataType::Float), Contains("rank 1 sends 1 messages to rank 2 on channel 0, which receives 0"));
    models::Schedule only_recv = sendrecv_ring(3, 64);
    only_recv.ranks[0].ops[0] = make_op(OpKind::Copy, -1, 0, {BufferKind::Input, 0, 64}, {BufferKind::Output, 0, 64});  // 0 no longer sends
    CHECK(replay_error(only_recv, DataType::Float) == "rank 1 receives 1 messages from rank 0 on channel 0, which sends none");
  }
  SECTION("message sizes differ") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[0].ops[0].src.bytes = 32;  // 0 sends 32 bytes, 1 expects 64
    CHECK(replay_error(s, DataType::Float) == "message 0 from rank 0 to rank 1 on channel 0: 32 bytes sent, 64 expected");
  }
  SECTION("in-switch groups (NVLS)") {
    // 2 ranks contribute 16 bytes each to group 0 and receive its sum: replayable.
    models::Schedule s;
    s.collective = Collective::AllReduce;
    s.nranks = 2;
    s.bytes = 16;
    s.ranks.resize(2);
    s.switch_groups = {2};
    for (auto& p : s.ranks) {
      Op send = make_op(OpKind::SwitchSend, models::kSwitch, 0, {BufferKind::Input, 0, 16}, {});
      Op recv = make_op(OpKind::SwitchRecv, models::kSwitch, 0, {}, {BufferKind::Output, 0, 16});
      const std::uint32_t after[] = {p.add(send)};
      p.add(recv, after);
    }
    CHECK_NOTHROW(replay::check_replayable(s, DataType::Float));
    models::Schedule smaller = s;
    smaller.ranks[1].ops[1].dst.bytes = 8;  // receives half of the group's 16 bytes
    CHECK(replay_error(smaller, DataType::Float) == "rank 1 op 1: 8 bytes to in-switch group 0, whose other ops move 16 bytes");
    models::Schedule waiting = s;
    waiting.switch_groups = {3};  // its receivers wait for a third contribution that never comes
    CHECK(replay_error(waiting, DataType::Float) == "in-switch group 0 has 2 contributions, its receivers wait for 3");
    models::Schedule unknown = s;
    unknown.ranks[0].ops[0].tag = 1;
    CHECK(replay_error(unknown, DataType::Float) == "rank 0 op 0: unknown in-switch group 1");
  }
  SECTION("bad peer") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[0].ops[0].peer = 0;
    CHECK(replay_error(s, DataType::Float) == "rank 0 op 0: bad peer 0");
  }
}

TEST_CASE("replay data: match_messages pairs FIFO per (source, destination, channel)", "[validate][replay]") {
  // Rank 0 sends A, B on channel 0 and C on channel 1 to rank 1, and D to rank 2. Rank 1
  // posts its receives in another order: C' (ch 1), A' (ch 0), B' (ch 0). Rank 2 receives D'.
  models::Schedule s;
  s.collective = Collective::AllGather;
  s.nranks = 3;
  s.bytes = 48;
  s.ranks.resize(3);
  const models::Slice in16{BufferKind::Input, 0, 16}, out4{BufferKind::Output, 0, 4}, out8{BufferKind::Output, 4, 8};
  s.ranks[0].add(make_op(OpKind::Send, 1, 0, {BufferKind::Input, 0, 4}, {}));  // op 0: A
  s.ranks[0].add(make_op(OpKind::Send, 2, 0, in16, {}));                        // op 1: D
  s.ranks[0].add(make_op(OpKind::Send, 1, 1, {BufferKind::Input, 0, 12}, {}));  // op 2: C
  s.ranks[0].add(make_op(OpKind::Send, 1, 0, {BufferKind::Input, 4, 8}, {}));   // op 3: B
  s.ranks[1].add(make_op(OpKind::Recv, 0, 1, {}, {BufferKind::Output, 16, 12})); // op 0: C'
  s.ranks[1].add(make_op(OpKind::RecvReduce, 0, 0, {BufferKind::Input, 0, 4}, out4)); // op 1: A'
  s.ranks[1].add(make_op(OpKind::Recv, 0, 0, {}, out8));                         // op 2: B'
  s.ranks[2].add(make_op(OpKind::Copy, -1, 0, {BufferKind::Input, 0, 16}, {BufferKind::Output, 32, 16}));  // op 0: local
  s.ranks[2].add(make_op(OpKind::Recv, 0, 0, {}, {BufferKind::Output, 0, 16}));  // op 1: D'
  const auto p = replay::match_messages(s);
  REQUIRE(p.size() == 3);
  REQUIRE(p[0].size() == 4);
  const auto is = [](const replay::Partner& x, int rank, std::uint32_t op, std::uint32_t seq) {
    return x.rank == rank && x.op == op && x.sequence == seq;
  };
  CHECK(is(p[0][0], 1, 1, 0));  // A <-> A', first on (0, 1, ch 0)
  CHECK(is(p[0][3], 1, 2, 1));  // B <-> B', second
  CHECK(is(p[0][2], 1, 0, 0));  // C <-> C', first on (0, 1, ch 1)
  CHECK(is(p[0][1], 2, 1, 0));  // D <-> D'
  CHECK(is(p[1][0], 0, 2, 0));
  CHECK(is(p[1][1], 0, 0, 0));
  CHECK(is(p[1][2], 0, 3, 1));
  CHECK(is(p[2][1], 0, 1, 0));
  CHECK(p[2][0].rank == -1);  // local op: no partner
  // Swapping A's and B's sizes breaks the FIFO pairing: message 0 on (0, 1, ch 0) is 8 bytes now.
  std::swap(s.ranks[0].ops[0].src, s.ranks[0].ops[3].src);
  try {
    replay::match_messages(s);
    FAIL("no ReplayError");
  } catch (const replay::ReplayError& e) {
    CHECK(std::string(e.what()) == "message 0 from rank 0 to rank 1 on channel 0: 8 bytes sent, 4 expected");
  }
}
