#include "models/scenario/scenario_layers.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

std::vector<support::YamlSource> load_scenario_layers(const std::string& path) {
  std::vector<support::YamlSource> layers;
  std::vector<std::string> stack;
  std::set<std::string> loaded;
  load_with_includes(path, {path, 0, 0}, stack, loaded, layers);
  return layers;
}

YAML::Node merge_layers(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& cbase = out;
    const YAML::Node existing = cbase[key];  // const lookup: inserts nothing
    out[key] = existing.IsDefined() ? merge_layers(existing, kv.second) : YAML::Clone(kv.second);
  }
  return out;
}

}  // namespace ccsim::models
