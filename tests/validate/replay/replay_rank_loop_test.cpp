// The per-rank dataflow loop (validate/replay/rank_loop.hpp) against a fake Transport, and the
// host backend's result check on a deliberately corrupted schedule (the library-level test of
// a wrong result: `ccsim replay` maps SizeResult::wrong > 0 to exit code 4).

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/collective/schedule.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/rank_loop.hpp"
#include "validate/replay/replay.hpp"

using namespace ccsim;
using models::BufferKind;
using models::OpKind;
namespace replay = validate::replay;

namespace {

models::Op make_op(OpKind kind, int peer, models::Slice src, models::Slice dst) {
  models::Op op;
  op.kind = kind;
  op.peer = peer;
  op.src = src;
  op.dst = dst;
  return op;
}

/// A transport whose ops complete after a set number of test() calls, recording the order of
/// events. Recv op `recv_op` writes {10, 20, 30, 40} into its destination when it completes.
class FakeTransport final : public replay::Transport {
 public:
  FakeTransport(const models::RankProgram& p, const replay::RankMemory& m, std::map<std::uint32_t, int> polls)
      : program_(p), memory_(m), polls_(std::move(polls)) {}

  bool start(std::uint32_t op) override {
    events.push_back("start " + std::to_string(op));
    // Every dependency has completed (transport op) or run (local op, seen in `local_ran`).
    for (std::uint32_t d : program_.deps(op)) {
      const bool local = program_.ops[d].kind == OpKind::Copy || program_.ops[d].kind == OpKind::Reduce;
      if (!local && !completed.count(d)) violations.push_back("op " + std::to_string(op) + " started before op " + std::to_string(d));
    }
    started.insert(op);
    if (polls_[op] == 0) return finish(op);
    return false;
  }
  bool test(std::uint32_t op) override {
    if (!started.count(op) || completed.count(op)) violations.push_back("test of op " + std::to_string(op) + " not in flight");
    if (--polls_[op] > 0) return false;
    return finish(op);
  }

  std::vector<std::string> events, violations;
  std::set<std::uint32_t> started, completed;
  /// Scratch as op 4 (a Send of scratch) found it when it started.
  std::vector<float> scratch_at_send;

 private:
  bool finish(std::uint32_t op) {
    completed.insert(op);
    events.push_back("done " + std::to_string(op));
    if (op == 0) {
      const float v[4] = {10, 20, 30, 40};
      std::memcpy(memory_.at(program_.ops[op].dst), v, sizeof v);
    }
    if (op == 4) {
      scratch_at_send.resize(4);
      std::memcpy(scratch_at_send.data(), memory_.at(program_.ops[op].src), 16);
    }
    return true;
  }
  const models::RankProgram& program_;
  replay::RankMemory memory_;
  std::map<std::uint32_t, int> polls_;
};

/// op 0 Recv → output[0, 16); op 1 Send input (no deps); op 2 Copy output → scratch (after 0);
/// op 3 Reduce scratch += input (after 2); op 4 Send scratch (after 3 and 1); op 5 RecvReduce
/// output = input + received (after 4).
models::RankProgram program() {
  models::RankProgram p;
  const models::Slice in{BufferKind::Input, 0, 16}, out{BufferKind::Output, 0, 16}, scr{BufferKind::Scratch, 0, 16};
  p.add(make_op(OpKind::Recv, 1, {}, out));
  p.add(make_op(OpKind::Send, 1, in, {}));
  const std::uint32_t after0[] = {0}, after2[] = {2}, after3and1[] = {3, 1}, after4[] = {4};
  p.add(make_op(OpKind::Copy, -1, out, scr), after0);
  p.add(make_op(OpKind::Reduce, -1, in, scr), after2);
  p.add(make_op(OpKind::Send, 1, scr, {}), after3and1);
  p.add(make_op(OpKind::RecvReduce, 1, in, {BufferKind::Output, 0, 16}), after4);
  p.scratch_bytes = 16;
  return p;
}

}  // namespace

