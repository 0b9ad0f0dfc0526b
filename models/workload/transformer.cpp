#include "models/workload/transformer.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "support/numbers.hpp"
#include "support/data_dir.hpp"

namespace ccsim::models {
namespace {

using Json = nlohmann::json;

// Every integer value is at most INT_MAX (which catches typos), and parse() rejects a model
// whose total parameter count, computed in floating point, reaches kMaxParams (below 2^62).
// Each count is a sum of products of values >= 1, so no partial product can then overflow
// std::int64_t.
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr double kMaxParams = 4.0e18;

/// One config.json being read: its path, its text (to locate keys), its parsed root and the
/// object holding the language model's keys (`level`: the root, or `text_config` for a
/// multimodal config such as Llama-4's).
struct ConfigFile {
  std::string path;
  std::string text;
  Json root;
  Json level;
  std::string prefix;              ///< "" or "text_config." (key names in messages)
  std::size_t search_from = 0;     ///< where the level's keys start in the text

  /// Line and column of the first `"key"` in the level's part of the text; 0 when not found.
  /// Real config.json files are flat (or have one text_config), so the first occurrence is the key.
  support::SourceLocation location(const std::string& key) const {
    const std::string needle = "\"" + key + "\"";
    std::size_t pos = text.find(needle, search_from);
    if (pos == std::string::npos) pos = text.find(needle);
    if (pos == std::string::npos) return {path, 0, 0};
    return position(pos);
  }

  /// 1-based line and column of byte offset `pos` (0-based) in the text.
  support::SourceLocation position(std::size_t pos) const {
    pos = std::min(pos, text.size());
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < pos; ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return {path, line, static_cast<int>(pos - line_start) + 1};
  }

  bool has(const std::string& key) const { return level.contains(key) && !level.at(key).is_null(); }
  const Json& at(const std::string& key) const { return level.at(key); }

  support::InputError error(const std::string& key, const std::string& expected, const std::string& found,
                            const std::string& hint = {}) const {
    return support::InputError(location(key), prefix + key, expected, found, hint);
  }

  support::InputError missing(const std::string& key, const std::string& expected) const {
    return support::InputError({path, 1, 1}, prefix + key, expected, "no '" + key + "' key");
  }
};

/// A JSON value described for an error message: its type and, for scalars, the value.
std::string describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case Json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      constexpr std::size_t kMax = 80;
      if (s.size() <= kMax) return "the string \"" + s + "\"";
      return "the string \"" + s.substr(0, kMax) + "...\" (" + std::to_string(s.size()) + " characters)";
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return value.dump();
    case Json::value_t::number_float: return "the non-integer number " + value.dump();
    case Json::value_t::array: return value.empty() ? "an empty array" : "an array";
    case Json::value_t::object: return value.empty() ? "an empty object" : "an object";
    default: return "a " + std::string(value.type_name());
  }
}

/// The integer value of `key`, between `min` and `max`. `fallback` is used when the key is
/// absent or null; without one the key is required.
std::int64_t integer(const ConfigFile& f, const std::string& key, std::int64_t min, std::int64_t max,
                     std::optional<std::int64_t> fallback = std::nullopt) {
  const std::string expected = min == 1 ? fmt::format("a positive integer (at most {})", max)
                                        : fmt::format("an integer from {} to {}", min, max);
  if (!f.has(key)) {
    if (fallback) return *fallback;
    throw f.missing(key, expected);
  }
  const Json& v = f.at(key);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max) || static_cast<std::int64_t>(u) < min) throw f.error(key, expected, describe(v));
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < min || i > max) throw f.error(key, expected, describe(v));
    return i;
  }
  throw f.error(key, expected, describe(v));
}

int small_integer(const ConfigFile& f, const std::string& key, std::int64_t min,
                  std::optional<std::int64_t> fallback = std::nullopt) {
  return static_cast<int>(integer(f, key, min, kMaxInt, fallback));
}

std::optional<std::string> optional_string(const ConfigFile& f, const std::string& key) {
  if (!f.has(key)) return std::nullopt;
  const Json& v = f.at(key);
  if (!v.is_string()) throw f.error(key, "a string", describe(v));
  return v.get<std::string>();
}

