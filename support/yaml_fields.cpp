#include "support/yaml_fields.hpp"

#include "support/numbers.hpp"

#include <cmath>
#include <algorithm>
#include <fstream>
#include <limits>

#include <fmt/format.h>

namespace ccsim::support {

YamlSource load_yaml_file(const std::string& path, const InputFileRequest& request) {
  auto file = std::make_shared<const std::string>(path);
  const std::string text = read_input_file(path, request);
  try {
    return {YAML::Load(text), file};
  } catch (const YAML::Exception& e) {
    SourceLocation where{path, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
    throw InputError(where, "", "valid YAML", "a syntax error (" + e.msg + ")");
  }
}

SourceLocation location_of(const YamlSource& source) {
  const std::string file = source.file ? *source.file : std::string();
  // A node without a position is the whole document (an empty file): line 1, column 1.
  const int whole = file.empty() ? 0 : 1;
  if (!source.node.IsDefined()) return {file, whole, whole};
  const YAML::Mark mark = source.node.Mark();
  if (mark.is_null()) return {file, whole, whole};
  return {file, mark.line + 1, mark.column + 1};
}

SourceLocation value_location(const YamlSource& map, const std::string& key) {
  if (map.node.IsMap()) {
    for (const auto& entry : map.node) {
      if (!entry.first.IsScalar() || entry.first.Scalar() != key) continue;
      return location_of({entry.second.IsNull() ? entry.first : entry.second, map.file});
    }
  }
  return location_of(map);
}

std::string describe_node(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  switch (node.Type()) {
    case YAML::NodeType::Null: return "an empty value";
    case YAML::NodeType::Scalar: {
      // Quote the value; a huge scalar (a wrong file passed as a scenario) is cut short.
      const std::string& v = node.Scalar();
      constexpr std::size_t kMax = 80;
      if (v.size() <= kMax) return "'" + v + "'";
      return "'" + v.substr(0, kMax) + "...' (" + std::to_string(v.size()) + " characters)";
    }
    case YAML::NodeType::Sequence: return node.size() == 0 ? "an empty list" : "a list";
    case YAML::NodeType::Map: return node.size() == 0 ? "an empty map" : "a map";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "an unknown node";
}

std::string describe_document(const YAML::Node& root) {
  if (root.IsDefined() && root.IsScalar()) {
    return "plain text, not a YAML map (" + std::to_string(root.Scalar().size()) + " characters)";
  }
  if (root.IsDefined() && root.IsNull()) return "an empty file";
  return describe_node(root);
}

YamlSource load_yaml_map_file(const std::string& path, const InputFileRequest& request) {
  YamlSource doc = load_yaml_file(path, request);
  if (!doc.node.IsMap()) throw InputError({path, 1, 1}, "", request.expected, describe_document(doc.node));
  return doc;
}

std::string element_path(const std::string& path, std::size_t index) {
  return fmt::format("{}[{}]", path, index);
}

Fields::Fields(std::vector<YamlSource> layers, std::string path, std::vector<int> depths)
    : layers_(std::move(layers)), path_(std::move(path)), depths_(std::move(depths)) {
  if (depths_.size() != layers_.size()) {
    depths_.clear();
    for (std::size_t i = 0; i < layers_.size(); ++i) depths_.push_back(static_cast<int>(i));
  }
  for (const YamlSource& layer : layers_) {
    if (!layer.node.IsMap()) {
      throw InputError(location_of(layer), path_, "a map of keys", describe_node(layer.node));
    }
  }
}

SourceLocation Fields::location() const {
  return layers_.empty() ? SourceLocation{} : location_of(layers_.front());
}

std::string Fields::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void Fields::reject_unknown(std::initializer_list<std::string_view> allowed) const {
  reject_unknown(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void Fields::reject_unknown(std::span<const std::string_view> allowed) const {
  for (const YamlSource& layer : layers_) {
    std::vector<std::string> seen;
    for (const auto& entry : layer.node) {
      if (!entry.first.IsScalar()) {
        throw InputError(location_of({entry.first, layer.file}), path_, "key names", describe_node(entry.first) + " as a key");
      }
      const std::string name = entry.first.Scalar();
      // yaml-cpp keeps the first of two equal keys silently; a repeated key is a mistake.
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
        throw InputError(location_of({entry.first, layer.file}), key_path(name), "each key once in a map",
                         "duplicate key '" + name + "'");
      }
      seen.push_back(name);
      bool ok = false;
      for (std::string_view a : allowed) ok = ok || a == name;
      if (ok) continue;
      const std::string suggestion = closest_match(name, allowed);
      std::string expected = "one of the keys";
      for (std::string_view a : allowed) expected += " " + std::string(a);
      throw InputError(location_of({entry.first, layer.file}), key_path(name), expected,
                       "unknown key '" + name + "'",
                       suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
    }
  }
}

std::optional<YamlSource> Fields::find(std::string_view key) const {
  const std::string k(key);
  for (const YamlSource& layer : layers_) {
    const YAML::Node& map = layer.node;  // const operator[] never inserts
    const YAML::Node value = map[k];
    if (value.IsDefined()) return YamlSource{value, layer.file};
  }
  return std::nullopt;
}

bool Fields::has(std::string_view key) const { return find(key).has_value(); }

SourceLocation Fields::location(std::string_view key) const {
  const std::string k(key);
  for (const YamlSource& layer : layers_) {
    const YAML::Node& map = layer.node;
    if (map[k].IsDefined()) return value_location(layer, k);
  }
  return location();
}

int Fields::depth(std::string_view key) const {
  const std::string k(key);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const YAML::Node& map = layers_[i].node;
    if (map[k].IsDefined()) return depths_[i];
  }
  throw missing(key, "a value");
}

InputError Fields::error(std::string_view key, const std::string& expected, const std::string& hint) const {
  const auto value = find(key);
  return InputError(location(key), key_path(key), expected, value ? describe_node(value->node) : "nothing", hint);
}

InputError Fields::missing(std::string_view key, const std::string& expected) const {
  return InputError(location(), key_path(key), expected, "no '" + std::string(key) + "' key");
}

std::string Fields::string(std::string_view key) const {
  auto value = optional_string(key);
  if (!value) throw missing(key, "a string");
  return *value;
}

std::optional<std::string> Fields::optional_string(std::string_view key) const {
  const auto value = find(key);
  if (!value) return std::nullopt;
  if (!value->node.IsScalar()) throw error(key, "a string");
  return value->node.Scalar();
}

std::string Fields::choice(std::string_view key, std::initializer_list<std::string_view> choices,
                           std::optional<std::string> fallback) const {
  return choice(key, std::span<const std::string_view>(choices.begin(), choices.size()), std::move(fallback));
}

std::string Fields::choice(std::string_view key, std::span<const std::string_view> choices,
                           std::optional<std::string> fallback) const {
  std::string expected = "one of";
  for (std::string_view c : choices) expected += " " + std::string(c);
  const auto value = find(key);
  if (!value) {
    if (fallback) return *fallback;
    throw missing(key, expected);
  }
  if (!value->node.IsScalar()) throw error(key, expected);
  const std::string s = value->node.Scalar();
  for (std::string_view c : choices)
    if (c == s) return s;
  const std::string suggestion = closest_match(s, choices);
  throw error(key, expected, suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
}

std::int64_t Fields::bounded_integer(std::string_view key, std::int64_t min, std::int64_t max, const std::string& expected,
                                     std::optional<std::int64_t> fallback) const {
  const auto value = find(key);
  if (!value) {
    if (fallback) return *fallback;
    throw missing(key, expected);
  }
  if (!value->node.IsScalar()) throw error(key, expected);
  const std::string& s = value->node.Scalar();
  const Parsed<std::int64_t> v = parse_integer(s);
  if (!v) throw error(key, expected, v.problem == NumberProblem::OutOfRange ? "out of range" : std::string());
  if (v.value < min || v.value > max) throw error(key, expected);
  return v.value;
}

std::int64_t Fields::integer(std::string_view key, std::int64_t min, std::optional<std::int64_t> fallback) const {
  const std::string expected = min == 1 ? "a positive integer" : fmt::format("an integer >= {}", min);
  return bounded_integer(key, min, std::numeric_limits<std::int64_t>::max(), expected, fallback);
}

int Fields::count(std::string_view key, int min, int max, std::optional<int> fallback) const {
  return static_cast<int>(bounded_integer(key, min, max, fmt::format("an integer from {} to {}", min, max), fallback));
}

double Fields::ratio(std::string_view key, double min, const std::string& expected, std::optional<double> fallback) const {
  const auto value = find(key);
  if (!value) {
    if (fallback) return *fallback;
    throw missing(key, expected);
  }
  if (!value->node.IsScalar()) throw error(key, expected);
  const std::string& s = value->node.Scalar();
  const auto parse = [](const std::string& text, double& out) {
    const Parsed<double> v = parse_decimal(text);
    out = v.value;
    return static_cast<bool>(v);
  };
  double result = 0.0;
  const std::size_t colon = s.find(':');
  if (colon == std::string::npos) {
    if (!parse(s, result)) throw error(key, expected);
  } else {
    double a = 0.0, b = 0.0;
    if (!parse(s.substr(0, colon), a) || !parse(s.substr(colon + 1), b) || !(b > 0.0)) throw error(key, expected);
    result = a / b;
  }
  if (!std::isfinite(result) || !(result >= min)) throw error(key, expected);
  return result;
}

double Fields::number(std::string_view key, double min_exclusive, std::optional<double> fallback) const {
  const std::string expected = fmt::format("a number greater than {}", min_exclusive);
  const auto value = find(key);
  if (!value) {
    if (fallback) return *fallback;
    throw missing(key, expected);
  }
  if (!value->node.IsScalar()) throw error(key, expected);
  const Parsed<double> v = parse_decimal(value->node.Scalar());
  if (!v) throw error(key, expected, v.problem == NumberProblem::OutOfRange ? "out of range" : std::string());
  if (!(v.value > min_exclusive)) throw error(key, expected);
  return v.value;
}

bool Fields::boolean(std::string_view key, std::optional<bool> fallback) const {
  const auto value = find(key);
  if (!value) {
    if (fallback) return *fallback;
    throw missing(key, "true or false");
  }
  const std::string s = value->node.IsScalar() ? value->node.Scalar() : std::string();
  // YAML 1.1 spellings, as yaml-cpp itself accepts them.
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (s == t) return true;
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (s == f) return false;
  throw error(key, "true or false");
}

double Fields::quantity(std::string_view key, Quantity q, bool positive, std::optional<double> fallback) const {
  const std::string expected = describe_quantity(q) + (positive ? ", greater than zero" : ", zero or more");
  const auto value = find(key);
  if (!value) {
    if (fallback) return *fallback;
    throw missing(key, expected);
  }
  if (!value->node.IsScalar()) throw error(key, expected);
  double result = 0.0;
  try {
    result = parse_quantity(value->node.Scalar(), q);
  } catch (const UnitError& e) {
    throw error(key, expected, e.what());
  }
  if (positive ? !(result > 0.0) : !(result >= 0.0)) throw error(key, expected);
  return result;
}

Fields Fields::map(std::string_view key) const {
  auto result = optional_map(key);
  if (!result) throw missing(key, "a map");
  return *result;
}

std::optional<Fields> Fields::optional_map(std::string_view key) const {
  std::vector<YamlSource> nested;
  std::vector<int> depths;
  const std::string k(key);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const YamlSource& layer = layers_[i];
    const YAML::Node& map = layer.node;  // const operator[] never inserts
    const YAML::Node value = map[k];
    if (!value.IsDefined()) continue;
    if (!value.IsMap()) throw InputError(value_location(layer, k), key_path(key), "a map", describe_node(value));
    nested.push_back({value, layer.file});
    depths.push_back(depths_[i]);
  }
  if (nested.empty()) return std::nullopt;
  return Fields(std::move(nested), key_path(key), std::move(depths));
}

std::vector<YamlSource> Fields::list(std::string_view key) const {
  const auto value = find(key);
  if (!value) throw missing(key, "a list");
  if (!value->node.IsSequence()) throw error(key, "a list");
  std::vector<YamlSource> items;
  for (const auto& item : value->node) items.push_back({item, value->file});
  return items;
}

}  // namespace ccsim::support
