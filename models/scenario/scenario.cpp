#include "models/scenario/scenario.hpp"

#include "models/workload/program_builder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

/// Upper bounds; far above any built system, they guard against typos and overflow.
constexpr int kMaxGpus = 1 << 20;
constexpr int kMaxNodes = 1 << 20;
/// The largest cluster, in GPUs: what `ccsim topo` builds and summarises in about 1.2 GiB
/// (measured, Release: 32,768 × dgx-h100 = 262,144 GPUs, 7 s CPU, 1.25 GB peak; memory and
/// time grow linearly, so 2^20 GPUs would need ~5 GB and failed with bad_alloc).
constexpr int kMaxClusterGpus = 1 << 18;
constexpr int kMaxSpines = 4096;
/// Leaf-spine links of a fat tree: 2^18, 16x the 16,384-GPU rail-optimized SuperPOD scenario's
/// (512 leaves x 32 spines = 16,384); beyond it building and routing take minutes.
constexpr std::int64_t kMaxLeafSpineLinks = 1 << 18;  // switch radix limits real spines to a few hundred

/// Appends `path` and everything it includes to `layers`, the including file first. A file
/// reached a second time (a diamond: two includes of one common file) is not loaded again:
/// its first layer already takes precedence over every later one, so a second copy could
/// change nothing, and loading it again would make repeated includes exponential.
void load_with_includes(const std::string& path, const support::SourceLocation& from, std::vector<std::string>& stack,
                        std::set<std::string>& loaded, std::vector<support::YamlSource>& layers) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::path(path), ec);
  const std::string key = ec ? path : canonical.string();
  if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
    std::string cycle;
    for (const auto& s : stack) cycle += fs::path(s).filename().string() + " -> ";
    cycle += fs::path(key).filename().string();
    throw support::InputError(from, "include", "includes without cycles", "the cycle " + cycle);
  }
  if (!loaded.insert(key).second) return;
  // The include chain that reached this file, for errors in files that are not scenarios.
  const auto chain = [&]() {
    std::string c;
    for (const auto& s : stack) c += fs::path(s).filename().string() + " -> ";
    return c + fs::path(path).filename().string();
  };
  const std::string reached = stack.empty() ? std::string() : "reached through the includes " + chain();
  support::YamlSource doc;
  try {
    doc = stack.empty() ? support::load_yaml_file(path, {"a scenario file"})
                        : support::load_yaml_file(path, {"the path of a scenario file", support::kMaxInputFileBytes, from, "include"});
  } catch (const support::InputError& e) {
    if (reached.empty() || !e.hint().empty()) throw;
    throw support::InputError(e.where(), e.key(), e.expected(), e.found(), reached);
  }
  if (doc.node.IsNull()) throw support::InputError({path, 1, 1}, "", "a scenario (a map with a cluster section)", "an empty file", reached);
  if (!doc.node.IsMap()) {
    throw support::InputError(support::location_of(doc), "", "a scenario (a map of sections)", support::describe_document(doc.node), reached);
  }
  stack.push_back(key);
  layers.push_back(doc);
  const YAML::Node& root = doc.node;
  const YAML::Node includes = root["include"];
  if (includes.IsDefined()) {
    std::vector<YAML::Node> items;
    if (includes.IsScalar()) {
      items.push_back(includes);
    } else if (includes.IsSequence()) {
      for (const auto& i : includes) items.push_back(i);
    } else {
      throw support::InputError(support::location_of({includes, doc.file}), "include", "a file path or a list of file paths",
                                support::describe_node(includes));
    }
    for (const YAML::Node& item : items) {
      const support::SourceLocation where = support::location_of({item, doc.file});
      if (!item.IsScalar()) throw support::InputError(where, "include", "a file path", support::describe_node(item));
      const fs::path target = fs::path(path).parent_path() / item.Scalar();
      load_with_includes(target.string(), where, stack, loaded, layers);
    }
  }
  stack.pop_back();
}

FabricTier parse_tier(const support::Fields& f, const Catalog& catalog) {
  f.reject_unknown({"link", "latency"});
  FabricTier tier;
  if (f.has("link")) {
    tier.link = catalog.link(f, "link");
    if (tier.link->link_class != LinkClass::Network) throw f.error("link", "a link of class network");
  }
  if (f.has("latency")) tier.latency = f.quantity("latency", support::Quantity::Time, false);
  return tier;
}

