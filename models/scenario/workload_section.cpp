#include "models/scenario/workload_section.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "models/scenario/overrides.hpp"
#include "models/scenario/strategy_section.hpp"

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

/// Megatron-LM argument names with the same meaning as a ccsim workload key
/// (megatron/training/arguments.py: --seq-length, --recompute-granularity full|selective).
/// micro_batch_size, global_batch_size, recompute_method and recompute_num_layers are already
/// Megatron's names.
constexpr KeyAlias kWorkloadAliases[] = {
    {"seq_length", "sequence_length"},
    {"recompute_granularity", "recompute"},
};

constexpr std::string_view kWorkloadKeys[] = {
    "model", "phase", "sequence_length", "micro_batch_size", "global_batch_size", "batch_size", "context_length",
    "generated_tokens", "dtype", "recompute", "recompute_method", "recompute_num_layers", "recompute_modules", "input_len",
    "output_len", "seq_length", "recompute_granularity"};

}  // namespace

std::span<const std::string_view> workload_keys() { return kWorkloadKeys; }

WorkloadSpec parse_workload(const support::Fields& w) {
  reject_other_section_keys(w, kWorkloadKeys, strategy_keys(), "strategy");
  w.reject_unknown(kWorkloadKeys);
  const std::string seq = spelling(w, "sequence_length", kWorkloadAliases);
  const std::string recompute = spelling(w, "recompute", kWorkloadAliases);
  WorkloadSpec spec;
  spec.model = w.string("model");
  spec.phase = *parse_workload_phase(w.choice("phase", {"training_step", "prefill", "decode", "serving"}, "training_step"));
  const bool needs_sequence = spec.phase == WorkloadPhase::TrainingStep || spec.phase == WorkloadPhase::Prefill;
  // Bounds keep every product of sizes far inside 64-bit integers and doubles' exact range.
  constexpr int kMaxTokens = 1 << 24;      // 16,777,216 tokens per sequence
  constexpr int kMaxBatch = 1 << 20;       // 1,048,576 sequences
  spec.sequence_length = needs_sequence ? w.count(seq, 1, kMaxTokens) : w.count(seq, 1, kMaxTokens, 1);
  spec.micro_batch_size = w.count("micro_batch_size", 1, kMaxBatch, 1);
  spec.global_batch_size = w.count("global_batch_size", 1, std::numeric_limits<int>::max(), 0);
  spec.batch_size = w.count("batch_size", 1, kMaxBatch, 1);
  spec.context_length = w.count("context_length", 0, 1 << 28, 0);
  spec.generated_tokens = w.count("generated_tokens", 1, kMaxTokens, 1);
  // phase serving: a batch of requests as vLLM's benchmark_latency.py runs it (--input-len,
  // --output-len, --batch-size); TPOT needs at least one decode step after the first token.
  if (spec.phase == WorkloadPhase::Serving) {
    // The prefill and decode steps of a request batch take their lengths from input_len and
    // output_len; the single-step keys would be silently ignored.
    for (const std::string& key : {seq, std::string("context_length"), std::string("generated_tokens")})
      if (w.has(key)) throw w.error(key, "no sequence_length / context_length / generated_tokens when phase is serving (use input_len and output_len)");
    spec.input_len = w.count("input_len", 1, kMaxTokens);
    spec.output_len = w.count("output_len", 1, kMaxTokens);
    if (spec.output_len < 2) throw w.error("output_len", "at least 2 tokens (TPOT needs a decode step after the first token)");
  } else {
    for (const char* key : {"input_len", "output_len"})
      if (w.has(key)) throw w.error(key, "no input_len / output_len unless phase is serving (prefill: sequence_length; decode: context_length, generated_tokens)");
  }
  spec.dtype = w.choice("dtype", {"bf16", "fp16", "fp8", "fp32"}, "bf16");
  spec.recompute = w.choice(recompute, {"none", "selective", "full"}, "none");
  // Megatron-Core TransformerConfig.__post_init__: recompute_method and recompute_num_layers
  // belong to full recomputation (num_layers "must be None for selective"); recompute_modules to
  // selective. The defaults (uniform, 1) are Megatron-LM's usual full-recompute setting.
  for (const char* key : {"recompute_method", "recompute_num_layers"}) {
    if (w.has(key) && spec.recompute != "full") {
      throw w.error(key, std::string("no '") + key + "' unless recompute is full (Megatron's recompute method and layer count apply to full recomputation)");
    }
  }
  spec.recompute_method = w.choice("recompute_method", {"uniform", "block"}, "uniform");
  spec.recompute_num_layers = w.count("recompute_num_layers", 1, 4096, 1);
  if (w.has("recompute_modules")) {
    if (spec.recompute != "selective") {
      throw w.error("recompute_modules", "no 'recompute_modules' unless recompute is selective (Megatron-Core's --recompute-modules)");
    }
    const std::vector<std::string> allowed{"core_attn", "layernorm", "mlp", "moe_act", "moe", "shared_experts", "mla_up_proj"};
    spec.recompute_modules.clear();
    const auto items = w.list("recompute_modules");
    if (items.empty()) throw w.error("recompute_modules", "a list of at least one module (core_attn, layernorm, mlp, moe_act, moe, shared_experts, mla_up_proj)");
    for (std::size_t i = 0; i < items.size(); ++i) {
      const YAML::Node& node = items[i].node;
      const std::string where = support::element_path(w.key_path("recompute_modules"), i);
      const std::string expected = "a Megatron-Core recompute module: core_attn, layernorm, mlp, moe_act, moe, shared_experts or mla_up_proj";
      if (!node.IsScalar()) throw support::InputError(support::location_of(items[i]), where, expected, support::describe_node(node));
      if (std::find(allowed.begin(), allowed.end(), node.Scalar()) == allowed.end()) {
        throw support::InputError(support::location_of(items[i]), where, expected, "'" + node.Scalar() + "'");
      }
      if (std::find(spec.recompute_modules.begin(), spec.recompute_modules.end(), node.Scalar()) != spec.recompute_modules.end()) {
        throw support::InputError(support::location_of(items[i]), where, "each module once", "'" + node.Scalar() + "' a second time");
      }
      spec.recompute_modules.push_back(node.Scalar());
    }
  }
  return spec;
}

TransformerConfig load_workload_model(const support::Fields& w, const std::string& name, const std::string& set_layer_file) {
  const bool path = name.find('/') != std::string::npos || (name.size() > 5 && name.substr(name.size() - 5) == ".json");
  if (!path) {
    const auto shipped = shipped_models();
    if (std::find(shipped.begin(), shipped.end(), name) == shipped.end()) {
      std::string list;
      for (const auto& m : shipped) list += (list.empty() ? "" : ", ") + m;
      const std::string near = support::closest_match(name, shipped);
      if (list.empty()) list = "none in " + models_dir();
      throw w.error("model", "a shipped model (" + list + ") or a path to a Hugging Face config.json",
                    near.empty() ? std::string{} : "did you mean '" + near + "'?");
    }
  }
  // Relative config paths are relative to the file that names them.
  std::string file = w.location("model").file;
  if (file == kSetLayerFile && !set_layer_file.empty()) file = set_layer_file;
  const fs::path base = fs::path(file).parent_path();
  return load_transformer(name, base.empty() ? "." : base.string());
}

}  // namespace ccsim::models
