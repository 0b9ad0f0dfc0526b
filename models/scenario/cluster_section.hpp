#pragma once
// The `cluster` section of a scenario: its node groups (catalog node templates with
// overrides, and counts) and the fabric joining them (single switch, or a two- or three-tier
// fat tree with its tiers' links), checked against the bounds a simulation can build.

#include <string>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// Reads `cluster` of `root` (a scenario's layers); `file` names the cluster when it has no
/// `name`. Throws InputError on a bad key or value, RuleError (a subclass) when well-formed
/// values do not fit together: more than 2^18 GPUs, a node without NICs on a fabric, more than
/// 2^18 leaf-spine or spine-core links, a single pod with a core tier, several nodes without a
/// fabric.
ClusterSpec parse_cluster(const support::Fields& root, const Catalog& catalog, const std::string& file);

}  // namespace ccsim::models
