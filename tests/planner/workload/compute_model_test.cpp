// The compute model of `ccsim run` (planner::estimate_compute, scenarios/calibration/compute.yaml):
// GEMM tile / wave / k-loop quantization, HBM traffic, FlashAttention efficiency, per-kernel
// overhead, the SMs that communication kernels take, the calibration table's rules, and the
// per-layer efficiency of a small and a large Megatron model against Narayanan et al. (SC'21).

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "models/scenario/scenario.hpp"
#include "models/workload/program_builder.hpp"
#include "planner/workload/workload_runner.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::ProgramOp;
using models::ProgramOpKind;
using planner::ComputeBound;
using planner::ComputeCalibration;
using planner::estimate_compute;

namespace {

/// An H100-SXM5-like GPU: 132 SMs, 989 TFLOP/s BF16, 3.35 TB/s.
models::GpuSpec h100() {
  models::GpuSpec g;
  g.name = "test-h100";
  g.sms = 132;
  g.bf16_flops = 989e12;
  g.fp8_flops = 1979e12;
  g.hbm_bandwidth = 3.35e12;
  return g;
}

/// Round constants so the hand computations stay short.
ComputeCalibration calibration() {
  ComputeCalibration c;
  c.gemm_efficiency = 0.8;
  c.gemm_tile_m = 128;
  c.gemm_tile_n = 256;
  c.gemm_k_overhead = 128;
  c.attention_efficiency = 0.663;
  c.attention_backward_efficiency = 0.582;
  c.attention_seq_half = 207;
  c.attention_backward_seq_half = 420;
  c.attention_tile_m = 128;
  c.memory_efficiency = 0.8;
  c.kernel_overhead = 2e-6;
  return c;
}

ProgramOp gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
  ProgramOp op;
  op.kind = ProgramOpKind::Gemm;
  op.name = "gemm";
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  return op;
}

// One 128x256 tile with k = 4096 on one SM: 2·128·256·4096 = 268,435,456 FLOPs at
// 989e12/132 · 0.8 · 4096/(4096 + 128) FLOP/s = 5.812e12 -> 46.185 us.
constexpr double kTile4096 = 2.0 * 128 * 256 * 4096 / (989e12 / 132 * 0.8 * 4096.0 / 4224.0);

}  // namespace

TEST_CASE("compute model: a full-wave GEMM runs at gemm_efficiency times the k-loop efficiency", "[compute]") {
  // m = 1536 = 12·128, n = 2816 = 11·256: 12·11 = 132 tiles = one wave on 132 SMs (the
  // transposed 256x128 tile gives 6·22 = 132 too). math = one tile's time = 46.185 us, which is
  // also FLOPs / (peak · 0.8 · 4096/4224) since no SM idles.
  const auto e = estimate_compute(gemm(1536, 2816, 4096), h100(), calibration(), "bf16");
  CHECK(e.waves == 1);
  CHECK(e.math == Approx(kTile4096).epsilon(1e-12));
  CHECK(e.math == Approx(2.0 * 1536 * 2816 * 4096 / (989e12 * 0.8 * 4096.0 / 4224.0)).epsilon(1e-12));
  // bytes = (m·k + k·n + m·n)·2 = (6,291,456 + 11,534,336 + 4,325,376)·2 = 44,302,336
  // -> 44,302,336 / (3.35e12 · 0.8) = 16.53 us < math: math-bound.
  CHECK(e.bytes == 44'302'336.0);
  CHECK(e.memory == Approx(44'302'336.0 / (3.35e12 * 0.8)).epsilon(1e-12));
  CHECK(e.bound == ComputeBound::Math);
  CHECK(e.time == Approx(kTile4096 + 2e-6).epsilon(1e-12));
  CHECK(e.efficiency == Approx(2.0 * 1536 * 2816 * 4096 / (e.time * 989e12)).epsilon(1e-12));
}

