#include "models/hardware/catalog.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "models/hardware/detail/catalog_detail.hpp"
#include "support/data_dir.hpp"
#include "support/input_file.hpp"

namespace ccsim::models {
namespace {

using detail::keys_of;

constexpr const char* kLinkFile = "links.yaml";
constexpr const char* kGpuFile = "gpus.yaml";
constexpr const char* kNodeFile = "nodes.yaml";
constexpr const char* kCpuFile = "cpus.yaml";  // optional: without it nodes name no CPU

}  // namespace

std::string Catalog::default_dir() {
  return (support::data_dir() / "hardware").string();
}

Catalog Catalog::load(const std::string& dir) {
  {
    const std::string problem = support::input_file_problem(dir);
    if (problem != "a directory") {
      throw support::InputError({dir, 0, 0}, "", "a hardware catalog directory (with links.yaml, gpus.yaml, nodes.yaml)",
                                problem.empty() ? "a regular file" : problem);
    }
  }
  Catalog catalog;
  const auto read = [&](const char* file, Table& table) {
    const std::string path = (std::filesystem::path(dir) / file).string();
    support::YamlSource doc = support::load_yaml_file(path, {"a hardware catalog file (" + std::string(file) + ")"});
    if (!doc.node.IsMap()) {
      throw support::InputError(support::location_of(doc), "", fmt::format("a map from {} names to entries", table.kind),
                                support::describe_document(doc.node));
    }
    for (const auto& entry : doc.node) {
      if (!entry.second.IsMap()) {
        throw support::InputError(support::location_of({entry.second, doc.file}), entry.first.Scalar(),
                                  fmt::format("a map describing a {}", table.kind), support::describe_node(entry.second));
      }
      if (!table.entries.emplace(entry.first.Scalar(), support::YamlSource{entry.second, doc.file}).second) {
        throw support::InputError(support::location_of({entry.first, doc.file}), entry.first.Scalar(),
                                  fmt::format("each {} name once in the catalog", table.kind),
                                  "a second entry '" + entry.first.Scalar() + "'");
      }
    }
  };
  read(kLinkFile, catalog.links_);
  read(kGpuFile, catalog.gpus_);
  {
    // cpus.yaml is optional: absent is fine; anything else at that path is read (and refused
    // by read_input_file if it is not a regular file).
    std::error_code ec;
    const auto status = std::filesystem::symlink_status(std::filesystem::path(dir) / kCpuFile, ec);
    if (status.type() != std::filesystem::file_type::not_found) read(kCpuFile, catalog.cpus_);
  }
  read(kNodeFile, catalog.nodes_);
  // Resolve every entry once so that a broken catalog fails at load time, not mid-run.
  for (const auto& name : catalog.link_names()) catalog.link(name);
  for (const auto& name : catalog.gpu_names()) catalog.gpu(name);
  for (const auto& name : catalog.cpu_names()) catalog.cpu(name);
  for (const auto& name : catalog.node_names()) catalog.node(name);
  return catalog;
}

LinkSpec Catalog::link(const support::YamlSource& ref, const std::string& path) const {
  LinkSpec spec = parse_link(resolve(links_, ref, path));
  return spec;
}
GpuSpec Catalog::gpu(const support::YamlSource& ref, const std::string& path) const { return parse_gpu(resolve(gpus_, ref, path)); }
NodeSpec Catalog::node(const support::YamlSource& ref, const std::string& path) const { return parse_node(resolve(nodes_, ref, path)); }
CpuSpec Catalog::cpu(const support::YamlSource& ref, const std::string& path) const { return parse_cpu(resolve(cpus_, ref, path)); }

LinkSpec Catalog::link(const support::Fields& parent, std::string_view key) const { return parse_link(resolve(links_, parent, key)); }
GpuSpec Catalog::gpu(const support::Fields& parent, std::string_view key) const { return parse_gpu(resolve(gpus_, parent, key)); }
NodeSpec Catalog::node(const support::Fields& parent, std::string_view key) const { return parse_node(resolve(nodes_, parent, key)); }
CpuSpec Catalog::cpu(const support::Fields& parent, std::string_view key) const { return parse_cpu(resolve(cpus_, parent, key)); }

LinkSpec Catalog::link(const std::string& name) const { return link(support::YamlSource{YAML::Node(name), nullptr}, name); }
GpuSpec Catalog::gpu(const std::string& name) const { return gpu(support::YamlSource{YAML::Node(name), nullptr}, name); }
NodeSpec Catalog::node(const std::string& name) const { return node(support::YamlSource{YAML::Node(name), nullptr}, name); }
CpuSpec Catalog::cpu(const std::string& name) const { return cpu(support::YamlSource{YAML::Node(name), nullptr}, name); }

std::vector<std::string> Catalog::link_names() const { return keys_of(links_.entries); }
std::vector<std::string> Catalog::gpu_names() const { return keys_of(gpus_.entries); }
std::vector<std::string> Catalog::node_names() const { return keys_of(nodes_.entries); }
std::vector<std::string> Catalog::cpu_names() const { return keys_of(cpus_.entries); }

}  // namespace ccsim::models
