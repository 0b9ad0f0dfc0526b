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

/// One config.json being read: its path, its text (to locate keys) and its parsed root.
struct ConfigFile {
  std::string path;
  std::string text;
  Json root;

  /// Line and column of the first `"key"` in the file text; 0 when not found. Real config.json
  /// files are flat, so the first occurrence is the key itself.
  support::SourceLocation location(const std::string& key) const {
    const std::string needle = "\"" + key + "\"";
    const std::size_t pos = text.find(needle);
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

  bool has(const std::string& key) const { return root.contains(key) && !root.at(key).is_null(); }

  support::InputError error(const std::string& key, const std::string& expected, const std::string& found,
                            const std::string& hint = {}) const {
    return support::InputError(location(key), key, expected, found, hint);
  }

  support::InputError missing(const std::string& key, const std::string& expected) const {
    return support::InputError({path, 1, 1}, key, expected, "no '" + key + "' key");
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
  const Json& v = f.root.at(key);
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
  const Json& v = f.root.at(key);
  if (!v.is_string()) throw f.error(key, "a string", describe(v));
  return v.get<std::string>();
}

bool boolean(const ConfigFile& f, const std::string& key, bool fallback) {
  if (!f.has(key)) return fallback;
  const Json& v = f.root.at(key);
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
  c.tie_embeddings = boolean(f, "tie_word_embeddings", false);

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
                  describe(f.root.at("hidden_act")),
                  suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
  }

  // Mixture of experts: Mixtral's num_local_experts or DeepSeek's n_routed_experts.
  const std::string experts_key = f.has("num_local_experts") ? "num_local_experts"
                                  : f.has("n_routed_experts") ? "n_routed_experts"
                                                              : "";
  if (!experts_key.empty()) {
    MoeSpec m;
    m.experts = small_integer(f, experts_key, 1);
    m.experts_per_token = small_integer(f, "num_experts_per_tok", 1);
    if (m.experts_per_token > m.experts) {
      throw f.error("num_experts_per_tok", fmt::format("at most {} ({})", experts_key, m.experts),
                    std::to_string(m.experts_per_token));
    }
    m.shared_experts = small_integer(f, "n_shared_experts", 0, 0);
    m.expert_intermediate = integer(f, "moe_intermediate_size", 1, kMaxInt, c.intermediate);
    m.first_dense_layers = small_integer(f, "first_k_dense_replace", 0, 0);
    if (m.first_dense_layers > c.layers) {
      throw f.error("first_k_dense_replace", fmt::format("at most num_hidden_layers ({})", c.layers),
                    std::to_string(m.first_dense_layers));
    }
    // DeepSeek's moe_layer_freq puts an MoE MLP only in every n-th layer; ccsim models every
    // layer after first_k_dense_replace as MoE, so only 1 is accepted rather than miscounted.
    if (f.has("moe_layer_freq") && integer(f, "moe_layer_freq", 1, kMaxInt) != 1) {
      throw f.error("moe_layer_freq", "1 (every layer after first_k_dense_replace has an MoE MLP)",
                    describe(f.root.at("moe_layer_freq")));
    }
    c.moe = m;
  }

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
  return moe.has_value() && layer >= moe->first_dense_layers && layer >= 0 && layer < layers;
}

int TransformerConfig::moe_layers() const { return moe ? layers - moe->first_dense_layers : 0; }

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