TEST_CASE("compute model: a partial last wave costs a full wave", "[compute]") {
  // n = 3072 = 12·256: 12·12 = 144 tiles (transposed: 6·24 = 144) -> ceil(144/132) = 2 waves,
  // twice the full-wave time for 144/132 of its FLOPs: efficiency × 144/264.
  const auto full = estimate_compute(gemm(1536, 2816, 4096), h100(), calibration(), "bf16");
  const auto partial = estimate_compute(gemm(1536, 3072, 4096), h100(), calibration(), "bf16");
  CHECK(partial.waves == 2);
  CHECK(partial.math == Approx(2 * kTile4096).epsilon(1e-12));
  const double full_rate = full.math > 0 ? 2.0 * 1536 * 2816 * 4096 / full.math : 0;
  const double partial_rate = 2.0 * 1536 * 3072 * 4096 / partial.math;
  CHECK(partial_rate / full_rate == Approx(144.0 / 264.0).epsilon(1e-12));
  // Tile quantization: m = 1537 needs a 13th row of tiles (13·11 = 143, transposed 7·22 = 154),
  // also 2 waves, for one row more.
  CHECK(estimate_compute(gemm(1537, 2816, 4096), h100(), calibration(), "bf16").math == Approx(2 * kTile4096).epsilon(1e-12));
}

TEST_CASE("compute model: small k loses the k-loop prologue and epilogue", "[compute]") {
  // k = 512: k-loop efficiency 512/(512 + 128) = 0.8 against 4096/4224 = 0.9697 at k = 4096.
  // math = 2·128·256·512 / (989e12/132 · 0.8 · 0.8) = 7.0 us; bytes = (1536·512 + 512·2816 +
  // 1536·2816)·2 = 13,107,200 -> 4.89 us: still math-bound.
  const auto e = estimate_compute(gemm(1536, 2816, 512), h100(), calibration(), "bf16");
  CHECK(e.math == Approx(2.0 * 128 * 256 * 512 / (989e12 / 132 * 0.8 * 0.8)).epsilon(1e-12));
  CHECK(e.bound == ComputeBound::Math);
  CHECK(e.bytes == 13'107'200.0);
  const auto big = estimate_compute(gemm(1536, 2816, 4096), h100(), calibration(), "bf16");
  // Achieved math rate ratio = k-loop efficiency ratio 0.8 / (4096/4224).
  CHECK((2.0 * 1536 * 2816 * 512 / e.math) / (2.0 * 1536 * 2816 * 4096 / big.math) == Approx(0.8 / (4096.0 / 4224.0)).epsilon(1e-12));
}

TEST_CASE("compute model: a decode GEMM is bound by reading its weights", "[compute]") {
  // 8 tokens through an 4096 -> 28672 projection (Llama-3-8B gate+up at TP1):
  // bytes = (8·4096 + 4096·28672 + 8·28672)·2 = 235,405,312 -> / (3.35e12 · 0.8) = 87.84 us.
  // math: ceil(8/128)·28672/256 = 112 tiles, one wave: 46.19 us < memory. FP8 halves the bytes.
  const auto e = estimate_compute(gemm(8, 28672, 4096), h100(), calibration(), "bf16");
  CHECK(e.bytes == 235'405'312.0);
  CHECK(e.memory == Approx(235'405'312.0 / (3.35e12 * 0.8)).epsilon(1e-12));
  CHECK(e.math == Approx(kTile4096).epsilon(1e-12));
  CHECK(e.bound == ComputeBound::Memory);
  CHECK(e.time == Approx(235'405'312.0 / (3.35e12 * 0.8) + 2e-6).epsilon(1e-12));
  const auto f = estimate_compute(gemm(8, 28672, 4096), h100(), calibration(), "fp8");
  CHECK(f.bytes == 235'405'312.0 / 2);
}

