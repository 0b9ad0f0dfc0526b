// Pipeline schedules (pipeline_order, chunk_layers, build_program without deadlock), the
// memory footprint and the layout rules of models/workload/program_builder.hpp. Expected values are
// computed by hand in the comments.

#include <catch2/catch.hpp>

#include "workload_support.hpp"

using namespace ccsim::models;
using namespace ccsim::test::workload;

TEST_CASE("pipeline_order: 1F1B runs every micro-batch forward then backward, warmup min(p - i - 1, m)", "[workload]") {
  for (int stages : {1, 2, 4, 8}) {
    for (int m : {1, 2, 3, 4, 7, 8, 16}) {
      for (int stage = 0; stage < stages; ++stage) {
        INFO("stages " << stages << " micro-batches " << m << " stage " << stage);
        const auto order = pipeline_order(stage, stages, m, 1);
        REQUIRE(order.size() == static_cast<std::size_t>(2 * m));
        std::vector<int> fwd_at(static_cast<std::size_t>(m), -1), bwd_at(static_cast<std::size_t>(m), -1);
        for (std::size_t k = 0; k < order.size(); ++k) {
          const auto& slot = order[k];
          REQUIRE(slot.micro_batch >= 0);
          REQUIRE(slot.micro_batch < m);
          CHECK(slot.chunk == 0);
          auto& at = slot.forward ? fwd_at : bwd_at;
          CHECK(at[static_cast<std::size_t>(slot.micro_batch)] == -1);  // once each way
          at[static_cast<std::size_t>(slot.micro_batch)] = static_cast<int>(k);
        }
        for (int mb = 0; mb < m; ++mb) {
          CHECK(fwd_at[static_cast<std::size_t>(mb)] >= 0);
          CHECK(bwd_at[static_cast<std::size_t>(mb)] > fwd_at[static_cast<std::size_t>(mb)]);
          if (mb > 0) {  // in micro-batch order each way
            CHECK(fwd_at[static_cast<std::size_t>(mb)] > fwd_at[static_cast<std::size_t>(mb - 1)]);
            CHECK(bwd_at[static_cast<std::size_t>(mb)] > bwd_at[static_cast<std::size_t>(mb - 1)]);
          }
        }
        // Warmup: the forwards before the first backward, minus the one of the first 1F1B pair.
        const int warmup = std::min(stages - stage - 1, m);
        int leading = 0;
        while (leading < static_cast<int>(order.size()) && order[static_cast<std::size_t>(leading)].forward) ++leading;
        CHECK(leading == std::min(warmup + 1, m));
        // Steady state alternates one forward, one backward.
        for (int k = warmup; k < m; ++k) {
          const std::size_t f = static_cast<std::size_t>(warmup + 2 * (k - warmup));
          CHECK(order[f].forward);
          CHECK_FALSE(order[f + 1].forward);
        }
      }
    }
  }
}