FabricSpec parse_fabric(const support::Fields& f, const Catalog& catalog) {
  f.reject_unknown({"kind", "wiring", "nodes_per_leaf", "spines", "oversubscription", "leaf", "spine", "nodes_per_pod",
                    "cores", "pod_oversubscription", "core", "ecmp"});
  FabricSpec spec;
  const std::string kind = f.choice("kind", {"single-switch", "fat-tree"});
  spec.kind = kind == "fat-tree" ? FabricKind::FatTree : FabricKind::SingleSwitch;
  if (spec.kind == FabricKind::SingleSwitch) {
    for (const char* key : {"wiring", "nodes_per_leaf", "spines", "oversubscription", "spine", "nodes_per_pod", "cores",
                            "pod_oversubscription", "core", "ecmp"}) {
      if (f.has(key)) throw f.error(key, "no '" + std::string(key) + "' key for a single-switch fabric (only kind and leaf)");
    }
  } else {
    spec.wiring = f.choice("wiring", {"rail-optimized", "tor"}, "rail-optimized") == "tor" ? Wiring::Tor : Wiring::RailOptimized;
    spec.ecmp = f.choice("ecmp", {"hash", "balanced"}, "hash") == "balanced" ? Ecmp::Balanced : Ecmp::Hash;
    spec.nodes_per_leaf = f.count("nodes_per_leaf", 1, kMaxNodes, 0);
    spec.spines = f.count("spines", 1, kMaxSpines, 0);
    // Real fat trees are built from 1:1 to about 8:1; 1000:1 is a bound far beyond that which
    // keeps every derived uplink within the physical bandwidth range.
    constexpr double kMaxOversubscription = 1000.0;
    const std::string expected = "a ratio of downlink to uplink bandwidth from 1 to 1000, such as 2 or 2:1";
    spec.oversubscription = f.ratio("oversubscription", 1.0, expected, 1.0);
    if (spec.oversubscription > kMaxOversubscription) throw f.error("oversubscription", expected);
    // Third tier (pods of whole leaf groups under core switches): its keys need nodes_per_pod,
    // and nodes_per_pod needs nodes_per_leaf and must be a multiple of it. Whether there is
    // more than one pod is checked with the node count (parse_cluster).
    if (f.has("nodes_per_pod")) {
      spec.nodes_per_pod = f.count("nodes_per_pod", 1, kMaxNodes);
      if (spec.nodes_per_leaf == 0) {
        throw f.error("nodes_per_pod", "no 'nodes_per_pod' without 'nodes_per_leaf' (pods are made of whole leaf groups)");
      }
      if (spec.nodes_per_pod % spec.nodes_per_leaf != 0) {
        throw f.error("nodes_per_pod", fmt::format("a multiple of nodes_per_leaf ({}): pods are made of whole leaf groups",
                                                   spec.nodes_per_leaf));
      }
      spec.cores = f.count("cores", 1, kMaxSpines, 0);
      const std::string pod_expected = "a ratio of spine downlink to uplink (core) bandwidth from 1 to 1000, such as 7 or 7:1";
      spec.pod_oversubscription = f.ratio("pod_oversubscription", 1.0, pod_expected, 1.0);
      if (spec.pod_oversubscription > kMaxOversubscription) throw f.error("pod_oversubscription", pod_expected);
    } else {
      for (const char* key : {"cores", "pod_oversubscription", "core"}) {
        if (f.has(key)) throw f.error(key, "no '" + std::string(key) + "' key without 'nodes_per_pod' (a two-tier fat tree has no core tier)");
      }
    }
  }
  if (const auto leaf = f.optional_map("leaf")) spec.leaf = parse_tier(*leaf, catalog);
  if (const auto spine = f.optional_map("spine")) spec.spine = parse_tier(*spine, catalog);
  if (const auto core = f.optional_map("core")) spec.core = parse_tier(*core, catalog);
  return spec;
}

