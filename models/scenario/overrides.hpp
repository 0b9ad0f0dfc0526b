#pragma once
// The grid of `ccsim sweep`: `--set KEY=V1,V2,...` options, their cartesian product, and the
// scenario of one point (the scenario's own YAML layers with the point's values put in front).
//
// A KEY is a path into the scenario document: map keys joined by '.', a list element by its
// 0-based index in brackets (`cluster.nodes[0].count`). A scalar met on the way down is a
// catalog name (`node: dgx-h100`) and becomes `{base: NAME}` so a deeper key can override one
// of its fields (`cluster.nodes[0].node.nics.link`), as scenario files already write it. The
// value `auto` removes the key, so the loader's default or derivation applies
// (`strategy.dp=auto`: dp = GPUs / (tp·pp·cp)).
//
// Values are YAML scalars as written (no commas; the loader reads their type). Errors in a
// --set itself (syntax, an index past the end of a list, descending into a list without an
// index) are InputError at "<command line>" with key "--set KEY".

#include <cstddef>
#include <string>
#include <vector>

#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// One `--set KEY=V1,V2,...`: the key path and its values, in the order given.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

/// One segment of a key path: a map key and, for `name[i]`, the list index i.
struct KeySegment {
  std::string name;
  bool indexed = false;
  std::size_t index = 0;
};

/// The file name the layer of --set values carries: an error located there is the command
/// line's, and a relative path set there (a model config, a table) is read from the working
/// directory.
inline constexpr const char* kSetLayerFile = "--set";

/// The value that removes a key (see the header comment).
inline constexpr const char* kUnsetValue = "auto";

/// Parses `KEY=V1,V2,...`. Throws InputError ("--set", expected, found) on an empty key or
/// value, a malformed key path, or a value given twice.
SweepAxis parse_set_option(const std::string& text);

/// Parses a key path (`cluster.nodes[0].node.nics.link`). Throws InputError on empty
/// segments, unbalanced or non-numeric brackets.
std::vector<KeySegment> parse_key_path(const std::string& key);

/// Number of points of the grid: the product of the axes' value counts. Throws InputError
/// when it passes `max_points`.
std::size_t grid_size(const std::vector<SweepAxis>& axes, std::size_t max_points);

/// The value index on every axis of point `point` (0-based): the first axis outermost, the last
/// innermost (lexicographic order of the index tuples, as nested loops in --set order).
std::vector<std::size_t> grid_point(const std::vector<SweepAxis>& axes, std::size_t point);

/// One assignment of a point: key path = value.
struct Assignment {
  std::string key;
  std::string value;
};

/// The layers of the scenario of one point, most specific first: a layer of the assignments
/// (file kSetLayerFile) in front of `base` (the scenario's own layers, load_scenario_layers).
/// A list reached by a key is copied whole into that layer from the merged base (lists replace,
/// they do not merge) and changed there; `auto` removes the key from every layer (base layers
/// that hold it are copied, never changed in place). Throws InputError naming "--set KEY" for an
/// index past the end of a list, a list reached without an index, or an index on a map.
std::vector<support::YamlSource> point_layers(const std::vector<support::YamlSource>& base,
                                              const std::vector<Assignment>& assignments);

}  // namespace ccsim::models
