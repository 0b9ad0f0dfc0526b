// Inference as vLLM runs it: vLLM's custom all-reduce and its choice
// against NCCL, the serving engine's per-step overhead, and the request-level serving phase.

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "support/input_error.hpp"
#include "models/scenario/scenario.hpp"
#include "models/scenario/effective_yaml.hpp"
#include "planner/algorithms/vllm_allreduce.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/serving.hpp"
#include "planner/workload/workload_runner.hpp"
#include "test_support.hpp"

using namespace ccsim;
using planner::VllmAllReduce;
using planner::VllmGroup;

namespace {

VllmGroup nvlink(int n) {
  VllmGroup g;
  g.world_size = n;
  g.fully_connected = true;
  g.p2p = true;
  return g;
}

struct Run {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::WorkloadResult result;
};

/// Runs `yaml` (a scenario text) with the shipped calibrations and `serving`.
Run run_text(const std::string& yaml, const planner::ServingCalibration& serving) {
  test::TempDir dir;
  const std::string file = dir.write("s.yaml", yaml);
  Run r{models::load_scenario(file, test::shipped_catalog()), {}, {}};
  r.cluster = models::build_cluster(r.scenario.cluster);
  const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path(r.cluster));
  planner::WorkloadRunner runner(r.scenario, r.cluster, costs,
                                 planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(),
                                                                   r.cluster.spec.groups.front().node.gpu.name),
                                 models::EngineKind::Analytic);
  runner.set_serving(serving);
  r.result = runner.run();
  return r;
}

