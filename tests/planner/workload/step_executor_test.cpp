// One workload step on its streams (planner/workload/step_executor.hpp), and where its time
// goes per stage (planner/workload/breakdown.hpp), on hand-made Programs whose times follow
// by hand.

#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/workload/program.hpp"
#include "planner/workload/breakdown.hpp"
#include "planner/workload/step_executor.hpp"

using namespace ccsim;
using models::ProgramOp;
using models::ProgramOpKind;
using models::Stream;

namespace {

ProgramOp compute(std::vector<std::uint32_t> deps = {}) {
  ProgramOp op;
  op.kind = ProgramOpKind::Gemm;
  op.stream = Stream::Compute;
  op.deps = std::move(deps);
  return op;
}

ProgramOp comm(models::ParallelDim dim, Stream stream, std::vector<std::uint32_t> deps = {}) {
  ProgramOp op;
  op.kind = ProgramOpKind::Collective;
  op.stream = stream;
  op.dim = dim;
  op.deps = std::move(deps);
  return op;
}

/// Two stages: stage 0 computes (op 0, 1 s), all-reduces over TP (op 1, 2 s, after op 0),
/// computes (op 2, 0.5 s: only its stream predecessor op 0 before it) and computes again
/// (op 3, 1 s, after op 1); stage 1 computes (op 4, 0.25 s, after op 1) and sends (op 5, 1 s,
/// on the PP stream, after op 4).
models::Program two_stages() {
  models::Program p;
  p.ranks.resize(2);
  p.add(0, compute());
  p.add(0, comm(models::ParallelDim::TP, Stream::TpComm, {0}));
  p.add(0, compute());
  p.add(0, compute({1}));
  p.add(1, compute({1}));
  ProgramOp send = comm(models::ParallelDim::PP, Stream::PpComm, {4});
  send.kind = ProgramOpKind::SendRecv;
  p.add(1, send);
  return p;
}

const std::vector<double> kDurations = {1, 2, 0.5, 1, 0.25, 1};

}  // namespace

TEST_CASE("step executor: an op starts when its dependencies and its stream predecessor end", "[workload]") {
  // op 0: [0, 1]; op 1 after op 0: [1, 3]; op 2 after its stream predecessor op 0: [1, 1.5];
  // op 3 after op 1 and its stream predecessor op 2: [max(3, 1.5), +1] = [3, 4];
  // op 4 (other stage, first on its compute stream) after op 1: [3, 3.25]; op 5 after op 4: [3.25, 4.25].
  const models::Program p = two_stages();
  const std::vector<planner::OpTiming> t = planner::execute_step(p, kDurations);
  REQUIRE(t.size() == 6);
  const std::vector<double> start = {0, 1, 1, 3, 3, 3.25}, end = {1, 3, 1.5, 4, 3.25, 4.25};
  for (std::size_t i = 0; i < t.size(); ++i) {
    INFO("op " << i);
    CHECK(t[i].start == start[i]);
    CHECK(t[i].end == end[i]);
  }
}

TEST_CASE("step executor: the stream order alone can serialise ops", "[workload]") {
  // Three compute ops of one stage without dependencies run back to back: [0, 1], [1, 3], [3, 3.5].
  models::Program p;
  p.ranks.resize(1);
  for (int i = 0; i < 3; ++i) p.add(0, compute());
  const auto t = planner::execute_step(p, std::vector<double>{1, 2, 0.5});
  CHECK(t[1].start == 1.0);
  CHECK(t[2].start == 3.0);
  CHECK(t[2].end == 3.5);
}

TEST_CASE("step executor: a cycle between streams and dependencies is a deadlock", "[workload]") {
  // Op 1 (compute) waits for op 2 (TP stream) and op 2 for op 1 (Program::add refuses a
  // dependency on a later op, so op 1's is set afterwards): neither ever starts.
  models::Program p;
  p.ranks.resize(1);
  p.add(0, comm(models::ParallelDim::TP, Stream::TpComm));
  p.add(0, compute());
  p.add(0, comm(models::ParallelDim::TP, Stream::TpComm, {1}));
  p.ops[1].deps = {2};
  CHECK_THROWS_WITH(planner::execute_step(p, std::vector<double>{1, 1, 1}),
                    "the workload program deadlocks (a cycle between streams and dependencies)");
  CHECK_THROWS_AS(planner::execute_step(p, std::vector<double>{1}), std::invalid_argument);
}

TEST_CASE("breakdown: compute, exposed communication per dimension, idle", "[workload]") {
  // The timing of the first test, a step of 5 s (e.g. host overhead after the last op).
  // Stage 0: compute [0, 1], [1, 1.5], [3, 4] → 2.5 s, merged [0, 1.5] ∪ [3, 4]; TP [1, 3]:
  //   2 s, of which [1, 1.5] under compute → exposed 1.5; union of all = [0, 4] = 4 s,
  //   exposed_total = 4 − 2.5 = 1.5, idle = 5 − 4 = 1, end 4.
  // Stage 1: compute [3, 3.25] → 0.25 s; PP [3.25, 4.25]: 1 s, none under compute → exposed 1;
  //   union = [3, 4.25] = 1.25 s, exposed_total = 1, idle = 5 − 1.25 = 3.75, end 4.25.
  const models::Program p = two_stages();
  const auto t = planner::execute_step(p, kDurations);
  const std::vector<planner::StageBreakdown> b = planner::stage_breakdown(p, t, 5.0);
  REQUIRE(b.size() == 2);
  const auto tp = static_cast<std::size_t>(models::ParallelDim::TP);
  const auto pp = static_cast<std::size_t>(models::ParallelDim::PP);
  CHECK(b[0].compute == 2.5);
  CHECK(b[0].comm[tp] == 2.0);
  CHECK(b[0].exposed[tp] == 1.5);
  CHECK(b[0].comm[pp] == 0.0);
  CHECK(b[0].exposed_total == 1.5);
  CHECK(b[0].idle == 1.0);
  CHECK(b[0].end == 4.0);
  CHECK(b[1].compute == 0.25);
  CHECK(b[1].comm[pp] == 1.0);
  CHECK(b[1].exposed[pp] == 1.0);
  CHECK(b[1].exposed_total == 1.0);
  CHECK(b[1].idle == 3.75);
  CHECK(b[1].end == 4.25);
  // compute + exposed_total + idle = step on every stage.
  for (const auto& s : b) CHECK(s.compute + s.exposed_total + s.idle == 5.0);
}

TEST_CASE("breakdown: communication fully under compute is not exposed", "[workload]") {
  // Compute [0, 2] and [2, 4] (merged [0, 4]); DP [1, 3] entirely inside: exposed 0,
  // exposed_total 0, idle = 4 − 4 = 0.
  models::Program p;
  p.ranks.resize(1);
  p.add(0, compute());
  p.add(0, compute());
  p.add(0, comm(models::ParallelDim::DP, Stream::DpComm));
  const std::vector<planner::OpTiming> t = {{0, 2}, {2, 4}, {1, 3}};
  const auto b = planner::stage_breakdown(p, t, 4.0);
  const auto dp = static_cast<std::size_t>(models::ParallelDim::DP);
  CHECK(b[0].compute == 4.0);
  CHECK(b[0].comm[dp] == 2.0);
  CHECK(b[0].exposed[dp] == 0.0);
  CHECK(b[0].exposed_total == 0.0);
  CHECK(b[0].idle == 0.0);
}
