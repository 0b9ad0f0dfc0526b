#pragma once
// The layers of a scenario: the file and every file it includes (`include:` a path or a list of
// paths, relative to the including file), most specific first. The loader reads every key from
// the most specific layer that has it; maps merge, lists and scalars replace.

#include <string>
#include <vector>

#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// The YAML documents of a scenario file and everything it includes, most specific first (the
/// file itself, then its includes in order, depth first; a file reached twice is read once).
/// Throws InputError for an unreadable or empty file, a document that is not a map, an
/// `include` that is not a path or a list of paths, and an include cycle (naming the chain).
std::vector<support::YamlSource> load_scenario_layers(const std::string& path);

/// `over` merged onto `base` as layers merge: maps key by key (recursively), lists and scalars
/// replace. The result is a fresh document that shares no node with either argument (yaml-cpp
/// joins the memory of nodes assigned into one another, so sharing layers with every sweep
/// point's document would make each later merge grow with the points built before).
YAML::Node merge_layers(const YAML::Node& base, const YAML::Node& over);

}  // namespace ccsim::models