TEST_CASE("compute model: communication kernels beside a GEMM take SMs from its waves", "[compute]") {
  // The one-wave GEMM (132 tiles) with 20 SMs given to userbuffers kernels: ceil(132/112) = 2
  // waves; with 0 it stays one wave.
  ProgramOp op = gemm(1536, 2816, 4096);
  op.comm_sms = 20;
  const auto e = estimate_compute(op, h100(), calibration(), "bf16");
  CHECK(e.waves == 2);
  CHECK(e.math == Approx(2 * kTile4096).epsilon(1e-12));
}

TEST_CASE("compute model: a GEMM with fewer tiles than SMs splits its k loop", "[compute]") {
  // m = 1 (decode), n = 3072, k = 4096: 128x256 tiles: 1·12 = 12; splits 1 .. 4096/256 = 16,
  // time ∝ ceil(12·s/132)·(ceil(4096/s) + 128): s = 11 gives 1·(373 + 128) = 501, the least
  // (s = 16: 2·384 = 768; s = 10: 410 + 128 = 538); math = 2·128·256·501 / (989e12/132 · 0.8) =
  // 5.48 us. (256x128: 24 tiles, best s = 5: 820 + 128 is slower.) Partials: 1·3072·4·2·10 bytes.
  const auto e = estimate_compute(gemm(1, 3072, 4096), h100(), calibration(), "bf16");
  CHECK(e.split_k == 11);
  CHECK(e.waves == 1);
  CHECK(e.math == Approx(2.0 * 128 * 256 * 501 / (989e12 / 132 * 0.8)).epsilon(1e-12));
  CHECK(e.bytes == (1.0 * 4096 + 4096.0 * 3072 + 1.0 * 3072) * 2 + 3072.0 * 4 * 2 * 10);
  CHECK(e.bound == ComputeBound::Memory);  // 25.2 MB of weights: 9.4 us
  // 8 tiles (m = 256, n = 1024): s = 16 -> 128 blocks, one wave, k 256: 2·128·256·384/(rate·0.8);
  // with 20 SMs taken by communication (112 left), s = 16 needs 2 waves (768): s = 14 -> 112
  // blocks, k 293: (293 + 128) = 421.
  ProgramOp small = gemm(256, 1024, 4096);
  CHECK(estimate_compute(small, h100(), calibration(), "bf16").math == Approx(2.0 * 128 * 256 * 384 / (989e12 / 132 * 0.8)).epsilon(1e-12));
  small.comm_sms = 20;
  const auto c = estimate_compute(small, h100(), calibration(), "bf16");
  CHECK(c.split_k == 14);
  CHECK(c.math == Approx(2.0 * 128 * 256 * 421 / (989e12 / 132 * 0.8)).epsilon(1e-12));
}