const planner::CommCost* find_comm(const planner::WorkloadResult& r, const std::string& algorithm, double bytes) {
  for (std::size_t i = 0; i < r.program.ops.size(); ++i) {
    if (r.op_comm[i] < 0 || r.program.ops[i].bytes != bytes) continue;
    const auto& c = r.comm_costs[static_cast<std::size_t>(r.op_comm[i])];
    if (c.algorithm == algorithm) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("vLLM custom all-reduce: the choice on the boundary sizes", "[serving]") {
  // custom_all_reduce.cuh: one-shot when (n ≤ 4 and bytes < 512 KiB) or (n ≤ 8 and bytes <
  // 256 KiB), two-shot otherwise; custom_all_reduce.py: custom only below max_size = 8 MiB and
  // for multiples of 16 bytes.
  constexpr std::uint64_t KiB = 1024, MiB = 1024 * 1024;
  CHECK(vllm_allreduce_choice(nvlink(8), 8 * KiB) == VllmAllReduce::OneShot);
  CHECK(vllm_allreduce_choice(nvlink(8), 256 * KiB - 16) == VllmAllReduce::OneShot);
  CHECK(vllm_allreduce_choice(nvlink(8), 256 * KiB) == VllmAllReduce::TwoShot);
  CHECK(vllm_allreduce_choice(nvlink(6), 256 * KiB) == VllmAllReduce::TwoShot);
  CHECK(vllm_allreduce_choice(nvlink(4), 512 * KiB - 16) == VllmAllReduce::OneShot);
  CHECK(vllm_allreduce_choice(nvlink(4), 512 * KiB) == VllmAllReduce::TwoShot);
  CHECK(vllm_allreduce_choice(nvlink(8), 8 * MiB - 16) == VllmAllReduce::TwoShot);
  CHECK(vllm_allreduce_choice(nvlink(8), 8 * MiB) == VllmAllReduce::Nccl);
  CHECK(vllm_allreduce_choice(nvlink(2), 8 * MiB - 16) == VllmAllReduce::OneShot);  // world 2: always 1-stage
  CHECK(vllm_allreduce_choice(nvlink(2), 8 * MiB) == VllmAllReduce::Nccl);
  CHECK(vllm_allreduce_choice(nvlink(8), 8 * KiB + 8) == VllmAllReduce::Nccl);      // not a multiple of 16
  // Enabled only for world sizes 2, 4, 6, 8 on one node, P2P, fully NVLink-connected above 2.
  CHECK(vllm_allreduce_choice(nvlink(3), 8 * KiB) == VllmAllReduce::Nccl);
  CHECK(vllm_allreduce_choice(nvlink(16), 8 * KiB) == VllmAllReduce::Nccl);
  VllmGroup pcie = nvlink(4);
  pcie.fully_connected = false;
  CHECK(vllm_allreduce_choice(pcie, 8 * KiB) == VllmAllReduce::Nccl);  // > 2 PCIe-only GPUs
  pcie.world_size = 2;
  CHECK(vllm_allreduce_choice(pcie, 8 * KiB) == VllmAllReduce::OneShot);  // 2 PCIe GPUs with P2P
  pcie.p2p = false;
  CHECK(vllm_allreduce_choice(pcie, 8 * KiB) == VllmAllReduce::Nccl);
  VllmGroup two_nodes = nvlink(8);
  two_nodes.same_node = false;
  CHECK(vllm_allreduce_choice(two_nodes, 8 * KiB) == VllmAllReduce::Nccl);
  VllmGroup off = nvlink(8);
  off.disabled = true;
  CHECK(vllm_allreduce_choice(off, 8 * KiB) == VllmAllReduce::Nccl);
}

TEST_CASE("vLLM custom all-reduce: the schedules compute the sum and conserve bytes", "[serving]") {
  // One-shot: every rank reads S from each of the n − 1 peers: n·(n − 1)·S bytes in all.
  // Two-shot: n − 1 blocks of S/n in and n − 1 out per rank and stage: 2·(n − 1)·S in all.
  for (int n : {1, 2, 4, 6, 8}) {
    for (std::uint64_t elements : {4096ULL, 1001ULL}) {
      INFO("n = " << n << ", elements = " << elements);
      const std::uint64_t bytes = elements * 2;
      const models::Schedule one = planner::vllm_custom_allreduce(VllmAllReduce::OneShot, n, bytes, 2);
      const models::Schedule two = planner::vllm_custom_allreduce(VllmAllReduce::TwoShot, n, bytes, 2);
      const auto v1 = models::verify(one);
      const auto v2 = models::verify(two);
      CHECK(v1.ok);
      CHECK(v2.ok);
      INFO(v1.error << v2.error);
      std::uint64_t sent1 = 0, sent2 = 0;
      for (std::uint64_t b : one.bytes_sent()) sent1 += b;
      for (std::uint64_t b : two.bytes_sent()) sent2 += b;
      CHECK(sent1 == static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n - 1) * bytes);
      CHECK(sent2 == 2ULL * static_cast<std::uint64_t>(n - 1) * bytes);
      CHECK(one.algorithm == "vllm-oneshot");
      CHECK(two.algorithm == "vllm-twoshot");
    }
  }
  CHECK_THROWS_AS(planner::vllm_custom_allreduce(VllmAllReduce::Nccl, 8, 8192, 2), std::invalid_argument);
  CHECK_THROWS_AS(planner::vllm_custom_allreduce(VllmAllReduce::OneShot, 8, 8193, 2), std::invalid_argument);
}

TEST_CASE("decode on 8 x H100 (NVSwitch): 8 KiB TP AllReduces are vLLM one-shot, timed by hand", "[serving]") {
  // Llama-3.1-8B decode, batch 1: 2·32 + 1 = 65 AllReduces of 1·4096·2 = 8,192 B per token.
  // One-shot on 8 GPUs: every rank receives 7·8,192 = 57,344 B through its NVSwitch port and
  // sends as much, all flows at once, one stage:
  //   T = launch + (path latency + stage) + 57,344 B / (port bandwidth × efficiency)
  // with launch 3 us, stage 2.5 us (the values set here), the GPU→NVSwitch→GPU path's
  // latency and bandwidth from the topology and the efficiency of its link kind.
  planner::ServingCalibration sv;
  sv.custom_allreduce_launch = 3e-6;
  sv.custom_allreduce_stage = 2.5e-6;
  const Run r = run_text(
      "cluster: {nodes: [{node: dgx-h100}]}\n"
      "workload: {model: llama-3.1-8b, phase: decode, batch_size: 1, context_length: 1024, generated_tokens: 2}\n"
      "strategy: {tp: 8}\n",
      sv);
  const planner::CommCost* c = find_comm(r.result, "vllm-oneshot", 8192);
  REQUIRE(c != nullptr);
  CHECK(c->group_size == 8);
  CHECK(c->protocol == "LD/ST");
  const auto& topo = r.cluster.topology;
  const auto gpus = topo.gpus();
  const models::Route route = topo.route(gpus[0], gpus[1]);
  const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path(r.cluster));
  const auto params = costs.params(planner::Algorithm::Direct, planner::Protocol::Simple, topo, "sm90");
  double rate = std::numeric_limits<double>::infinity();
  for (models::LinkId l : route.path.links) {
    const auto& link = topo.link(l);
    const double eff = link.kind < params.link_efficiency.size() ? params.link_efficiency[link.kind] : 1.0;
    rate = std::min(rate, link.bandwidth * eff);
  }
  const double expected = 3e-6 + route.path.latency + 2.5e-6 + 7.0 * 8192.0 / rate;
  CHECK(c->time == Approx(expected).epsilon(1e-9));
  // The numbers: 450 GB/s NVLink4 ports; the whole is ~6 us, under NCCL's ~15 us for the same op.
  CHECK(c->time > 5.5e-6);
  CHECK(c->time < 7e-6);
  // The logits AllGather stays NCCL.
  for (const auto& cc : r.result.comm_costs)
    if (cc.algorithm != "vllm-oneshot") CHECK(cc.algorithm.rfind("vllm", 0) != 0);
}

