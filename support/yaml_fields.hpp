#pragma once
// Typed, located access to YAML maps, with layering for catalog references.
//
// A `Fields` is one logical map made of layers, most specific first: a scenario's inline
// override, then the catalog entry it names, then that entry's `base`, and so on. A key is
// read from the first layer that has it, and every error points at the file, line and column
// of the layer the value came from. Unknown keys in any layer are errors with a "did you
// mean" suggestion.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "support/units.hpp"

namespace ccsim::support {

/// One YAML node together with the file it was read from.
struct YamlSource {
  YAML::Node node;
  std::shared_ptr<const std::string> file;
};

/// Reads a YAML file through read_input_file (support/input_file.hpp: regular files only, size
/// cap). Throws InputError when the file cannot be read (at `request.referenced_from` when the
/// path came from another file) or is not valid YAML (at the parser's line and column).
YamlSource load_yaml_file(const std::string& path, const InputFileRequest& request = {"a YAML file"});

/// The "found" phrase for a whole document that is not what a file should hold. Unlike
/// describe_node it never quotes the text: a scalar document is a file that is not YAML (a
/// password file, a binary), whose content must not be echoed.
std::string describe_document(const YAML::Node& root);

/// load_yaml_file for a file whose document must be a map (calibration tables): anything else
/// (plain text, a binary, a list, an empty file) throws InputError at 1:1 expecting
/// `expected`, described by describe_document (never echoing the text).
YamlSource load_yaml_map_file(const std::string& path, const InputFileRequest& request);

/// Location of `node` in `file` (1-based line and column).
SourceLocation location_of(const YamlSource& source);
/// Location of the value of `key` in the map `map`; for an empty value (`key:` alone) the
/// key's own position, since the parser places empty values at the next token.
SourceLocation value_location(const YamlSource& map, const std::string& key);

/// A short description of what a YAML node holds, for the "found" part of errors.
std::string describe_node(const YAML::Node& node);

/// A layered, located view of a YAML map. Cheap to copy.
class Fields {
 public:
  /// `layers` most specific first; each must be a map (throws InputError otherwise).
  /// `path` is the key path of this map in messages, for example "cluster.fabric".
  Fields(std::vector<YamlSource> layers, std::string path, std::vector<int> depths = {});

  const std::string& path() const noexcept { return path_; }
  const std::vector<YamlSource>& layers() const noexcept { return layers_; }
  const std::vector<int>& depths() const noexcept { return depths_; }
  SourceLocation location() const;

  /// Throws InputError for the first key, in file order, that is not in `allowed`.
  void reject_unknown(std::initializer_list<std::string_view> allowed) const;
  /// The same, for a list made at run time.
  void reject_unknown(std::span<const std::string_view> allowed) const;

  bool has(std::string_view key) const;
  /// The value and its file, or nullopt when no layer has the key.
  std::optional<YamlSource> find(std::string_view key) const;
  /// Location of the value of `key` (or of the map when absent).
  SourceLocation location(std::string_view key) const;
  /// Full key path, for example "cluster.fabric.spines".
  std::string key_path(std::string_view key) const;

  /// Builds the InputError for `key` with the value found there.
  InputError error(std::string_view key, const std::string& expected, const std::string& hint = {}) const;
  /// Builds an InputError for a missing required key.
  InputError missing(std::string_view key, const std::string& expected) const;

  std::string string(std::string_view key) const;
  std::optional<std::string> optional_string(std::string_view key) const;
  /// One of `choices`; throws with a suggestion otherwise.
  std::string choice(std::string_view key, std::initializer_list<std::string_view> choices,
                     std::optional<std::string> fallback = std::nullopt) const;
  /// The same, for a list made at run time.
  std::string choice(std::string_view key, std::span<const std::string_view> choices,
                     std::optional<std::string> fallback = std::nullopt) const;
  std::int64_t integer(std::string_view key, std::int64_t min, std::optional<std::int64_t> fallback = std::nullopt) const;
  /// An integer in [min, max] (counts of devices, parallel sizes); the range is part of the message.
  int count(std::string_view key, int min, int max, std::optional<int> fallback = std::nullopt) const;
  double number(std::string_view key, double min_exclusive, std::optional<double> fallback = std::nullopt) const;
  /// A ratio written as a number (`2`) or as `A:B` (`2:1`), at least `min`; `expected` describes it.
  double ratio(std::string_view key, double min, const std::string& expected, std::optional<double> fallback = std::nullopt) const;
  /// Nesting depth of the layer that supplies `key`: 0 for the most specific (the user's own
  /// file), larger for includes, catalog entries and their bases. Used to blame the more
  /// specific of two keys that break a rule together. Throws when absent.
  int depth(std::string_view key) const;
  bool boolean(std::string_view key, std::optional<bool> fallback = std::nullopt) const;
  /// A quantity with units, in SI. `positive` requires > 0, otherwise >= 0.
  double quantity(std::string_view key, Quantity q, bool positive, std::optional<double> fallback = std::nullopt) const;

  /// The nested map `key`: layers are the nested maps of every layer that has the key.
  /// Throws when required and absent, or when the value is not a map.
  Fields map(std::string_view key) const;
  std::optional<Fields> optional_map(std::string_view key) const;
  /// The list `key`, from the first layer that has it (lists replace, they do not merge).
  std::vector<YamlSource> list(std::string_view key) const;

 private:
  std::int64_t bounded_integer(std::string_view key, std::int64_t min, std::int64_t max, const std::string& expected,
                               std::optional<std::int64_t> fallback) const;

  std::vector<YamlSource> layers_;
  std::string path_;
  std::vector<int> depths_;  ///< depth of each layer, see depth()
};

/// Key path of list element `index` under `path`: "cluster.nodes[2]".
std::string element_path(const std::string& path, std::size_t index);

}  // namespace ccsim::support
