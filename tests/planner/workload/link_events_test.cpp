// Timed link events (planner/workload/link_events.hpp): windows, their overlap, and what an op
// that runs during one loses, against the closed form of the piecewise-rate model.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "models/hardware/perturbation.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/planner_test_support.hpp"
#include "planner/workload/link_events.hpp"
#include "planner/workload/workload_runner.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// 2 × DGX H100, Llama-3-8B TP8 DP2: one DP gradient AllReduce of 4 GB over the NICs after the
/// backward (no overlap), bandwidth-bound.
const std::string kTwoNodes =
    "cluster:\n"
    "  nodes: [{node: dgx-h100, count: 2}]\n"
    "  fabric: {kind: fat-tree, wiring: rail-optimized, nodes_per_leaf: 2}\n"
    "workload: {model: llama-3-8b, sequence_length: 8192, micro_batch_size: 1, global_batch_size: 16}\n"
    "strategy: {tp: 8, dp: 2}\n";

planner::WorkloadResult run(const std::string& text) {
  test::TempDir dir;
  const models::Scenario sc = models::load_scenario(dir.write("s.yaml", text), test::shipped_catalog());
  const models::Cluster cluster = models::build_scenario_cluster(sc);
  const auto compute = planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5");
  planner::WorkloadRunner runner(sc, cluster, test::shipped_costs(cluster), compute, models::EngineKind::Analytic);
  return runner.run();
}

/// The DP AllReduce of `r`: its op id and cost.
std::uint32_t dp_allreduce(const planner::WorkloadResult& r) {
  for (std::uint32_t i = 0; i < r.program.ops.size(); ++i)
    if (r.op_comm[i] >= 0 && r.program.ops[i].dim == models::ParallelDim::DP) return i;
  FAIL("no DP op");
  return 0;
}

/// The DP AllReduce of the base step and of the step with `rule` (a what_if link rule body,
/// "device: X, factor: F") static and timed 20 ms from 10 ms into that op: its time T, its
/// time T_e on the cluster with the rule, and the timed run.
struct Window {
  planner::WorkloadResult base, timed;
  double T = 0, Te = 0;
};

Window window_inside_dp(const std::string& rule) {
  Window w;
  w.base = run(kTwoNodes);
  const auto ruled = run(kTwoNodes + "what_if:\n  links:\n    - {" + rule + "}\n");
  const std::uint32_t op = dp_allreduce(w.base);
  w.T = w.base.timing[op].end - w.base.timing[op].start;
  w.Te = ruled.comm_costs[static_cast<std::size_t>(ruled.op_comm[op])].time;
  const double at = w.base.timing[op].start + 0.01;
  w.timed = run(kTwoNodes + fmt::format("what_if:\n  links:\n    - {{{}, at: {:.17g}s, for: 20ms}}\n", rule, at));
  return w;
}

models::LinkRule timed(double at, double duration, double every) {
  models::LinkRule r;
  r.at = at;
  r.duration = duration;
  r.every = every;
  return r;
}

}  // namespace

TEST_CASE("link events: windows and their edges", "[workload][link-events]") {
  planner::LinkEvent once{0.1, 0.05, 0, {0}};
  CHECK_FALSE(once.active(0.0999));
  CHECK(once.active(0.1));
  CHECK(once.active(0.149));
  CHECK_FALSE(once.active(0.15000001));
  CHECK(once.next_change(0) == 0.1);
  CHECK(once.next_change(0.12) == Approx(0.15));
  CHECK(once.next_change(0.2) == kInf);
  CHECK(once.windows_before(0.1) == 0);
  CHECK(once.windows_before(10) == 1);
  // A flap of 20 ms every 100 ms from 0.1 s: windows [0.1 + k/10, 0.12 + k/10).
  planner::LinkEvent flap{0.1, 0.02, 0.1, {0}};
  CHECK(flap.active(0.31));
  CHECK_FALSE(flap.active(0.33));
  CHECK(flap.next_change(0.33) == Approx(0.4));
  CHECK(flap.next_change(0.4) == Approx(0.42));
  CHECK(flap.windows_before(1.0) == 9);  // 0.1, 0.2, ..., 0.9
  // Every edge is strictly after the instant asked about, even on an edge itself (rounding).
  for (double t = 0; t < 1; t += 0.01) CHECK(flap.next_change(t) > t);
  CHECK(planner::LinkEvent{0.5, kInf, 0, {0}}.describe() == "at 500 ms");
  CHECK(flap.describe() == "at 100 ms for 20 ms, every 100 ms");
}

TEST_CASE("link events: windows that touch do not overlap, a drifting flap does", "[workload][link-events]") {
  double when = -1;
  // [0.1, 0.15) and [0.15, 0.2): decimal times that touch after rounding.
  CHECK_FALSE(models::windows_overlap(timed(0.1, 0.05, 0), timed(0.15, 0.05, 0), 10, when));
  CHECK(models::windows_overlap(timed(0.1, 0.05, 0), timed(0.14, 0.05, 0), 10, when));
  CHECK(when == Approx(0.14));
  // A 5 ms flap every 33 ms from 80 ms meets [100, 150) ms at 113 ms.
  CHECK(models::windows_overlap(timed(0.1, 0.05, 0), timed(0.08, 0.005, 0.033), 10, when));
  CHECK(when == Approx(0.113));
  // Two flaps of equal period, out of phase, never meet; within a horizon that ends first, neither.
  CHECK_FALSE(models::windows_overlap(timed(0, 0.01, 0.1), timed(0.05, 0.01, 0.1), 100, when));
  CHECK_FALSE(models::windows_overlap(timed(0, 1, 0), timed(5, 1, 0), 4, when));
}

