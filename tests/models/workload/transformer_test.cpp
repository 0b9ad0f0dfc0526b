#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <unistd.h>

#include "support/input_error.hpp"
#include "models/workload/transformer.hpp"

using namespace ccsim::models;
using Catch::Matchers::Contains;

namespace {

/// A fresh directory under the system temp dir, removed at scope exit.
struct ModelDir {
  std::filesystem::path path;
  ModelDir() {
    path = std::filesystem::temp_directory_path() /
           ("ccsim-transformer-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~ModelDir() { std::filesystem::remove_all(path); }
  ModelDir(const ModelDir&) = delete;
  ModelDir& operator=(const ModelDir&) = delete;
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = path / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

/// Sets an environment variable for the scope, restoring the previous value after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) {
      ::setenv(name.c_str(), old->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

/// The message of the InputError thrown by loading `file` (fails the test when none is thrown).
std::string load_error(const std::string& file) {
  try {
    load_transformer(file);
  } catch (const ccsim::support::InputError& e) {
    return e.what();
  }
  FAIL("no ccsim::support::InputError for " << file);
  return {};
}

double rel(double value, double reference) { return (value - reference) / reference; }

}  // namespace

TEST_CASE("every shipped model entry loads and names its source", "[transformer]") {
  const auto names = shipped_models();
  for (const char* expected : {"deepseek-v3", "gpt3-175b", "llama-2-70b", "llama-2-7b", "llama-3-70b", "llama-3-8b",
                               "llama-3.1-405b", "llama-3.1-8b", "mixtral-8x7b"}) {
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (const auto& name : names) {
    INFO(name);
    const TransformerConfig c = load_transformer(name);
    CHECK(c.name == name);
    CHECK_THAT(c.source, Contains("config.json") || Contains("Brown et al."));
    CHECK(c.total_params() > 0);
    CHECK(c.active_params() <= c.total_params());
  }
}

TEST_CASE("Llama-3-8B: per-layer counts by hand", "[transformer]") {
  const TransformerConfig c = load_transformer("llama-3-8b");
  CHECK(c.layers == 32);
  CHECK(c.hidden == 4096);
  CHECK(c.heads == 32);
  CHECK(c.kv_heads == 8);
  CHECK(c.head_dim == 128);  // 4096 / 32, head_dim absent from the file
  CHECK(c.gated_mlp);
  CHECK_FALSE(c.tie_embeddings);
  CHECK_FALSE(c.moe);
  CHECK_FALSE(c.mla);
  // Q 4096·4096 = 16,777,216; K and V 2·4096·(8·128) = 8,388,608; O 16,777,216; norm 4,096.
  CHECK(c.attention_params() == 41'947'136);
  // gate, up, down 3·4096·14336 = 176,160,768; norm 4,096.
  CHECK(c.dense_mlp_params() == 176'164'864);
  CHECK(c.layer_params(0) == 218'112'000);
  CHECK(c.layer_params(31) == 218'112'000);
  CHECK(c.expert_params() == 0);
  CHECK(c.router_params() == 0);
  // 128256·4096 = 525,336,576; LM head the same + final norm 4,096.
  CHECK(c.embedding_params() == 525'336'576);
  CHECK(c.output_params() == 525'340'672);
  // 32·218,112,000 + 525,336,576 + 525,340,672 = 8,030,261,248.
  CHECK(c.total_params() == 8'030'261'248);
  CHECK(c.active_params() == c.total_params());
  CHECK(c.moe_layers() == 0);
  CHECK_FALSE(c.is_moe_layer(0));
  // FLOPs per token: 2·(41,947,136 − 4,096) = 83,886,080.
  CHECK(c.attention_projection_flops() == 83'886'080.0);
  // 2·32·128·1000 (QKᵀ) + 2·32·128·1000 (AV) = 16,384,000.
  CHECK(c.attention_score_flops(1000) == 16'384'000.0);
  // 2·176,160,768 = 352,321,536.
  CHECK(c.mlp_flops(0) == 352'321'536.0);
  // 2·4096·128256 = 1,050,673,152.
  CHECK(c.logits_flops() == 1'050'673'152.0);
  // bf16: 2 (K, V)·8 heads·128·2 B = 4096 B per token per layer.
  CHECK(c.kv_cache_bytes_per_token(2) == 4096.0);
}

TEST_CASE("total parameters match the published figures", "[transformer]") {
  struct Case {
    const char* name;
    double published;
    double tolerance;
  };
  // Computed: Llama-2-7B 6,738,415,616; Llama-2-70B 68,976,648,192; Llama-3-8B 8,030,261,248;
  // Llama-3.1-8B the same; Llama-3-70B 70,553,706,496; Llama-3.1-405B 405,853,388,800;
  // GPT-3 174,577,692,672 (biases and learned position embeddings not counted);
  // Mixtral-8x7B 46,702,792,704; DeepSeek-V3 671,026,404,352.
  for (const Case& k : {Case{"llama-2-7b", 6.74e9, 0.01}, Case{"llama-2-70b", 68.98e9, 0.01},
                        Case{"llama-3-8b", 8.03e9, 0.01}, Case{"llama-3.1-8b", 8.03e9, 0.01},
                        Case{"llama-3-70b", 70.55e9, 0.01}, Case{"llama-3.1-405b", 405.9e9, 0.01},
                        Case{"gpt3-175b", 175e9, 0.01}, Case{"mixtral-8x7b", 46.7e9, 0.01},
                        Case{"deepseek-v3", 671e9, 0.015}}) {
    INFO(k.name);
    const double total = static_cast<double>(load_transformer(k.name).total_params());
    CHECK(std::abs(rel(total, k.published)) <= k.tolerance);
  }
  CHECK(load_transformer("llama-2-7b").total_params() == 6'738'415'616);
  CHECK(load_transformer("gpt3-175b").total_params() == 174'577'692'672);
}

TEST_CASE("GPT-3: GELU MLP with two matrices and tied embeddings", "[transformer]") {
  const TransformerConfig c = load_transformer("gpt3-175b");
  CHECK_FALSE(c.gated_mlp);
  CHECK(c.tie_embeddings);
  // 2·12288·49152 + 12288 = 1,207,971,840.
  CHECK(c.dense_mlp_params() == 1'207'971'840);
  CHECK(c.output_params() == 12288);  // tied head: only the final norm
  // 4·12288·12288 + 12288 = 603,992,064.
  CHECK(c.attention_params() == 603'992'064);
  CHECK(c.logits_flops() == 2.0 * 12288 * 51200);
}

TEST_CASE("Mixtral-8x7B: total and active parameters", "[transformer]") {
  const TransformerConfig c = load_transformer("mixtral-8x7b");
  REQUIRE(c.moe);
  CHECK(c.moe->experts == 8);
  CHECK(c.moe->experts_per_token == 2);
  CHECK(c.moe->shared_experts == 0);
  CHECK(c.moe->expert_intermediate == 14336);  // moe_intermediate_size absent: intermediate_size
  CHECK(c.moe->first_dense_layers == 0);
  CHECK(c.moe_layers() == 32);
  CHECK(c.is_moe_layer(0));
  // expert 3·4096·14336 = 176,160,768; router 4096·8 = 32,768.
  CHECK(c.expert_params() == 176'160'768);
  CHECK(c.router_params() == 32'768);
  // attention 41,947,136 + norm 4,096 + router 32,768 + 8·176,160,768 = 1,451,270,144.
  CHECK(c.layer_params(0) == 1'451'270'144);
  // total 46,702,792,704 vs 46.7e9; active 12,879,925,248 vs 12.9e9.
  CHECK(c.total_params() == 46'702'792'704);
  CHECK(c.active_params() == 12'879'925'248);
  CHECK(std::abs(rel(static_cast<double>(c.active_params()), 12.9e9)) <= 0.01);
  // 2·(32,768 + 2·176,160,768) = 704,708,608.
  CHECK(c.mlp_flops(5) == 704'708'608.0);
}

TEST_CASE("DeepSeek-V3: MLA, shared experts and leading dense layers", "[transformer]") {
  const TransformerConfig c = load_transformer("deepseek-v3");
  REQUIRE(c.moe);
  REQUIRE(c.mla);
  CHECK(c.moe->experts == 256);
  CHECK(c.moe->shared_experts == 1);
  CHECK(c.moe->experts_per_token == 8);
  CHECK(c.moe->expert_intermediate == 2048);
  CHECK(c.moe->first_dense_layers == 3);
  CHECK(c.mla->q_lora_rank == 1536);
  CHECK(c.mla->kv_lora_rank == 512);
  for (int l = 0; l < 3; ++l) CHECK_FALSE(c.is_moe_layer(l));
  CHECK(c.is_moe_layer(3));
  CHECK(c.is_moe_layer(60));
  CHECK_FALSE(c.is_moe_layer(61));
  CHECK(c.moe_layers() == 58);
  // q: 7168·1536 + 1536 (norm) + 1536·128·(128+64) = 11,010,048 + 1,536 + 37,748,736 = 48,760,320
  // kv: 7168·(512+64) + 512 (norm) + 512·128·(128+128) = 4,128,768 + 512 + 16,777,216 = 20,906,496
  // o: 128·128·7168 = 117,440,512; norm 7,168. Sum 187,114,496.
  CHECK(c.attention_params() == 187'114'496);
  // dense layer: 3·7168·18432 + 7168 = 396,368,896.
  CHECK(c.layer_params(0) - c.attention_params() == 396'368'896);
  // MoE layer: 7168 + 7168·256 + (256+1)·3·7168·2048 = 7,168 + 1,835,008 + 257·44,040,192 = 11,320,171,520.
  CHECK(c.expert_params() == 44'040'192);
  CHECK(c.layer_params(3) - c.attention_params() == 11'320'171'520);
  // 61·187,114,496 + 3·396,368,896 + 58·11,320,171,520 + 2·129280·7168 + 7168 = 671,026,404,352.
  CHECK(c.total_params() == 671'026'404'352);
  CHECK(std::abs(rel(static_cast<double>(c.total_params()), 671e9)) <= 0.015);
  // active: MoE layer 7168 + 1,835,008 + 9·44,040,192 = 398,203,904; 58 of them.
  // 61·187,114,496 + 3·396,368,896 + 58·398,203,904 + 1,853,365,248 = 37,552,282,624.
  CHECK(c.active_params() == 37'552'282'624);
  CHECK(std::abs(rel(static_cast<double>(c.active_params()), 37e9)) <= 0.05);
  // Scores: 2·128·(128+64)·ctx + 2·128·128·ctx = 81,920 per context token.
  CHECK(c.attention_score_flops(1) == 81'920.0);
  CHECK(c.attention_score_flops(4096) == 81'920.0 * 4096);
  // Projections: 2·(187,114,496 − 7,168 − 1,536 − 512) = 374,210,560.
  CHECK(c.attention_projection_flops() == 374'210'560.0);
  // MoE MLP: 2·(1,835,008 + 9·44,040,192) = 796,393,472; dense: 2·3·7168·18432 = 792,723,456.
  CHECK(c.mlp_flops(3) == 796'393'472.0);
  CHECK(c.mlp_flops(0) == 792'723'456.0);
  // Latent KV cache: (512 + 64)·2 = 1152 B per token per layer.
  CHECK(c.kv_cache_bytes_per_token(2) == 1152.0);
}

TEST_CASE("paths: relative to base_dir, name from the stem, defaults, unknown keys ignored", "[transformer]") {
  ModelDir dir;
  dir.write("sub/tiny.json", R"({
  "num_hidden_layers": 2,
  "hidden_size": 64,
  "num_attention_heads": 4,
  "intermediate_size": 128,
  "vocab_size": 100,
  "some_unknown_key": {"nested": [1, 2, 3]},
  "rope_scaling": null
})");
  const TransformerConfig c = load_transformer("sub/tiny.json", dir.path.string());
  CHECK(c.name == "tiny");
  CHECK(c.source == (dir.path / "sub/tiny.json").string());
  CHECK(c.kv_heads == 4);   // defaults to num_attention_heads
  CHECK(c.head_dim == 16);  // 64 / 4
  CHECK(c.gated_mlp);       // hidden_act defaults to silu
  CHECK_FALSE(c.tie_embeddings);
  // 2·(4·64·64 + 64 + 3·64·128 + 64) + 2·100·64 + 64 = 2·(16,384 + 64 + 24,576 + 64) + 12,800 + 64 = 95,040.
  CHECK(c.total_params() == 95'040);
  // A bare name ending in .json is a path too.
  const std::string file = dir.write("tiny2.json", R"({"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 16, "vocab_size": 10, "hidden_act": "relu",
    "tie_word_embeddings": true, "_source": "hand-written"})");
  const TransformerConfig t = load_transformer("tiny2.json", dir.path.string());
  CHECK(t.source == "hand-written");
  CHECK(t.head_dim == 8);
  CHECK_FALSE(t.gated_mlp);
  CHECK(t.tie_embeddings);
  // Absolute paths ignore base_dir.
  CHECK(load_transformer(file, "/nonexistent").name == "tiny2");
}

TEST_CASE("MLA with a null q_lora_rank uses a plain Q projection", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("lite.json", R"({"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2,
    "intermediate_size": 32, "vocab_size": 10, "q_lora_rank": null, "kv_lora_rank": 4,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 2, "v_head_dim": 8})");
  const TransformerConfig c = load_transformer(file);
  REQUIRE(c.mla);
  CHECK(c.mla->q_lora_rank == 0);
  // q 16·2·(8+2) = 320; kv 16·(4+2) + 4 + 4·2·(8+8) = 96 + 4 + 128 = 228; o 2·8·16 = 256; norm 16.
  CHECK(c.attention_params() == 820);
  CHECK(c.kv_cache_bytes_per_token(1) == 6.0);
}

TEST_CASE("CCSIM_DATA_DIR selects the models directory", "[transformer]") {
  ModelDir dir;
  dir.write("models/only-one.json", R"({"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2,
    "intermediate_size": 16, "vocab_size": 10})");
  dir.write("models/notes.txt", "not a model");
  ScopedEnv env("CCSIM_DATA_DIR", dir.path.string());
  CHECK(models_dir() == (dir.path / "models").string());
  CHECK(shipped_models() == std::vector<std::string>{"only-one"});
  CHECK(load_transformer("only-one").name == "only-one");
}

// ---- errors: each names the file, the key, what was expected and what was found ----

TEST_CASE("error: missing required key", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", R"({"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})");
  const std::string msg = load_error(file);
  // A whole-file error (no value to point at) is at 1:1.
  CHECK_THAT(msg, Contains(file + ":1:1: error: num_hidden_layers: expected a positive integer"));
  CHECK_THAT(msg, Contains("found no 'num_hidden_layers' key"));
}

TEST_CASE("error: wrong type, located at the key's line and column", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", "{\n  \"num_hidden_layers\": 2,\n  \"hidden_size\": \"4096\",\n"
                                               "  \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100\n}\n");
  CHECK_THAT(load_error(file), Contains(file + ":3:3: error: hidden_size: expected a positive integer") &&
                                   Contains("found the string \"4096\""));
  const std::string real = dir.write("f.json", R"({"num_hidden_layers": 2.5, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100})");
  CHECK_THAT(load_error(real), Contains(real + ":1:2: error: num_hidden_layers: expected a positive integer") &&
                                   Contains("found the non-integer number 2.5"));
  const std::string tie = dir.write("t.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "tie_word_embeddings": "yes"})");
  CHECK_THAT(load_error(tie), Contains(tie) && Contains("tie_word_embeddings: expected true or false, found the string \"yes\""));
}

TEST_CASE("error: non-positive value", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 0,
    "intermediate_size": 128, "vocab_size": 100})");
  CHECK_THAT(load_error(file), Contains(file) && Contains("num_attention_heads: expected a positive integer") &&
                                   Contains("found 0"));
  const std::string neg = dir.write("n.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": -128, "vocab_size": 100})");
  CHECK_THAT(load_error(neg), Contains(neg) && Contains("intermediate_size: expected a positive integer") &&
                                  Contains("found -128"));
}

TEST_CASE("error: heads not divisible by kv heads", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 32,
    "num_key_value_heads": 5, "intermediate_size": 128, "vocab_size": 100})");
  CHECK_THAT(load_error(file), Contains(file + ":2:") &&
                                   Contains("num_key_value_heads: expected a divisor of num_attention_heads (32), found 5"));
}

TEST_CASE("error: hidden not divisible by heads without head_dim", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", R"({"num_hidden_layers": 2, "hidden_size": 4000, "num_attention_heads": 48,
    "intermediate_size": 128, "vocab_size": 100})");
  CHECK_THAT(load_error(file),
             Contains(file) &&
                 Contains("num_attention_heads: expected a divisor of hidden_size (4000) when head_dim is absent, found 48"));
  // With head_dim given, the same sizes load.
  const std::string ok = dir.write("ok.json", R"({"num_hidden_layers": 2, "hidden_size": 4000, "num_attention_heads": 48,
    "head_dim": 64, "intermediate_size": 128, "vocab_size": 100})");
  CHECK(load_transformer(ok).head_dim == 64);
}

TEST_CASE("error: more experts per token than experts", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 6})");
  CHECK_THAT(load_error(file), Contains(file) && Contains("num_experts_per_tok: expected at most num_local_experts (4), found 6"));
  const std::string no_k = dir.write("k.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "n_routed_experts": 4})");
  CHECK_THAT(load_error(no_k), Contains(no_k) && Contains("num_experts_per_tok: expected a positive integer") &&
                                   Contains("found no 'num_experts_per_tok' key"));
}

TEST_CASE("error: MoE and MLA keys out of range", "[transformer]") {
  ModelDir dir;
  const std::string dense = dir.write("d.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "n_routed_experts": 4, "num_experts_per_tok": 2, "first_k_dense_replace": 3})");
  CHECK_THAT(load_error(dense), Contains(dense) && Contains("first_k_dense_replace: expected at most num_hidden_layers (2), found 3"));
  const std::string freq = dir.write("f.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_layer_freq": 0})");
  CHECK_THAT(load_error(freq), Contains(freq) && Contains("moe_layer_freq: expected a positive integer") && Contains("found 0"));
  const std::string mla = dir.write("m.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "v_head_dim": 8})");
  CHECK_THAT(load_error(mla), Contains(mla) && Contains("qk_rope_head_dim: expected a positive integer") &&
                                  Contains("found no 'qk_rope_head_dim' key"));
}

TEST_CASE("error: unknown hidden_act", "[transformer]") {
  ModelDir dir;
  const std::string file = dir.write("m.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100, "hidden_act": "slu"})");
  CHECK_THAT(load_error(file), Contains(file) && Contains("hidden_act: expected one of silu") &&
                                   Contains("found the string \"slu\"") && Contains("did you mean 'silu'?"));
}

TEST_CASE("error: JSON syntax error with line and column", "[transformer]") {
  ModelDir dir;
  // Line 3 lacks the ':' after the key; the parser reports the last character it read: the end of
  // the unexpected number 4096 (columns 17 to 20), as nlohmann-json's own "line 3, column 20".
  const std::string file = dir.write("m.json", "{\n  \"num_hidden_layers\": 2,\n  \"hidden_size\" 4096\n}\n");
  const std::string msg = load_error(file);
  CHECK_THAT(msg, Contains(file + ":3:20: error: expected valid JSON, found a syntax error ("));
  CHECK_THAT(msg, Contains("expected ':'"));
  const std::string array = dir.write("a.json", "[1, 2]");
  CHECK_THAT(load_error(array), Contains(array + ":1:1: error: expected a JSON object of config.json keys, found an array"));
}

TEST_CASE("error: a model too large to count in 64-bit integers", "[transformer]") {
  ModelDir dir;
  // 2·V·h alone is 2·2e9·2e9 = 8e18, above the 4e18 limit (2^63 ≈ 9.2e18).
  const std::string file = dir.write("m.json", R"({"num_hidden_layers": 1, "hidden_size": 2000000000, "num_attention_heads": 1,
    "head_dim": 1, "intermediate_size": 1, "vocab_size": 2000000000})");
  CHECK_THAT(load_error(file), Contains(file + ": error: expected a model below 4e18 parameters, found 8e+18 parameters"));
}

TEST_CASE("error: missing file", "[transformer]") {
  CHECK_THAT(load_error("/nonexistent/dir/model.json"),
             Contains("/nonexistent/dir/model.json: error: expected a model config.json file, found no such file"));
}

TEST_CASE("error: unknown shipped model name", "[transformer]") {
  std::string msg;
  try {
    load_transformer("llama-3-8bb");
  } catch (const ccsim::support::InputError& e) {
    msg = e.what();
    CHECK(e.key() == "model");
    CHECK(e.found() == "'llama-3-8bb'");
  }
  CHECK_THAT(msg, Contains(models_dir()));
  CHECK_THAT(msg, Contains("expected the name of a shipped model (deepseek-v3, gpt3-175b, llama-2-70b"));
  CHECK_THAT(msg, Contains("did you mean 'llama-3-8b'?"));
  CHECK_THAT(load_error("no-such-model-at-all"), Contains("found 'no-such-model-at-all'") && !Contains("did you mean"));
}
