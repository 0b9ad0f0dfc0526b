#pragma once
// The hardware catalog: GPUs, link kinds, CPUs and node templates, read from
// scenarios/hardware/{gpus,links,cpus,nodes}.yaml (cpus.yaml may be absent: nodes then name no CPU). Every entry carries the public source of its
// figures in a `source` key (datasheets, vendor user guides; see shared/reference/hardware.md).
//
// References. A scenario names an entry (`gpu: H100-SXM5`) or gives a map that overrides
// some fields of a named entry (`gpu: {base: H100-SXM5, hbm_capacity: 96GB}`). Catalog
// entries may themselves have a `base`. A map without `base` inside an override refines
// whatever the layer below names (so `node: {base: dgx-h100, gpu: {hbm_capacity: 96GB}}`
// changes only the GPU's memory). Base chains with a cycle are errors.
//
// Files: catalog.cpp (the four tables and their lookups), catalog_base_chains.cpp (`base:`
// resolution), catalog_entries.cpp (links, GPUs, CPUs), node_template.cpp (node templates).
// The resolved types are in specs.hpp.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/specs.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// The catalog's tables (links, GPUs, CPUs, node templates) by name, and the resolution of
/// references to them.
class Catalog {
 public:
  /// Loads `dir`/gpus.yaml, links.yaml, nodes.yaml and, when present, cpus.yaml. Throws
  /// InputError on bad files.
  static Catalog load(const std::string& dir);
  /// $CCSIM_DATA_DIR/hardware when the variable is set, else the source tree's scenarios/hardware.
  static std::string default_dir();

  /// Resolve a reference to an entry (a name, or a map of overrides). `path` is the key path
  /// used in messages. Throws InputError for unknown names, cycles and bad fields.
  LinkSpec link(const support::YamlSource& ref, const std::string& path) const;
  GpuSpec gpu(const support::YamlSource& ref, const std::string& path) const;
  NodeSpec node(const support::YamlSource& ref, const std::string& path) const;
  CpuSpec cpu(const support::YamlSource& ref, const std::string& path) const;

  /// Resolve the reference held by `key` of `parent`, stacking overrides from every layer.
  LinkSpec link(const support::Fields& parent, std::string_view key) const;
  GpuSpec gpu(const support::Fields& parent, std::string_view key) const;
  NodeSpec node(const support::Fields& parent, std::string_view key) const;
  CpuSpec cpu(const support::Fields& parent, std::string_view key) const;

  /// Lookups by name (for tests and tools). Throw InputError when unknown.
  LinkSpec link(const std::string& name) const;
  GpuSpec gpu(const std::string& name) const;
  NodeSpec node(const std::string& name) const;
  CpuSpec cpu(const std::string& name) const;

  std::vector<std::string> link_names() const;
  std::vector<std::string> gpu_names() const;
  std::vector<std::string> node_names() const;
  std::vector<std::string> cpu_names() const;

 private:
  struct Table {
    std::string kind;  ///< "gpu", "link", "node": used in messages
    std::map<std::string, support::YamlSource> entries;
  };

  struct Resolved {
    support::Fields fields;     ///< the entry's layers, overrides first
    std::string name;  ///< `name` key, else the first catalog entry of the chain
    std::vector<std::string> chain;  ///< catalog entries of the base chain, nearest first
  };
  // The `base:` chains (catalog_base_chains.cpp).
  Resolved resolve(const Table& table, const support::Fields& parent, std::string_view key) const;
  Resolved resolve(const Table& table, const support::YamlSource& ref, const std::string& path) const;
  void append_chain(const Table& table, const std::string& name, const support::SourceLocation& where,
                    const std::string& path, std::vector<support::YamlSource>& layers,
                    std::vector<std::string>& chain) const;

  // The entries (catalog_entries.cpp).
  LinkSpec parse_link(const Resolved& r) const;
  GpuSpec parse_gpu(const Resolved& r) const;
  CpuSpec parse_cpu(const Resolved& r) const;
  // Node templates (node_template.cpp).
  NodeSpec parse_node(const Resolved& r) const;
  /// Fills spec.gpu_links from `gpu_links` (layout direct) or the layout's shorthand.
  void parse_gpu_links(const support::Fields& f, NodeSpec& spec, const std::string& layout) const;
  void parse_pcie_tree(const support::Fields& pcie, NodeSpec& spec) const;

  Table links_{"link", {}};
  Table gpus_{"gpu", {}};
  Table nodes_{"node", {}};
  Table cpus_{"cpu", {}};
};

}  // namespace ccsim::models