TEST_CASE("link events: an event that holds from the start for ever is the static rule", "[workload][link-events]") {
  const std::string rule = "what_if:\n  links:\n    - {device: 'node0/nic*', factor: 0.5";
  const auto fixed = run(kTwoNodes + rule + "}\n");
  const auto from_zero = run(kTwoNodes + rule + ", at: 0s}\n");
  CHECK(from_zero.step_time == Approx(fixed.step_time).epsilon(1e-12));
  REQUIRE(from_zero.link_events.has_value());
  CHECK_FALSE(fixed.link_events.has_value());
  // The same on the other node, whose replica is not the representative of the symmetric
  // cluster: the timed rule gives node1 a class of its own as the static one does.
  const std::string other = "what_if:\n  links:\n    - {device: 'node1/gpu*', factor: 0.5";
  const auto fixed1 = run(kTwoNodes + other + "}\n");
  const auto from_zero1 = run(kTwoNodes + other + ", at: 0s}\n");
  // Either node's NVLinks at half: the same step (the job is synchronous).
  const auto fixed0 = run(kTwoNodes + "what_if:\n  links:\n    - {device: 'node0/gpu*', factor: 0.5}\n");
  CHECK(fixed1.step_time == Approx(fixed0.step_time).epsilon(1e-9));
  CHECK(from_zero1.step_time == Approx(fixed1.step_time).epsilon(1e-12));
  CHECK(from_zero1.classes.size() == 2);
  CHECK(from_zero1.link_events->converged);
  CHECK(from_zero1.link_events->passes == 1);
}

TEST_CASE("link events: a window inside a bandwidth-bound op costs W (1 − T/T_e)", "[workload][link-events]") {
  // The DP AllReduce takes T alone on the static cluster and T_e with node0's NICs at half
  // bandwidth (both from their own runs). A window of W = 20 ms that starts 10 ms into it: the op
  // progresses at 1/T_e instead of 1/T for W, so it has W (1/T − 1/T_e) of its work left over,
  // done at 1/T: it ends W (1 − T/T_e) later; the step, which ends with it, too.
  const Window w = window_inside_dp("device: 'node0/nic*', factor: 0.5");
  REQUIRE(w.Te > 1.5 * w.T);
  REQUIRE(w.T > 0.04);  // the window fits inside it
  const double W = 0.02;
  REQUIRE(w.timed.link_events.has_value());
  const double expected = W * (1 - w.T / w.Te);
  CHECK(w.timed.link_events->lost == Approx(expected).epsilon(1e-9));
  CHECK(w.timed.step_time - w.base.step_time == Approx(expected).epsilon(1e-6));
  CHECK(w.timed.link_events->converged);
  // A window that ends before the op starts changes nothing.
  const auto early = run(kTwoNodes + "what_if:\n  links:\n    - {device: 'node0/nic*', factor: 0.5, at: 1ms, for: 1ms}\n");
  CHECK(early.step_time == Approx(w.base.step_time).epsilon(1e-12));
}

TEST_CASE("link events: a NIC that fails for a while fails over meanwhile", "[workload][link-events]") {
  // node0/nic0 down for 20 ms inside the DP AllReduce: GPU 0 fails over to another NIC of the
  // node (as the static rule does), the ring slows to T_e for that time: W (1 − T/T_e) again.
  const Window w = window_inside_dp("device: node0/nic0, fail: true");
  REQUIRE(w.Te > w.T);
  CHECK(w.timed.link_events->lost == Approx(0.02 * (1 - w.T / w.Te)).epsilon(1e-9));
}

TEST_CASE("link events: overlapping events on a common link are refused", "[workload][link-events]") {
  const std::string two = kTwoNodes +
                          "what_if:\n  links:\n"
                          "    - {device: node0/nic0, factor: 0.5, at: 100ms, for: 50ms}\n"
                          "    - {device: 'node0/nic*', factor: 0.8, at: 80ms, for: 5ms, every: 33ms}\n";
  try {
    run(two);
    FAIL("no error");
  } catch (const support::InputError& e) {
    CHECK(e.key() == "what_if.links[1]");
    CHECK(std::string(e.found()).find("node0/nic0 -> node0/pcie0 at 0.113 s") != std::string::npos);
  }
  // The same timing is one event: the rules compound, nothing contradicts.
  CHECK_NOTHROW(run(kTwoNodes +
                    "what_if:\n  links:\n"
                    "    - {device: node0/nic0, factor: 0.5, at: 100ms, for: 50ms}\n"
                    "    - {device: 'node0/nic*', factor: 0.8, at: 100ms, for: 50ms}\n"));
  // Different links: no contradiction.
  CHECK_NOTHROW(run(kTwoNodes +
                    "what_if:\n  links:\n"
                    "    - {device: node0/nic0, factor: 0.5, at: 100ms, for: 50ms}\n"
                    "    - {device: node1/nic0, factor: 0.8, at: 120ms, for: 50ms}\n"));
}

TEST_CASE("link events: a GPU's NVLink to the NVSwitch down takes NVLS away, for a while or for good", "[workload][link-events]") {
  // node0/gpu0 <-> node0/nvswitch down: NCCL has no NVLS for the TP group (every rank needs its
  // NVLinks to the switch), the TP AllReduces fall back to a ring through PCIe and the step is
  // slower; for 10 ms from the start, slower by less.
  const auto base = run(kTwoNodes);
  const std::string rule = "what_if:\n  links:\n    - {link: 'node0/gpu0 <-> node0/nvswitch', fail: true";
  const auto down = run(kTwoNodes + rule + "}\n");
  const auto blip = run(kTwoNodes + rule + ", at: 0s, for: 10ms}\n");
  CHECK(down.step_time > 1.5 * base.step_time);
  CHECK(blip.step_time > base.step_time);
  CHECK(blip.step_time < down.step_time);
}