TEST_CASE("pipeline_order: interleaved runs every (micro-batch, chunk) once each way", "[workload]") {
  for (int stages : {2, 4}) {
    for (int v : {2, 3, 4}) {
      for (int m : {stages, 2 * stages, 4 * stages}) {
        for (int stage = 0; stage < stages; ++stage) {
          INFO("stages " << stages << " v " << v << " micro-batches " << m << " stage " << stage);
          const auto order = pipeline_order(stage, stages, m, v);
          REQUIRE(order.size() == static_cast<std::size_t>(2 * m * v));
          std::map<std::pair<int, int>, int> fwd_at, bwd_at;
          for (std::size_t k = 0; k < order.size(); ++k) {
            const auto& slot = order[k];
            REQUIRE(slot.micro_batch >= 0);
            REQUIRE(slot.micro_batch < m);
            REQUIRE(slot.chunk >= 0);
            REQUIRE(slot.chunk < v);
            auto& at = slot.forward ? fwd_at : bwd_at;
            CHECK(at.count({slot.micro_batch, slot.chunk}) == 0);
            at[{slot.micro_batch, slot.chunk}] = static_cast<int>(k);
          }
          CHECK(fwd_at.size() == static_cast<std::size_t>(m * v));
          CHECK(bwd_at.size() == static_cast<std::size_t>(m * v));
          for (const auto& [key, k] : bwd_at) {
            INFO("micro-batch " << key.first << " chunk " << key.second);
            CHECK(fwd_at.count(key) == 1);
            CHECK(k > fwd_at[key]);
          }
          // Megatron's warmup: min((p − i − 1)·2 + (v − 1)·p, m·v) forwards, then 1F1B.
          const int warmup = std::min((stages - stage - 1) * 2 + (v - 1) * stages, m * v);
          int leading = 0;
          while (leading < static_cast<int>(order.size()) && order[static_cast<std::size_t>(leading)].forward) ++leading;
          CHECK(leading == std::min(warmup + 1, m * v));
        }
      }
    }
  }
}

TEST_CASE("build_program: pipeline schedules build without deadlock, one slot's ops per micro-batch", "[workload]") {
  // Small model (Llama-2-7B, s = 128) over many (p, v, m): the builder throws on a deadlock.
  const TransformerConfig m = load_transformer("llama-2-7b");
  for (int pp : {2, 4, 8}) {
    for (int v : {1, 2, 4}) {
      for (int mult : {1, 2, 3}) {
        const int mbs = pp * mult;
        INFO("pp " << pp << " v " << v << " m " << mbs);
        StrategySpec s = strategy(1, pp, 1);
        if (v > 1) {
          s.pipeline_schedule = "interleaved";
          s.virtual_stages = v;
        }
        const Program p = build(m, training("llama-2-7b", 1, 128, mbs), s);
        // Every layer runs forward and backward once per micro-batch: count the "qkv" GEMMs
        // (forward) and their data-gradient GEMMs (backward).
        std::map<std::pair<int, Pass>, int> qkv;  // (layer, pass)
        for (const auto& op : p.ops)
          if (op.name == "qkv" || op.name == "qkv-dgrad") ++qkv[{op.layer, op.pass}];
        CHECK(qkv.size() == 64U);
        for (const auto& [key, n] : qkv) CHECK(n == mbs);
        // Each op depends only on earlier ops (Program::add enforces it) and ops stay on their rank.
        CHECK(p.ranks.size() == static_cast<std::size_t>(pp));
      }
    }
  }
}

TEST_CASE("chunk_layers: every layer exactly once, sizes within 1, the edges the smaller", "[workload]") {
  for (int layers : {1, 2, 5, 32, 61, 80, 96, 126}) {
    for (int chunks = 1; chunks <= layers && chunks <= 64; ++chunks) {
      INFO(layers << " layers over " << chunks << " chunks");
      const auto split = chunk_layers(layers, chunks);
      REQUIRE(split.size() == static_cast<std::size_t>(chunks));
      int next = 0, smallest = layers, largest = 0;
      for (const auto& [first, count] : split) {
        CHECK(first == next);  // contiguous, in order, no gap or overlap
        next = first + count;
        smallest = std::min(smallest, count);
        largest = std::max(largest, count);
      }
      CHECK(next == layers);
      CHECK(smallest >= 1);
      CHECK(largest - smallest <= 1);
      // With layers % chunks ≤ chunks − 2, the first and the last chunk hold the fewer layers.
      if (chunks >= 3 && layers % chunks != 0 && layers % chunks <= chunks - 2) {
        CHECK(split.front().second == layers / chunks);
        CHECK(split.back().second == layers / chunks);
      }
    }
  }
  // 126 layers (Llama-3.1-405B) over 16 chunks: 126 = 16·7 + 14, the 14 middle chunks take 8:
  // 7 + 14·8 + 7 = 126.
  const auto split = chunk_layers(126, 16);
  CHECK(split.front() == std::pair<int, int>{0, 7});
  for (int c = 1; c < 15; ++c) CHECK(split[static_cast<std::size_t>(c)] == std::pair<int, int>{7 + 8 * (c - 1), 8});
  CHECK(split.back() == std::pair<int, int>{119, 7});
}