ClusterSpec parse_cluster(const support::Fields& root, const Catalog& catalog, const std::string& file) {
  const support::Fields c = root.map("cluster");
  c.reject_unknown({"name", "nodes", "fabric"});
  ClusterSpec spec;
  spec.name = c.optional_string("name").value_or(fs::path(file).stem().string());
  const std::vector<support::YamlSource> groups = c.list("nodes");
  if (groups.empty()) throw c.error("nodes", "a list of at least one node group");
  std::int64_t gpus = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const support::Fields g({groups[i]}, support::element_path(c.key_path("nodes"), i));
    g.reject_unknown({"node", "count"});
    NodeGroupSpec group;
    group.node = catalog.node(g, "node");
    group.count = g.count("count", 1, kMaxNodes, 1);
    gpus += static_cast<std::int64_t>(group.count) * group.node.gpus;
    if (gpus > kMaxClusterGpus) {
      throw support::RuleError(g.location(g.has("count") ? "count" : "node"), g.key_path(g.has("count") ? "count" : "node"),
                       fmt::format("a cluster of at most {} GPUs", kMaxClusterGpus),
                       fmt::format("{} GPUs in all ({} node{} of {} GPUs here)", gpus, group.count,
                                   group.count == 1 ? "" : "s", group.node.gpus));
    }
    spec.groups.push_back(std::move(group));
  }
  if (const auto fabric = c.optional_map("fabric")) {
    spec.fabric = parse_fabric(*fabric, catalog);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (spec.groups[i].node.nics == 0) {
        const support::Fields g({groups[i]}, support::element_path(c.key_path("nodes"), i));
        throw support::RuleError(g.error("node", "a node with NICs to join the fabric (this template has none)"));
      }
    }
    // Every leaf is cabled to every spine: bound the leaf-spine links before anything is
    // built (the builder's estimate: leaves = groups of nodes_per_leaf x rails when
    // rail-optimized; spines = as given, else the uplink ports of a full leaf).
    if (spec.fabric.kind == FabricKind::FatTree) {
      int max_nics = 0;
      for (const auto& g : spec.groups) max_nics = std::max(max_nics, g.node.nics);
      const std::int64_t nodes = spec.total_nodes();
      const std::int64_t per_leaf = spec.fabric.nodes_per_leaf > 0 ? spec.fabric.nodes_per_leaf : nodes;
      const bool rail = spec.fabric.wiring == Wiring::RailOptimized;
      const std::int64_t leaves = (nodes + per_leaf - 1) / per_leaf * (rail ? max_nics : 1);
      const std::int64_t down_ports = per_leaf * (rail ? 1 : max_nics);
      const std::int64_t spines = spec.fabric.spines > 0
                                      ? spec.fabric.spines
                                      : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(
                                                                      static_cast<double>(down_ports) / spec.fabric.oversubscription)));
      if (leaves > 1 && leaves * spines > kMaxLeafSpineLinks) {
        throw support::RuleError(fabric->location(), c.key_path("fabric"),
                         fmt::format("a fat tree of at most {} leaf-spine links (every leaf is cabled to every spine)",
                                     kMaxLeafSpineLinks),
                         fmt::format("{} leaves x {} spines = {}", leaves, spines, leaves * spines),
                         "set fewer spines, or more nodes_per_leaf");
      }
      if (spec.fabric.nodes_per_pod > 0) {
        // Pods: more than one (one pod needs no core tier); a partly filled last pod is allowed
        // and cabled as a full one. Every spine of every pod is cabled to every core.
        const std::int64_t pods = (nodes + spec.fabric.nodes_per_pod - 1) / spec.fabric.nodes_per_pod;
        if (pods < 2) {
          throw support::RuleError(fabric->error("nodes_per_pod",
                              fmt::format("fewer nodes per pod than the cluster's {} nodes (one pod needs no core tier)", nodes)));
        }
        const std::int64_t leaves_per_pod = spec.fabric.nodes_per_pod / per_leaf * (rail ? max_nics : 1);
        const std::int64_t lanes = std::max<std::int64_t>(
            1, std::llround(static_cast<double>(down_ports) / spec.fabric.oversubscription / static_cast<double>(spines)));
        const std::int64_t cores =
            spec.fabric.cores > 0 ? spec.fabric.cores
                                  : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(static_cast<double>(leaves_per_pod * lanes) /
                                                                                                  spec.fabric.pod_oversubscription)));
        if (pods * spines * cores > kMaxLeafSpineLinks) {
          throw support::RuleError(fabric->location(), c.key_path("fabric"),
                           fmt::format("a fat tree of at most {} spine-core links (every spine is cabled to every core)",
                                       kMaxLeafSpineLinks),
                           fmt::format("{} pods x {} spines x {} cores = {}", pods, spines, cores, pods * spines * cores),
                           "set fewer spines or cores, or more nodes_per_pod");
        }
      }
    }
  } else if (spec.total_nodes() > 1) {
    throw support::RuleError(c.missing("fabric", fmt::format("a fabric section joining the {} nodes", spec.total_nodes())));
  }
  return spec;
}

