// Recomputation (Megatron-LM --recompute-granularity / --recompute-method /
// --recompute-num-layers / --recompute-modules), the activation memory tensor by tensor, and
// Megatron-Core's interleaved schedule with any micro-batch count
// (microbatch_group_size_per_vp_stage). Expected values are computed by hand in the comments.

#include <map>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "models/scenario/scenario.hpp"
#include "models/scenario/effective_yaml.hpp"
#include "test_support.hpp"
#include "workload_support.hpp"

using namespace ccsim::models;
using namespace ccsim::test::workload;

namespace {

std::string layout_key(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const auto p = check_layout(m, w, s);
  return p ? p->section + "." + p->key : std::string("ok");
}

StrategySpec interleaved(int tp, int pp, int dp, int v, int group) {
  StrategySpec s = strategy(tp, pp, dp);
  s.pipeline_schedule = "interleaved";
  s.virtual_stages = v;
  s.microbatch_group_size_per_vp_stage = group;
  return s;
}

std::string text(const std::vector<PipelineSlot>& order) {
  std::string out;
  for (const auto& slot : order) {
    out += (slot.forward ? "F" : "B") + std::to_string(slot.micro_batch) + "." + std::to_string(slot.chunk) + " ";
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Per-layer activation bytes

TEST_CASE("layer_activation_bytes: Llama-2-7B tensor by tensor", "[workload][recompute]") {
  // h = 4096, a = kv = 32 heads of d = 128, I = 11008 (SwiGLU), no dropout; t = 2, s = 4096,
  // b = 1, bf16 (e = 2). Per token, elements:
  //   norm inputs 2·h/sp, norm outputs (QKV and fc1 inputs) 2·h/sp,
  //   Q, K, V, O = 4 · (32/2)·128 = 8192, SwiGLU input 2·11008/2 = 11008, fc2 input 5504;
  //   plus the fp32 log-sum-exp (32/2)·4 = 64 bytes.
  // No SP: (4·4096 + 8192 + 16512)·2 + 64 = 82,240 B/token → ×4096 = 336,855,040.
  // SP:    (4·2048 + 8192 + 16512)·2 + 64 = 65,856 B/token → ×4096 = 269,746,176.
  // Selective core_attn (SP): without the 64 B → 65,792·4096 = 269,484,032.
  // Selective layernorm + mlp (SP): without both norm outputs and the MLP's two:
  //   (2·2048 + 8192)·2 + 64 = 24,640 → ×4096 = 100,925,440.
  // Full: the layer input only, 4096·4096·2 = 33,554,432 (SP: /2 = 16,777,216).
  const TransformerConfig m = load_transformer("llama-2-7b");
  WorkloadSpec w = training("llama-2-7b", 1, 4096, 8);
  StrategySpec s = strategy(2, 2, 2);
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::None) == 336'855'040.0);
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::Full) == 33'554'432.0);
  s.sequence_parallel = true;
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::None) == 269'746'176.0);
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::Full) == 16'777'216.0);
  CHECK(layer_input_bytes(m, w, s) == 16'777'216.0);
  w.recompute = "selective";
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::Selective) == 269'484'032.0);
  w.recompute_modules = {"layernorm", "mlp"};
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::Selective) == 100'925'440.0);
  // Micro-batch 2 and CP 2 cancel (tokens per GPU (s/cp)·b unchanged).
  w.recompute_modules = {"core_attn"};
  w.micro_batch_size = 2;
  s.cp = 2;
  CHECK(layer_activation_bytes(m, w, s, 5, LayerRecompute::Selective) == 269'484'032.0);
}