TEST_CASE("vLLM's choice in a run: NCCL across nodes, on PCIe boxes and when disabled; two-shot for 1 MiB on 4 GPUs", "[serving]") {
  planner::ServingCalibration sv;
  const auto algorithms = [](const planner::WorkloadResult& r) {
    std::set<std::string> out;
    for (const auto& c : r.comm_costs) out.insert(c.algorithm);
    return out;
  };
  // TP8 across two 4-GPU HGX boards: the group spans nodes, NCCL.
  const Run cross = run_text(models::effective_yaml(models::load_scenario(
                                 test::source_path("scenarios/workloads/llama31-8b-decode-tp8.yaml"), test::shipped_catalog())),
                             sv);
  CHECK(algorithms(cross.result).count("vllm-oneshot") == 0);
  // TP4 inside one HGX board (every pair NVLink-connected): one-shot.
  const Run inside = run_text(models::effective_yaml(models::load_scenario(
                                  test::source_path("scenarios/workloads/llama31-8b-decode-tp4.yaml"), test::shipped_catalog())),
                              sv);
  CHECK(algorithms(inside.result).count("vllm-oneshot") == 1);
  // The same with disable_custom_all_reduce: NCCL only, and slower.
  std::string text = models::effective_yaml(inside.scenario);
  text.replace(text.find("disable_custom_all_reduce: false"), 32, "disable_custom_all_reduce: true");
  const Run off = run_text(text, sv);
  CHECK(algorithms(off.result).count("vllm-oneshot") == 0);
  CHECK(off.result.step_time > inside.result.step_time);
  // 4 x L40S on PCIe (no NVLink): more than two PCIe-only GPUs, NCCL.
  const Run pcie = run_text(
      "cluster: {nodes: [{node: pcie-box}]}\n"
      "workload: {model: llama-3-8b, phase: decode, batch_size: 1, context_length: 512}\n"
      "strategy: {tp: 4, dp: 2}\n",
      sv);
  for (const auto& a : algorithms(pcie.result)) CHECK(a.rfind("vllm", 0) != 0);
  // Batch 64 of Llama-3.1-8B on 4 NVLink GPUs: 64·4096·2 = 512 KiB, two-shot (4 GPUs, ≥ 512 KiB).
  const Run big = run_text(
      "cluster: {nodes: [{node: hgx-h100-4gpu}]}\n"
      "workload: {model: llama-3.1-8b, phase: decode, batch_size: 64, context_length: 512}\n"
      "strategy: {tp: 4}\n",
      sv);
  CHECK(find_comm(big.result, "vllm-twoshot", 64 * 4096 * 2) != nullptr);
}