// ---------------------------------------------------------------------------------------------
// Memory footprint

TEST_CASE("memory_footprint: Llama-2-7B training by hand", "[workload]") {
  // t = 2, p = 2, dp = 2, b = 1, s = 4096, global 8: m = 4, bf16, fp32 gradients.
  // Parameters per GPU (see kLlama2Layer):
  //   stage 0: (16·202,383,360 + 131,072,000) / 2 = 1,684,602,880
  //   stage 1: (16·202,383,360 + 131,076,096) / 2 = 1,684,604,928
  // Activations per layer (layer_activation_bytes, derived in recompute_memory_test.cpp):
  // none 336,855,040 B (SP: 269,746,176), selective core_attn with SP 269,484,032, full the
  // layer input 33,554,432 (SP: 16,777,216). The last stage adds the final norm and LM head
  // inputs 2·input and the fp32 logits 4·4096·32000/2 = 262,144,000: 329,252,864 (SP:
  // 295,698,432). In flight under 1F1B: 2 micro-batches on stage 0, 1 on stage 1; full
  // recomputation adds one layer's full activations (the one being recomputed).
  const TransformerConfig m = load_transformer("llama-2-7b");
  const std::vector<double> params{1'684'602'880.0, 1'684'604'928.0};
  const WorkloadSpec base = training("llama-2-7b", 1, 4096, 8);
  struct Case {
    int zero;
    bool sp;
    const char* recompute;
    double per_layer, work, head;
  };
  for (const Case c : {Case{0, false, "none", 336'855'040, 0, 329'252'864}, Case{1, false, "none", 336'855'040, 0, 329'252'864},
                       Case{2, true, "selective", 269'484'032, 0, 295'698'432},
                       Case{3, false, "full", 33'554'432, 336'855'040, 329'252'864},
                       Case{1, true, "full", 16'777'216, 269'746'176, 295'698'432}}) {
    INFO("zero " << c.zero << " sp " << c.sp << " recompute " << c.recompute);
    WorkloadSpec w = base;
    w.recompute = c.recompute;
    StrategySpec s = strategy(2, 2, 2);
    s.zero_stage = c.zero;
    s.sequence_parallel = c.sp;
    REQUIRE_FALSE(check_layout(m, w, s));
    const auto f = memory_footprint(m, w, s);
    REQUIRE(f.size() == 2);
    for (int stage = 0; stage < 2; ++stage) {
      INFO("stage " << stage);
      const auto& g = f[static_cast<std::size_t>(stage)];
      const double n = params[static_cast<std::size_t>(stage)];
      CHECK(g.stage == stage);
      // Weights 2 B/param (÷ dp with ZeRO-3); gradients 4 B/param (÷ dp with ZeRO-2/3);
      // Adam 12 B/param (÷ dp with ZeRO ≥ 1).
      CHECK(g.weights == Approx(n * 2 / (c.zero >= 3 ? 2 : 1)));
      CHECK(g.gradients == Approx(n * 4 / (c.zero >= 2 ? 2 : 1)));
      CHECK(g.optimizer == Approx(n * 12 / (c.zero >= 1 ? 2 : 1)));
      CHECK(g.activations == Approx(c.per_layer * 16 * (stage == 0 ? 2 : 1) + c.work + (stage == 1 ? c.head : 0.0)));
      CHECK(g.kv_cache == 0);
      CHECK(g.total() == Approx(g.weights + g.gradients + g.optimizer + g.activations));
    }
  }
  // Concretely, ZeRO-1 stage 0: weights 3,369,205,760 B, optimizer 12·1,684,602,880 / 2 =
  // 10,107,617,280 B, activations 336,855,040·16·2 = 10,779,361,280 B.
  StrategySpec s = strategy(2, 2, 2);
  s.zero_stage = 1;
  const auto f = memory_footprint(m, base, s);
  CHECK(f[0].weights == 3'369'205'760.0);
  CHECK(f[0].optimizer == 10'107'617'280.0);
  CHECK(f[0].activations == 10'779'361'280.0);
}

TEST_CASE("memory_footprint: decode KV cache, KV heads shared by TP and replicated past them", "[workload]") {
  // Llama-3-8B decode, B = 4, context 1000 + 24 generated = 1024 tokens at the end. Per token
  // per layer 2·8·128·2 = 4096 B; a GPU holds max(1, 8/t) of the 8 KV heads.
  //   t = 2: 4·1024·4096·(4/8)·32 = 268,435,456 B;  t = 16: 4·1024·4096·(1/8)·32 = 67,108,864 B.
  // Weights: 8,030,261,248 / t · 2 B.
  const TransformerConfig m = load_transformer("llama-3-8b");
  WorkloadSpec w = decode("llama-3-8b", 4);
  w.context_length = 1000;
  w.generated_tokens = 24;
  for (auto [t, kv] : {std::pair{2, 268'435'456.0}, std::pair{16, 67'108'864.0}}) {
    INFO("tp " << t);
    const auto f = memory_footprint(m, w, strategy(t, 1, 1));
    REQUIRE(f.size() == 1);
    CHECK(f[0].kv_cache == kv);
    CHECK(f[0].weights == Approx(8'030'261'248.0 / t * 2));
    CHECK(f[0].gradients == 0);
    CHECK(f[0].optimizer == 0);
  }
}

// ---------------------------------------------------------------------------------------------
// check_layout

TEST_CASE("check_layout: the rules, with the key each names", "[workload]") {
  const TransformerConfig llama = load_transformer("llama-3-8b");
  const TransformerConfig mixtral = load_transformer("mixtral-8x7b");
  const WorkloadSpec w = training("llama-3-8b", 1, 4096, 0);
  const auto key = [](const TransformerConfig& m, const WorkloadSpec& wl, const StrategySpec& s) {
    const auto p = check_layout(m, wl, s);
    return p ? p->section + "." + p->key : std::string("ok");
  };
  CHECK(key(llama, w, strategy(8, 1, 1)) == "ok");
  CHECK(key(llama, w, strategy(3, 1, 1)) == "strategy.tp");   // 32 heads
  CHECK(key(llama, w, strategy(16, 1, 1)) == "ok");           // 16 is a multiple of the 8 KV heads
  CHECK(key(llama, w, strategy(64, 1, 1)) == "strategy.tp");
  StrategySpec s = strategy(1, 8, 1);
  s.pipeline_schedule = "interleaved";
  s.virtual_stages = 4;
  CHECK(key(llama, w, s) == "workload.global_batch_size");  // one micro-batch, not divisible by 8
  s.virtual_stages = 5;                                      // 8·5 = 40 chunks > 32 layers
  CHECK(key(llama, w, s) == "strategy.pp");
  s = strategy(2, 1, 4);
  s.ep = 2;
  CHECK(key(llama, w, s) == "strategy.ep");     // dense model
  CHECK(key(mixtral, w, s) == "ok");
  s.ep = 3;
  CHECK(key(mixtral, w, s) == "strategy.ep");   // 8 experts
  s = strategy(2, 1, 2);
  s.cp = 3;
  CHECK(key(llama, w, s) == "workload.sequence_length");  // 4096 % 3
  s.cp = 2;
  CHECK(key(llama, w, s) == "ok");
  CHECK(key(llama, decode("llama-3-8b", 4), s) == "strategy.cp");  // CP for inference
}