TEST_CASE("layer_activation_bytes: a GPT-3 layer gives Korthikanti's 34·s·b·h/t with SP, s·b·h·(10 + 24/t) without",
          "[workload][recompute]") {
  // GPT-3 175B: h = 12288, a = kv = 96, d = 128, GELU with I = 4h, dropout masks. Korthikanti
  // et al. 2022 eq. 2 (no SP) and eq. 4 (SP) without the 5·a·s²·b/t term that FlashAttention
  // does not store; FlashAttention adds its fp32 log-sum-exp, 4·s·b·a/t bytes.
  // t = 8, s = 2048, b = 1:
  //   SP:    34·2048·12288/8 + 4·2048·96/8 = 106,954,752 + 98,304 = 107,053,056
  //   no SP: 2048·12288·(10 + 3) + 98,304 = 327,155,712 + 98,304 = 327,254,016
  const TransformerConfig m = load_transformer("gpt3-175b");
  REQUIRE(m.hidden == 12288);
  REQUIRE(m.intermediate == 4 * m.hidden);
  REQUIRE_FALSE(m.gated_mlp);
  const WorkloadSpec w = training("gpt3-175b", 1, 2048, 0);
  StrategySpec s = strategy(8, 1, 1);
  CHECK(layer_activation_bytes(m, w, s, 0, LayerRecompute::None) == 327'254'016.0);
  s.sequence_parallel = true;
  CHECK(layer_activation_bytes(m, w, s, 0, LayerRecompute::None) == 107'053'056.0);
  // The same closed forms for other t and s.
  for (int t : {1, 2, 4, 8}) {
    for (double seq : {1024.0, 4096.0}) {
      const WorkloadSpec ws = training("gpt3-175b", 1, static_cast<std::int64_t>(seq), 0);
      StrategySpec st = strategy(t, 1, 1);
      const double h = 12288, a = 96, lse = 4 * seq * a / t;
      CHECK(layer_activation_bytes(m, ws, st, 0, LayerRecompute::None) == Approx(seq * h * (10 + 24.0 / t) + lse));
      if (t > 1) {
        st.sequence_parallel = true;
        CHECK(layer_activation_bytes(m, ws, st, 0, LayerRecompute::None) == Approx(34 * seq * h / t + lse));
      }
    }
  }
}

TEST_CASE("layer_activation_bytes: GQA's K and V are smaller than Q; selective stores less than none", "[workload][recompute]") {
  // Llama-3.1-405B at t = 8, SP, s = 8192: per token elements 4·16384/8 = 8192 (norms),
  // Q = O = 16·128 = 2048 each, K = V = (8/8)·128 = 128 each, SwiGLU 2·53248/8 = 13312,
  // fc2 6656 → 32,512 elements = 65,024 B + log-sum-exp 16·4 = 64 → 65,088 B/token
  // → ×8192 = 533,200,896 B per layer per micro-batch. Selective core_attn: 65,024·8192 =
  // 532,676,608. Full: 2048·2·8192 = 33,554,432.
  const TransformerConfig m = load_transformer("llama-3.1-405b");
  WorkloadSpec w = training("llama-3.1-405b", 1, 8192, 0);
  StrategySpec s = strategy(8, 16, 64);
  s.sequence_parallel = true;
  CHECK(layer_activation_bytes(m, w, s, 10, LayerRecompute::None) == 533'200'896.0);
  w.recompute = "selective";
  CHECK(layer_activation_bytes(m, w, s, 10, LayerRecompute::Selective) == 532'676'608.0);
  CHECK(layer_activation_bytes(m, w, s, 10, LayerRecompute::Full) == 33'554'432.0);
  // Mixtral (MoE, k = 2 of 8 experts, I_e = 14336, h = 4096, 8 KV heads) at t = 2, SP, s = 4096:
  // routed copies 2·(2048 + 2·14336/2 + 14336/2) = 2·23552 = 47,104 elements per token;
  // attention and norms: 4·2048 + Q, O 16·128 = 2048 each + K, V 4·128 = 512 each → 13,312;
  // total 60,416·2 + 64 = 120,896 B/token → ×4096 = 495,190,016. moe_act drops the fc2 inputs
  // 2·7168: (60,416 − 14,336)·2 + 64 = 92,224 → 377,749,504.
  const TransformerConfig mix = load_transformer("mixtral-8x7b");
  WorkloadSpec wm = training("mixtral-8x7b", 1, 4096, 0);
  StrategySpec sm = strategy(2, 1, 4);
  sm.sequence_parallel = true;
  CHECK(layer_activation_bytes(mix, wm, sm, 0, LayerRecompute::None) == 495'190'016.0);
  wm.recompute = "selective";
  wm.recompute_modules = {"moe_act"};
  CHECK(layer_activation_bytes(mix, wm, sm, 0, LayerRecompute::Selective) == 377'749'504.0);
}

// ---------------------------------------------------------------------------------------------
// recompute_plan

