#pragma once
// Transformer architectures, described with Hugging Face config.json names
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, num_local_experts / n_routed_experts, num_experts_per_tok,
// moe_intermediate_size, n_shared_experts, first_k_dense_replace, q_lora_rank, kv_lora_rank,
// qk_nope_head_dim, qk_rope_head_dim, v_head_dim, tie_word_embeddings, hidden_act).
// Shipped entries live in scenarios/models/<name>.json (real config.json files, or the
// published architecture written in the same format); a scenario may point at any config.json.
//
// Counts are in elements (parameters) and FLOPs (one multiply-add = 2 FLOPs). Sources:
// Hugging Face config.json of each model; Narayanan et al., SC'21 (Megatron-LM FLOPs per
// token); Korthikanti et al. 2022 (activation memory); DeepSeek-V3 technical report (MLA, MoE).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ccsim::models {

/// Mixture-of-experts layers (Mixtral: num_local_experts; DeepSeek: n_routed_experts).
struct MoeSpec {
  int experts = 0;                    ///< routed experts per MoE layer
  int experts_per_token = 0;          ///< top-k routing (num_experts_per_tok)
  int shared_experts = 0;             ///< always-active experts (n_shared_experts), DeepSeek
  std::int64_t expert_intermediate = 0;  ///< FFN width of one expert (moe_intermediate_size, or intermediate_size for Mixtral)
  int first_dense_layers = 0;         ///< leading layers with a dense MLP (first_k_dense_replace)
};

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank Q and KV projections.
struct MlaSpec {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct TransformerConfig {
  std::string name;            ///< entry name ("llama-3-70b") or the config file's stem
  std::string source;          ///< where the figures come from ("_source" key, or the file path)
  std::string source_path;     ///< absolute path of the config file that was read
  int layers = 0;              ///< num_hidden_layers
  std::int64_t hidden = 0;     ///< hidden_size h
  int heads = 0;               ///< num_attention_heads a
  int kv_heads = 0;            ///< num_key_value_heads (= heads when absent)
  int head_dim = 0;            ///< head_dim (= hidden / heads when absent)
  std::int64_t intermediate = 0;  ///< intermediate_size (dense MLP width)
  std::int64_t vocab = 0;      ///< vocab_size
  bool gated_mlp = true;       ///< SwiGLU-style MLP with 3 matrices (hidden_act silu); GELU MLP has 2
  bool tie_embeddings = false; ///< tie_word_embeddings: output head shares the input embedding
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;

  /// Whether layer `layer` (0-based) has an MoE MLP.
  bool is_moe_layer(int layer) const;
  int moe_layers() const;

  // Parameters (elements). Norm weights are counted (2·h per layer, h final).
  std::int64_t attention_params() const;     ///< one layer's attention block incl. its norm
  std::int64_t dense_mlp_params() const;     ///< one dense MLP incl. its norm
  std::int64_t expert_params() const;        ///< one routed expert
  std::int64_t router_params() const;        ///< one MoE layer's router (h × experts)
  std::int64_t layer_params(int layer) const;   ///< everything in layer `layer` (all experts)
  std::int64_t embedding_params() const;     ///< input embedding V·h
  std::int64_t output_params() const;        ///< LM head V·h (0 when tied) + final norm
  std::int64_t total_params() const;
  /// Parameters touched per token (top-k routed + shared experts only), for FLOPs.
  std::int64_t active_params() const;

  // Forward FLOPs per token (2 per multiply-add), per layer.
  double attention_projection_flops() const;        ///< Q, K, V and output projections
  double attention_score_flops(double context) const;  ///< QKᵀ and attention·V over `context` tokens: 4·a·d·context
  double mlp_flops(int layer) const;                ///< dense MLP, or router + k routed + shared experts
  double logits_flops() const;                      ///< LM head: 2·h·V

  /// Bytes of KV cache per token per layer at `element_bytes` per element:
  /// 2·kv_heads·head_dim·e, or (kv_lora_rank + qk_rope_head_dim)·e with MLA.
  double kv_cache_bytes_per_token(double element_bytes) const;
};

/// Directory of shipped model entries: $CCSIM_DATA_DIR/models or the source tree's.
std::string models_dir();
/// Names of the shipped entries (file stems in models_dir()), sorted.
std::vector<std::string> shipped_models();

/// Loads `name_or_path`: a shipped entry name ("llama-3-70b"), or a path to a config.json
/// (relative paths resolved against `base_dir`, the scenario's folder). Throws InputError
/// naming the file, key, expected and found for missing or malformed keys, and for unknown
/// names (with the closest shipped name).
TransformerConfig load_transformer(const std::string& name_or_path, const std::string& base_dir = ".");

}  // namespace ccsim::models