bool boolean(const ConfigFile& f, const std::string& key, bool fallback) {
  if (!f.has(key)) return fallback;
  const Json& v = f.at(key);
  if (!v.is_boolean()) throw f.error(key, "true or false", describe(v));
  return v.get<bool>();
}

/// Reads and parses `path`; a syntax error is reported at the parser's line and column.
ConfigFile read_config(const std::string& path) {
  ConfigFile f;
  f.path = path;
  f.text = support::read_input_file(path, {"a model config.json file"});
  try {
    f.root = Json::parse(f.text);
  } catch (const Json::parse_error& e) {
    // e.byte is the 1-based index of the last character read: the offending one.
    const support::SourceLocation where = f.position(e.byte > 0 ? e.byte - 1 : 0);
    // what() reads "[json.exception.parse_error.101] parse error at line L, column C: DETAIL".
    std::string detail = e.what();
    const std::size_t column = detail.find("column ");
    const std::size_t colon = column == std::string::npos ? std::string::npos : detail.find(": ", column);
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
    // The detail ends with "; last read: '...'", up to a line of the file's text: never echo it.
    if (const std::size_t last = detail.find("; last read:"); last != std::string::npos) detail.erase(last);
    if (detail.size() > 160) detail = detail.substr(0, 160) + "...";
    throw support::InputError(where, "", "valid JSON", "a syntax error (" + detail + ")");
  } catch (const Json::exception& e) {
    // out_of_range.406: a number the parser cannot hold ("number overflow parsing '1e400'").
    // The exception carries no position: locate the quoted token in the text.
    const std::string what = e.what();
    const std::size_t open = what.find('\'');
    const std::size_t close = open == std::string::npos ? std::string::npos : what.find('\'', open + 1);
    const std::string token = close == std::string::npos ? std::string() : what.substr(open + 1, close - open - 1);
    const std::size_t pos = token.empty() ? std::string::npos : f.text.find(token);
    const support::SourceLocation where = pos == std::string::npos ? support::SourceLocation{path, 1, 1} : f.position(pos);
    throw support::InputError(where, "", "a number within the range of a double (about 1.8e308)",
                              token.empty() ? std::string("a number out of range") : support::quote_token(token));
  }
  if (!f.root.is_object()) {
    throw support::InputError({path, 1, 1}, "", "a JSON object of config.json keys", describe(f.root));
  }
  f.level = f.root;
  // Multimodal configs (Llama-4, Llama-3.2-Vision, Qwen2-VL's newer files) nest the language
  // model under text_config; the vision encoder beside it is not modelled.
  if (!f.root.contains("num_hidden_layers") && f.root.contains("text_config")) {
    const Json& t = f.root.at("text_config");
    if (!t.is_object()) {
      throw support::InputError(f.location("text_config"), "text_config", "a JSON object of the language model's keys", describe(t));
    }
    f.level = t;
    f.prefix = "text_config.";
    f.search_from = f.text.find("\"text_config\"");
    if (f.search_from == std::string::npos) f.search_from = 0;
  }
  return f;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

template <typename T>
T mlp_matrices(const TransformerConfig& c) {
  return T(c.gated_mlp ? 3 : 2);
}

/// Weight-matrix parameters of one layer's attention (no norm weights), elements.
///   Without MLA: h·(a·d) [Q] + 2·h·(kv·d) [K, V] + (a·d)·h [O].
///   With MLA (DeepSeek-V3):
///     q path:  q_lora > 0: h·q_lora [down] + q_lora·a·(nope + rope) [up]; else h·a·(nope + rope)
///     kv path: h·(kv_lora + rope) [down, plus the shared rope key] + kv_lora·a·(nope + v) [up to K_nope, V]
///     output:  a·v·h
/// T is std::int64_t for the counts, double for the overflow check in parse().
template <typename T>
T attention_matrix_params(const TransformerConfig& c) {
  const T h = T(c.hidden);
  const T a = T(c.heads);
  if (!c.mla) {
    const T d = T(c.head_dim);
    const T kv = T(c.kv_heads);
    return h * (a * d) + T(2) * h * (kv * d) + (a * d) * h;
  }
  const MlaSpec& m = *c.mla;
  const T q_lora = T(m.q_lora_rank);
  const T kv_lora = T(m.kv_lora_rank);
  const T nope = T(m.qk_nope_head_dim);
  const T rope = T(m.qk_rope_head_dim);
  const T v = T(m.v_head_dim);
  const T q = m.q_lora_rank > 0 ? h * q_lora + q_lora * a * (nope + rope) : h * a * (nope + rope);
  const T kv = h * (kv_lora + rope) + kv_lora * a * (nope + v);
  const T out = a * v * h;
  return q + kv + out;
}

/// Norm weights inside one layer's attention block: the pre-attention norm h, and with MLA the
/// q_a_layernorm (q_lora, when q_lora > 0) and kv_a_layernorm (kv_lora).
template <typename T>
T attention_norm_params(const TransformerConfig& c) {
  T n = T(c.hidden);
  if (c.mla) n += T(c.mla->q_lora_rank) + T(c.mla->kv_lora_rank);
  return n;
}

/// Dense MLP: (gated ? 3 : 2)·h·I (gate, up, down or up, down) + h (pre-MLP norm).
template <typename T>
T dense_mlp_params(const TransformerConfig& c) {
  return mlp_matrices<T>(c) * T(c.hidden) * T(c.intermediate) + T(c.hidden);
}

/// One routed (or shared) expert: (gated ? 3 : 2)·h·I_e.
template <typename T>
T expert_params(const TransformerConfig& c) {
  return c.moe ? mlp_matrices<T>(c) * T(c.hidden) * T(c.moe->expert_intermediate) : T(0);
}

/// Router (gate) of one MoE layer: h·experts.
template <typename T>
T router_params(const TransformerConfig& c) {
  return c.moe ? T(c.hidden) * T(c.moe->experts) : T(0);
}

/// One MoE layer's MLP: norm h + router + (routed + shared)·expert, `routed` being all experts
/// (parameters) or the top-k (active parameters).
template <typename T>
T moe_mlp_params(const TransformerConfig& c, int routed) {
  return T(c.hidden) + router_params<T>(c) + (T(routed) + T(c.moe->shared_experts)) * expert_params<T>(c);
}

/// Σ over layers of attention + MLP (all experts when `active` is false, top-k + shared when
/// true) + embedding V·h + LM head (V·h unless tied) + final norm h.
template <typename T>
T total_in(const TransformerConfig& c, bool active = false) {
  const T attention = attention_matrix_params<T>(c) + attention_norm_params<T>(c);
  T total = T(c.vocab) * T(c.hidden) + (c.tie_embeddings ? T(0) : T(c.vocab) * T(c.hidden)) + T(c.hidden);
  const int moe_layers = c.moe_layers();
  total += T(c.layers) * attention + T(c.layers - moe_layers) * dense_mlp_params<T>(c);
  if (moe_layers > 0) {
    total += T(moe_layers) * moe_mlp_params<T>(c, active ? c.moe->experts_per_token : c.moe->experts);
  }
  return total;
}

/// A list of layer indices (`key`, each in [0, layers)); empty when absent or null.
std::vector<int> layer_list(const ConfigFile& f, const std::string& key, int layers) {
  std::vector<int> out;
  if (!f.has(key)) return out;
  const Json& v = f.at(key);
  const std::string expected = fmt::format("a list of layer indices from 0 to {}", layers - 1);
  if (!v.is_array()) throw f.error(key, expected, describe(v));
  for (const Json& item : v) {
    if (!item.is_number_integer() || item.get<std::int64_t>() < 0 || item.get<std::int64_t>() >= layers) {
      throw f.error(key, expected, describe(item) + " in the list");
    }
    out.push_back(static_cast<int>(item.get<std::int64_t>()));
  }
  return out;
}

/// The first of `keys` the level has, or "" when none; two of them with different values is an
/// error naming both (GPT-OSS writes both num_experts_per_tok and experts_per_token).
std::string one_spelling(const ConfigFile& f, std::initializer_list<const char*> keys) {
  std::string first;
  for (const char* k : keys) {
    if (!f.has(k)) continue;
    if (first.empty()) {
      first = k;
    } else if (f.at(k) != f.at(first)) {
      throw f.error(k, fmt::format("the same value as {} ({}), which names the same setting", first, describe(f.at(first))),
                    describe(f.at(k)));
    }
  }
  return first;
}

/// Mixture of experts, in the naming of each family (see transformer.hpp). Which layers have an
/// MoE MLP is the conjunction of each family's rule, as each modeling_*.py in Hugging Face
/// transformers writes it:
///   DeepSeek-V2/V3: layer >= first_k_dense_replace and layer % moe_layer_freq == 0
///   Qwen2/Qwen3-MoE: (layer + 1) % decoder_sparse_step == 0 and layer not in mlp_only_layers
///   Llama-4: layer in moe_layers, or else (layer + 1) % interleave_moe_layer_step == 0
/// Widths: the routed experts' is moe_intermediate_size (Qwen, DeepSeek), or intermediate_size
/// (Mixtral, GPT-OSS, Llama-4, whose dense layers use intermediate_size_mlp instead).
/// Shared experts: n_shared_experts of the routed width (DeepSeek); Qwen2-MoE's one shared
/// expert of width shared_expert_intermediate_size, modelled as that width / the routed width
/// experts of the routed width (exact in parameters and FLOPs; its h-wide sigmoid gate is not
/// counted); Llama-4's one shared expert of the routed width (Llama4TextMoe, not a config key).
void read_moe(const ConfigFile& f, TransformerConfig& c) {
  const std::string experts_key = one_spelling(f, {"num_local_experts", "n_routed_experts", "num_experts"});
  if (experts_key.empty()) {
    for (const char* k : {"num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "n_shared_experts",
                          "shared_expert_intermediate_size", "moe_layers"}) {
      if (f.has(k) && f.at(k) != Json(0) && !(f.at(k).is_array() && f.at(k).empty())) {
        throw f.error(k, "no MoE key without an expert count (num_local_experts, num_experts or n_routed_experts)", describe(f.at(k)));
      }
    }
    return;
  }
  MoeSpec m;
  m.experts = small_integer(f, experts_key, 1);
  const std::string k_key = one_spelling(f, {"num_experts_per_tok", "experts_per_token"});
  m.experts_per_token = small_integer(f, k_key.empty() ? "num_experts_per_tok" : k_key, 1);
  if (m.experts_per_token > m.experts) {
    throw f.error(k_key, fmt::format("at most {} ({})", experts_key, m.experts), std::to_string(m.experts_per_token));
  }
  // Llama-4: the experts have intermediate_size, the dense layers intermediate_size_mlp.
  if (f.has("intermediate_size_mlp")) {
    m.expert_intermediate = c.intermediate;
    c.intermediate = integer(f, "intermediate_size_mlp", 1, kMaxInt);
  }
  m.expert_intermediate = integer(f, "moe_intermediate_size", 1, kMaxInt, m.expert_intermediate > 0 ? m.expert_intermediate : c.intermediate);
  m.shared_experts = small_integer(f, "n_shared_experts", 0, 0);
  if (f.has("shared_expert_intermediate_size")) {
    const std::int64_t width = integer(f, "shared_expert_intermediate_size", 0, kMaxInt);
    if (m.shared_experts > 0 && width > 0) {
      throw f.error("shared_expert_intermediate_size", "no shared_expert_intermediate_size beside n_shared_experts (two shared-expert conventions)",
                    describe(f.at("shared_expert_intermediate_size")));
    }
    if (width % m.expert_intermediate != 0) {
      throw f.error("shared_expert_intermediate_size",
                    fmt::format("a multiple of the routed experts' width {} (ccsim models a shared expert as routed-width experts)",
                                m.expert_intermediate),
                    describe(f.at("shared_expert_intermediate_size")));
    }
    if (width > 0) m.shared_experts = static_cast<int>(width / m.expert_intermediate);
  }
  const std::string model_type = f.has("model_type") && f.at("model_type").is_string() ? f.at("model_type").get<std::string>() : "";
  if (model_type == "llama4_text" || model_type == "llama4") m.shared_experts = std::max(m.shared_experts, 1);

  m.first_dense_layers = small_integer(f, "first_k_dense_replace", 0, 0);
  if (m.first_dense_layers > c.layers) {
    throw f.error("first_k_dense_replace", fmt::format("at most num_hidden_layers ({})", c.layers), std::to_string(m.first_dense_layers));
  }
  const int freq = small_integer(f, "moe_layer_freq", 1, 1);
  const int sparse_step = small_integer(f, "decoder_sparse_step", 1, 1);
  const int interleave = small_integer(f, "interleave_moe_layer_step", 1, 1);
  const std::vector<int> dense_only = layer_list(f, "mlp_only_layers", c.layers);
  const bool listed = f.has("moe_layers");
  const std::vector<int> moe_listed = layer_list(f, "moe_layers", c.layers);
  m.moe_layer.assign(static_cast<std::size_t>(c.layers), false);
  int count = 0;
  for (int l = 0; l < c.layers; ++l) {
    bool moe = l >= m.first_dense_layers && l % freq == 0 && (l + 1) % sparse_step == 0 &&
               std::find(dense_only.begin(), dense_only.end(), l) == dense_only.end();
    moe = moe && (listed ? std::find(moe_listed.begin(), moe_listed.end(), l) != moe_listed.end() : (l + 1) % interleave == 0);
    m.moe_layer[static_cast<std::size_t>(l)] = moe;
    count += moe ? 1 : 0;
  }
  if (count == 0) {
    throw support::InputError(f.location(experts_key), f.prefix + experts_key,
                              "at least one MoE layer (first_k_dense_replace, moe_layer_freq, decoder_sparse_step, mlp_only_layers, "
                              "interleave_moe_layer_step and moe_layers leave none)",
                              "0 MoE layers of " + std::to_string(c.layers));
  }
  c.moe = m;
}

/// Keys read by parse() and read_moe(), at the model's level.
constexpr std::string_view kReadKeys[] = {
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
    "intermediate_size_mlp", "vocab_size", "tie_word_embeddings", "hidden_act", "num_local_experts", "n_routed_experts",
    "num_experts", "num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "n_shared_experts",
    "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
    "mlp_only_layers", "interleave_moe_layer_step", "moe_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
    "qk_rope_head_dim", "v_head_dim", "text_config", "model_type", "_source"};

/// Keys whose names look size-relevant but that do not change the parameter count ccsim
/// computes (docs/workload-model.md says what each one would change and why it is left out).
constexpr std::string_view kKnownHarmless[] = {
    "max_window_layers",         // Qwen2: layers using sliding-window attention (use_sliding_window false in the releases)
    "num_nextn_predict_layers",  // DeepSeek-V3 multi-token prediction module: excluded from the published 671 B
    "layer_types",               // GPT-OSS: sliding or full attention per layer (no parameters; see docs)
    "no_rope_layers",            // Llama-4: layers without RoPE
    "n_group", "topk_group",     // DeepSeek: group-limited routing
    "moe_router_dtype", "moe_aux_loss_coeff",
    "output_hidden_states", "pruned_heads", "num_beams", "num_beam_groups", "num_return_sequences",
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "cross_attention_hidden_size",  // PretrainedConfig dumps
    "num_labels", "head_mask", "pretraining_tp",
    "hidden_dropout", "hidden_dropout_prob", "layer_norm_eps", "layer_norm_epsilon", "embd_pdrop",  // no parameters
    "mlp_bias",                  // biases are not counted (< 0.01 % of the parameters)
};

/// Keys of architectures ccsim does not model whose names do not look size-relevant.
constexpr std::string_view kOtherArchitectures[] = {
    "cross_attention_layers",   // Llama-3.2-Vision: cross-attention layers inside the text model
    "multi_query",              // Falcon: one KV head (use num_key_value_heads)
    "new_decoder_architecture", "parallel_attn",  // Falcon
    "is_encoder_decoder",       // T5, BART
    "encoder_layers", "decoder_layers", "num_decoder_layers",
    "d_model", "d_ff", "d_kv",  // T5
    "mamba_d_state", "ssm_state_size", "attn_layer_indices", "hybrid_override_pattern",  // hybrid SSMs
    "altup_num_inputs", "laurel_rank",  // Gemma-3n
};

std::vector<std::string> split_words(const std::string& key) {
  std::vector<std::string> words;
  std::string w;
  for (char ch : key) {
    if (ch == '_' || ch == '-') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  if (!w.empty()) words.push_back(w);
  return words;
}

/// A value that leaves a key without effect: null, false, 0, "" or an empty list or object.
bool inert(const Json& v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0.0) ||
         (v.is_string() && v.get_ref<const std::string&>().empty()) || ((v.is_array() || v.is_object()) && v.empty());
}

/// Throws for the first key (in file order) of `object` that ccsim does not read and that may
/// change the model's size (size_relevant_unread_key), unless its value is inert.
void reject_size_keys(const ConfigFile& f, const Json& object, const std::string& prefix, std::size_t search_from) {
  std::vector<std::pair<support::SourceLocation, std::string>> bad;
  for (const auto& [key, value] : object.items()) {
    if (std::find(std::begin(kReadKeys), std::end(kReadKeys), key) != std::end(kReadKeys)) continue;
    if (inert(value) || !size_relevant_unread_key(key)) continue;
    const std::string needle = "\"" + key + "\"";
    const std::size_t pos = f.text.find(needle, search_from);
    bad.emplace_back(pos == std::string::npos ? support::SourceLocation{f.path, 0, 0} : f.position(pos), key);
  }
  if (bad.empty()) return;
  // nlohmann::json orders keys alphabetically: report the first in the file.
  std::sort(bad.begin(), bad.end(), [](const auto& x, const auto& y) {
    return std::pair(x.first.line, x.first.column) < std::pair(y.first.line, y.first.column);
  });
  const auto& [where, key] = bad.front();
  std::string others;
  for (std::size_t i = 1; i < bad.size(); ++i) others += (others.empty() ? "" : ", ") + bad[i].second;
  throw support::InputError(where, prefix + key,
                            "only config.json keys ccsim reads where a key changes the model's size (Llama, Mixtral, "
                            "Qwen2/Qwen3(-MoE), DeepSeek-V2/V3, Llama-4, GPT-OSS naming; docs/workload-model.md)",
                            "'" + key + "' = " + describe(object.at(key)) + ", which ccsim does not read",
                            (others.empty() ? std::string() : "also unread: " + others + "; ") +
                                "counting the model without it would misstate its parameters; remove the key from a copy of the file to "
                                "simulate the model as ccsim reads it");
}

/// Parses the keys of a config.json (see load_transformer).
TransformerConfig parse(const ConfigFile& f, const std::string& name) {
  TransformerConfig c;
  c.name = name;
  c.source = optional_string(f, "_source").value_or(f.path);
  {
    std::error_code ec;
    const auto abs = std::filesystem::absolute(f.path, ec);
    c.source_path = ec ? f.path : abs.lexically_normal().string();
  }
  reject_size_keys(f, f.level, f.prefix, f.search_from);
  if (!f.prefix.empty()) reject_size_keys(f, f.root, "", 0);
  c.layers = small_integer(f, "num_hidden_layers", 1);
  c.hidden = integer(f, "hidden_size", 1, kMaxInt);
  c.heads = small_integer(f, "num_attention_heads", 1);
  c.kv_heads = small_integer(f, "num_key_value_heads", 1, c.heads);
  if (c.heads % c.kv_heads != 0) {
    throw f.error("num_key_value_heads", fmt::format("a divisor of num_attention_heads ({})", c.heads),
                  std::to_string(c.kv_heads));
  }
  if (f.has("head_dim")) {
    c.head_dim = small_integer(f, "head_dim", 1);
  } else {
    if (c.hidden % c.heads != 0) {
      throw f.error("num_attention_heads",
                    fmt::format("a divisor of hidden_size ({}) when head_dim is absent", c.hidden),
                    std::to_string(c.heads));
    }
    c.head_dim = static_cast<int>(c.hidden / c.heads);
  }
  c.intermediate = integer(f, "intermediate_size", 1, kMaxInt);
  c.vocab = integer(f, "vocab_size", 1, kMaxInt);
  // Llama-4 writes tie_word_embeddings beside text_config, not inside it.
  c.tie_embeddings = f.has("tie_word_embeddings") || f.root == f.level ? boolean(f, "tie_word_embeddings", false)
                     : f.root.contains("tie_word_embeddings") && f.root.at("tie_word_embeddings").is_boolean()
                         ? f.root.at("tie_word_embeddings").get<bool>()
                         : false;

  // hidden_act: SwiGLU (silu) MLPs have gate, up and down matrices; GELU/ReLU MLPs have up and down.
  const std::string act = optional_string(f, "hidden_act").value_or("silu");
  if (act == "silu" || act == "swiglu") {
    c.gated_mlp = true;
  } else if (act == "gelu" || act == "gelu_new" || act == "relu") {
    c.gated_mlp = false;
  } else {
    const std::vector<std::string> known{"silu", "swiglu", "gelu", "gelu_new", "relu"};
    const std::string suggestion = support::closest_match(act, known);
    throw f.error("hidden_act", "one of silu, swiglu (gated MLP), gelu, gelu_new, relu (two-matrix MLP)",
                  describe(f.at("hidden_act")),
                  suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
  }

  read_moe(f, c);

  // Multi-head latent attention (DeepSeek-V2/V3), present when kv_lora_rank is set.
  if (f.has("kv_lora_rank")) {
    MlaSpec m;
    m.q_lora_rank = small_integer(f, "q_lora_rank", 0, 0);  // null or absent: plain Q projection
    m.kv_lora_rank = small_integer(f, "kv_lora_rank", 1);
    m.qk_nope_head_dim = small_integer(f, "qk_nope_head_dim", 1);
    m.qk_rope_head_dim = small_integer(f, "qk_rope_head_dim", 1);
    m.v_head_dim = small_integer(f, "v_head_dim", 1);
    c.mla = m;
  }

  // Every count is a sum of products of the values above; computing the total in floating
  // point (where it cannot overflow) and bounding it bounds every partial product too. One MoE
  // MLP is added for a model whose layers are all dense (first_k_dense_replace = layers), so
  // that expert_params() and router_params() are bounded as well.
  const double estimate = total_in<double>(c) + (c.moe ? moe_mlp_params<double>(c, c.moe->experts) : 0.0);
  if (estimate >= kMaxParams) {
    throw support::InputError({f.path, 0, 0}, "", "a model below 4e18 parameters",
                              fmt::format("{:.3g} parameters (check hidden_size, intermediate_size, vocab_size and the expert counts)",
                                          estimate));
  }
  return c;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

}  // namespace

bool TransformerConfig::is_moe_layer(int layer) const {
  if (!moe.has_value() || layer < 0 || layer >= layers) return false;
  if (!moe->moe_layer.empty()) return layer < static_cast<int>(moe->moe_layer.size()) && moe->moe_layer[static_cast<std::size_t>(layer)];
  return layer >= moe->first_dense_layers;
}

int TransformerConfig::moe_layers() const {
  if (!moe) return 0;
  if (moe->moe_layer.empty()) return layers - moe->first_dense_layers;
  int n = 0;
  for (int l = 0; l < layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

bool size_relevant_unread_key(const std::string& key) {
  if (std::find(std::begin(kOtherArchitectures), std::end(kOtherArchitectures), key) != std::end(kOtherArchitectures)) return true;
  if (std::find(std::begin(kKnownHarmless), std::end(kKnownHarmless), key) != std::end(kKnownHarmless)) return false;
  static const std::vector<std::string> size_words{"expert", "experts", "moe", "layer", "layers", "dim", "rank", "head", "heads",
                                                    "intermediate", "hidden", "vocab", "lora", "ffn", "embd", "mlp", "kv",
                                                    "shared", "dense", "sparse", "width", "depth"};
  const std::vector<std::string> words = split_words(key);
  if (words.empty()) return false;
  if (words.front() == "num" || words.front() == "n") return true;
  for (const auto& w : words)
    if (std::find(size_words.begin(), size_words.end(), w) != size_words.end()) return true;
  return false;
}

// Attention block with its norms: attention_matrix_params (formulas there) + h [pre-norm]
// (+ q_lora + kv_lora [latent norms] with MLA).
std::int64_t TransformerConfig::attention_params() const {
  return attention_matrix_params<std::int64_t>(*this) + attention_norm_params<std::int64_t>(*this);
}

// Dense MLP: (gated ? 3 : 2)·h·I (gate, up, down or up, down) + h (pre-MLP norm). Biases are
// not counted (Llama, Mixtral and DeepSeek have none; GPT-3's are < 0.1 % of its parameters).
std::int64_t TransformerConfig::dense_mlp_params() const { return ccsim::models::dense_mlp_params<std::int64_t>(*this); }

// One routed (or shared) expert: (gated ? 3 : 2)·h·I_e; Mixtral and DeepSeek experts are SwiGLU.
std::int64_t TransformerConfig::expert_params() const { return ccsim::models::expert_params<std::int64_t>(*this); }

// Router (gate) of one MoE layer: h·experts.
std::int64_t TransformerConfig::router_params() const { return ccsim::models::router_params<std::int64_t>(*this); }

// attention_params + (MoE layer: h [norm] + router + (experts + shared)·expert; else dense MLP).
// A layer outside [0, layers) counts as dense.
std::int64_t TransformerConfig::layer_params(int layer) const {
  return attention_params() +
         (is_moe_layer(layer) ? moe_mlp_params<std::int64_t>(*this, moe->experts) : dense_mlp_params());
}

// Input embedding: V·h.
std::int64_t TransformerConfig::embedding_params() const { return vocab * hidden; }

// LM head V·h (0 when tie_word_embeddings) + final norm h.
std::int64_t TransformerConfig::output_params() const { return (tie_embeddings ? 0 : vocab * hidden) + hidden; }

// Σ layer_params + embedding + output.
std::int64_t TransformerConfig::total_params() const { return total_in<std::int64_t>(*this); }

// As total_params, but each MoE layer counts h + router + (k + shared)·expert.
std::int64_t TransformerConfig::active_params() const { return total_in<std::int64_t>(*this, true); }

// 2 FLOPs per weight of the Q, K, V and O projections (norms excluded).
double TransformerConfig::attention_projection_flops() const { return 2.0 * attention_matrix_params<double>(*this); }

// QKᵀ: 2·a·d_qk·context; attention·V: 2·a·d_v·context, with d_qk = d_v = head_dim, or with
// MLA d_qk = qk_nope_head_dim + qk_rope_head_dim and d_v = v_head_dim. Softmax not counted.
double TransformerConfig::attention_score_flops(double context) const {
  const double d_qk = mla ? mla->qk_nope_head_dim + mla->qk_rope_head_dim : head_dim;
  const double d_v = mla ? mla->v_head_dim : head_dim;
  return 2.0 * heads * d_qk * context + 2.0 * heads * d_v * context;
}

// Dense layer: 2·(gated ? 3 : 2)·h·I (norm excluded). MoE layer: 2·(router + (k + shared)·expert).
double TransformerConfig::mlp_flops(int layer) const {
  if (is_moe_layer(layer)) {
    return 2.0 * (ccsim::models::router_params<double>(*this) +
                  (double(moe->experts_per_token) + double(moe->shared_experts)) * ccsim::models::expert_params<double>(*this));
  }
  return 2.0 * mlp_matrices<double>(*this) * double(hidden) * double(intermediate);
}

// LM head: 2·h·V (also when tied: the shared matrix is still applied).
double TransformerConfig::logits_flops() const { return 2.0 * double(hidden) * double(vocab); }

// 2·kv_heads·head_dim·e (K and V), or with MLA the cached latent and rope key (kv_lora + rope)·e.
double TransformerConfig::kv_cache_bytes_per_token(double element_bytes) const {
  if (mla) return static_cast<double>(mla->kv_lora_rank + mla->qk_rope_head_dim) * element_bytes;
  return 2.0 * kv_heads * head_dim * element_bytes;
}

std::string models_dir() {
  const std::filesystem::path base = support::data_dir();
  return (base / "models").string();
}

std::vector<std::string> shipped_models() {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(models_dir(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && it->is_regular_file(ec)) names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TransformerConfig load_transformer(const std::string& name_or_path, const std::string& base_dir) {
  namespace fs = std::filesystem;
  if (looks_like_path(name_or_path)) {
    fs::path p(name_or_path);
    if (p.is_relative()) p = (fs::path(base_dir) / p).lexically_normal();
    const ConfigFile f = read_config(p.string());
    return parse(f, p.stem().string());
  }
  const std::vector<std::string> names = shipped_models();
  if (std::find(names.begin(), names.end(), name_or_path) == names.end()) {
    const std::string suggestion = support::closest_match(name_or_path, names);
    throw support::InputError({models_dir(), 0, 0}, "model",
                              "the name of a shipped model (" + (names.empty() ? std::string("none found") : join(names)) +
                         ") or a path to a config.json",
                     "'" + name_or_path + "'",
                     suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
  }
  const ConfigFile f = read_config((fs::path(models_dir()) / (name_or_path + ".json")).string());
  return parse(f, name_or_path);
}

}  // namespace ccsim::models
