#include "models/scenario/strategy_section.hpp"

#include "models/scenario/workload_section.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

namespace ccsim::models {
namespace {

/// Upper bound of every parallel size; far above any built system, it guards against typos and
/// overflow.
constexpr int kMaxGpus = 1 << 20;

/// The list of positive counts `key` (empty when absent). Throws InputError at the first entry
/// that is not an integer from 1 to 2^20, or when the value is not a non-empty list.
std::vector<int> counts(const support::Fields& s, std::string_view key, const std::string& expected) {
  std::vector<int> out;
  const auto value = s.find(key);
  if (!value) return out;
  if (!value->node.IsSequence() || value->node.size() == 0) throw s.error(key, expected);
  for (const auto& item : value->node) {
    const std::string text = item.IsScalar() ? item.Scalar() : std::string();
    std::size_t used = 0;
    long n = 0;
    try {
      n = std::stol(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() || n < 1 || n > (1 << 20)) {
      throw support::InputError(support::location_of({item, value->file}), s.key_path(key), "an integer from 1 to 1048576",
                                support::describe_node(item));
    }
    out.push_back(static_cast<int>(n));
  }
  return out;
}

/// Megatron-LM argument names with the same meaning as a ccsim strategy key
/// (megatron/training/arguments.py).
constexpr KeyAlias kStrategyAliases[] = {
    {"tensor_model_parallel_size", "tp"},
    {"pipeline_model_parallel_size", "pp"},
    {"context_parallel_size", "cp"},
    {"expert_model_parallel_size", "ep"},
    {"virtual_pipeline_model_parallel_size", "virtual_stages"},
    {"use_distributed_optimizer", "zero_stage"},
};

constexpr std::string_view kStrategyKeys[] = {
    "tp", "pp", "dp", "cp", "ep", "sequence_parallel", "zero_stage", "pipeline_schedule", "virtual_stages",
    "microbatch_group_size_per_vp_stage", "order", "algorithms", "tp_comm_overlap", "overlap_grad_reduce",
    "overlap_param_gather", "grad_reduce_dtype", "bucket_params", "disable_custom_all_reduce", "pipeline_layers",
    "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers", "dp_micro_batches",
    // Megatron-LM's spellings (kStrategyAliases), and its layers-per-chunk form of the virtual pipeline.
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
    "virtual_pipeline_model_parallel_size", "use_distributed_optimizer", "num_layers_per_virtual_pipeline_stage"};

}  // namespace

std::span<const KeyAlias> strategy_aliases() { return kStrategyAliases; }
std::span<const std::string_view> strategy_keys() { return kStrategyKeys; }

std::string spelling(const support::Fields& s, std::string_view key, std::span<const KeyAlias> aliases) {
  std::vector<std::string_view> names{key};
  for (const KeyAlias& a : aliases)
    if (a.key == key) names.push_back(a.megatron);
  for (const support::YamlSource& layer : s.layers()) {
    std::string found;
    for (const auto& entry : layer.node) {
      if (!entry.first.IsScalar()) continue;
      const std::string name = entry.first.Scalar();
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      if (found.empty()) {
        found = name;
        continue;
      }
      const support::SourceLocation first = support::location_of({layer.node[found], layer.file});
      throw support::InputError(support::location_of({entry.first, layer.file}), s.key_path(name),
                                fmt::format("one spelling of {}: '{}' and '{}' name the same setting", key, found, name),
                                fmt::format("both '{}' (line {}) and '{}'", found, first.line, name),
                                fmt::format("keep one of '{}' and '{}'", found, name));
    }
    if (!found.empty()) return found;
  }
  return std::string(key);
}

void reject_other_section_keys(const support::Fields& section, std::span<const std::string_view> own,
                               std::span<const std::string_view> other, std::string_view other_name) {
  for (const support::YamlSource& layer : section.layers()) {
    for (const auto& entry : layer.node) {
      if (!entry.first.IsScalar()) continue;
      const std::string name = entry.first.Scalar();
      if (std::find(own.begin(), own.end(), name) != own.end()) continue;
      std::string expected = "one of the keys";
      for (std::string_view k : own) expected += " " + std::string(k);
      if (std::find(other.begin(), other.end(), name) == other.end()) {
        // A near miss of the other section's key (vLLM's tensor_parallel_size under workload:)
        // is suggested there when it fits better than any key of this section.
        const std::string near_other = support::closest_match(name, other);
        if (near_other.empty()) continue;
        const std::string near_own = support::closest_match(name, own);
        if (!near_own.empty() && support::suggestion_rank(name, near_own) <= support::suggestion_rank(name, near_other)) continue;
        throw support::InputError(support::location_of({entry.first, layer.file}), section.key_path(name), expected,
                                  "unknown key '" + name + "'",
                                  "did you mean '" + near_other + "' (a key of the " + std::string(other_name) + " section)?");
      }
      throw support::InputError(support::location_of({entry.first, layer.file}), section.key_path(name), expected,
                                "'" + name + "', a key of the " + std::string(other_name) + " section",
                                "move '" + name + "' under " + std::string(other_name) + ":");
    }
  }
}

namespace {

/// The collectives strategy.algorithms may name, and the parallel dimensions whose own map of
/// them (strategy.algorithms.dp.allreduce) wins over the general key.
constexpr std::string_view kAlgorithmCollectives[] = {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce", "sendrecv"};
constexpr std::string_view kAlgorithmDims[] = {"tp", "cp", "dp", "ep"};

/// One map of collective -> algorithm (`a`), entries stored in `spec` under `prefix` + key.
/// A value is "auto", one of `algorithm_names` (unchecked when empty), "synthesized" or
/// "synthesized-or-nccl" (the collectives ccsim synthesize builds) or synth:FILE (an MSCCL XML file, relative to the
/// scenario file that names it; any collective but sendrecv).
void read_algorithm_map(const support::Fields& a, std::span<const std::string_view> algorithm_names, const std::string& prefix,
                        StrategySpec& spec) {
  for (const support::YamlSource& layer : a.layers()) {
    for (const auto& entry : layer.node) {
      const std::string key = entry.first.Scalar();
      if (std::find(std::begin(kAlgorithmDims), std::end(kAlgorithmDims), key) != std::end(kAlgorithmDims)) continue;
      const std::string stored = prefix + key;
      if (spec.algorithms.count(stored) != 0) continue;  // the most specific layer wins
      spec.algorithm_locations[stored] = a.location(key);
      const std::string value = a.string(key);
      if (value.rfind("synth:", 0) == 0) {
        if (value.size() == 6 || key == "sendrecv") {
          throw a.error(key, key == "sendrecv" ? "no synth:FILE for sendrecv (NCCL's p2p, not a collective)"
                                               : "synth:FILE with the path of an MSCCL XML schedule");
        }
        // A relative path is the scenario file's neighbour, as every other file it names.
        std::filesystem::path file(value.substr(6));
        const std::string& from = a.location(key).file;
        if (file.is_relative() && !from.empty() && from.front() != '<') file = std::filesystem::path(from).parent_path() / file;
        // Absolute, so that the effective scenario written elsewhere (run --out, plan's
        // best.yaml) names the same file.
        std::error_code ec;
        const std::filesystem::path whole = std::filesystem::absolute(file, ec);
        spec.algorithms[stored] = "synth:" + (ec ? file : whole).lexically_normal().string();
        continue;
      }
      if (value == "synthesized" || value == "synthesized-or-nccl") {
        if (key != "allreduce" && key != "allgather" && key != "reducescatter") {
          throw a.error(key, value + " only for allreduce, allgather and reducescatter (what ccsim synthesize builds)");
        }
        spec.algorithms[stored] = value;
        continue;
      }
      if (algorithm_names.empty()) {
        spec.algorithms[stored] = value;
        continue;
      }
      // NCCL's own spellings (NCCL_ALGO=Ring, NVLSTree, PAT): case, '-' and '_' do not matter.
      const auto folded = [](std::string_view t) {
        std::string out;
        for (char c : t)
          if (c != '-' && c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        return out;
      };
      const auto same = std::find_if(algorithm_names.begin(), algorithm_names.end(),
                                     [&](std::string_view n) { return folded(n) == folded(value); });
      if (same != algorithm_names.end()) {
        spec.algorithms[stored] = std::string(*same);
        continue;
      }
      std::vector<std::string_view> choices{"auto"};
      choices.insert(choices.end(), algorithm_names.begin(), algorithm_names.end());
      choices.emplace_back("synthesized");
      choices.emplace_back("synthesized-or-nccl");
      choices.emplace_back("synth:FILE");
      spec.algorithms[stored] = a.choice(key, choices);
    }
  }
}

/// strategy.algorithms: the general map and the dimensions' own.
void read_algorithms(const support::Fields& a, std::span<const std::string_view> algorithm_names, StrategySpec& spec) {
  std::vector<std::string_view> allowed(std::begin(kAlgorithmCollectives), std::end(kAlgorithmCollectives));
  allowed.insert(allowed.end(), std::begin(kAlgorithmDims), std::end(kAlgorithmDims));
  a.reject_unknown(allowed);
  for (const std::string_view dim : kAlgorithmDims) {
    if (const auto nested = a.optional_map(dim)) {
      nested->reject_unknown(kAlgorithmCollectives);
      read_algorithm_map(*nested, algorithm_names, std::string(dim) + ".", spec);
    }
  }
  read_algorithm_map(a, algorithm_names, "", spec);
}

}  // namespace

StrategySpec parse_strategy(const support::Fields& s, int cluster_gpus, std::span<const std::string_view> algorithm_names,
                            std::string_view whose) {
  reject_other_section_keys(s, kStrategyKeys, workload_keys(), "workload");
  s.reject_unknown(kStrategyKeys);
  const std::string tp = spelling(s, "tp", kStrategyAliases), pp = spelling(s, "pp", kStrategyAliases),
                    cp = spelling(s, "cp", kStrategyAliases), ep = spelling(s, "ep", kStrategyAliases),
                    zero = spelling(s, "zero_stage", kStrategyAliases), vp = spelling(s, "virtual_stages", kStrategyAliases);
  // Megatron derives the chunks per rank from this and the model's layers, which this section
  // does not know: say what to write instead.
  if (s.has("num_layers_per_virtual_pipeline_stage")) {
    throw s.error("num_layers_per_virtual_pipeline_stage",
                  "virtual_pipeline_model_parallel_size (or virtual_stages), the model chunks per pipeline rank: num_layers / "
                  "(pipeline_model_parallel_size · num_layers_per_virtual_pipeline_stage)");
  }
  StrategySpec spec;
  spec.tp = s.count(tp, 1, kMaxGpus, 1);
  spec.pp = s.count(pp, 1, kMaxGpus, 1);
  spec.cp = s.count(cp, 1, kMaxGpus, 1);
  spec.ep = s.count(ep, 1, kMaxGpus, 1);
  const std::int64_t model_parallel = static_cast<std::int64_t>(spec.tp) * spec.pp * spec.cp;
  if (s.has("dp")) {
    spec.dp = s.count("dp", 1, kMaxGpus);
    if (cluster_gpus > 0 && model_parallel * spec.dp != cluster_gpus) {
      throw support::RuleError(s.error("dp", fmt::format("tp·pp·cp·dp equal to {} {} GPUs (tp·pp·cp·dp = {}·{}·{}·{} = {})",
                                                         whose, cluster_gpus, spec.tp, spec.pp, spec.cp, spec.dp, model_parallel * spec.dp)));
    }
  } else if (cluster_gpus <= 0) {
    spec.dp = 1;  // no GPU count to fit (a cluster-only command): the strategy is not run
  } else {
    if (cluster_gpus % model_parallel != 0) {
      throw support::RuleError(s.error(tp, fmt::format("tp·pp·cp dividing {} {} GPUs (tp·pp·cp = {}·{}·{} = {})", whose, cluster_gpus,
                                                         spec.tp, spec.pp, spec.cp, model_parallel)));
    }
    spec.dp = static_cast<int>(cluster_gpus / model_parallel);
  }
  if ((cluster_gpus > 0 || s.has("dp")) && (static_cast<std::int64_t>(spec.dp) * spec.cp) % spec.ep != 0) {
    throw support::RuleError(s.error(ep, fmt::format("an expert-parallel size dividing dp·cp = {}", spec.dp * spec.cp)));
  }
  spec.sequence_parallel = s.boolean("sequence_parallel", false);
  if (spec.sequence_parallel && spec.tp == 1) {
    throw support::RuleError(s.error("sequence_parallel", "false when tp is 1 (sequence parallelism splits along TP)"));
  }
  // Megatron's distributed optimizer shards the optimizer state over DP and reduce-scatters the
  // gradients: ZeRO-1 (docs/scenario-format.md).
  spec.zero_stage = zero == "zero_stage" ? s.count("zero_stage", 0, kMaxGpus, 0) : (s.boolean(zero) ? 1 : 0);
  if (spec.zero_stage > 3) throw s.error("zero_stage", "a ZeRO stage of 0, 1, 2 or 3");
  spec.tp_comm_overlap = s.boolean("tp_comm_overlap", false);
  if (spec.tp_comm_overlap && spec.tp == 1) {
    throw support::RuleError(s.error("tp_comm_overlap", "false when tp is 1 (there is no TP communication)"));
  }
  spec.overlap_grad_reduce = s.boolean("overlap_grad_reduce", false);
  spec.overlap_param_gather = s.boolean("overlap_param_gather", false);
  if (spec.overlap_param_gather && spec.zero_stage != 1 && spec.zero_stage != 2) {
    throw s.error("overlap_param_gather", "false unless zero_stage is 1 or 2 (the distributed optimizer gathers parameters after the step)");
  }
  // Megatron-LM validate_args: "--overlap-grad-reduce should be turned on when using --overlap-param-gather".
  if (spec.overlap_param_gather && !spec.overlap_grad_reduce) {
    throw s.error("overlap_param_gather", "false unless overlap_grad_reduce is true (Megatron-LM asserts --overlap-grad-reduce with --overlap-param-gather)");
  }
  spec.grad_reduce_dtype = s.choice("grad_reduce_dtype", {"fp32", "bf16"}, "fp32");
  spec.bucket_params = s.integer("bucket_params", 0, 0);  // 0: Megatron's default
  spec.disable_custom_all_reduce = s.boolean("disable_custom_all_reduce", false);
  // Megatron runs the interleaved schedule whenever virtual_pipeline_model_parallel_size is set.
  const bool megatron_vp = vp != "virtual_stages" && s.count(vp, 1, 1024) > 1;
  spec.pipeline_schedule = s.choice("pipeline_schedule", {"1f1b", "interleaved"}, megatron_vp ? "interleaved" : "1f1b");
  spec.virtual_stages = s.count(vp, 1, 1024, spec.pipeline_schedule == "interleaved" ? 2 : 1);
  if (spec.pipeline_schedule == "interleaved" && spec.virtual_stages < 2) {
    throw s.error(vp, "at least 2 model chunks per pipeline rank for the interleaved schedule");
  }
  if (spec.pipeline_schedule == "interleaved" && spec.pp < 2) {
    throw support::RuleError(s.error("pipeline_schedule", "1f1b when pp is 1 (the interleaved schedule splits a pipeline of at least 2 stages)"));
  }
  if (spec.pipeline_schedule == "1f1b" && spec.virtual_stages != 1) {
    throw s.error(vp, "1 for the 1f1b schedule (use pipeline_schedule: interleaved)");
  }
  if (s.has("microbatch_group_size_per_vp_stage")) {
    if (spec.pipeline_schedule != "interleaved") {
      throw s.error("microbatch_group_size_per_vp_stage", "no 'microbatch_group_size_per_vp_stage' unless pipeline_schedule is interleaved");
    }
    spec.microbatch_group_size_per_vp_stage = s.count("microbatch_group_size_per_vp_stage", 1, 1 << 16);
  } else if (spec.pipeline_schedule == "interleaved") {
    spec.microbatch_group_size_per_vp_stage = spec.pp;  // Megatron-Core's default
  }
  spec.pipeline_layers = counts(s, "pipeline_layers", "a list of layer counts per model chunk, each at least 1");
  spec.decoder_first_pipeline_num_layers = s.count("decoder_first_pipeline_num_layers", 1, 1 << 16, 0);
  spec.decoder_last_pipeline_num_layers = s.count("decoder_last_pipeline_num_layers", 1, 1 << 16, 0);
  if (const auto v = s.find("dp_micro_batches"); v && v->node.IsScalar()) {
    if (v->node.Scalar() != "proportional") throw s.error("dp_micro_batches", "proportional, or a list of micro-batch counts per DP replica");
    spec.dp_micro_batches_proportional = true;
  } else {
    spec.dp_micro_batches = counts(s, "dp_micro_batches", "proportional, or a list of micro-batch counts per DP replica, each at least 1");
    if (!spec.dp_micro_batches.empty() && static_cast<int>(spec.dp_micro_batches.size()) != spec.dp) {
      throw support::RuleError(s.error("dp_micro_batches", fmt::format("one micro-batch count per DP replica: dp = {} entries", spec.dp)));
    }
  }
  spec.order = s.optional_string("order").value_or(spec.order);
  {
    std::vector<std::string> parts;
    std::stringstream in(spec.order);
    for (std::string part; std::getline(in, part, '-');) parts.push_back(part);
    std::vector<std::string> sorted = parts;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<std::string>{"cp", "dp", "ep", "pp", "tp"}) {
      throw s.error("order", "the five dimensions tp, cp, ep, pp, dp in some order joined by '-', innermost first");
    }
  }
  if (const auto algorithms = s.optional_map("algorithms")) read_algorithms(*algorithms, algorithm_names, spec);
  return spec;
}

}  // namespace ccsim::models
