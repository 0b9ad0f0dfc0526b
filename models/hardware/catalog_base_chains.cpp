// The `base:` inheritance of catalog entries: a reference (a name, or a map of overrides with
// an optional `base`) resolved into the stack of layers its fields are read from, overrides
// first, then each catalog entry of the base chain.

#include "models/hardware/catalog.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "models/hardware/detail/catalog_detail.hpp"

namespace ccsim::models {
namespace {

using detail::join_names;
using detail::keys_of;

constexpr int kCatalogDepth = 1000;  // depth of catalog layers, below any scenario layer

}  // namespace

void Catalog::append_chain(const Table& table, const std::string& name, const support::SourceLocation& where,
                           const std::string& path, std::vector<support::YamlSource>& layers,
                           std::vector<std::string>& chain) const {
  if (std::find(chain.begin(), chain.end(), name) != chain.end()) {
    chain.push_back(name);
    std::string cycle;
    for (const auto& c : chain) cycle += (cycle.empty() ? "" : " -> ") + c;
    throw support::InputError(where, path, fmt::format("a chain of {} bases without cycles", table.kind),
                              "the cycle " + cycle);
  }
  const auto it = table.entries.find(name);
  if (it == table.entries.end()) {
    const auto names = keys_of(table.entries);
    const std::string suggestion = support::closest_match(name, names);
    throw support::InputError(where, path, fmt::format("the name of a {} in the catalog ({})", table.kind, join_names(names)),
                              "'" + name + "'", suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
  }
  layers.push_back(it->second);
  chain.push_back(name);
  const YAML::Node& entry = it->second.node;
  const YAML::Node base = entry["base"];
  if (base.IsDefined()) {
    const support::SourceLocation base_where = support::location_of({base, it->second.file});
    if (!base.IsScalar()) {
      throw support::InputError(base_where, name + ".base", fmt::format("the name of a {}", table.kind), support::describe_node(base));
    }
    append_chain(table, base.Scalar(), base_where, name + ".base", layers, chain);
  }
}

Catalog::Resolved Catalog::resolve(const Table& table, const support::Fields& parent, std::string_view key) const {
  std::vector<support::YamlSource> layers;
  std::vector<int> depths;
  std::vector<std::string> chain;
  const std::string path = parent.key_path(key);
  const std::string expected = fmt::format("the name of a {} in the catalog, or a map of its fields", table.kind);
  bool found = false;
  // Catalog entries are less specific than anything the scenario wrote.
  const auto catalog_depths = [&] {
    while (depths.size() < layers.size()) depths.push_back(kCatalogDepth + static_cast<int>(depths.size()));
  };
  for (std::size_t i = 0; i < parent.layers().size(); ++i) {
    const support::YamlSource& layer = parent.layers()[i];
    const int layer_depth = parent.depths()[i];
    const YAML::Node& map = layer.node;
    const YAML::Node value = map[std::string(key)];
    if (!value.IsDefined()) continue;
    found = true;
    const support::YamlSource source{value, layer.file};
    if (value.IsScalar()) {
      append_chain(table, value.Scalar(), support::location_of(source), path, layers, chain);
      break;
    }
    if (!value.IsMap()) throw support::InputError(support::value_location(layer, std::string(key)), path, expected, support::describe_node(value));
    layers.push_back(source);
    depths.push_back(layer_depth);
    const YAML::Node base = value["base"];
    if (base.IsDefined()) {
      const support::SourceLocation where = support::location_of({base, layer.file});
      if (!base.IsScalar()) throw support::InputError(where, path + ".base", fmt::format("the name of a {}", table.kind), support::describe_node(base));
      append_chain(table, base.Scalar(), where, path + ".base", layers, chain);
      break;
    }
  }
  if (!found) throw parent.missing(key, expected);
  catalog_depths();
  support::Fields fields(std::move(layers), path, std::move(depths));
  // The entry's name: an explicit `name`, else the first catalog entry of the chain.
  const std::string name = fields.optional_string("name").value_or(chain.empty() ? path : chain.front());
  return {std::move(fields), name, std::move(chain)};
}

Catalog::Resolved Catalog::resolve(const Table& table, const support::YamlSource& ref, const std::string& path) const {
  // Wrap the reference in a one-key map so both entry points share one resolver.
  const std::string::size_type dot = path.rfind('.');
  const std::string parent_path = dot == std::string::npos ? std::string() : path.substr(0, dot);
  const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
  YAML::Node renamed(YAML::NodeType::Map);
  renamed[key] = ref.node;
  return resolve(table, support::Fields({{renamed, ref.file}}, parent_path), key);
}

}  // namespace ccsim::models