TEST_CASE("engine overhead: added once to every prefill and decode step, as idle GPU time", "[serving]") {
  const std::string decode =
      "cluster: {nodes: [{node: dgx-h100}]}\n"
      "workload: {model: llama-3.1-8b, phase: decode, batch_size: 4, context_length: 1000}\n"
      "strategy: {tp: 8}\n";
  planner::ServingCalibration none, some;
  some.decode_step_overhead = 250e-6;
  some.prefill_step_overhead = 1e-3;
  const Run a = run_text(decode, none);
  const Run b = run_text(decode, some);
  CHECK(b.result.step_time - a.result.step_time == Approx(250e-6).epsilon(1e-9));
  CHECK(b.result.engine_overhead == 250e-6);
  CHECK(b.result.stages[0].idle - a.result.stages[0].idle == Approx(250e-6).epsilon(1e-9));
  std::string prefill = decode;
  prefill.replace(prefill.find("phase: decode, batch_size: 4, context_length: 1000"), 50, "phase: prefill, sequence_length: 512");
  const Run c = run_text(prefill, none);
  const Run d = run_text(prefill, some);
  CHECK(d.result.step_time - c.result.step_time == Approx(1e-3).epsilon(1e-9));
}

TEST_CASE("sum_decode_steps is exact for a step time linear in the context", "[serving]") {
  // T(c) = 2 ms + 1 us · c over c = 101 .. 200 (n = 100): Σ = 100·2 ms + 1 us · (101 + 200)·100/2.
  const auto t = [](double c) { return 2e-3 + 1e-6 * c; };
  CHECK(planner::sum_decode_steps(t(101), t(150.5), t(200), 100) == Approx(100 * 2e-3 + 1e-6 * 301 * 50).epsilon(1e-12));
  // One step: the three points coincide.
  CHECK(planner::sum_decode_steps(t(7), t(7), t(7), 1) == Approx(t(7)).epsilon(1e-15));
}

