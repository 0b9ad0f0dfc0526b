// The training Program's structure: DP bucket padding as
// Megatron-Core's distributed optimizer does it, the backward in reverse with data- and
// weight-gradient GEMMs, Transformer Engine's userbuffers TP overlap, and Megatron's DP overlap
// rules (overlap_grad_reduce, bucketing per pipeline stage, overlap_param_gather). Expected
// values are computed by hand in the comments.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/workload/program_builder.hpp"
#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/workload_runner.hpp"
#include "test_support.hpp"
#include "workload_support.hpp"

using namespace ccsim;
using namespace ccsim::models;
using namespace ccsim::test::workload;

namespace {

bool has_dep(const ProgramOp& op, std::uint32_t d) { return std::find(op.deps.begin(), op.deps.end(), d) != op.deps.end(); }

/// Names of the ops of `layer` in pass `pass` and micro-batch `mb` on stage `stage`, in issue order.
std::vector<std::string> names(const Program& p, int stage, int layer, Pass pass, int mb) {
  std::vector<std::string> out;
  for (std::uint32_t id : p.ranks[static_cast<std::size_t>(stage)].ops) {
    const ProgramOp& op = p.ops[id];
    if (op.layer == layer && op.pass == pass && op.micro_batch == mb) out.push_back(op.name);
  }
  return out;
}

std::uint32_t find_op(const Program& p, int layer, Pass pass, int mb, const std::string& name, int nth = 0) {
  for (std::uint32_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].layer == layer && p.ops[i].pass == pass && p.ops[i].micro_batch == mb && p.ops[i].name == name && nth-- == 0) return i;
  FAIL("no op " << name);
  return ~0U;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Bucket padding

TEST_CASE("training: ZeRO-1 buckets pad to lcm(dp, 128) elements (Llama-3-8B TP8 DP3)", "[training-structure]") {
  // Llama-3-8B: a layer holds 2·4096² + 2·4096·1024 (q, o, k, v) + 3·4096·14,336 (MLP) +
  // 2·4096 (norms) = 218,112,000 parameters; embedding 128,256·4096 = 525,336,576; LM head
  // 525,336,576 + 4096 (final norm) = 525,340,672. All 32 layers on one stage: 8,030,261,248
  // parameters, /8 (TP) = 1,003,782,656 per GPU. overlap_grad_reduce off (Megatron's default):
  // one bucket. Distributed optimizer: padded to a multiple of lcm(3, 128) = 384 elements:
  // ⌈1,003,782,656 / 384⌉ = 2,614,018 → 1,003,782,912 elements; fp32 gradients: 4,015,131,648
  // bytes (÷ 3 = 1,338,377,216: whole shards). The parameter AllGather: 1,003,782,912 · 2 B =
  // 2,007,565,824 bytes.
  const TransformerConfig m = load_transformer("llama-3-8b");
  StrategySpec s = strategy(8, 1, 3);
  s.sequence_parallel = true;
  s.zero_stage = 1;
  const Program p = build(m, training("llama-3-8b", 1, 8192, 12), s);
  const auto rs = select(p, collective(ParallelDim::DP, Collective::ReduceScatter));
  REQUIRE(rs.size() == 1);
  CHECK(p.ops[rs[0]].bytes == 4'015'131'648.0);
  const auto ag = select(p, collective(ParallelDim::DP, Collective::AllGather));
  REQUIRE(ag.size() == 1);
  CHECK(p.ops[ag[0]].bytes == 2'007'565'824.0);

  // With overlap_grad_reduce and 300M-parameter buckets: 27,264,000 per layer per GPU, the
  // LM head's 65,667,584 first (reverse order), so bucket 0 = LM head + 9 layers (65,667,584 +
  // 245,376,000 = 311,043,584 ≥ 300M), then 11 layers (299,904,000 < 300M → 12 layers:
  // 327,168,000), then the remaining 11 layers and the embedding (299,904,000 + 65,667,072 =
  // 365,571,072). Each padded to 384: 311,043,584 → 311,043,840; 327,168,000 is 852,000·384
  // already; 365,571,072 → 365,571,072 (= 952,008·384).
  s.overlap_grad_reduce = true;
  s.bucket_params = 300'000'000;
  const Program q = build(m, training("llama-3-8b", 1, 8192, 12), s);
  const auto buckets = select(q, collective(ParallelDim::DP, Collective::ReduceScatter));
  REQUIRE(buckets.size() == 3);
  CHECK(q.ops[buckets[0]].bytes == 311'043'840.0 * 4);
  CHECK(q.ops[buckets[1]].bytes == 327'168'000.0 * 4);
  CHECK(q.ops[buckets[2]].bytes == 365'571'072.0 * 4);
  for (auto id : buckets) CHECK(std::fmod(q.ops[id].bytes, 3.0 * 4.0) == 0.0);
}

TEST_CASE("training: without the distributed optimizer buckets are not padded", "[training-structure]") {
  // Same model, ZeRO 0: one AllReduce of 1,003,782,656 · 4 = 4,015,130,624 bytes (Megatron pads
  // only with use_distributed_optimizer).
  const TransformerConfig m = load_transformer("llama-3-8b");
  const Program p = build(m, training("llama-3-8b", 1, 8192, 12), strategy(8, 1, 3));
  const auto ar = select(p, collective(ParallelDim::DP, Collective::AllReduce));
  REQUIRE(ar.size() == 1);
  CHECK(p.ops[ar[0]].bytes == 4'015'130'624.0);
}

TEST_CASE("training: expert buckets pad over the expert-data-parallel group", "[training-structure]") {
  // Mixtral 8x7B, TP1 PP1 DP6 EP2, ZeRO-1: expert-DP = 6/2 = 3 → lcm(3, 128) = 384; dense DP 6
  // → lcm(6, 128) = 384. Every DP bucket (expert or dense) divides by its group size × 4 B and
  // exceeds its unpadded size by less than 384 elements.
  const TransformerConfig m = load_transformer("mixtral-8x7b");
  StrategySpec s = strategy(1, 1, 6);
  s.ep = 2;
  s.zero_stage = 1;
  const Program p = build(m, training("mixtral-8x7b", 1, 1024, 6), s);
  const auto rs = select(p, collective(ParallelDim::DP, Collective::ReduceScatter));
  REQUIRE(rs.size() == 2);  // overlap off: one dense and one expert bucket
  // Expert parameters per GPU: 32 layers · 8 experts · 3·4096·14,336 / 2 (EP) =
  // 22,548,578,304, a multiple of 384 already (= 58,720,256·384); dense: everything else.
  int experts = 0;
  for (auto id : rs) {
    const ProgramOp& op = p.ops[id];
    CHECK(std::fmod(op.bytes, 384.0 * 4.0) == 0.0);
    if (op.expert) {
      ++experts;
      CHECK(op.bytes == 22'548'578'304.0 * 4);
    }
  }
  CHECK(experts == 1);
}

TEST_CASE("runner: DP 3 and DP 48 layouts with the distributed optimizer run", "[training-structure]") {
  // Llama-3-8B on 3 × dgx-h100, TP8 DP3, ZeRO-1 must not exit 1 with "no algorithm
  // implements ReduceScatter at 525338624 bytes"; and DP 48 over 6 nodes (TP1), ZeRO-2, odd
  // micro-batch (3) with overlapped reduction and gathers. Both must simulate: every DP
  // ReduceScatter / AllGather size a multiple of the group size (× 1-byte elements here).
  struct Case {
    int nodes, tp, dp, zero, mb;
    bool sp, overlap;
  };
  for (const Case c : {Case{3, 8, 3, 1, 1, true, false}, Case{6, 1, 48, 2, 3, false, true}}) {
    INFO("tp " << c.tp << " dp " << c.dp << " zero " << c.zero);
    const std::string yaml = fmt::format(
        "cluster:\n  nodes:\n    - node: dgx-h100\n      count: {}\n  fabric:\n    kind: fat-tree\n    wiring: rail-optimized\n"
        "workload:\n  model: llama-3-8b\n  phase: training_step\n  sequence_length: 2048\n  micro_batch_size: {}\n"
        "  global_batch_size: {}\n  recompute: full\nstrategy:\n  tp: {}\n  dp: {}\n  sequence_parallel: {}\n  zero_stage: {}\n"
        "  overlap_grad_reduce: {}\n  overlap_param_gather: {}\n",
        c.nodes, c.mb, c.mb * c.dp, c.tp, c.dp, c.sp, c.zero, c.overlap, c.overlap);
    const auto path = std::filesystem::temp_directory_path() / fmt::format("ccsim-training-structure-{}-{}.yaml", ::getpid(), c.dp);
    { std::ofstream(path) << yaml; }
    const models::Scenario sc = models::load_scenario(path.string(), test::shipped_catalog());
    std::filesystem::remove(path);
    const models::Cluster cl = models::build_cluster(sc.cluster);
    const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
    const planner::ComputeCalibration compute =
        planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), cl.spec.groups.front().node.gpu.name);
    planner::WorkloadRunner runner(sc, cl, costs, compute, models::EngineKind::Analytic);
    const planner::WorkloadResult r = runner.run();
    REQUIRE(r.feasible);
    CHECK(r.step_time > 0);
    int dp_ops = 0;
    for (const auto& op : r.program.ops) {
      if (op.kind != ProgramOpKind::Collective || op.dim != ParallelDim::DP) continue;
      ++dp_ops;
      CHECK(std::fmod(op.bytes, static_cast<double>(c.dp)) == 0.0);
    }
    CHECK(dp_ops >= 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Backward in reverse, dgrad and wgrad GEMMs

TEST_CASE("training: a layer's backward runs MLP then attention, dgrad and wgrad GEMMs with their shapes", "[training-structure]") {
  // Llama-2-7B (h 4096, i 11,008, 32 heads of 128), t = 2, no SP, one micro-batch of
  // b·s = 1024 tokens. Per layer backward: row-parallel mlp-down (no TP comm), activation,
  // column-parallel mlp-up (its input gradient AllReduced beside the wgrad), norm, attn-out,
  // attention, qkv (AllReduce beside the wgrad), norm.
  const TransformerConfig m = load_transformer("llama-2-7b");
  const Program p = build(m, training("llama-2-7b", 1, 1024, 1), strategy(2, 1, 1));
  const std::vector<std::string> expected{"mlp-down-dgrad", "mlp-down-wgrad", "activation", "tp-allreduce", "mlp-up-dgrad",
                                          "tp-allreduce",   "mlp-up-wgrad",   "norm",       "attn-out-dgrad", "attn-out-wgrad",
                                          "attention",      "tp-allreduce",   "qkv-dgrad",  "tp-allreduce", "qkv-wgrad", "norm"};
  // (Issue order: the AllReduce of a column-parallel dgrad is issued after the dgrad GEMM; the
  // names list is by issue, so check it as a multiset-free sequence without the TP ops.)
  std::vector<std::string> got;
  for (const auto& n : names(p, 0, 31, Pass::Backward, 0))
    if (n.rfind("tp-", 0) != 0) got.push_back(n);
  std::vector<std::string> want;
  for (const auto& n : expected)
    if (n.rfind("tp-", 0) != 0) want.push_back(n);
  CHECK(got == want);
  // Layers in reverse: the first backward layer op is layer 31's, the last layer 0's.
  std::vector<int> order;
  for (std::uint32_t id : p.ranks[0].ops)
    if (p.ops[id].pass == Pass::Backward && p.ops[id].layer >= 0 && (order.empty() || order.back() != p.ops[id].layer))
      order.push_back(p.ops[id].layer);
  REQUIRE(order.size() == 32);
  for (int i = 0; i < 32; ++i) CHECK(order[static_cast<std::size_t>(i)] == 31 - i);
  // Shapes (T = 1024, t = 2): mlp-up forward [1024 × 11,008] = [1024 × 4096]·[4096 × 11,008]
  // (gated: 2·11,008/2); dgrad m = 1024, n = 4096, k = 11,008; wgrad m = 11,008, n = 4096,
  // k = 1024. Each 2·1024·4096·11,008 = 92,341,796,864 FLOPs.
  const ProgramOp& up = p.ops[find_op(p, 31, Pass::Forward, 0, "mlp-up")];
  CHECK((up.m == 1024 && up.n == 11008 && up.k == 4096));
  const ProgramOp& dg = p.ops[find_op(p, 31, Pass::Backward, 0, "mlp-up-dgrad")];
  CHECK((dg.m == 1024 && dg.n == 4096 && dg.k == 11008));
  const ProgramOp& wg = p.ops[find_op(p, 31, Pass::Backward, 0, "mlp-up-wgrad")];
  CHECK((wg.m == 11008 && wg.n == 4096 && wg.k == 1024));
  for (const ProgramOp* op : {&up, &dg, &wg}) CHECK(op->flops == 92'341'796'864.0);
  // Row-parallel mlp-down: forward m = 1024, n = 4096, k = 11,008/2 = 5504; dgrad m = 1024,
  // n = 5504, k = 4096; wgrad m = 4096, n = 5504, k = 1024.
  const ProgramOp& down_dg = p.ops[find_op(p, 31, Pass::Backward, 0, "mlp-down-dgrad")];
  CHECK((down_dg.m == 1024 && down_dg.n == 5504 && down_dg.k == 4096));
  const ProgramOp& down_wg = p.ops[find_op(p, 31, Pass::Backward, 0, "mlp-down-wgrad")];
  CHECK((down_wg.m == 4096 && down_wg.n == 5504 && down_wg.k == 1024));
  // FlashAttention backward: 2.5 × forward FLOPs; both carry the shape (1024 queries, 1024
  // keys, head dim 128, 16 local heads).
  const ProgramOp& af = p.ops[find_op(p, 31, Pass::Forward, 0, "attention")];
  const ProgramOp& ab = p.ops[find_op(p, 31, Pass::Backward, 0, "attention")];
  CHECK(ab.flops == Approx(2.5 * af.flops));
  CHECK((ab.m == 1024 && ab.n == 1024 && ab.k == 128 && ab.batch == 16));
  // Model FLOPs unchanged: 6 · non-embedding params per token + attention (3 × forward).
  CHECK(p.model_flops > 0);
}

TEST_CASE("training: TP collectives of the backward fall where Megatron puts them", "[training-structure]") {
  // Llama-2-7B, t = 2, one micro-batch, 32 layers. Without SP: row-parallel backward has no TP
  // comm, each column-parallel dgrad is AllReduced: 2 per layer = 64, of b·s·h·e = 1024·4096·2 =
  // 8,388,608 bytes; the AllReduce waits for the dgrad GEMM only and the next op (norm) waits
  // for it and the wgrad. With SP: per layer 2 AllGathers of the row-parallel output gradient,
  // 2 re-gathers of the column-parallel input (for the wgrad), 2 ReduceScatters of the dgrad:
  // 128 AllGathers and 64 ReduceScatters.
  const TransformerConfig m = load_transformer("llama-2-7b");
  for (bool sp : {false, true}) {
    INFO("sp " << sp);
    StrategySpec s = strategy(2, 1, 1);
    s.sequence_parallel = sp;
    const Program p = build(m, training("llama-2-7b", 1, 1024, 1), s);
    std::map<Collective, int> count;
    for (const auto& op : p.ops)
      if (op.kind == ProgramOpKind::Collective && op.dim == ParallelDim::TP && op.pass == Pass::Backward && op.layer >= 0) {
        ++count[op.collective];
        CHECK(op.bytes == 8'388'608.0);
      }
    if (sp) {
      CHECK(count[Collective::AllGather] == 128);
      CHECK(count[Collective::ReduceScatter] == 64);
      CHECK(count[Collective::AllReduce] == 0);
    } else {
      CHECK(count[Collective::AllReduce] == 64);
      CHECK(count.size() == 1);
    }
    const std::uint32_t dg = find_op(p, 5, Pass::Backward, 0, "qkv-dgrad");
    const std::uint32_t wg = find_op(p, 5, Pass::Backward, 0, "qkv-wgrad");
    const Collective red = sp ? Collective::ReduceScatter : Collective::AllReduce;
    std::uint32_t r = ~0U;
    for (std::uint32_t i = 0; i < p.ops.size(); ++i)
      if (p.ops[i].layer == 5 && p.ops[i].pass == Pass::Backward && collective(ParallelDim::TP, red)(p.ops[i]) && has_dep(p.ops[i], dg)) r = i;
    REQUIRE(r != ~0U);
    CHECK_FALSE(has_dep(p.ops[wg], r));  // the wgrad runs beside the reduction
    const std::uint32_t norm = wg + (p.ops[wg + 1].name == "norm" ? 1 : 0);
    CHECK(p.ops[norm].name == "norm");
    CHECK(has_dep(p.ops[norm], r));
  }
}

// ---------------------------------------------------------------------------------------------
// Transformer Engine userbuffers overlap

TEST_CASE("training: tp_comm_overlap chunks the GEMMs as TE's userbuffers do", "[training-structure]") {
  // Llama-2-7B, t = 4, SP, one micro-batch of 1024 tokens: b·s·h·e = 8,388,608 bytes.
  //  qkv_fprop / fc1_fprop "ring_exchange": 4 GEMM chunks of 256 rows; 3 ring exchanges of
  //    8,388,608 / 4 = 2,097,152 bytes; chunk j+1 waits for exchange j+1 (chunk 0 uses the local
  //    shard); copy engines, comm_sms 0.
  //  proj_fprop / fc2_fprop "pipeline": num_splits 4 chunks of 256 rows, each followed by a
  //    ReduceScatter of 2,097,152 bytes; chunks 1-3 run beside a ReduceScatter: comm_sms 16.
  //  qkv / fc1 dgrad and wgrad ("bulk"): comm_sms 16.
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(4, 1, 1);
  s.sequence_parallel = true;
  s.tp_comm_overlap = true;
  const Program p = build(m, training("llama-2-7b", 1, 1024, 1), s);
  std::vector<std::uint32_t> qkv, ex, proj, rs;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    const ProgramOp& op = p.ops[i];
    if (op.layer != 3 || op.pass != Pass::Forward) continue;
    if (op.name == "qkv") qkv.push_back(i);
    if (op.name == "tp-ring-exchange" && qkv.size() <= 4 && proj.empty()) ex.push_back(i);
    if (op.name == "attn-out") proj.push_back(i);
    if (op.name == "tp-reducescatter" && !proj.empty() && rs.size() < 4) rs.push_back(i);
  }
  REQUIRE(qkv.size() == 4);
  REQUIRE(ex.size() == 3);
  REQUIRE(proj.size() == 4);
  REQUIRE(rs.size() == 4);
  for (auto id : qkv) CHECK((p.ops[id].m == 256 && p.ops[id].comm_sms == 0));
  for (auto id : ex) CHECK((p.ops[id].bytes == 2'097'152.0 && p.ops[id].collective == Collective::SendRecv));
  for (int j = 1; j < 4; ++j) CHECK(has_dep(p.ops[qkv[static_cast<std::size_t>(j)]], ex[static_cast<std::size_t>(j - 1)]));
  for (int i = 0; i < 4; ++i) {
    const ProgramOp& g = p.ops[proj[static_cast<std::size_t>(i)]];
    CHECK(g.m == 256);
    CHECK(g.comm_sms == (i == 0 ? 0 : 16));
    CHECK(p.ops[rs[static_cast<std::size_t>(i)]].bytes == 2'097'152.0);
    CHECK(has_dep(p.ops[rs[static_cast<std::size_t>(i)]], proj[static_cast<std::size_t>(i)]));
  }
  CHECK(p.ops[find_op(p, 3, Pass::Backward, 0, "qkv-dgrad")].comm_sms == 16);
  CHECK(p.ops[find_op(p, 3, Pass::Backward, 0, "qkv-wgrad")].comm_sms == 16);
  // proj_dgrad ring exchange: 4 dgrad chunks.
  int dgrad_chunks = 0;
  for (const auto& op : p.ops) dgrad_chunks += op.layer == 3 && op.name == "attn-out-dgrad" && op.micro_batch == 0 ? 1 : 0;
  CHECK(dgrad_chunks == 4);
}

TEST_CASE("layout: tp_comm_overlap needs sequence parallelism (Megatron validate_args)", "[training-structure]") {
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(2, 1, 1);
  s.tp_comm_overlap = true;
  const auto problem = check_layout(m, training("llama-2-7b", 1, 1024, 1), s);
  REQUIRE(problem);
  CHECK(problem->key == "tp_comm_overlap");
  s.sequence_parallel = true;
  CHECK_FALSE(check_layout(m, training("llama-2-7b", 1, 1024, 1), s));
}

// ---------------------------------------------------------------------------------------------
// DP overlap rules

TEST_CASE("training: overlap_grad_reduce, bucketing on the first stage only, buckets wait for their layers", "[training-structure]") {
  // Llama-2-7B, t = 2, p = 2, dp = 2, b = 1, s = 1024, global 8: m = 4 micro-batches; 16
  // layers a stage, 101,191,680 parameters per layer per GPU. bucket_params 300M.
  //  overlap_grad_reduce true: stage 0 buckets of 3 layers (303,575,040 ≥ 300M) in reverse:
  //    {15,14,13} {12,11,10} {9,8,7} {6,5,4} {3,2,1} {0, embedding}: 6 buckets; bucket 0 waits
  //    for layers 15, 14, 13 of micro-batch 3's backward (their input-norm backward ops) and
  //    not for the stage's last op. Stage 1 (pipeline rank > 0): bucketing off, 1 bucket.
  //  overlap_grad_reduce false: 1 bucket per stage, after the stage's whole backward.
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(2, 2, 2);
  s.bucket_params = 300'000'000;
  const WorkloadSpec w = training("llama-2-7b", 1, 1024, 8);
  for (bool overlap : {true, false}) {
    INFO("overlap_grad_reduce " << overlap);
    s.overlap_grad_reduce = overlap;
    const Program p = build(m, w, s);
    const auto b0 = select(p, collective(ParallelDim::DP, Collective::AllReduce), 0);
    const auto b1 = select(p, collective(ParallelDim::DP, Collective::AllReduce), 1);
    CHECK(b0.size() == (overlap ? 6U : 1U));
    CHECK(b1.size() == 1U);
    // The stage's last backward op (the last compute op before the DP ops).
    const auto last_compute = [&](int stage) {
      std::uint32_t last = ~0U;
      for (std::uint32_t id : p.ranks[static_cast<std::size_t>(stage)].ops)
        if (p.ops[id].pass == Pass::Backward && p.ops[id].stream == Stream::Compute) last = id;
      return last;
    };
    if (overlap) {
      const ProgramOp& first = p.ops[b0[0]];
      std::set<int> layers;
      for (auto d : first.deps) {
        CHECK(p.ops[d].name == "norm");
        CHECK(p.ops[d].micro_batch == 3);
        layers.insert(p.ops[d].layer);
      }
      CHECK(layers == std::set<int>{13, 14, 15});
      CHECK(p.ops[b0[0]].bytes == 303'575'040.0 * 4);
    } else {
      CHECK(p.ops[b0[0]].deps == std::vector<std::uint32_t>{last_compute(0)});
    }
    if (overlap) {
      // Stage 1's single bucket waits for all its gradients: the LM head's wgrad and the 16
      // layers' input-norm backward of micro-batch 3 (layer 16's last), not for the send.
      const auto& deps = p.ops[b1[0]].deps;
      CHECK(deps.size() == 17);
      CHECK(std::count_if(deps.begin(), deps.end(), [&](std::uint32_t d) { return p.ops[d].name == "lm-head-wgrad"; }) == 1);
      CHECK(p.ops[last_compute(1)].name == "send-grad");
      CHECK_FALSE(has_dep(p.ops[b1[0]], last_compute(1)));
    } else {
      CHECK(p.ops[b1[0]].deps == std::vector<std::uint32_t>{last_compute(1)});
    }
  }
}

TEST_CASE("training: overlap_param_gather dispatches the next bucket's gather when a bucket is first used", "[training-structure]") {
  // Llama-2-7B, t = 2, p = 1, dp = 4, ZeRO-1, overlap_grad_reduce, 300M buckets. Buckets in
  // creation (reverse) order: {LM head, 31, 30} (65,538,048 + 202,383,360 = 267,921,408 < 300M,
  // + layer 29 → 369,113,088), ... The forward uses them in the opposite order: the first
  // gather (the bucket holding the embedding) has no dependency (dispatched at the step's
  // start), every later gather waits for the previous gather (and the op before the first use
  // of the previous bucket); every gather's bytes are the padded bucket · 2 B.
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(2, 1, 4);
  s.zero_stage = 1;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  s.bucket_params = 300'000'000;
  const Program p = build(m, training("llama-2-7b", 1, 1024, 8), s);
  const auto gathers = select(p, collective(ParallelDim::DP, Collective::AllGather));
  const auto reduces = select(p, collective(ParallelDim::DP, Collective::ReduceScatter));
  REQUIRE(gathers.size() == reduces.size());
  REQUIRE(gathers.size() > 2);
  CHECK(p.ops[gathers[0]].deps.empty());
  for (std::size_t k = 1; k < gathers.size(); ++k) {
    CHECK(p.ops[gathers[k]].deps.size() == 2);
    CHECK(p.ops[gathers[k]].deps[0] == gathers[k - 1]);
  }
  // Bytes: ReduceScatters carry fp32 gradients (4 B), the gathers bf16 parameters (2 B), of the
  // same padded buckets: total gather bytes = total reduce bytes / 2.
  CHECK(total_bytes(p, gathers) * 2 == total_bytes(p, reduces));
  // The embedding waits for the first gather in micro-batch 0 only.
  int waiting = 0;
  for (const auto& op : p.ops) waiting += has_dep(op, gathers[0]) && op.kind != ProgramOpKind::Collective ? 1 : 0;
  CHECK(waiting >= 1);
}

// ---------------------------------------------------------------------------------------------
// Costs outside the layers

TEST_CASE("training: cross entropy, embedding weight gradient, grad norm and zeroing, by hand", "[training-structure]") {
  // Llama-3-8B (h 4096, V 128,256), TP2 DP2, ZeRO-1, bf16 (e = 2), fp32 gradients (e_grad = 4),
  // 2 micro-batches of 1 × 1024 tokens. Per micro-batch on this rank: logits 1024 × 128,256/2 =
  // 1024 × 64,128; cross entropy 38 B per logit forward, 14 backward (Megatron-Core
  // VocabParallelCrossEntropy: cast, max, subtract, exp, sum, divide; gradient in place, cast
  // back). Embedding backward: its output gradient (1024·4096·2 B) and the (V/2) × h weight
  // gradient zero-filled in bf16 (2) and added to the fp32 main grad (4 + 2 + 4): 12 B per element.
  const TransformerConfig m = load_transformer("llama-3-8b");
  StrategySpec s = strategy(2, 1, 2);
  s.zero_stage = 1;
  const Program p = build(m, training("llama-3-8b", 1, 1024, 4), s);
  const double logits = 1024.0 * 64128.0;
  for (int mb : {0, 1}) {
    CHECK(p.ops[find_op(p, -1, Pass::Forward, mb, "cross-entropy")].bytes == 38.0 * logits);
    CHECK(p.ops[find_op(p, -1, Pass::Backward, mb, "cross-entropy")].bytes == 14.0 * logits);
    CHECK(p.ops[find_op(p, -1, Pass::Backward, mb, "embedding")].bytes == 1024.0 * 4096 * 2 + 64128.0 * 4096 * 12);
    // The forward embedding still reads only the looked-up rows.
    CHECK(p.ops[find_op(p, -1, Pass::Forward, mb, "embedding")].bytes == 1024.0 * 4096 * 2);
  }
  // Per step: grad-norm (4 B per parameter of the rank's shard) -> Adam (30 B) -> zeroing of the
  // whole local fp32 gradient buffer (4 B per local parameter = the shard × DP 2).
  const std::uint32_t norm = find_op(p, -1, Pass::Optimizer, -1, "grad-norm");
  const std::uint32_t adam = find_op(p, -1, Pass::Optimizer, -1, "optimizer");
  const std::uint32_t zero = find_op(p, -1, Pass::Optimizer, -1, "zero-grad");
  const double shard = p.ops[adam].bytes / 30.0;
  CHECK(shard > 8.03e9 / 2 / 2 * 0.99);  // about a quarter of Llama-3-8B's 8.03 B parameters
  CHECK(p.ops[norm].bytes == Approx(4.0 * shard).epsilon(1e-12));
  CHECK(p.ops[zero].bytes == Approx(4.0 * 2 * shard).epsilon(1e-12));
  CHECK(has_dep(p.ops[adam], norm));
  CHECK(has_dep(p.ops[zero], adam));
  // Training writes no KV cache.
  for (const ProgramOp& op : p.ops) CHECK(op.name != "kv-cache-write");
}

TEST_CASE("inference: vLLM's KV-cache write per layer, between the QKV GEMM and the attention", "[training-structure]") {
  // Llama-3.1-8B decode, batch 4, TP2: each rank writes its 8/2 KV heads of the 4 new tokens:
  // 2 (read the QKV output, write the cache slot) × 4 tokens × 2·8·128·2 B × 4/8 = 16,384 B.
  const TransformerConfig m = load_transformer("llama-3.1-8b");
  const Program p = build(m, decode("llama-3.1-8b", 4), strategy(2, 1, 1));
  const std::vector<std::string> got = names(p, 0, 5, Pass::Forward, 0);
  const auto at = std::find(got.begin(), got.end(), "kv-cache-write");
  REQUIRE(at != got.end());
  CHECK(*(at - 1) == "qkv");
  CHECK(*(at + 1) == "attention");
  CHECK(p.ops[find_op(p, 5, Pass::Forward, 0, "kv-cache-write")].bytes == 16384.0);
  CHECK(std::count(got.begin(), got.end(), "kv-cache-write") == 1);
}
