// Mixture-of-experts config.json files in each family's naming (tests/data/model-configs/, the
// files as published on the Hugging Face Hub; sources in its README.md): total and active
// parameters against the model cards, which layers are MoE, and the keys ccsim does not read
// that would change the model's size.

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "models/workload/transformer.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

using namespace ccsim::models;
using Catch::Matchers::Contains;

namespace {

TransformerConfig load_data(const std::string& file) {
  return load_transformer(ccsim::test::source_path("tests/data/model-configs/" + file));
}

double rel(double value, double reference) { return (value - reference) / reference; }

/// Writes `text` to a fresh file and returns the InputError message of loading it.
std::string load_error_of(const std::string& text) {
  const auto file = std::filesystem::temp_directory_path() / ("ccsim-moe-test-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << text;
  std::string msg;
  try {
    load_transformer(file.string());
  } catch (const ccsim::support::InputError& e) {
    msg = e.what();
  }
  std::filesystem::remove(file);
  if (msg.empty()) FAIL("no InputError for " << text);
  return msg;
}

/// A small dense config with `extra` keys appended.
std::string tiny(const std::string& extra) {
  return R"({"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
  "vocab_size": 100)" + (extra.empty() ? std::string() : ",\n  " + extra) + "}";
}

}  // namespace

