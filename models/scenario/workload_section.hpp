#pragma once
// The `workload` section of a scenario: what to run (a model, a phase and its sizes, the dtype
// and activation recomputation), and the model config it names.

#include <span>
#include <string>
#include <string_view>

#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// Reads the `workload` section `w`. Throws InputError on a bad key or value, a size out of
/// range (tokens up to 2^24 per sequence, batches up to 2^20 sequences), keys of another phase
/// (input_len / output_len outside serving, sequence_length / context_length /
/// generated_tokens in serving), recompute_method / recompute_num_layers without full
/// recomputation, recompute_modules without selective recomputation.
/// Megatron-LM's spellings are accepted (docs/scenario-format.md): seq_length for
/// sequence_length, recompute_granularity for recompute; writing both spellings of one key is an
/// error naming both, and a strategy key written here is an error saying so.
WorkloadSpec parse_workload(const support::Fields& w);

/// Every key the workload section accepts, ccsim's and Megatron's spellings.
std::span<const std::string_view> workload_keys();

/// The model config `name` (the section's `model`) names: a shipped entry of models_dir(), or a
/// path (it holds a '/' or ends in .json) to a Hugging Face config.json, relative to the
/// directory of the file that writes the key. Throws InputError at `model` for an unknown
/// shipped name (with the list and the closest name), and as load_transformer does.
/// `set_layer_file`: the scenario file, against which a relative path is resolved when the
/// model key sits in a sweep's --set layer (a `jobs:` list the sweep copied there whole); empty:
/// such paths are relative to the working directory.
TransformerConfig load_workload_model(const support::Fields& w, const std::string& name, const std::string& set_layer_file = "");

}  // namespace ccsim::models