TEST_CASE("recompute_plan: uniform recomputes every layer, block the first N of each model chunk", "[workload][recompute]") {
  const TransformerConfig m = load_transformer("llama-2-7b");  // 32 layers
  WorkloadSpec w = training("llama-2-7b", 1, 128, 8);
  StrategySpec s = interleaved(1, 2, 1, 2, 0);  // 4 model chunks of 8 layers
  CHECK(recompute_plan(m, w, s) == std::vector<LayerRecompute>(32, LayerRecompute::None));
  w.recompute = "selective";
  CHECK(recompute_plan(m, w, s) == std::vector<LayerRecompute>(32, LayerRecompute::Selective));
  w.recompute = "full";
  w.recompute_num_layers = 2;
  CHECK(recompute_plan(m, w, s) == std::vector<LayerRecompute>(32, LayerRecompute::Full));
  w.recompute_method = "block";
  // Chunks [0,8) [8,16) [16,24) [24,32): layers 0, 1, 8, 9, 16, 17, 24, 25 recomputed.
  const auto plan = recompute_plan(m, w, s);
  for (int l = 0; l < 32; ++l) {
    INFO("layer " << l);
    CHECK(plan[static_cast<std::size_t>(l)] == (l % 8 < 2 ? LayerRecompute::Full : LayerRecompute::None));
  }
  // Block recomputation shows in the Program: recompute ops of 8 layers per micro-batch
  // (the 8 "qkv" recomputations per micro-batch on 8 layers).
  const Program p = build(m, w, s);
  std::set<int> recomputed;
  int ops = 0;
  for (const auto& op : p.ops)
    if (op.pass == Pass::Recompute && op.name == "qkv") {
      recomputed.insert(op.layer);
      ++ops;
    }
  CHECK(recomputed == std::set<int>{0, 1, 8, 9, 16, 17, 24, 25});
  CHECK(ops == 8 * 8);  // 8 layers × 8 micro-batches (global 8, dp 1)
}

TEST_CASE("selective recomputation reruns each listed module before its backward", "[workload][recompute]") {
  // Llama-2-7B (dense, SwiGLU: h 4096, I 11008), TP2 with SP, 1 sequence of 128 tokens, 8
  // micro-batches on one stage (global 8, dp 1): 32 layers × 8 micro-batches = 256 layer
  // backwards. Per layer backward the recompute ops are:
  //   core_attn: 1 attention; mlp: mlp-up + activation + mlp-down forward (2 GEMMs of
  //   2·T·h·(2I/t) and 2·T·(I/t)·h FLOPs) plus the SP AllGather and ReduceScatter of the
  //   MLP's input and output; layernorm: 2 norms.
  const TransformerConfig m = load_transformer("llama-2-7b");
  WorkloadSpec w = training("llama-2-7b", 1, 128, 8);
  StrategySpec s = strategy(2, 1, 1);
  s.sequence_parallel = true;
  w.recompute = "selective";
  const auto count = [&](const std::vector<std::string>& modules) {
    w.recompute_modules = modules;
    std::map<std::string, int> n;
    double flops = 0;
    for (const auto& op : build(m, w, s).ops) {
      if (op.pass != Pass::Recompute) continue;
      ++n[op.name];
      flops += op.flops;
    }
    return std::pair{n, flops};
  };
  const auto [attn, attn_flops] = count({"core_attn"});
  CHECK(attn == std::map<std::string, int>{{"attention", 256}});
  const auto [mlp, mlp_flops] = count({"mlp"});
  CHECK(mlp.at("mlp-up") == 256);
  CHECK(mlp.at("mlp-down") == 256);
  CHECK(mlp.at("activation") == 256);
  CHECK(mlp.at("tp-allgather") == 256);
  CHECK(mlp.at("tp-reducescatter") == 256);
  CHECK(mlp.count("attention") == 0);
  // 256 · (2·128·4096·(2·11008/2) + 2·128·(11008/2)·4096) = 256 · 3·2·128·4096·5504 FLOPs.
  CHECK(mlp_flops == Approx(256.0 * 3 * 2 * 128 * 4096 * 5504).epsilon(1e-12));
  const auto [both, both_flops] = count({"core_attn", "mlp"});
  CHECK(both_flops == Approx(attn_flops + mlp_flops).epsilon(1e-12));
  const auto [norms, norm_flops] = count({"layernorm"});
  CHECK(norms == std::map<std::string, int>{{"norm", 512}});
  CHECK(norm_flops == 0);
}