TEST_CASE("compute model: FlashAttention efficiency falls with short sequences and partial waves", "[compute]") {
  // Forward: m = n = 2048 tokens, head dim 128, batch = 4 sequences × 8 heads = 32.
  // Blocks = ceil(2048/128)·32 = 512 -> ceil(512/132) = 4 waves, fill 512/528.
  // efficiency = 0.663 · 2048/(2048 + 207) · 512/528 = 0.58389; FLOPs = 4·2048·2048·128·32.
  ProgramOp op;
  op.kind = ProgramOpKind::Attention;
  op.name = "attention";
  op.m = 2048;
  op.n = 2048;
  op.k = 128;
  op.batch = 32;
  op.flops = 4.0 * 2048 * 2048 * 128 * 32;
  op.bytes = 4.0 * 2048 * 32 * 128 * 2;  // Q, K, V, O
  const double eff = 0.663 * 2048.0 / (2048.0 + 207.0) * 512.0 / 528.0;
  const auto e = estimate_compute(op, h100(), calibration(), "bf16");
  CHECK(e.waves == 4);
  CHECK(e.math == Approx(op.flops / (989e12 * eff)).epsilon(1e-12));
  CHECK(e.memory == Approx(op.bytes / (3.35e12 * 0.8)).epsilon(1e-12));
  CHECK(e.bound == ComputeBound::Math);
  // Backward: 0.582 · 2048/(2048 + 420) · 512/528.
  op.pass = models::Pass::Backward;
  CHECK(estimate_compute(op, h100(), calibration(), "bf16").math ==
        Approx(op.flops / (989e12 * 0.582 * 2048.0 / 2468.0 * 512.0 / 528.0)).epsilon(1e-12));
  // FP8 training (Transformer Engine, fp8_dpa off by default) runs the attention core in BF16:
  // the same time as with bf16, at the 989 TFLOP/s BF16 peak, not the 1979 FP8 one.
  CHECK(estimate_compute(op, h100(), calibration(), "fp8").math ==
        Approx(op.flops / (989e12 * 0.582 * 2048.0 / 2468.0 * 512.0 / 528.0)).epsilon(1e-12));
  // A 512-token sequence: 0.663 · 512/719 of the peak, fewer blocks: ceil(512/128)·32 = 128, one
  // wave of 132 SMs (fill 128/132).
  op.pass = models::Pass::Forward;
  op.m = op.n = 512;
  op.flops = 4.0 * 512 * 512 * 128 * 32;
  CHECK(estimate_compute(op, h100(), calibration(), "bf16").math ==
        Approx(op.flops / (989e12 * 0.663 * 512.0 / 719.0 * 128.0 / 132.0)).epsilon(1e-12));
  // Decode: one query against 8192 cached keys per (sequence, head) is bound by the KV read.
  op.m = 1;
  op.n = 8192;
  op.batch = 64 * 8;
  op.flops = 4.0 * 8192 * 128 * 64 * 8;
  op.bytes = 2.0 * 8192 * 128 * 2 * 64 * 8;
  const auto d = estimate_compute(op, h100(), calibration(), "bf16");
  CHECK(d.bound == ComputeBound::Memory);
  CHECK(d.time == Approx(op.bytes / (3.35e12 * 0.8) + 2e-6).epsilon(1e-12));
}