WorkloadSpec parse_workload(const support::Fields& w) {
  w.reject_unknown({"model", "phase", "sequence_length", "micro_batch_size", "global_batch_size", "batch_size",
                    "context_length", "generated_tokens", "dtype", "recompute", "recompute_method",
                    "recompute_num_layers", "recompute_modules", "input_len", "output_len"});
  WorkloadSpec spec;
  spec.model = w.string("model");
  spec.phase = w.choice("phase", {"training_step", "prefill", "decode", "serving"}, "training_step");
  const bool needs_sequence = spec.phase == "training_step" || spec.phase == "prefill";
  // Bounds keep every product of sizes far inside 64-bit integers and doubles' exact range.
  constexpr int kMaxTokens = 1 << 24;      // 16,777,216 tokens per sequence
  constexpr int kMaxBatch = 1 << 20;       // 1,048,576 sequences
  spec.sequence_length = needs_sequence ? w.count("sequence_length", 1, kMaxTokens) : w.count("sequence_length", 1, kMaxTokens, 1);
  spec.micro_batch_size = w.count("micro_batch_size", 1, kMaxBatch, 1);
  spec.global_batch_size = w.count("global_batch_size", 1, std::numeric_limits<int>::max(), 0);
  spec.batch_size = w.count("batch_size", 1, kMaxBatch, 1);
  spec.context_length = w.count("context_length", 0, 1 << 28, 0);
  spec.generated_tokens = w.count("generated_tokens", 1, kMaxTokens, 1);
  // phase serving: a batch of requests as vLLM's benchmark_latency.py runs it (--input-len,
  // --output-len, --batch-size); TPOT needs at least one decode step after the first token.
  if (spec.phase == "serving") {
    // The prefill and decode steps of a request batch take their lengths from input_len and
    // output_len; the single-step keys would be silently ignored.
    for (const char* key : {"sequence_length", "context_length", "generated_tokens"})
      if (w.has(key)) throw w.error(key, "no sequence_length / context_length / generated_tokens when phase is serving (use input_len and output_len)");
    spec.input_len = w.count("input_len", 1, kMaxTokens);
    spec.output_len = w.count("output_len", 1, kMaxTokens);
    if (spec.output_len < 2) throw w.error("output_len", "at least 2 tokens (TPOT needs a decode step after the first token)");
  } else {
    for (const char* key : {"input_len", "output_len"})
      if (w.has(key)) throw w.error(key, "no input_len / output_len unless phase is serving (prefill: sequence_length; decode: context_length, generated_tokens)");
  }
  spec.dtype = w.choice("dtype", {"bf16", "fp16", "fp8", "fp32"}, "bf16");
  spec.recompute = w.choice("recompute", {"none", "selective", "full"}, "none");
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

StrategySpec parse_strategy(const support::Fields& s, int cluster_gpus, std::span<const std::string_view> algorithm_names) {
  s.reject_unknown({"tp", "pp", "dp", "cp", "ep", "sequence_parallel", "zero_stage", "pipeline_schedule",
                    "virtual_stages", "microbatch_group_size_per_vp_stage", "order", "algorithms", "tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather", "grad_reduce_dtype", "bucket_params",
                    "disable_custom_all_reduce"});
  StrategySpec spec;
  spec.tp = s.count("tp", 1, kMaxGpus, 1);
  spec.pp = s.count("pp", 1, kMaxGpus, 1);
  spec.cp = s.count("cp", 1, kMaxGpus, 1);
  spec.ep = s.count("ep", 1, kMaxGpus, 1);
  const std::int64_t model_parallel = static_cast<std::int64_t>(spec.tp) * spec.pp * spec.cp;
  if (s.has("dp")) {
    spec.dp = s.count("dp", 1, kMaxGpus);
    if (model_parallel * spec.dp != cluster_gpus) {
      throw support::RuleError(s.error("dp", fmt::format("tp·pp·cp·dp equal to the cluster's {} GPUs (tp·pp·cp·dp = {}·{}·{}·{} = {})",
                                                         cluster_gpus, spec.tp, spec.pp, spec.cp, spec.dp, model_parallel * spec.dp)));
    }
  } else {
    if (cluster_gpus % model_parallel != 0) {
      throw support::RuleError(s.error("tp", fmt::format("tp·pp·cp dividing the cluster's {} GPUs (tp·pp·cp = {}·{}·{} = {})", cluster_gpus,
                                                         spec.tp, spec.pp, spec.cp, model_parallel)));
    }
    spec.dp = static_cast<int>(cluster_gpus / model_parallel);
  }
  if ((static_cast<std::int64_t>(spec.dp) * spec.cp) % spec.ep != 0) {
    throw support::RuleError(s.error("ep", fmt::format("an expert-parallel size dividing dp·cp = {}", spec.dp * spec.cp)));
  }
  spec.sequence_parallel = s.boolean("sequence_parallel", false);
  if (spec.sequence_parallel && spec.tp == 1) {
    throw support::RuleError(s.error("sequence_parallel", "false when tp is 1 (sequence parallelism splits along TP)"));
  }
  spec.zero_stage = s.count("zero_stage", 0, kMaxGpus, 0);
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
  spec.pipeline_schedule = s.choice("pipeline_schedule", {"1f1b", "interleaved"}, "1f1b");
  spec.virtual_stages = s.count("virtual_stages", 1, 1024, spec.pipeline_schedule == "interleaved" ? 2 : 1);
  if (spec.pipeline_schedule == "interleaved" && spec.virtual_stages < 2) {
    throw s.error("virtual_stages", "at least 2 model chunks per pipeline rank for the interleaved schedule");
  }
  if (spec.pipeline_schedule == "interleaved" && spec.pp < 2) {
    throw support::RuleError(s.error("pipeline_schedule", "1f1b when pp is 1 (the interleaved schedule splits a pipeline of at least 2 stages)"));
  }
  if (spec.pipeline_schedule == "1f1b" && spec.virtual_stages != 1) {
    throw s.error("virtual_stages", "1 for the 1f1b schedule (use pipeline_schedule: interleaved)");
  }
  if (s.has("microbatch_group_size_per_vp_stage")) {
    if (spec.pipeline_schedule != "interleaved") {
      throw s.error("microbatch_group_size_per_vp_stage", "no 'microbatch_group_size_per_vp_stage' unless pipeline_schedule is interleaved");
    }
    spec.microbatch_group_size_per_vp_stage = s.count("microbatch_group_size_per_vp_stage", 1, 1 << 16);
  } else if (spec.pipeline_schedule == "interleaved") {
    spec.microbatch_group_size_per_vp_stage = spec.pp;  // Megatron-Core's default
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
  if (const auto algorithms = s.optional_map("algorithms")) {
    algorithms->reject_unknown({"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce", "sendrecv"});
    for (const support::YamlSource& layer : algorithms->layers()) {
      for (const auto& entry : layer.node) {
        const std::string key = entry.first.Scalar();
        if (spec.algorithms.count(key) != 0) continue;  // the most specific layer wins
        spec.algorithm_locations[key] = algorithms->location(key);
        if (algorithm_names.empty()) {
          spec.algorithms[key] = algorithms->string(key);
          continue;
        }
        std::vector<std::string_view> choices{"auto"};
        choices.insert(choices.end(), algorithm_names.begin(), algorithm_names.end());
        spec.algorithms[key] = algorithms->choice(key, choices);
      }
    }
  }
  return spec;
}

/// The path a table key names (simulation.calibration, compute_calibration), relative to the
/// directory of the file that writes the key, as include paths and model config paths are; empty
/// when no layer has the key. Throws InputError at the key when the value is not a non-empty
/// string or the resolved path is not a readable regular file (input_file_problem). The table's
/// content is read and checked by its loader, not here.
std::string table_path(const support::Fields& f, std::string_view key, const std::string& table) {
  const auto value = f.find(key);
  if (!value) return {};
  if (!value->node.IsScalar() || value->node.Scalar().empty()) throw f.error(key, "the path of " + table);
  const support::SourceLocation where = f.location(key);
  const fs::path written(value->node.Scalar());
  const fs::path resolved = written.is_absolute() ? written : fs::path(where.file).parent_path() / written;
  if (const std::string problem = support::input_file_problem(resolved.string()); !problem.empty()) {
    throw support::InputError(where, f.key_path(key), table, "'" + resolved.string() + "' (" + problem + ")",
                              written.is_absolute() ? std::string() : "a relative path is read from the directory of " + where.file);
  }
  return resolved.string();
}

SimulationSpec parse_simulation(const support::Fields& f) {
  f.reject_unknown({"engine", "granularity", "calibration", "compute_calibration"});
  SimulationSpec spec;
  spec.engine = f.choice("engine", {"analytic", "flow"}, "analytic");
  spec.granularity = f.choice("granularity", {"auto", "step", "phase"}, "auto");
  spec.calibration = table_path(f, "calibration", "a collective calibration table (like scenarios/calibration/nccl.yaml)");
  spec.compute_calibration =
      table_path(f, "compute_calibration", "a compute calibration table (like scenarios/calibration/compute.yaml)");
  return spec;
}

}  // namespace

std::vector<support::YamlSource> load_scenario_layers(const std::string& path) {
  std::vector<support::YamlSource> layers;
  std::vector<std::string> stack;
  std::set<std::string> loaded;
  load_with_includes(path, {path, 0, 0}, stack, loaded, layers);
  return layers;
}

Scenario load_scenario(const std::string& path, const Catalog& catalog, const ScenarioChecks& checks) {
  return load_scenario(load_scenario_layers(path), path, catalog, checks);
}

Scenario load_scenario(const std::vector<support::YamlSource>& layers, const std::string& path, const Catalog& catalog,
                       const ScenarioChecks& checks) {
  const bool layout_rules = checks.layout_rules;
  const support::Fields root(layers, "");
  root.reject_unknown({"include", "name", "description", "cluster", "workload", "strategy", "simulation"});

  Scenario scenario;
  scenario.layers = layers;
  scenario.file = path;
  scenario.name = root.optional_string("name").value_or(fs::path(path).stem().string());
  if (!root.has("cluster")) throw root.missing("cluster", "a cluster section");
  scenario.cluster = parse_cluster(root, catalog, path);
  if (const auto w = root.optional_map("workload")) scenario.workload = parse_workload(*w);
  if (const auto s = root.optional_map("strategy")) {
    try {
      scenario.strategy = parse_strategy(*s, scenario.cluster.total_gpus(), checks.algorithm_names);
    } catch (const support::RuleError&) {
      // A layout search replaces the layout: one that does not fit the cluster is dropped.
      if (layout_rules) throw;
    }
  }
  if (const auto sim = root.optional_map("simulation")) scenario.simulation = parse_simulation(*sim);
  if (scenario.workload) {
    const support::Fields w = root.map("workload");
    const std::string& name = scenario.workload->model;
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
    const fs::path base = fs::path(w.location("model").file).parent_path();
    scenario.model = load_transformer(name, base.empty() ? "." : base.string());
    if (!scenario.strategy) {
      scenario.strategy = parse_strategy(support::Fields({}, "strategy"), scenario.cluster.total_gpus(), checks.algorithm_names);
    }
  }
  if (layout_rules && scenario.workload && scenario.strategy && scenario.workload->phase == "training_step" &&
      scenario.workload->global_batch_size > 0) {
    const std::int64_t per_step = scenario.workload->micro_batch_size * scenario.strategy->dp;
    if (scenario.workload->global_batch_size % per_step != 0) {
      const support::Fields w = root.map("workload");
      throw support::RuleError(w.error("global_batch_size", fmt::format("a multiple of micro_batch_size·dp = {}·{} = {}",
                                                                        scenario.workload->micro_batch_size, scenario.strategy->dp, per_step)));
    }
  }
  if (scenario.workload && scenario.workload->dtype == "fp8") {
    for (const auto& group : scenario.cluster.groups) {
      if (group.node.gpu.fp8_flops <= 0) {
        throw support::RuleError(root.map("workload").error("dtype", "a dtype every GPU of the cluster computes in (" + group.node.gpu.name +
                                                                " has no FP8 tensor cores)"));
      }
    }
  }
  if (layout_rules && scenario.model) {
    if (const auto problem = check_layout(*scenario.model, *scenario.workload, *scenario.strategy)) {
      const support::Fields section = root.has(problem->section) ? root.map(problem->section) : root;
      throw support::RuleError(section.error(problem->key, problem->expected));
    }
  }
  return scenario;
}

namespace {

YAML::Node merge(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    out[key] = out[key].IsDefined() ? merge(out[key], kv.second) : YAML::Clone(kv.second);
  }
  return out;
}

}  // namespace