// ---------------------------------------------------------------------------------------------
// memory_footprint: peak activations over the schedule

TEST_CASE("memory_footprint: activations held by 1F1B, with each recomputation, by hand", "[workload][recompute]") {
  // Llama-2-7B, t = 2, p = 2, dp = 2, SP, s = 4096, b = 1, global 8 → m = 4; 16 layers a stage.
  // Per layer (see above): none 269,746,176; full 16,777,216 (the input).
  // Last stage: + final norm and LM head inputs 2·16,777,216 + fp32 logits 4·4096·32000/2 =
  // 262,144,000 → head 295,698,432. 1F1B: stage 0 holds 2 micro-batches at its first backward,
  // stage 1 one; a recomputing backward adds its group's full activations (one micro-batch).
  const TransformerConfig m = load_transformer("llama-2-7b");
  WorkloadSpec w = training("llama-2-7b", 1, 4096, 8);
  StrategySpec s = strategy(2, 2, 2);
  s.sequence_parallel = true;
  const double none = 269'746'176, input = 16'777'216, head = 295'698'432;
  struct Case {
    const char* recompute;
    const char* method;
    int n;
    double stage0, stage1;
  };
  for (const Case c : {
           // none: 2·16·none = 8,631,877,632; 16·none + head = 4,611,637,248
           Case{"none", "uniform", 1, 2 * 16 * none, 16 * none + head},
           // uniform N = 1: 2·16·input + none = 806,617,088; 16·input + head + none = 833,880,064
           Case{"full", "uniform", 1, 2 * 16 * input + none, 16 * input + head + none},
           // uniform N = 4: 4 groups → 4 inputs per micro-batch; working 4 layers:
           // 2·4·input + 4·none = 1,213,202,432
           Case{"full", "uniform", 4, 2 * 4 * input + 4 * none, 4 * input + head + 4 * none},
           // uniform N = 3: groups 3,3,3,3,3,1 → 6 inputs; working 3 layers
           Case{"full", "uniform", 3, 2 * 6 * input + 3 * none, 6 * input + head + 3 * none},
           // block N = 4: 4 inputs + 12 full layers per micro-batch; working 1 layer:
           // 2·(4·input + 12·none) + none = 6,877,872,128
           Case{"full", "block", 4, 2 * (4 * input + 12 * none) + none, 4 * input + 12 * none + head + none},
       }) {
    INFO(c.recompute << " " << c.method << " " << c.n);
    w.recompute = c.recompute;
    w.recompute_method = c.method;
    w.recompute_num_layers = c.n;
    REQUIRE_FALSE(check_layout(m, w, s));
    const auto f = memory_footprint(m, w, s);
    REQUIRE(f.size() == 2);
    CHECK(f[0].activations == Approx(c.stage0).epsilon(1e-12));
    CHECK(f[1].activations == Approx(c.stage1).epsilon(1e-12));
  }
  CHECK(2 * 16 * none == 8'631'877'632.0);
  CHECK(2 * 16 * input + none == 806'617'088.0);
  // Selective (core attention) stores less than none, by the log-sum-exp 64 B/token.
  w.recompute = "selective";
  const auto sel = memory_footprint(m, w, s);
  CHECK(sel[0].activations == 2 * 16 * (none - 64.0 * 4096));
}

TEST_CASE("memory_footprint: the interleaved schedule holds 1 + (p − 1)/(p·v) times 1F1B's on stage 0", "[workload][recompute]") {
  // Llama-2-7B (32 layers), p = 4, v = 2 → 8 chunks of 4 layers; m = 8. 1F1B stage 0 holds
  // 4 micro-batches × 8 layers = 32 layer-passes; interleaved holds warmup + 1 =
  // (4 − 1)·2 + (2 − 1)·4 + 1 = 11 chunk-passes × 4 layers = 44: 44/32 = 1 + 3/8
  // (Narayanan et al. 2021; Korthikanti et al. 2022 section 4.2.3).
  const TransformerConfig m = load_transformer("llama-2-7b");
  const WorkloadSpec w = training("llama-2-7b", 1, 2048, 8);
  const StrategySpec plain = strategy(1, 4, 1);
  const StrategySpec inter = interleaved(1, 4, 1, 2, 0);
  REQUIRE_FALSE(check_layout(m, w, inter));
  const double layer = layer_activation_bytes(m, w, plain, 1, LayerRecompute::None);
  CHECK(memory_footprint(m, w, plain)[0].activations == Approx(32 * layer));
  CHECK(memory_footprint(m, w, inter)[0].activations == Approx(44 * layer));
  // The flexible order (group 8 = m: one group) at m = 8 holds (3·2 + 8 + 1) = 15 chunk-passes.
  const StrategySpec flexible = interleaved(1, 4, 1, 2, 8);
  REQUIRE_FALSE(check_layout(m, w, flexible));
  CHECK(memory_footprint(m, w, flexible)[0].activations == Approx(60 * layer));
}

TEST_CASE("memory_footprint: Llama-3.1-405B on 8,192 H100 (TP8 PP16 DP64) by hand", "[workload][recompute]") {
  // Llama 3 paper (Dubey et al. 2024) Table 4: 8,192 GPUs, TP 8, CP 1, PP 16, DP 64, seq 8192,
  // 16M tokens per batch → 2048 sequences, micro-batch 1 → m = 32 per DP rank. bf16, ZeRO-1,
  // fp32 main gradients, SP, 1F1B. Stage 1 (layers 7-14, 8 layers; chunk_layers(126, 16)):
  //   parameters per GPU 8·3,187,703,808/8 = 3,187,703,808 (per layer: attention
  //   16384·(16384 + 2·1024) + 16384² = 570,425,344, MLP 3·16384·53248 = 2,617,245,696,
  //   norms 32,768);
  //   weights 2 B/param = 6,375,407,616; gradients 4 B = 12,750,815,232; Adam 12/64 B =
  //   597,694,464; static 19,723,917,312.
  //   Activations, in flight min(16 − 1, 32) = 15 micro-batches:
  //     none: 15·8·533,200,896 = 63,984,107,520 → total 83.7 GB > 80 GB: does not fit;
  //     full uniform N = 1: 15·8·33,554,432 + 533,200,896 = 4,559,732,736 → 24.3 GB;
  //     full block N = 1: 15·(33,554,432 + 7·533,200,896) + 533,200,896 = 57,022,611,456
  //       → total 76,746,528,768 B ≤ 80 GB: fits.
  const TransformerConfig m = load_transformer("llama-3.1-405b");
  WorkloadSpec w = training("llama-3.1-405b", 1, 8192, 2048);
  StrategySpec s = strategy(8, 16, 64);
  s.sequence_parallel = true;
  s.zero_stage = 1;
  REQUIRE(micro_batches(w, s) == 32);
  REQUIRE(chunk_layers(126, 16)[1] == std::pair<int, int>{7, 8});
  auto f = memory_footprint(m, w, s)[1];
  CHECK(f.weights == 6'375'407'616.0);
  CHECK(f.gradients == 12'750'815'232.0);
  CHECK(f.optimizer == Approx(597'694'464.0));
  CHECK(f.activations == 63'984'107'520.0);
  CHECK(f.total() > 80e9);
  w.recompute = "full";
  f = memory_footprint(m, w, s)[1];
  CHECK(f.activations == 4'559'732'736.0);
  w.recompute_method = "block";
  f = memory_footprint(m, w, s)[1];
  CHECK(f.activations == 57'022'611'456.0);
  CHECK(f.total() == Approx(76'746'528'768.0));
  // Every stage fits with block N = 1.
  for (const auto& g : memory_footprint(m, w, s)) {
    INFO("stage " << g.stage);
    CHECK(g.total() <= 80e9);
  }
  // Meta's own setting (gradients sharded over DP like its FSDP, no activation checkpointing):
  // ZeRO-2, stage 1: weights 6,375,407,616 + gradients 4·3,187,703,808/64 = 199,231,488 +
  // Adam 597,694,464 + activations 63,984,107,520 = 71,156,441,088 B: fits under 1F1B.
  w.recompute = "none";
  w.recompute_method = "uniform";
  s.zero_stage = 2;
  CHECK(memory_footprint(m, w, s)[1].total() == Approx(71'156'441'088.0));
  for (const auto& g : memory_footprint(m, w, s)) {
    INFO("stage " << g.stage);
    CHECK(g.total() <= 80e9);
  }
}

// ---------------------------------------------------------------------------------------------
// Megatron-Core's interleaved schedule with any number of micro-batches

TEST_CASE("pipeline_order: Megatron's schedule table, PP2 N3 M5 VP2 (the example in schedules.py)", "[workload][pipeline]") {
  // get_schedule_table(5, 2, 3): virtual id 0..9 → micro-batch 0 1 2 0 1 2 3 4 3 4,
  // chunk 0 0 0 1 1 1 0 0 1 1. Stage 1: warmup (2 − 1 − 1)·2 + (2 − 1)·3 = 3 forwards, then
  // 7 (F, B) pairs (forward k + 3, backward k: the table's micro-batch, chunk 1 − chunk), then
  // 3 backwards.
  const auto order = pipeline_order(1, 2, 5, 2, 3);
  CHECK(text(order) ==
        "F0.0 F1.0 F2.0 "
        "F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.0 B0.0 F4.0 B1.0 F3.1 B2.0 F4.1 B3.1 "
        "B4.1 B3.0 B4.0 ");
}

TEST_CASE("pipeline_order: interleaved pp = 4, v = 2, m = 6 in one group of 6, by hand", "[workload][pipeline]") {
  // Table (one group, since 0 + 6 ≥ 6): k = 0..5 → (k, chunk 0), k = 6..11 → (k − 6, chunk 1).
  // Warmup of stage i: (4 − i − 1)·2 + 6, at most 12.
  CHECK(text(pipeline_order(3, 4, 6, 2, 6)) ==
        "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 "                                  // warmup 6
        "F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.1 B4.1 F5.1 B5.1 "    // 6 pairs
        "B0.0 B1.0 B2.0 B3.0 B4.0 B5.0 ");                                // cooldown
  CHECK(text(pipeline_order(2, 4, 6, 2, 6)) ==
        "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 F1.1 "                        // warmup 8
        "F2.1 B0.1 F3.1 B1.1 F4.1 B2.1 F5.1 B3.1 "                        // 4 pairs
        "B4.1 B5.1 B0.0 B1.0 B2.0 B3.0 B4.0 B5.0 ");
  // Stage 0: warmup 12 = every forward, then every backward.
  CHECK(text(pipeline_order(0, 4, 6, 2, 6)) ==
        "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 F1.1 F2.1 F3.1 F4.1 F5.1 "
        "B0.1 B1.1 B2.1 B3.1 B4.1 B5.1 B0.0 B1.0 B2.0 B3.0 B4.0 B5.0 ");
}

TEST_CASE("pipeline_order: the default group (pp) gives the divisible interleaved order unchanged", "[workload][pipeline]") {
  // Narayanan et al.'s order for m divisible by p: forward k runs micro-batch
  // (k / (p·v))·p + k mod p on chunk (k mod p·v) / p.
  for (int p : {2, 4}) {
    for (int v : {2, 3}) {
      for (int m : {p, 3 * p}) {
        for (int stage = 0; stage < p; ++stage) {
          INFO("p " << p << " v " << v << " m " << m << " stage " << stage);
          const auto a = pipeline_order(stage, p, m, v);
          const auto b = pipeline_order(stage, p, m, v, p);
          REQUIRE(a.size() == b.size());
          CHECK(text(a) == text(b));
          int k = 0;
          for (const auto& slot : a) {
            if (!slot.forward) continue;
            CHECK(slot.micro_batch == (k / (p * v)) * p + k % p);
            CHECK(slot.chunk == (k % (p * v)) / p);
            ++k;
          }
        }
      }
    }
  }
}

TEST_CASE("pipeline_order: any accepted (m, group) runs every slot once and builds without deadlock", "[workload][pipeline]") {
  const TransformerConfig m = load_transformer("llama-2-7b");
  int built = 0;
  for (int pp : {2, 4}) {
    for (int v : {2, 4}) {
      for (int mbs = 1; mbs <= 3 * pp + 1; ++mbs) {
        for (int group = 1; group <= mbs + 1; ++group) {
          const StrategySpec s = interleaved(1, pp, 1, v, group);
          const WorkloadSpec w = training("llama-2-7b", 1, 128, mbs);
          // Megatron's rules: pp ≤ group ≤ m and m mod group ∈ {0} ∪ [pp, group).
          const bool accepted = group >= pp && group <= mbs && (mbs % group == 0 || mbs % group >= pp);
          INFO("pp " << pp << " v " << v << " m " << mbs << " group " << group);
          CHECK((layout_key(m, w, s) == "ok") == accepted);
          if (!accepted) continue;
          for (int stage = 0; stage < pp; ++stage) {
            const auto order = pipeline_order(stage, pp, mbs, v, group);
            REQUIRE(order.size() == static_cast<std::size_t>(2 * mbs * v));
            std::map<std::pair<int, int>, int> fwd, bwd;
            for (std::size_t k = 0; k < order.size(); ++k) {
              auto& at = order[k].forward ? fwd : bwd;
              CHECK(at.count({order[k].micro_batch, order[k].chunk}) == 0);
              at[{order[k].micro_batch, order[k].chunk}] = static_cast<int>(k);
            }
            CHECK(fwd.size() == static_cast<std::size_t>(mbs * v));
            for (const auto& [key, k] : bwd) CHECK(k > fwd.at(key));
          }
          const Program p = build(m, w, s);  // throws on a deadlock
          int qkv = 0;
          for (const auto& op : p.ops)
            if (op.name == "qkv" && op.pass == Pass::Forward) ++qkv;
          CHECK(qkv == 32 * mbs);
          ++built;
        }
      }
    }
  }
  CHECK(built > 20);
}

// ---------------------------------------------------------------------------------------------
// check_layout rules

TEST_CASE("check_layout: Megatron's interleaved micro-batch and recomputation limits", "[workload][recompute]") {
  const TransformerConfig llama = load_transformer("llama-2-7b");
  // pp = 4, v = 2, m = 6: the default group 4 leaves 6 mod 4 = 2 < 4 (Megatron RuntimeError).
  const WorkloadSpec w6 = training("llama-2-7b", 1, 128, 6);
  CHECK(layout_key(llama, w6, interleaved(1, 4, 1, 2, 0)) == "workload.global_batch_size");
  CHECK(layout_key(llama, w6, interleaved(1, 4, 1, 2, 4)) == "workload.global_batch_size");
  CHECK(layout_key(llama, w6, interleaved(1, 4, 1, 2, 5)) == "workload.global_batch_size");  // 6 mod 5 = 1
  CHECK(layout_key(llama, w6, interleaved(1, 4, 1, 2, 6)) == "ok");
  CHECK(layout_key(llama, w6, interleaved(1, 4, 1, 2, 7)) == "strategy.microbatch_group_size_per_vp_stage");  // > m
  CHECK(layout_key(llama, w6, interleaved(1, 4, 1, 2, 3)) == "strategy.microbatch_group_size_per_vp_stage");  // < pp
  // m = 2 < pp = 4: no group fits.
  CHECK(layout_key(llama, training("llama-2-7b", 1, 128, 2), interleaved(1, 4, 1, 2, 0)) == "workload.global_batch_size");
  // m = 9, group 5: 9 mod 5 = 4 ≥ pp.
  CHECK(layout_key(llama, training("llama-2-7b", 1, 128, 9), interleaved(1, 4, 1, 2, 5)) == "ok");
  // recompute_num_layers between 1 and the layers per stage (32 / 4 = 8).
  WorkloadSpec w = training("llama-2-7b", 1, 128, 8);
  w.recompute = "full";
  w.recompute_num_layers = 8;
  CHECK(layout_key(llama, w, strategy(1, 4, 1)) == "ok");
  w.recompute_num_layers = 9;
  CHECK(layout_key(llama, w, strategy(1, 4, 1)) == "workload.recompute_num_layers");
  // Modules the model does not have.
  w = training("llama-2-7b", 1, 128, 8);
  w.recompute = "selective";
  w.recompute_modules = {"core_attn", "moe_act"};
  CHECK(layout_key(llama, w, strategy(1, 4, 1)) == "workload.recompute_modules");
  const TransformerConfig mixtral = load_transformer("mixtral-8x7b");
  CHECK(layout_key(mixtral, w, strategy(1, 4, 1)) == "ok");
  w.recompute_modules = {"mla_up_proj"};
  CHECK(layout_key(mixtral, w, strategy(1, 4, 1)) == "workload.recompute_modules");
  w.recompute_modules = {"mlp"};
  CHECK(layout_key(mixtral, w, strategy(1, 4, 1)) == "workload.recompute_modules");  // every layer MoE
}

// ---------------------------------------------------------------------------------------------
// Scenario keys: read, written by effective_yaml() and read back identically

TEST_CASE("scenario: the recomputation and micro-batch group keys round-trip through effective.yaml", "[recompute][scenario]") {
  using ccsim::test::TempDir;
  TempDir dir;
  struct Case {
    const char* workload;
    const char* strategy;
    int global;
  };
  for (const Case c : {
           Case{"recompute: full, recompute_method: block, recompute_num_layers: 3", "pp: 4", 8},
           Case{"recompute: full", "pp: 2", 8},
           Case{"recompute: selective, recompute_modules: [layernorm, mlp]", "pp: 2", 8},
           Case{"recompute: selective", "pp: 4, pipeline_schedule: interleaved, virtual_stages: 2, microbatch_group_size_per_vp_stage: 6", 6},
           Case{"recompute: none", "pp: 4, pipeline_schedule: interleaved, virtual_stages: 2", 8},
       }) {
    INFO(c.workload << " | " << c.strategy);
    const std::string file = dir.write("s.yaml", fmt::format(R"(
cluster: {{nodes: [{{node: dgx-h100}}]}}
workload: {{model: llama-3-8b, sequence_length: 1024, global_batch_size: {}, {}}}
strategy: {{tp: 2, {}}}
)",
                                                                 c.global, c.workload, c.strategy));
    Scenario first;
    REQUIRE_NOTHROW(first = load_scenario(file, ccsim::test::shipped_catalog()));
    const std::string text = effective_yaml(first);
    const Scenario second = load_scenario(dir.write("effective.yaml", text), ccsim::test::shipped_catalog());
    CHECK(effective_yaml(second) == text);
    const WorkloadSpec& a = *first.workload;
    const WorkloadSpec& b = *second.workload;
    CHECK(a.recompute == b.recompute);
    CHECK(a.recompute_method == b.recompute_method);
    CHECK(a.recompute_num_layers == b.recompute_num_layers);
    CHECK(a.recompute_modules == b.recompute_modules);
    CHECK(first.strategy->microbatch_group_size_per_vp_stage == second.strategy->microbatch_group_size_per_vp_stage);
  }
  // What was read: block with 3 layers; selective modules in order; the default group = pp.
  const auto load = [&](const std::string& text) { return load_scenario(dir.write("t.yaml", text), ccsim::test::shipped_catalog()); };
  const Scenario block = load(R"(
cluster: {nodes: [{node: dgx-h100}]}
workload: {model: llama-3-8b, sequence_length: 1024, global_batch_size: 8, recompute: full, recompute_method: block, recompute_num_layers: 3}
strategy: {tp: 2, pp: 4}
)");
  CHECK(block.workload->recompute_method == "block");
  CHECK(block.workload->recompute_num_layers == 3);
  const Scenario sel = load(R"(
cluster: {nodes: [{node: dgx-h100}]}
workload: {model: llama-3-8b, sequence_length: 1024, recompute: selective, recompute_modules: [mlp, core_attn]}
)");
  CHECK(sel.workload->recompute_modules == std::vector<std::string>{"mlp", "core_attn"});
  const Scenario inter = load(R"(
cluster: {nodes: [{node: dgx-h100}]}
workload: {model: llama-3-8b, sequence_length: 1024, global_batch_size: 4}
strategy: {tp: 2, pp: 4, pipeline_schedule: interleaved}
)");
  CHECK(inter.strategy->microbatch_group_size_per_vp_stage == 4);
}

TEST_CASE("scenario: Llama-3.1-405B on 8,192 H100 (tests/data/workloads) fits in 80 GB on every stage", "[recompute][scenario]") {
  // The test-only scenario (ccsim run takes ~6 s of CPU on it, too slow for the
  // shipped set): TP8 PP16 DP64, ZeRO-1, SP, 1F1B, full block recomputation of 1 layer per
  // stage. Stage 1 is the fullest: 76,746,528,768 B (see the hand computation above).
  const Scenario sc = load_scenario(ccsim::test::source_path("tests/data/workloads/llama31-405b-train-8kxh100.yaml"),
                                    ccsim::test::shipped_catalog());
  REQUIRE(sc.model);
  REQUIRE(sc.cluster.total_gpus() == 8192);
  const auto f = memory_footprint(*sc.model, *sc.workload, *sc.strategy);
  REQUIRE(f.size() == 16);
  double largest = 0;
  for (const auto& g : f) largest = std::max(largest, g.total());
  CHECK(largest == Approx(76'746'528'768.0));
  CHECK(largest <= 80e9);
}