TEST_CASE("compute model: element-wise ops by bytes, tiny ops by the kernel overhead", "[compute]") {
  ProgramOp op;
  op.kind = ProgramOpKind::Memory;
  op.name = "norm";
  op.bytes = 64e6;  // 64 MB / 2.68 TB/s = 23.88 us
  auto e = estimate_compute(op, h100(), calibration(), "bf16");
  CHECK(e.time == Approx(64e6 / (3.35e12 * 0.8) + 2e-6).epsilon(1e-12));
  CHECK(e.bound == ComputeBound::Memory);
  op.bytes = 1e3;  // 0.37 ns of traffic < 2 us of launch and fill
  e = estimate_compute(op, h100(), calibration(), "bf16");
  CHECK(e.bound == ComputeBound::Overhead);
  CHECK(e.time == Approx(1e3 / (3.35e12 * 0.8) + 2e-6).epsilon(1e-12));
  // No work, no kernel.
  op.bytes = 0;
  CHECK(estimate_compute(op, h100(), calibration(), "bf16").time == 0);
  // A GPU without an SM count: tiles without waves, 12·11 = 132 tiles at the whole GPU's rate.
  models::GpuSpec g = h100();
  g.sms = 0;
  CHECK(estimate_compute(gemm(1536, 2816, 4096), g, calibration(), "bf16").math ==
        Approx(132 * 2.0 * 128 * 256 * 4096 / (989e12 * 0.8 * 4096.0 / 4224.0)).epsilon(1e-12));
  ProgramOp comm;
  comm.kind = ProgramOpKind::Collective;
  CHECK_THROWS_AS(estimate_compute(comm, h100(), calibration(), "bf16"), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The calibration table

TEST_CASE("compute calibration: the shipped table and the catalog's SM counts", "[compute]") {
  const auto h = ComputeCalibration::load(ComputeCalibration::default_path(), "H100-SXM5");
  CHECK(h.gemm_efficiency == 0.80);  // 794.5 / 989 (MAMF)
  CHECK(h.gemm_tile_m == 128);
  CHECK(h.gemm_tile_n == 256);
  CHECK(h.attention_efficiency == 0.663);
  CHECK(h.kernel_overhead == Approx(2e-6));
  const auto a = ComputeCalibration::load(ComputeCalibration::default_path(), "A100-SXM4-80GB");
  CHECK(a.gemm_efficiency == 0.87);
  CHECK(a.gemm_tile_m == 256);
  const auto d = ComputeCalibration::load(ComputeCalibration::default_path(), "no-such-gpu");
  CHECK(d.gemm_efficiency == 0.7);
  CHECK(d.gemm_tile_n == 128);
  CHECK(!d.source.empty());
  const auto& cat = test::shipped_catalog();
  CHECK(cat.gpu("H100-SXM5").sms == 132);
  CHECK(cat.gpu("H200-SXM").sms == 132);  // inherits through base
  CHECK(cat.gpu("A100-SXM4-40GB").sms == 108);
  CHECK(cat.gpu("MI300X").sms == 304);
  for (const auto& name : cat.gpu_names()) CHECK(cat.gpu(name).sms > 0);
}

TEST_CASE("compute calibration: bad values are input errors", "[compute]") {
  test::TempDir dir;
  // `defaults` must give every constant; `load(change)` writes a complete table with the
  // entries of `change` ("key: value, ...") replacing (or, for an unknown key, added to) them.
  const std::vector<std::pair<std::string, std::string>> complete{
      {"gemm_efficiency", "0.8"},       {"gemm_tile_m", "128"},          {"gemm_tile_n", "256"},
      {"gemm_k_overhead", "128"},       {"gemm_split_k_min", "256"},     {"attention_efficiency", "0.663"},
      {"attention_backward_efficiency", "0.582"}, {"attention_seq_half", "207"}, {"attention_backward_seq_half", "420"},
      {"attention_tile_m", "128"},      {"memory_efficiency", "0.8"},    {"kernel_overhead", "2us"}};
  const auto table = [&](const std::string& change, const std::string& drop = "") {
    auto entries = complete;
    std::size_t pos = 0;
    while (pos < change.size()) {
      const std::size_t comma = change.find(',', pos);
      const std::string item = change.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      const std::size_t colon = item.find(':');
      std::string key = item.substr(0, colon);
      key.erase(0, key.find_first_not_of(' '));
      const std::string value = item.substr(colon + 1);
      bool found = false;
      for (auto& [k, v] : entries)
        if (k == key) {
          v = value;
          found = true;
        }
      if (!found) entries.emplace_back(key, value);
      pos = comma == std::string::npos ? change.size() : comma + 1;
    }
    std::string out;
    for (const auto& [k, v] : entries)
      if (k != drop) out += (out.empty() ? "" : ", ") + k + ": " + v;
    return "defaults: {" + out + "}\n";
  };
  const auto load = [&](const std::string& change) {
    return ComputeCalibration::load(dir.write("c.yaml", table(change)), "H100-SXM5");
  };
  CHECK_NOTHROW(load("gemm_tile_m: 64, gemm_k_overhead: 0, attention_seq_half: 0"));
  // A constant missing from `defaults` is an error naming it (no silent fallback).
  for (const auto& [key, value] : complete) {
    INFO(key);
    try {
      ComputeCalibration::load(dir.write("m.yaml", table("", key)), "H100-SXM5");
      FAIL("no error");
    } catch (const support::InputError& e) {
      CHECK(std::string(e.what()).find("found no '" + key + "' key") != std::string::npos);
    }
  }
  for (const std::string bad :
       {"gemm_efficiency: 1.2", "attention_backward_efficiency: 0", "memory_efficiency: 0.001", "gemm_tile_m: 4",
        "gemm_tile_n: 2048", "attention_tile_m: 7.5", "gemm_k_overhead: -1", "gemm_k_overhead: 1e6", "attention_seq_half: -5",
        "attention_backward_seq_half: 2e6", "kernel_overhead: 2ms", "gemm_split_k_min: -1", "gemm_tiles: 128", "sms: 100"}) {
    INFO(bad);
    CHECK_THROWS_AS(load(bad), support::InputError);
  }
  // The message names the key and what was expected.
  try {
    load("gemm_k_overhead: -1");
    FAIL("no error");
  } catch (const support::InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("defaults.gemm_k_overhead") != std::string::npos);
    CHECK(what.find("[0, 65536]") != std::string::npos);
  }
  // A per-GPU entry overrides the defaults for that GPU only.
  const auto file = dir.write("g.yaml", table("gemm_tile_m: 128") + "gpus: {H100-SXM5: {gemm_tile_m: 64}}\n");
  CHECK(ComputeCalibration::load(file, "H100-SXM5").gemm_tile_m == 64);
  CHECK(ComputeCalibration::load(file, "A100-SXM4-80GB").gemm_tile_m == 128);
}

// ---------------------------------------------------------------------------------------------
// Efficiency per layer, small model at TP1 against a large one at TP8

namespace {

/// GPT layer of Narayanan et al. SC'21 Table 1 (GELU MLP 4h, vocab 51,200, seq 2048).
models::TransformerConfig gpt(int layers, std::int64_t hidden, int heads) {
  models::TransformerConfig m;
  m.name = "gpt-sc21";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = static_cast<int>(hidden / heads);
  m.intermediate = 4 * hidden;
  m.vocab = 51200;
  m.gated_mlp = false;
  return m;
}

struct LayerEfficiency {
  double model = 0;  ///< hardware FLOPs / (time · peak) of layer 0, micro-batch 0 (forward, recompute, backward)
  double old = 0;    ///< the same with a fixed-fraction roofline: max(FLOPs/(peak·0.7 or 0.5), bytes/(HBM·0.8))
};

LayerEfficiency layer_efficiency(const models::TransformerConfig& m, int tp, std::int64_t micro_batch, const std::string& gpu_name) {
  models::WorkloadSpec w;
  w.sequence_length = 2048;
  w.micro_batch_size = micro_batch;
  w.global_batch_size = micro_batch;
  w.recompute = "full";  // SC'21 trains with activation recomputation (its FLOPs count 4 passes: 96·B·s·l·h²)
  models::StrategySpec s;
  s.tp = tp;
  s.sequence_parallel = false;
  const models::Program p = models::build_program(m, w, s);
  const models::GpuSpec gpu = test::shipped_catalog().gpu(gpu_name);
  const ComputeCalibration c = ComputeCalibration::load(ComputeCalibration::default_path(), gpu_name);
  double flops = 0, time = 0, old = 0;
  for (const auto& op : p.ops) {
    if (op.layer != 0 || op.micro_batch != 0) continue;
    if (op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv) continue;
    flops += op.flops;
    time += estimate_compute(op, gpu, c, "bf16").time;
    const double eff = op.kind == ProgramOpKind::Gemm ? 0.7 : 0.5;
    old += std::max(op.flops / (gpu.bf16_flops * eff), op.bytes / (gpu.hbm_bandwidth * 0.8));
  }
  return {flops / (time * gpu.bf16_flops), flops / (old * gpu.bf16_flops)};
}

}  // namespace

TEST_CASE("compute model: a 1.7B layer at TP1 is less efficient than a 145.6B layer at TP8 (SC'21 Table 1)", "[compute]") {
  // Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
  // Megatron-LM" (SC'21), Table 1, A100 SXM4 80GB, seq 2048, activation recomputation:
  //   1.7B: 24 layers, h 2304, 24 heads, TP1 PP1, 137 TFLOP/s per GPU = 44 % of 312;
  //   145.6B: 80 layers, h 12288, 96 heads, TP8 PP8, 148 TFLOP/s = 47 %.
  // Those figures include everything outside the layers (DP and PP communication, bubble,
  // optimizer), so a layer's compute efficiency must be at least the published one; the small
  // model's published deficit (44 vs 47 %) must show in the layers, which a fixed-fraction
  // roofline cannot do (it gives both about the same: the small one 1.39x too fast).
  // Micro-batch sizes are not in the table; both 1 and 4 sequences are checked.
  for (const std::int64_t mb : {1, 4}) {
    INFO("micro-batch " << mb);
    const LayerEfficiency small = layer_efficiency(gpt(24, 2304, 24), 1, mb, "A100-SXM4-80GB");
    const LayerEfficiency large = layer_efficiency(gpt(80, 12288, 96), 8, mb, "A100-SXM4-80GB");
    INFO("1.7B TP1 layer: " << small.model << " (old " << small.old << "); 145.6B TP8 layer: " << large.model << " (old " << large.old
                            << ")");
    // Budget: a layer reaches at least the published whole-step figure and at most 30 points
    // more (the model gives 0.58 and 0.69 at micro-batch 1).
    CHECK(small.model >= 0.44);
    CHECK(small.model <= 0.44 + 0.30);
    CHECK(large.model >= 0.47);
    CHECK(large.model <= 0.47 + 0.30);
    // The small model's deficit: published 44/47 = 0.936 for the whole step. With separate
    // dgrad and wgrad GEMMs (each paying its own waves and kernel overhead) the layers give
    // 0.84 (mb 1) and about 0.87 (mb 4); the whole simulated steps of the e2e rows sc21-1.7b and
    // sc21-145.6b (tests/data/e2e) give 173 / 178 TFLOP/s = 0.97. Budget: the small layer is
    // less efficient, by at most 20 %.
    CHECK(small.model / large.model < 1.0);
    CHECK(small.model / large.model >= 0.80);
  }
}

TEST_CASE("compute model: a GPU derived with base: takes its base's compute constants", "[compute]") {
  // {base: H100-SXM5, name: H100-SXM5-halfspeed, bf16_flops: 494TFLOPS}: a half-speed H100 that
  // scenarios/calibration/compute.yaml does not name. It has H100-SXM5's tiles and
  // efficiencies (gemm 0.80, 128x256 tiles, attention 0.663), not the table's defaults, as a
  // derived link kind takes its base's link efficiencies.
  const YAML::Node node = YAML::Load("{base: dgx-h100, gpu: {base: H100-SXM5, name: H100-SXM5-halfspeed, bf16_flops: 494TFLOPS}}");
  const models::NodeSpec spec = test::shipped_catalog().node(support::YamlSource{node, nullptr}, "node");
  CHECK(spec.gpu.name == "H100-SXM5-halfspeed");
  CHECK(spec.gpu.bf16_flops == Approx(494e12));
  CHECK(spec.gpu.kind_names() == std::vector<std::string>{"H100-SXM5-halfspeed", "H100-SXM5"});
  const std::string table = planner::ComputeCalibration::default_path();
  const planner::ComputeCalibration derived = planner::ComputeCalibration::load(table, spec.gpu.kind_names());
  const planner::ComputeCalibration h100 = planner::ComputeCalibration::load(table, "H100-SXM5");
  const planner::ComputeCalibration by_name = planner::ComputeCalibration::load(table, "H100-SXM5-halfspeed");
  CHECK(derived.gemm_efficiency == h100.gemm_efficiency);
  CHECK(derived.gemm_tile_n == 256);
  CHECK(derived.attention_efficiency == h100.attention_efficiency);
  // The name alone finds no entry: the defaults, which differ from the H100's.
  CHECK(by_name.gemm_tile_n != derived.gemm_tile_n);
}