std::string effective_yaml(const Scenario& sc) {
  YAML::Node doc(YAML::NodeType::Map);
  for (auto it = sc.layers.rbegin(); it != sc.layers.rend(); ++it) doc = merge(doc, it->node);
  doc.remove("include");
  YAML::Node out(YAML::NodeType::Map);
  out["name"] = sc.name;
  if (doc["description"]) out["description"] = doc["description"];
  out["cluster"] = doc["cluster"];
  if (sc.workload) {
    const WorkloadSpec& w = *sc.workload;
    YAML::Node n;
    std::string model = w.model;
    const bool path = model.find('/') != std::string::npos || (model.size() > 5 && model.substr(model.size() - 5) == ".json");
    if (path && sc.model) model = sc.model->source_path;
    n["model"] = model;
    n["phase"] = w.phase;
    if (w.phase != "serving") n["sequence_length"] = w.sequence_length;
    n["micro_batch_size"] = w.micro_batch_size;
    // The effective global batch of a training step (0 in the file means one micro-batch per
    // DP rank); inference phases have none (the key accepts only sizes of at least 1).
    if (w.phase == "training_step") {
      n["global_batch_size"] = w.global_batch_size > 0 ? w.global_batch_size
                                                       : w.micro_batch_size * (sc.strategy ? sc.strategy->dp : 1);
    }
    n["batch_size"] = w.batch_size;
    if (w.phase != "serving") {
      n["context_length"] = w.context_length;
      n["generated_tokens"] = w.generated_tokens;
    }
    if (w.phase == "serving") {
      n["input_len"] = w.input_len;
      n["output_len"] = w.output_len;
    }
    n["dtype"] = w.dtype;
    n["recompute"] = w.recompute;
    if (w.recompute == "full") {
      n["recompute_method"] = w.recompute_method;
      n["recompute_num_layers"] = w.recompute_num_layers;
    }
    if (w.recompute == "selective") {
      YAML::Node mods(YAML::NodeType::Sequence);
      for (const auto& mod : w.recompute_modules) mods.push_back(mod);
      n["recompute_modules"] = mods;
    }
    out["workload"] = n;
  }
  if (sc.strategy) {
    const StrategySpec& s = *sc.strategy;
    YAML::Node n;
    n["tp"] = s.tp;
    n["pp"] = s.pp;
    n["dp"] = s.dp;
    n["cp"] = s.cp;
    n["ep"] = s.ep;
    n["sequence_parallel"] = s.sequence_parallel;
    n["zero_stage"] = s.zero_stage;
    n["pipeline_schedule"] = s.pipeline_schedule;
    n["virtual_stages"] = s.virtual_stages;
    if (s.pipeline_schedule == "interleaved") n["microbatch_group_size_per_vp_stage"] = s.microbatch_group_size_per_vp_stage;
    n["order"] = s.order;
    n["tp_comm_overlap"] = s.tp_comm_overlap;
    n["overlap_grad_reduce"] = s.overlap_grad_reduce;
    n["overlap_param_gather"] = s.overlap_param_gather;
    n["grad_reduce_dtype"] = s.grad_reduce_dtype;
    n["bucket_params"] = s.bucket_params;
    n["disable_custom_all_reduce"] = s.disable_custom_all_reduce;
    if (!s.algorithms.empty()) {
      YAML::Node a(YAML::NodeType::Map);
      for (const auto& [k, v] : s.algorithms) a[k] = v;
      n["algorithms"] = a;
    }
    out["strategy"] = n;
  }
  YAML::Node sim;
  sim["engine"] = sc.simulation.engine;
  sim["granularity"] = sc.simulation.granularity;
  // Tables made absolute, as the model config path (effective.yaml is written elsewhere than
  // the scenario it comes from).
  const auto absolute = [](const std::string& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return ec ? p : a.lexically_normal().string();
  };
  if (!sc.simulation.calibration.empty()) sim["calibration"] = absolute(sc.simulation.calibration);
  if (!sc.simulation.compute_calibration.empty()) sim["compute_calibration"] = absolute(sc.simulation.compute_calibration);
  out["simulation"] = sim;
  YAML::Emitter e;
  e << out;
  return std::string("# Effective scenario written by ccsim run: includes merged, every setting explicit.\n") + e.c_str() + "\n";
}

}  // namespace ccsim::models
