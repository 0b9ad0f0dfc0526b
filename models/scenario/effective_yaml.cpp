#include "models/scenario/effective_yaml.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "models/scenario/scenario_layers.hpp"

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

/// The workload section with every setting explicit (the model config as an absolute path).
YAML::Node workload_node(const WorkloadSpec& w, const TransformerConfig* model_config, const StrategySpec* strategy) {
  YAML::Node n;
  std::string model = w.model;
  const bool path = model.find('/') != std::string::npos || (model.size() > 5 && model.substr(model.size() - 5) == ".json");
  if (path && model_config) model = model_config->source_path;
  n["model"] = model;
  n["phase"] = std::string(to_string(w.phase));
  if (w.phase != WorkloadPhase::Serving) n["sequence_length"] = w.sequence_length;
  n["micro_batch_size"] = w.micro_batch_size;
  // The effective global batch of a training step (0 in the file means one micro-batch per
  // DP rank); inference phases have none (the key accepts only sizes of at least 1).
  if (w.phase == WorkloadPhase::TrainingStep) {
    std::int64_t uneven = 0;
    if (strategy)
      for (int c : strategy->dp_micro_batches) uneven += c * w.micro_batch_size;
    n["global_batch_size"] = w.global_batch_size > 0 ? w.global_batch_size : uneven > 0 ? uneven
                                                     : w.micro_batch_size * (strategy ? strategy->dp : 1);
  }
  n["batch_size"] = w.batch_size;
  if (w.phase != WorkloadPhase::Serving) {
    n["context_length"] = w.context_length;
    n["generated_tokens"] = w.generated_tokens;
  }
  if (w.phase == WorkloadPhase::Serving) {
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
  return n;
}

/// The strategy section with every setting explicit.
YAML::Node strategy_node(const StrategySpec& s) {
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
  // 0 is "not set" (Megatron's default, pp): written only when set, as the key accepts 1 and up.
  if (s.pipeline_schedule == "interleaved" && s.microbatch_group_size_per_vp_stage > 0) {
    n["microbatch_group_size_per_vp_stage"] = s.microbatch_group_size_per_vp_stage;
  }
  n["order"] = s.order;
  n["tp_comm_overlap"] = s.tp_comm_overlap;
  n["overlap_grad_reduce"] = s.overlap_grad_reduce;
  n["overlap_param_gather"] = s.overlap_param_gather;
  n["grad_reduce_dtype"] = s.grad_reduce_dtype;
  n["bucket_params"] = s.bucket_params;
  n["disable_custom_all_reduce"] = s.disable_custom_all_reduce;
  if (!s.pipeline_layers.empty()) n["pipeline_layers"] = s.pipeline_layers;
  if (s.decoder_first_pipeline_num_layers > 0) n["decoder_first_pipeline_num_layers"] = s.decoder_first_pipeline_num_layers;
  if (s.decoder_last_pipeline_num_layers > 0) n["decoder_last_pipeline_num_layers"] = s.decoder_last_pipeline_num_layers;
  if (s.dp_micro_batches_proportional) n["dp_micro_batches"] = "proportional";
  if (!s.dp_micro_batches.empty()) n["dp_micro_batches"] = s.dp_micro_batches;
  if (!s.algorithms.empty()) {
    YAML::Node a(YAML::NodeType::Map);
    for (const auto& [k, v] : s.algorithms) {
      const std::size_t dot = k.find('.');  // a dimension's own choice: algorithms.dp.allreduce
      if (dot == std::string::npos) {
        a[k] = v;
      } else {
        a[k.substr(0, dot)][k.substr(dot + 1)] = v;
      }
    }
    n["algorithms"] = a;
  }
  return n;
}

}  // namespace

