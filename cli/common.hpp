#pragma once
// Helpers shared by the subcommands.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/cluster.hpp"
#include "models/scenario.hpp"
#include "planner/cost_model.hpp"

namespace ccsim::cli {

/// Loads the catalog (`catalog_dir`, or the default) and the scenario. Throws InputError.
models::Scenario load_scenario_file(const std::string& path, const std::string& catalog_dir);

/// nccl-tests' size syntax: a number with an optional K, M, G or T suffix (powers of 1024),
/// or any ccsim byte quantity ("64MB", "1GiB"). Throws InputError naming `option`.
std::uint64_t parse_size(const std::string& text, const std::string& option);

/// Ranks of a collective: all GPUs, the first `ranks`, or a `group` of global GPU ranks given
/// as a comma-separated list of numbers and ranges ("0-7,16-23"). Throws InputError.
std::vector<models::DeviceId> select_gpus(const models::Cluster& cluster, int ranks, const std::string& group);

/// `--algo` and `--protocol` values: nullopt for "auto"; throws InputError for unknown names.
std::optional<planner::Algorithm> algorithm_option(const std::string& text);
std::optional<planner::Protocol> protocol_option(const std::string& text);

/// Bytes per element for nccl-tests' -d names (float, half, bfloat16, double, int8, ...).
std::uint32_t element_size(const std::string& type);

}  // namespace ccsim::cli
