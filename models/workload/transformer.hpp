#pragma once
// Transformer architectures, described with Hugging Face config.json names
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, tie_word_embeddings, hidden_act; MLA: q_lora_rank,
// kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim). Mixture-of-experts configs are
// read in each family's naming: Mixtral and GPT-OSS (num_local_experts, experts_per_token),
// Qwen2/Qwen3-MoE (num_experts, moe_intermediate_size, shared_expert_intermediate_size,
// decoder_sparse_step, mlp_only_layers), DeepSeek-V2/V3 (n_routed_experts, n_shared_experts,
// first_k_dense_replace, moe_layer_freq) and Llama-4 (text_config, num_local_experts,
// interleave_moe_layer_step, moe_layers, intermediate_size_mlp, one shared expert). A key that
// ccsim does not read and that may change the model's size is an error naming it (see
// load_transformer); docs/workload-model.md lists what is read and what is approximated.
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
  /// Per layer, whether its MLP is MoE; one entry per layer when read from a config.json (from
  /// first_k_dense_replace, moe_layer_freq, decoder_sparse_step, mlp_only_layers,
  /// interleave_moe_layer_step, moe_layers). Empty: every layer from first_dense_layers on.
  std::vector<bool> moe_layer;
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

/// Whether a config.json key that load_transformer does not read may change the model's size:
/// the keys of other architectures named in a list (cross_attention_layers, multi_query, ...),
/// and any key whose name is made of size words (first word num/n, or a word among expert(s),
/// moe, layer(s), dim, rank, head(s), intermediate, hidden, vocab, lora, ffn, embd, mlp, kv,
/// shared, dense, sparse, width, depth), except the keys known not to change the parameter
/// count (max_window_layers, num_nextn_predict_layers, layer_types, n_group, ...).
bool size_relevant_unread_key(const std::string& key);

/// Directory of shipped model entries: $CCSIM_DATA_DIR/models or the source tree's.
std::string models_dir();
/// Names of the shipped entries (file stems in models_dir()), sorted.
std::vector<std::string> shipped_models();

/// Loads `name_or_path`: a shipped entry name ("llama-3-70b"), or a path to a config.json
/// (relative paths resolved against `base_dir`, the scenario's folder). A multimodal config
/// whose language model sits under `text_config` (Llama-4) is read from there. Throws
/// InputError naming the file, key, expected and found for missing or malformed keys, for
/// unknown names (with the closest shipped name), and for a key ccsim does not read that may
/// change the parameter count (size_relevant_unread_key) unless its value is null, false, 0 or
/// empty.
TransformerConfig load_transformer(const std::string& name_or_path, const std::string& base_dir = ".");

}  // namespace ccsim::models