TEST_CASE("replay rank loop: ops issued after their dependencies, local ops executed", "[validate][replay]") {
  const models::RankProgram p = program();
  std::vector<float> input{1, 2, 3, 4}, output(4, -1), scratch(4, -1);
  const replay::RankMemory memory{reinterpret_cast<std::byte*>(input.data()), reinterpret_cast<std::byte*>(output.data()),
                                  reinterpret_cast<std::byte*>(scratch.data())};
  // The Recv completes on its 3rd poll, the first Send at once, the second after 1 poll, the
  // RecvReduce after 2.
  FakeTransport t(p, memory, {{0, 3}, {1, 0}, {4, 1}, {5, 2}});
  replay::RankLoop loop(p, 0, replay::DataType::Float);
  std::vector<replay::MeasuredOp> record;
  const auto t0 = replay::Clock::now();
  loop.run(memory, t, t0, &record);
  CHECK(t.violations.empty());
  for (const auto& v : t.violations) INFO(v);
  // Ops 0 and 1 have no dependencies: both issued first, in program order.
  REQUIRE(t.events.size() >= 2);
  CHECK(t.events[0] == "start 0");
  CHECK(t.events[1] == "start 1");
  CHECK(t.completed == std::set<std::uint32_t>{0, 1, 4, 5});
  // Copy ran after the Recv delivered {10, 20, 30, 40}; Reduce added the input: the Send of
  // scratch saw {11, 22, 33, 44}.
  CHECK(t.scratch_at_send == std::vector<float>{11, 22, 33, 44});
  CHECK(scratch == std::vector<float>{11, 22, 33, 44});
  // Every op recorded once, starting no earlier than its dependencies ended.
  REQUIRE(record.size() == 6);
  std::map<std::uint32_t, replay::MeasuredOp> by_op;
  for (const auto& m : record) {
    CHECK(m.rank == 0);
    CHECK(m.start <= m.end);
    by_op[m.op] = m;
  }
  REQUIRE(by_op.size() == 6);
  for (std::uint32_t i = 0; i < 6; ++i)
    for (std::uint32_t d : p.deps(i)) CHECK(by_op[i].start >= by_op[d].end);

  // A second run of the same loop (the next iteration) issues everything again.
  FakeTransport again(p, memory, {{0, 1}, {1, 1}, {4, 0}, {5, 0}});
  loop.run(memory, again, t0, nullptr);
  CHECK(again.completed.size() == 4);
  CHECK(again.violations.empty());
}

TEST_CASE("replay rank loop: a stall times out naming the op", "[validate][replay]") {
  const models::RankProgram p = program();
  std::vector<float> input{1, 2, 3, 4}, output(4, -1), scratch(4, -1);
  const replay::RankMemory memory{reinterpret_cast<std::byte*>(input.data()), reinterpret_cast<std::byte*>(output.data()),
                                  reinterpret_cast<std::byte*>(scratch.data())};
  // The Recv (op 0) never completes: the Send (op 1) does, and nothing else can start.
  FakeTransport t(p, memory, {{0, 1 << 30}, {1, 0}});
  replay::RankLoop loop(p, 3, replay::DataType::Float);
  const auto before = std::chrono::steady_clock::now();
  try {
    loop.run(memory, t, replay::Clock::now(), nullptr, std::chrono::milliseconds(50));
    FAIL("no ReplayError");
  } catch (const replay::ReplayError& e) {
    CHECK(std::string(e.what()) == "rank 3 made no progress for 0.05 s: op 0 (recv peer 1 channel 0) never completed (1 of 6 ops done)");
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  CHECK(waited >= 0.05);
  CHECK(waited < 5.0);
}

namespace {

/// SendRecv over `n` ranks of `bytes` (float): rank r sends its input to r+1 and receives
/// rank r-1's into its output.
models::Schedule sendrecv_ring(int n, std::uint64_t bytes) {
  models::Schedule s;
  s.collective = models::Collective::SendRecv;
  s.algorithm = "hand";
  s.nranks = n;
  s.bytes = bytes;
  s.element_size = 4;
  s.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& p = s.ranks[static_cast<std::size_t>(r)];
    p.add(make_op(OpKind::Send, (r + 1) % n, {BufferKind::Input, 0, bytes}, {}));
    p.add(make_op(OpKind::Recv, (r + n - 1) % n, {}, {BufferKind::Output, 0, bytes}));
    p.scratch_bytes = bytes;
  }
  return s;
}

}  // namespace

