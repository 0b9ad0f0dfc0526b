#pragma once
// The `strategy` section of a scenario: the parallel layout in Megatron-LM's terms (tp, pp, dp,
// cp, ep, sequence parallelism, ZeRO, the pipeline schedule, rank order), its communication
// overlaps and the collective algorithms it asks for.

#include <span>
#include <string_view>

#include "models/workload/workload_spec.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// Reads the `strategy` section `s` of a scenario on a cluster of `cluster_gpus` GPUs; dp,
/// when absent, is GPUs / (tp·pp·cp). Throws InputError on a bad key or value (sizes from 1 to
/// 2^20, a ZeRO stage above 3, an order that is not the five dimensions, an unknown algorithm,
/// a setting that needs another: virtual_stages without interleaved, overlap_param_gather
/// without ZeRO-1/2 and overlap_grad_reduce); RuleError (a subclass) when the layout does not
/// fit the cluster or itself: tp·pp·cp·dp not the GPU count, tp·pp·cp not dividing it, ep not
/// dividing dp·cp, sequence_parallel or tp_comm_overlap with tp 1, interleaved with pp 1.
/// `algorithm_names`: what a strategy.algorithms value may be besides "auto" (see
/// ScenarioChecks); empty: the values are read as strings, unchecked.
/// `cluster_gpus` 0: no GPU count to fit (ScenarioChecks::cluster_only): the rules on tp·pp·cp·dp
/// against the count are skipped and an absent dp is 1.
/// `whose` names the GPUs in errors ("the cluster's"; a job's "the placement's").
StrategySpec parse_strategy(const support::Fields& s, int cluster_gpus, std::span<const std::string_view> algorithm_names,
                            std::string_view whose = "the cluster's");

/// Megatron-LM's argument name (`--tensor-model-parallel-size` as its args namespace spells it,
/// tensor_model_parallel_size) accepted for a ccsim key of the strategy or workload section.
struct KeyAlias {
  std::string_view megatron;
  std::string_view key;
};

/// The strategy section's aliases: tensor_model_parallel_size tp, pipeline_model_parallel_size pp,
/// context_parallel_size cp, expert_model_parallel_size ep, virtual_pipeline_model_parallel_size
/// virtual_stages, use_distributed_optimizer zero_stage (true: 1, false: 0).
std::span<const KeyAlias> strategy_aliases();
/// Every key the strategy section accepts, ccsim's and Megatron's spellings.
std::span<const std::string_view> strategy_keys();

/// The spelling of `key` to read from `s`: `key` itself or one of its `aliases`, from the most
/// specific layer that writes either (a sweep's --set tp overrides the file's
/// tensor_model_parallel_size). Throws InputError when one layer writes two spellings, naming
/// both. Returns `key` when none is written.
std::string spelling(const support::Fields& s, std::string_view key, std::span<const KeyAlias> aliases);

/// Throws InputError for the first key of `section` (in file order) that is not one of `own`
/// but is one of `other`'s (a strategy key written under workload, or the reverse), saying
/// which section it belongs in, or that is a near miss of one of `other`'s fitting better than
/// any of `own` (support::suggestion_rank), suggesting it with its section; other unknown keys
/// are left to Fields::reject_unknown.
void reject_other_section_keys(const support::Fields& section, std::span<const std::string_view> own,
                               std::span<const std::string_view> other, std::string_view other_name);

}  // namespace ccsim::models