TEST_CASE("serving: TTFT is the prefill step, the decode steps are summed, tokens/s follow", "[serving]") {
  // Llama-3.1-8B TP8 on a DGX H100, 4 requests of 200 prompt tokens generating 51 tokens each:
  // TTFT = the prefill step of 4 × 200 tokens; decode steps k = 1 .. 50 at contexts 201 .. 250,
  // simulated at 201, 225.5, 250; E2E = TTFT + 50·(T201 + 2·T225.5 + T250)/4;
  // TPOT = (E2E − TTFT)/50; output tokens/s = 4·51/E2E; total = 4·251/E2E.
  planner::ServingCalibration sv;
  sv.prefill_step_overhead = 500e-6;
  sv.decode_step_overhead = 300e-6;
  const std::string head = "cluster: {nodes: [{node: dgx-h100}]}\nstrategy: {tp: 8}\n";
  const Run s = run_text(head + "workload: {model: llama-3.1-8b, phase: serving, batch_size: 4, input_len: 200, output_len: 51}\n", sv);
  REQUIRE(s.result.serving.has_value());
  const auto& r = *s.result.serving;
  const Run p = run_text(head + "workload: {model: llama-3.1-8b, phase: prefill, micro_batch_size: 4, sequence_length: 200}\n", sv);
  CHECK(r.ttft == Approx(p.result.step_time).epsilon(1e-12));
  // Decode at context 201 (context_length 200 + 2/2) and 250 (249 + 2/2); 225.5 = 225 + 1/2.
  const Run d1 = run_text(head + "workload: {model: llama-3.1-8b, phase: decode, batch_size: 4, context_length: 200, generated_tokens: 2}\n", sv);
  const Run dm = run_text(head + "workload: {model: llama-3.1-8b, phase: decode, batch_size: 4, context_length: 225, generated_tokens: 1}\n", sv);
  const Run d2 = run_text(head + "workload: {model: llama-3.1-8b, phase: decode, batch_size: 4, context_length: 249, generated_tokens: 2}\n", sv);
  REQUIRE(r.decode.size() == 3);
  CHECK(r.decode[0].context == 201);
  CHECK(r.decode[1].context == 225.5);
  CHECK(r.decode[2].context == 250);
  CHECK(r.decode[0].step == Approx(d1.result.step_time).epsilon(1e-12));
  CHECK(r.decode[1].step == Approx(dm.result.step_time).epsilon(1e-12));
  CHECK(r.decode[2].step == Approx(d2.result.step_time).epsilon(1e-12));
  // Linear in the context: the middle point is the mean of the ends (to rounding).
  CHECK(dm.result.step_time == Approx((d1.result.step_time + d2.result.step_time) / 2).epsilon(1e-6));
  const double e2e = p.result.step_time + 50 * (d1.result.step_time + 2 * dm.result.step_time + d2.result.step_time) / 4;
  CHECK(r.e2e == Approx(e2e).epsilon(1e-12));
  CHECK(r.tpot == Approx((e2e - p.result.step_time) / 50).epsilon(1e-12));
  CHECK(r.output_tokens_per_s == Approx(4.0 * 51 / e2e).epsilon(1e-12));
  CHECK(r.total_tokens_per_s == Approx(4.0 * 251 / e2e).epsilon(1e-12));
  // Each step pays its engine overhead: TPOT ≥ 300 us + the GPU's share.
  CHECK(r.tpot > 300e-6);
}

TEST_CASE("serving steps: one prefill of every prompt, decode at the first, middle and last context", "[serving]") {
  // 4 requests, 200 prompt tokens, 51 output tokens: n = 50 decode steps at contexts 201 .. 250,
  // simulated at 201, (201 + 250)/2 = 225.5 and 250. The builder costs attention at
  // context_length + generated_tokens / 2: 201 = 200 + 2/2, 225.5 = 225 + 1/2, 250 = 249 + 2/2.
  models::WorkloadSpec w;
  w.phase = models::WorkloadPhase::Serving;
  w.batch_size = 4;
  w.input_len = 200;
  w.output_len = 51;
  const planner::ServingSteps s = planner::serving_steps(w);
  CHECK(s.prefill.phase == models::WorkloadPhase::Prefill);
  CHECK(s.prefill.micro_batch_size == 4);
  CHECK(s.prefill.sequence_length == 200);
  CHECK(s.decode_steps == 50);
  CHECK(s.first == 201);
  CHECK(s.middle == 225.5);
  CHECK(s.last == 250);
  for (const auto* d : {&s.decode_first, &s.decode_middle, &s.decode_last}) {
    CHECK(d->phase == models::WorkloadPhase::Decode);
    CHECK(d->batch_size == 4);
  }
  CHECK(s.decode_first.context_length == 200);
  CHECK(s.decode_first.generated_tokens == 2);
  CHECK(s.decode_middle.context_length == 225);
  CHECK(s.decode_middle.generated_tokens == 1);
  CHECK(s.decode_last.context_length == 249);
  CHECK(s.decode_last.generated_tokens == 2);
}