std::string effective_yaml(const Scenario& sc) {
  YAML::Node doc(YAML::NodeType::Map);
  for (auto it = sc.layers.rbegin(); it != sc.layers.rend(); ++it) doc = merge_layers(doc, it->node);
  doc.remove("include");
  YAML::Node out(YAML::NodeType::Map);
  out["name"] = sc.name;
  if (doc["description"]) out["description"] = doc["description"];
  out["cluster"] = doc["cluster"];
  if (sc.workload) out["workload"] = workload_node(*sc.workload, sc.model ? &*sc.model : nullptr, sc.strategy ? &*sc.strategy : nullptr);
  if (sc.strategy) out["strategy"] = strategy_node(*sc.strategy);
  if (!sc.jobs.empty()) {
    YAML::Node jobs(YAML::NodeType::Sequence);
    for (const JobSpec& job : sc.jobs) {
      YAML::Node j;
      j["name"] = job.name;
      j["workload"] = workload_node(job.workload, &job.model, &job.strategy);
      j["strategy"] = strategy_node(job.strategy);
      const PlacementPolicy p = job.placement.policy;
      if (p == PlacementPolicy::Gpus || p == PlacementPolicy::Nodes) {
        YAML::Node m;
        YAML::Node list(YAML::NodeType::Sequence);
        for (int i : job.placement.indices) list.push_back(i);
        list.SetStyle(YAML::EmitterStyle::Flow);
        m[p == PlacementPolicy::Gpus ? "gpus" : "nodes"] = list;
        j["placement"] = m;
      } else {
        j["placement"] = std::string(to_string(p));
      }
      j["start"] = fmt::format("{}s", job.start);
      jobs.push_back(j);
    }
    out["jobs"] = jobs;
  }
  YAML::Node sim;
  sim["engine"] = std::string(to_string(sc.simulation.engine));
  sim["granularity"] = sc.simulation.granularity ? std::string(to_string(*sc.simulation.granularity)) : "auto";
  if (sc.simulation.contention) sim["contention"] = true;
  if (sc.simulation.graph_launch) sim["launch"] = "graph";
  if (sc.simulation.symmetric_memory) sim["symmetric_memory"] = true;
  // Tables made absolute, as the model config path (effective.yaml is written elsewhere than
  // the scenario it comes from).
  const auto absolute = [](const std::string& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return ec ? p : a.lexically_normal().string();
  };
  if (!sc.simulation.calibration.empty()) sim["calibration"] = absolute(sc.simulation.calibration);
  if (!sc.simulation.compute_calibration.empty()) sim["compute_calibration"] = absolute(sc.simulation.compute_calibration);
  if (sc.simulation.nccl != NcclSettings{}) {
    YAML::Node nccl;
    if (sc.simulation.nccl.version) nccl["version"] = to_string(*sc.simulation.nccl.version);
    if (sc.simulation.nccl.nchannels_per_net_peer) nccl["nchannels_per_net_peer"] = *sc.simulation.nccl.nchannels_per_net_peer;
    if (sc.simulation.nccl.pxn_disable) nccl["pxn_disable"] = *sc.simulation.nccl.pxn_disable;
    sim["nccl"] = nccl;
  }
  out["simulation"] = sim;
  if (doc["what_if"]) out["what_if"] = doc["what_if"];
  if (sc.reliability.enabled) {
    // Every setting explicit, durations in seconds (`run --horizon` included as the duration).
    const models::ReliabilitySpec& r = sc.reliability;
    const auto seconds = [](double v) { return fmt::format("{:.17g}s", v); };
    const auto or_auto = [&](const std::optional<double>& v) { return v ? seconds(*v) : std::string("auto"); };
    YAML::Node n;
    if (r.duration > 0) n["duration"] = seconds(r.duration);
    if (r.tokens > 0) n["tokens"] = fmt::format("{:.17g}", r.tokens);
    n["samples"] = r.samples;
    n["seed"] = r.seed;
    n["policy"] = r.policy == RecoveryPolicy::Shrink ? "shrink" : "restart";
    if (r.spare_nodes < 0) n["spare_nodes"] = "unlimited";
    else n["spare_nodes"] = r.spare_nodes;
    YAML::Node c;
    c["interval"] = or_auto(r.checkpoint_interval);
    c["save"] = or_auto(r.save_time);
    c["load"] = or_auto(r.load_time);
    c["write_bandwidth"] = fmt::format("{:.17g}B/s", r.write_bandwidth);
    c["read_bandwidth"] = fmt::format("{:.17g}B/s", r.read_bandwidth);
    n["checkpoint"] = c;
    n["restart"] = seconds(r.restart_time);
    n["repair"] = seconds(r.repair_time);
    n["shrink"] = seconds(r.shrink_time);
    if (r.job_mtbf) n["mtbf"] = seconds(*r.job_mtbf);
    if (!r.rates.empty()) {
      YAML::Node rates;
      for (const auto& [k, v] : r.rates) rates[k] = fmt::format("{:.17g}", v);
      n["rates"] = rates;
    }
    out["reliability"] = n;
  }
  YAML::Emitter e;
  e << out;
  return std::string("# Effective scenario written by ccsim run: includes merged, every setting explicit.\n") + e.c_str() + "\n";
}

}  // namespace ccsim::models