// Closed forms (h hidden, a heads, kv KV heads, d head_dim, I_e expert width, E experts, k top-k,
// S shared experts, V vocabulary, L layers): attention h·a·d + 2·h·kv·d + a·d·h + h (norm);
// expert 3·h·I_e; MoE MLP h (norm) + h·E (router) + (E + S)·expert; total L·(attention + MLP)
// + 2·V·h (untied) + h. Active: (k + S) experts per MoE layer.
TEST_CASE("Qwen3-30B-A3B: num_experts and moe_intermediate_size are read (30.5 B / 3.3 B)", "[transformer][moe]") {
  const TransformerConfig c = load_data("qwen3-30b-a3b.json");
  REQUIRE(c.moe);
  CHECK(c.moe->experts == 128);
  CHECK(c.moe->experts_per_token == 8);
  CHECK(c.moe->expert_intermediate == 768);
  CHECK(c.moe->shared_experts == 0);
  CHECK(c.moe_layers() == 48);
  // attention 2048·4096 + 2·2048·512 + 4096·2048 + 2048 = 18,876,416; expert 3·2048·768 = 4,718,592.
  CHECK(c.attention_params() == 18'876'416);
  CHECK(c.expert_params() == 4'718'592);
  // 48·(18,876,416 + 2048 + 2048·128 + 128·4,718,592) + 2·151936·2048 + 2048 = 30,532,110,336.
  CHECK(c.total_params() == 30'532'110'336);
  // active: 8 experts instead of 128: 3,353,020,416.
  CHECK(c.active_params() == 3'353'020'416);
  // Model card: 30.5 B total, 3.3 B activated (rounded to 0.1 B: 2 % covers the rounding).
  CHECK(std::abs(rel(static_cast<double>(c.total_params()), 30.5e9)) <= 0.01);
  CHECK(std::abs(rel(static_cast<double>(c.active_params()), 3.3e9)) <= 0.02);
}

TEST_CASE("Qwen2-57B-A14B: the shared expert of width shared_expert_intermediate_size", "[transformer][moe]") {
  const TransformerConfig c = load_data("qwen2-57b-a14b.json");
  REQUIRE(c.moe);
  CHECK(c.moe->experts == 64);
  CHECK(c.moe->experts_per_token == 8);
  CHECK(c.moe->expert_intermediate == 2560);
  // 20480 / 2560: one shared expert 8 routed experts wide, as 8 routed-width experts.
  CHECK(c.moe->shared_experts == 8);
  // attention 29,363,712; expert 3·3584·2560 = 27,525,120.
  CHECK(c.expert_params() == 27'525'120);
  // 28·(29,363,712 + 3584 + 3584·64 + 72·27,525,120) + 2·151936·3584 + 3584 = 57,408,429,568.
  CHECK(c.total_params() == 57'408'429'568);
  CHECK(c.active_params() == 14'249'041'408);
  // Qwen2 technical report (arXiv 2407.10671, table 1): 57.4 B total, 14.2 B activated (the
  // sigmoid gate of the shared expert, h per layer, and the QKV biases are not counted).
  CHECK(std::abs(rel(static_cast<double>(c.total_params()), 57.4e9)) <= 0.005);
  CHECK(std::abs(rel(static_cast<double>(c.active_params()), 14.2e9)) <= 0.01);
  // MoE MLP FLOPs: 2·(router 3584·64 + (8 + 8)·27,525,120).
  CHECK(c.mlp_flops(0) == 2.0 * (3584.0 * 64 + 16.0 * 27'525'120));
}

TEST_CASE("DeepSeek-V2: MLA, 2 shared experts, first layer dense (236 B / 21 B)", "[transformer][moe]") {
  const TransformerConfig c = load_data("deepseek-v2.json");
  REQUIRE(c.moe);
  REQUIRE(c.mla);
  CHECK(c.moe->experts == 160);
  CHECK(c.moe->shared_experts == 2);
  CHECK(c.moe->experts_per_token == 6);
  CHECK_FALSE(c.is_moe_layer(0));
  CHECK(c.is_moe_layer(1));
  CHECK(c.moe_layers() == 59);
  // MLA attention: q 5120·1536 + 1536·128·192, kv 5120·576 + 512·128·256, o 128·128·5120,
  // norms 5120 + 1536 + 512: 149,232,640.
  CHECK(c.attention_params() == 149'232'640);
  // 60·149,232,640 + (3·5120·12288 + 5120) + 59·(5120 + 5120·160 + 162·3·5120·1536) + 2·102400·5120 + 5120.
  CHECK(c.total_params() == 235'741'434'880);
  CHECK(c.active_params() == 21'375'800'320);
  // Model card: 236 B total, 21 B activated.
  CHECK(std::abs(rel(static_cast<double>(c.total_params()), 236e9)) <= 0.005);
  CHECK(std::abs(rel(static_cast<double>(c.active_params()), 21e9)) <= 0.02);
}

TEST_CASE("Llama-4-Scout: text_config, intermediate_size_mlp and the shared expert (109 B / 17 B)", "[transformer][moe]") {
  const TransformerConfig c = load_data("llama-4-scout-17b-16e.json");
  REQUIRE(c.moe);
  CHECK(c.layers == 48);     // text_config's 48, not vision_config's 34
  CHECK(c.hidden == 5120);
  CHECK(c.moe->experts == 16);
  CHECK(c.moe->experts_per_token == 1);
  CHECK(c.moe->shared_experts == 1);             // Llama4TextMoe's shared expert
  CHECK(c.moe->expert_intermediate == 8192);     // intermediate_size: the experts' width
  CHECK(c.intermediate == 16384);                // intermediate_size_mlp: dense layers' width
  CHECK(c.moe_layers() == 48);                   // interleave_moe_layer_step 1
  // 48·(62,919,680 + 5120 + 5120·16 + 17·3·5120·8192) + 2·202048·5120 + 5120 = 107,769,861,120.
  CHECK(c.total_params() == 107'769'861'120);
  CHECK(c.active_params() == 17'172'894'720);
  // Model card: 109 B total including the vision encoder (not modelled: about 1 B), 17 B active.
  CHECK(std::abs(rel(static_cast<double>(c.total_params()), 109e9)) <= 0.015);
  CHECK(std::abs(rel(static_cast<double>(c.active_params()), 17e9)) <= 0.015);
}

TEST_CASE("Llama-4 with interleaved MoE layers (Maverick's interleave_moe_layer_step 2) and moe_layers", "[transformer][moe]") {
  std::string text = R"({"text_config": {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 32, "intermediate_size_mlp": 128, "vocab_size": 100, "num_local_experts": 4,
    "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "model_type": "llama4_text"}, "tie_word_embeddings": true})";
  const auto file = std::filesystem::temp_directory_path() / ("ccsim-llama4-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << text;
  const TransformerConfig c = load_transformer(file.string());
  std::filesystem::remove(file);
  REQUIRE(c.moe);
  // (layer + 1) % 2 == 0: layers 1 and 3.
  CHECK_FALSE(c.is_moe_layer(0));
  CHECK(c.is_moe_layer(1));
  CHECK_FALSE(c.is_moe_layer(2));
  CHECK(c.is_moe_layer(3));
  CHECK(c.tie_embeddings);  // read beside text_config
  // attention 4·64·64 + 64 = 16,448; dense 3·64·128 + 64 = 24,640; MoE 64 + 64·4 + 5·3·64·32 = 31,040.
  CHECK(c.total_params() == 4 * 16'448 + 2 * 24'640 + 2 * 31'040 + 100 * 64 + 64);
}

TEST_CASE("gpt-oss-120b: num_local_experts and experts_per_token (116.8 B / 5.1 B)", "[transformer][moe]") {
  const TransformerConfig c = load_data("gpt-oss-120b.json");
  REQUIRE(c.moe);
  CHECK(c.moe->experts == 128);
  CHECK(c.moe->experts_per_token == 4);
  CHECK(c.head_dim == 64);
  // attention 2880·4096 + 2·2880·512 + 4096·2880 + 2880 = 26,544,960.
  CHECK(c.attention_params() == 26'544'960);
  CHECK(c.total_params() == 116'789'048'640);
  CHECK(c.active_params() == 5'710'443'840);
  // OpenAI's model card: 116.83 B total, 5.13 B active not counting the input embedding
  // (201088·2880 = 579,133,440); biases and attention sinks (about 0.04 %) are not counted.
  CHECK(std::abs(rel(static_cast<double>(c.total_params()), 116.83e9)) <= 0.002);
  CHECK(std::abs(rel(static_cast<double>(c.active_params() - c.embedding_params()), 5.13e9)) <= 0.002);
}

TEST_CASE("MoE layer rules: decoder_sparse_step, mlp_only_layers, moe_layer_freq", "[transformer][moe]") {
  SECTION("Qwen: (layer + 1) % decoder_sparse_step and mlp_only_layers") {
    const auto f = std::filesystem::temp_directory_path() / ("ccsim-qwen-" + std::to_string(::getpid()) + ".json");
    std::ofstream(f) << tiny(R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "decoder_sparse_step": 2, "mlp_only_layers": [3])");
    const TransformerConfig c = load_transformer(f.string());
    std::filesystem::remove(f);
    // Layers 1 and 3 by the step; 3 is listed dense: only layer 1 is MoE.
    CHECK(c.moe_layers() == 1);
    CHECK(c.is_moe_layer(1));
    CHECK_FALSE(c.is_moe_layer(3));
  }
  SECTION("DeepSeek: layer >= first_k_dense_replace and layer % moe_layer_freq == 0") {
    const auto f = std::filesystem::temp_directory_path() / ("ccsim-ds-" + std::to_string(::getpid()) + ".json");
    std::ofstream(f) << tiny(R"("n_routed_experts": 4, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "moe_layer_freq": 2)");
    const TransformerConfig c = load_transformer(f.string());
    std::filesystem::remove(f);
    CHECK(c.moe_layers() == 1);  // layer 2 only (0 is dense, 1 and 3 are odd)
    CHECK(c.is_moe_layer(2));
  }
}

TEST_CASE("error: a key ccsim does not read that changes the model's size", "[transformer][moe]") {
  // Unknown MoE-looking key: named, with its value.
  CHECK_THAT(load_error_of(tiny(R"("num_experts": 4, "num_experts_per_tok": 2, "expert_capacity": 8)")),
             Contains("expert_capacity") && Contains("which ccsim does not read"));
  // Keys of other architectures (Falcon's multi_query, Llama-3.2-Vision's cross_attention_layers).
  CHECK_THAT(load_error_of(tiny(R"("multi_query": true)")), Contains("multi_query: expected only config.json keys ccsim reads"));
  CHECK_THAT(load_error_of(tiny(R"("cross_attention_layers": [1, 3])")), Contains("'cross_attention_layers' = an array"));
  // GPT-2 naming: the first key in the file is reported, the others listed.
  CHECK_THAT(load_error_of(tiny(R"("n_layer": 12, "n_embd": 768)")), Contains("n_layer") && Contains("also unread: n_embd"));
  // Inert values (null, false, 0, []) and harmless keys stay silent.
  CHECK(load_transformer(ccsim::test::source_path("tests/data/model-configs/qwen3-30b-a3b.json")).moe);
  const auto f = std::filesystem::temp_directory_path() / ("ccsim-inert-" + std::to_string(::getpid()) + ".json");
  std::ofstream(f) << tiny(R"("cross_attention_layers": null, "multi_query": false, "rope_theta": 10000, "torch_dtype": "bfloat16",
    "max_window_layers": 4, "layer_norm_eps": 1e-5, "some_unknown_key": 3)");
  CHECK(load_transformer(f.string()).total_params() > 0);
  std::filesystem::remove(f);
  CHECK(size_relevant_unread_key("num_experts_per_group"));
  CHECK(size_relevant_unread_key("shared_expert_gate_width"));
  CHECK_FALSE(size_relevant_unread_key("rope_theta"));
  CHECK_FALSE(size_relevant_unread_key("torch_dtype"));
  CHECK_FALSE(size_relevant_unread_key("num_nextn_predict_layers"));
}

TEST_CASE("error: MoE keys that contradict each other or leave no MoE layer", "[transformer][moe]") {
  // Two spellings of the top-k with different values.
  CHECK_THAT(load_error_of(tiny(R"("num_local_experts": 8, "num_experts_per_tok": 2, "experts_per_token": 4)")),
             Contains("experts_per_token: expected the same value as num_experts_per_tok (2)") && Contains("found 4"));
  // An expert width without an expert count.
  CHECK_THAT(load_error_of(tiny(R"("moe_intermediate_size": 16)")),
             Contains("moe_intermediate_size: expected no MoE key without an expert count"));
  // A shared expert that is not a whole number of routed experts.
  CHECK_THAT(load_error_of(tiny(R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24)")),
             Contains("shared_expert_intermediate_size: expected a multiple of the routed experts' width 16"));
  // Every layer dense.
  CHECK_THAT(load_error_of(tiny(R"("num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [0, 1, 2, 3])")),
             Contains("num_experts: expected at least one MoE layer") && Contains("found 0 MoE layers of 4"));
  CHECK_THAT(load_error_of(tiny(R"("num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [7])")),
             Contains("mlp_only_layers: expected a list of layer indices from 0 to 3") && Contains("found 7 in the list"));
}