TEST_CASE("serving result: TTFT, the decode sum, TPOT and tokens/s from the step times", "[serving]") {
  // Steps (s): prefill 0.5, decode 0.25 / 0.375 / 0.5 at the first / middle / last context,
  // n = 50: Σ decode = 50·(0.25 + 2·0.375 + 0.5)/4 = 18.75; E2E = 0.5 + 18.75 = 19.25;
  // TPOT = 18.75 / 50 = 0.375; output tokens/s = 4·51/19.25; total = 4·251/19.25.
  models::WorkloadSpec w;
  w.batch_size = 4;
  w.input_len = 200;
  w.output_len = 51;
  const planner::ServingSteps steps = planner::serving_steps(w);
  planner::ServingStepTimes t;
  t.prefill = 0.5;
  t.decode_first = 0.25;
  t.decode_middle = 0.375;
  t.decode_last = 0.5;
  t.prefill_compute = 0.125;
  t.prefill_comm = 0.0625;
  const planner::ServingResult r = planner::serving_result(w, steps, t);
  CHECK(r.ttft == 0.5);
  CHECK(r.e2e == 19.25);
  CHECK(r.tpot == 0.375);
  CHECK(r.output_tokens_per_s == Approx(204.0 / 19.25).epsilon(1e-15));
  CHECK(r.total_tokens_per_s == Approx(1004.0 / 19.25).epsilon(1e-15));
  REQUIRE(r.decode.size() == 3);
  CHECK(r.decode[1].context == 225.5);
  CHECK(r.decode[1].step == 0.375);
  CHECK(r.prefill_compute == 0.125);
  CHECK(r.prefill_comm == 0.0625);
}

TEST_CASE("serving.yaml: loads with its sources; bad tables are InputErrors", "[serving]") {
  const auto shipped = planner::ServingCalibration::load(planner::ServingCalibration::default_path(), "H100-SXM5");
  CHECK(shipped.decode_step_overhead == Approx(300e-6));
  CHECK(shipped.prefill_step_overhead == Approx(500e-6));
  CHECK(shipped.custom_allreduce_launch == Approx(3e-6));
  CHECK(shipped.custom_allreduce_stage == Approx(2.5e-6));
  CHECK(!shipped.source.empty());
  test::TempDir dir;
  const auto load = [&](const std::string& text) {
    return planner::ServingCalibration::load(dir.write("serving.yaml", text), "H100-SXM5");
  };
  // `defaults` must give all four constants (a missing one is an error, not a silent 0).
  const std::string rest = "prefill_step_overhead: 500us, custom_allreduce_launch: 3us, custom_allreduce_stage: 2.5us";
  const auto with = [&](const std::string& entry) { return "defaults: {" + rest + ", " + entry + "}\n"; };
  CHECK_THROWS_AS(load("defaults: {" + rest + "}\n"), support::InputError);
  // Per-GPU override.
  const auto per_gpu = load(with("decode_step_overhead: 1ms") + "gpus: {H100-SXM5: {decode_step_overhead: 2ms}, A100: {decode_step_overhead: 3ms}}\n");
  CHECK(per_gpu.decode_step_overhead == Approx(2e-3));
  CHECK_THROWS_AS(load(with("decode_step_overhead: 1ms, decode_overhead: 1ms")), support::InputError);  // unknown key
  CHECK_THROWS_AS(load(with("decode_step_overhead: -1ms")), support::InputError);     // negative
  CHECK_THROWS_AS(load(with("decode_step_overhead: 2s")), support::InputError);       // over 1 s
  CHECK_THROWS_AS(load("defaults: {prefill_step_overhead: 500us, decode_step_overhead: 300us, custom_allreduce_launch: 3us, custom_allreduce_stage: 2ms}\n"),
                  support::InputError);                                                     // over 1 ms
  CHECK_THROWS_AS(load("defaults: {prefill_step_overhead: 500us, decode_step_overhead: 300us, custom_allreduce_launch: 3, custom_allreduce_stage: 2.5us}\n"),
                  support::InputError);                                                     // no unit
  CHECK_THROWS_AS(load("gpus: {}\n"), support::InputError);                                    // no defaults
  CHECK_THROWS_AS(load("defaults: {}\nextra: 1\n"), support::InputError);                      // unknown section
}