TEST_CASE("replay host backend: a correct schedule has no wrong element, a corrupted one does", "[validate][replay]") {
  const auto backend = replay::make_backend("host");
  replay::ReplayConfig config;
  config.warmup = 1;
  config.iters = 3;
  SECTION("hand-built SendRecv") {
    models::Schedule s = sendrecv_ring(3, 64);
    const replay::SizeResult ok = backend->run(s, config);
    CHECK(ok.wrong == 0);
    CHECK(ok.first_wrong.empty());
    CHECK(ok.iteration_times.size() == 3);
    REQUIRE(ok.ops.size() == 3);
    CHECK(ok.ops[0].size() == 6);  // 3 ranks × 2 ops
    // Rank 2 receives into its scratch instead of its output: its 16 output elements keep the
    // poison (-1); expected element 0 is rank 1's input, 1 + 29 = 30.
    s.ranks[2].ops[1].dst.buffer = BufferKind::Scratch;
    const replay::SizeResult bad = backend->run(s, config);
    CHECK(bad.wrong == 16);
    CHECK(bad.first_wrong == "rank 2 element 0: expected 30, found -1");
  }
  SECTION("the planner's ring AllReduce over 4 H100") {
    const models::Cluster cluster = test::shipped_cluster("dgx-h100-1node.yaml");
    const planner::CostModel costs = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
    planner::CollectiveOptions o;
    o.collective = models::Collective::AllReduce;
    o.gpus.assign(cluster.topology.gpus().begin(), cluster.topology.gpus().begin() + 4);
    planner::CollectiveRunner runner(cluster, costs, o);
    models::Schedule s = runner.step_schedule(planner::Algorithm::Ring, planner::Protocol::Simple, 64 * 1024);
    const replay::SizeResult ok = backend->run(s, config);
    CHECK(ok.wrong == 0);
    REQUIRE(ok.ops.size() == 3);
    CHECK(ok.ops[0].size() == s.op_count());
    // Turn the first RecvReduce of rank 1 into a plain Recv: the partial sum loses rank 1's
    // contribution on that chunk, so some output elements are wrong on every rank.
    bool corrupted = false;
    for (auto& op : s.ranks[1].ops)
      if (op.kind == OpKind::RecvReduce) {
        op.kind = OpKind::Recv;
        corrupted = true;
        break;
      }
    REQUIRE(corrupted);
    const replay::SizeResult bad = backend->run(s, config);
    CHECK(bad.wrong > 0);
    CHECK(bad.wrong % 4 == 0);  // the chunk is wrong on all 4 ranks alike
    CHECK(bad.first_wrong.rfind("rank 0 element ", 0) == 0);
  }
  SECTION("in-switch reduction (NVLS ops): 3 ranks contribute, all receive the sum") {
    models::Schedule s;
    s.collective = models::Collective::AllReduce;
    s.nranks = 3;
    s.bytes = 64;
    s.ranks.resize(3);
    s.switch_groups = {3};
    for (auto& p : s.ranks) {
      models::Op send = make_op(OpKind::SwitchSend, models::kSwitch, {BufferKind::Input, 0, 64}, {});
      models::Op recv = make_op(OpKind::SwitchRecv, models::kSwitch, {}, {BufferKind::Output, 0, 64});
      const std::uint32_t after[] = {p.add(send)};
      p.add(recv, after);
    }
    const replay::SizeResult ok = backend->run(s, config);
    CHECK(ok.wrong == 0);
    // Rank 2 multicasts into its scratch: its output keeps the poison. Element 0's sum is
    // 1 + 30 + 59 = 90 (ranks 0, 1, 2).
    s.ranks[2].ops[1].dst.buffer = BufferKind::Scratch;
    s.ranks[2].scratch_bytes = 64;
    const replay::SizeResult bad = backend->run(s, config);
    CHECK(bad.wrong == 16);
    CHECK(bad.first_wrong == "rank 2 element 0: expected 90, found -1");
  }
  SECTION("buffers larger than the host's memory are refused before any is allocated") {
    // 2 ranks × (1 PiB input + 1 PiB output + 1 PiB scratch): no host has 6 PiB.
    const models::Schedule s = sendrecv_ring(2, std::uint64_t{1} << 50);
    try {
      backend->run(s, config);
      FAIL("no ReplayError");
    } catch (const replay::ReplayError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Matchers::StartsWith("the host backend needs 6291456.00 GiB of host memory for 2 ranks at "
                                                                    "1125899906842624 bytes") &&
                                            Catch::Matchers::Contains("GiB available: use fewer ranks (--ranks) or a smaller -e"));
    }
  }
  SECTION("a schedule that deadlocks is refused before it runs") {
    models::Schedule s = sendrecv_ring(3, 64);
    s.ranks[0].ops[0].channel = 1;  // sent on channel 1, received on channel 0
    CHECK_THROWS_AS(backend->run(s, config), replay::ReplayError);
  }
}
