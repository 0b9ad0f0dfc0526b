#include "models/hardware/catalog.hpp"
#include "support/input_file.hpp"
#include "support/numbers.hpp"
#include "support/data_dir.hpp"

#include <algorithm>
#include <set>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace ccsim::models {
namespace {

constexpr const char* kLinkFile = "links.yaml";
constexpr int kCatalogDepth = 1000;  // depth of catalog layers, below any scenario layer

// Ranges of counts: far above any built system, they catch typos and overflow.
constexpr int kMaxGpusPerNode = 4096;
constexpr int kMaxLinks = 1024;
constexpr int kMaxDevicesPerNode = 4096;
constexpr const char* kGpuFile = "gpus.yaml";
constexpr const char* kNodeFile = "nodes.yaml";
constexpr const char* kCpuFile = "cpus.yaml";  // optional: without it nodes name no CPU
constexpr int kMaxMemoryChannels = 64;

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

template <typename Map>
std::vector<std::string> keys_of(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace

std::string_view to_string(NodeLayout layout) {
  switch (layout) {
    case NodeLayout::NvSwitch: return "nvswitch";
    case NodeLayout::XgmiMesh: return "xgmi-mesh";
    case NodeLayout::PcieBox: return "pcie-box";
    case NodeLayout::Direct: return "direct";
  }
  return "?";
}

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

LinkSpec Catalog::parse_link(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "class", "bandwidth", "latency", "transports"});
  LinkSpec spec;
  spec.name = r.name;
  const std::string cls = f.choice("class", {"scale-up", "pcie", "host", "network"});
  spec.link_class = *parse_link_class(cls);
  spec.bandwidth = f.quantity("bandwidth", support::Quantity::Bandwidth, true);
  spec.latency = f.quantity("latency", support::Quantity::Time, false);
  if (const auto transports = f.optional_map("transports")) {
    if (spec.link_class != LinkClass::Network) throw f.error("transports", "no transports for a link of class " + cls);
    transports->reject_unknown({"gdr", "verbs", "socket"});
    for (NicTransport t : {NicTransport::Gdr, NicTransport::Verbs, NicTransport::Socket}) {
      if (transports->has(to_string(t))) {
        spec.transport_overhead[static_cast<std::size_t>(t)] = transports->quantity(to_string(t), support::Quantity::Time, false);
      }
    }
  }
  spec.source = f.optional_string("source").value_or("");
  spec.lineage = r.chain;
  return spec;
}

GpuSpec Catalog::parse_gpu(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "vendor", "arch", "bf16_flops", "fp8_flops", "hbm_capacity",
                    "hbm_bandwidth", "sms", "scaleup", "host_link"});
  GpuSpec spec;
  spec.name = r.name;
  spec.vendor = f.string("vendor");
  spec.arch = f.string("arch");
  spec.bf16_flops = f.quantity("bf16_flops", support::Quantity::FlopRate, true);
  spec.fp8_flops = f.quantity("fp8_flops", support::Quantity::FlopRate, false, 0.0);
  spec.hbm_capacity = f.quantity("hbm_capacity", support::Quantity::Bytes, true);
  spec.hbm_bandwidth = f.quantity("hbm_bandwidth", support::Quantity::Bandwidth, true);
  spec.sms = f.count("sms", 1, 4096, 0);  // largest GPUs have a few hundred (MI300X: 304 CUs)
  if (const auto scaleup = f.optional_map("scaleup")) {
    scaleup->reject_unknown({"link", "links"});
    spec.scaleup_link = link(*scaleup, "link");
    if (spec.scaleup_link->link_class != LinkClass::ScaleUp) {
      throw scaleup->error("link", "a link of class scale-up (NVLink or xGMI)");
    }
    spec.scaleup_links = scaleup->count("links", 1, kMaxLinks);
  }
  spec.host_link = link(f, "host_link");
  if (spec.host_link.link_class != LinkClass::Pcie) throw f.error("host_link", "a link of class pcie");
  spec.source = f.optional_string("source").value_or("");
  return spec;
}

void Catalog::parse_gpu_links(const support::Fields& f, NodeSpec& spec, const std::string& layout) const {
  if (spec.layout != NodeLayout::Direct) {
    if (f.has("gpu_links")) throw f.error("gpu_links", "no gpu_links list for layout " + layout + " (use layout: direct)");
    // The shorthands, expanded to the same list.
    if (spec.layout == NodeLayout::XgmiMesh) {
      for (int a = 0; a < spec.gpus; ++a)
        for (int b = a + 1; b < spec.gpus; ++b) spec.gpu_links.push_back({a, b, spec.xgmi_links_per_peer, *spec.gpu.scaleup_link});
    } else if (spec.layout == NodeLayout::PcieBox && spec.bridge_links > 0) {
      for (int a = 0; a + 1 < spec.gpus; a += 2) spec.gpu_links.push_back({a, a + 1, spec.bridge_links, *spec.gpu.scaleup_link});
    }
    return;
  }
  if (!f.has("gpu_links")) throw f.missing("gpu_links", "a list of GPU pairs with their links, e.g. [{pair: [0, 1], count: 2}]");
  // An empty list is a node whose GPUs have no direct links (everything over PCIe).
  const std::vector<support::YamlSource> items = f.list("gpu_links");
  std::vector<int> per_gpu(static_cast<std::size_t>(spec.gpus), 0);
  std::set<std::pair<int, int>> listed;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const support::Fields item({items[i]}, support::element_path(f.key_path("gpu_links"), i));
    item.reject_unknown({"pair", "count", "link"});
    const auto pair = item.find("pair");
    if (!pair) throw item.missing("pair", "two GPU indices such as [0, 3]");
    // The pair as written, for messages: "[2, 7]".
    std::string written = support::describe_node(pair->node);
    if (pair->node.IsSequence()) {
      written = "[";
      for (std::size_t k = 0; k < pair->node.size(); ++k)
        written += (k ? ", " : "") + (pair->node[k].IsScalar() ? (pair->node[k].Scalar().size() <= 40 ? pair->node[k].Scalar() : support::quote_token(pair->node[k].Scalar())) : support::describe_node(pair->node[k]));
      written += "]";
    }
    const auto bad_pair = [&](const std::string& expected) {
      return support::InputError(support::location_of(*pair), item.key_path("pair"), expected, written);
    };
    const std::string indices = fmt::format("two distinct GPU indices from 0 to {}", spec.gpus - 1);
    const auto index = [&](std::size_t k) {
      int v = -1;
      if (pair->node.IsSequence() && pair->node.size() == 2 && pair->node[k].IsScalar()) {
        const support::Parsed<std::int64_t> p = support::parse_integer(pair->node[k].Scalar());
        v = p && p.value >= 0 && p.value < spec.gpus ? static_cast<int>(p.value) : -1;
      }
      if (v < 0 || v >= spec.gpus) throw bad_pair(indices);
      return v;
    };
    GpuPairLinks g;
    g.a = index(0);
    g.b = index(1);
    if (g.a == g.b) throw bad_pair(indices);
    if (g.a > g.b) std::swap(g.a, g.b);
    if (!listed.insert({g.a, g.b}).second) {  // a set: a node may list thousands of pairs
      throw bad_pair(fmt::format("a pair listed once (GPUs {} and {} are already joined)", g.a, g.b));
    }
    g.count = item.count("count", 1, kMaxLinks, 1);
    if (item.has("link")) {
      g.link = link(item, "link");
    } else if (spec.gpu.scaleup_link) {
      g.link = *spec.gpu.scaleup_link;
    } else {
      throw item.missing("link", "a scale-up link kind (the GPU has none of its own)");
    }
    if (g.link.link_class != LinkClass::ScaleUp) throw item.error("link", "a link of class scale-up");
    per_gpu[static_cast<std::size_t>(g.a)] += g.count;
    per_gpu[static_cast<std::size_t>(g.b)] += g.count;
    for (int end : {g.a, g.b}) {
      if (spec.gpu.scaleup_links > 0 && per_gpu[static_cast<std::size_t>(end)] > spec.gpu.scaleup_links) {
        throw item.error("count", fmt::format("at most {} scale-up links on GPU {} in all ({} has {})", spec.gpu.scaleup_links, end,
                                              spec.gpu.name, spec.gpu.scaleup_links));
      }
    }
    spec.gpu_links.push_back(g);
  }
}

NodeSpec Catalog::parse_node(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "layout", "gpu", "gpus", "nvswitch", "xgmi", "bridges", "gpu_links", "pcie",
                    "cpus", "cpus_per_domain", "cpu_link", "cpu", "nics"});
  NodeSpec spec;
  spec.name = r.name;
  spec.source = f.optional_string("source").value_or("");
  const std::string layout = f.choice("layout", {"nvswitch", "xgmi-mesh", "pcie-box", "direct"});
  spec.layout = layout == "nvswitch"    ? NodeLayout::NvSwitch
                : layout == "xgmi-mesh" ? NodeLayout::XgmiMesh
                : layout == "direct"    ? NodeLayout::Direct
                                        : NodeLayout::PcieBox;
  spec.gpu = gpu(f, "gpu");
  spec.gpus = f.count("gpus", 1, kMaxGpusPerNode);

  if (spec.layout == NodeLayout::NvSwitch) {
    const support::Fields nvs = f.map("nvswitch");
    nvs.reject_unknown({"chips", "generation", "nvls"});
    spec.nvswitch_chips = nvs.count("chips", 1, kMaxDevicesPerNode);
    spec.nvswitch_generation = nvs.count("generation", 1, 16);
    spec.nvls = nvs.boolean("nvls", false);
    if (spec.nvls && spec.nvswitch_generation < 3) {
      throw nvs.error("nvls", "false (NVLink SHARP needs NVSwitch generation 3 or later)");
    }
    // A renamed link derived from an NVLink entry (`{base: nvlink4, name: ...}`) is NVLink too.
    const auto is_nvlink = [](const LinkSpec& l) {
      if (l.name.find("nvlink") != std::string::npos) return true;
      return std::any_of(l.lineage.begin(), l.lineage.end(), [](const std::string& b) { return b.find("nvlink") != std::string::npos; });
    };
    if (!spec.gpu.scaleup_link || !is_nvlink(*spec.gpu.scaleup_link)) {
      throw f.error("gpu", "a GPU with NVLink for an nvswitch layout");
    }
  } else if (f.has("nvswitch")) {
    throw f.error("nvswitch", "no nvswitch section for layout " + layout);
  }
  if (spec.layout == NodeLayout::XgmiMesh) {
    const support::Fields x = f.map("xgmi");
    x.reject_unknown({"links_per_peer"});
    spec.xgmi_links_per_peer = x.count("links_per_peer", 1, kMaxLinks);
    if (!spec.gpu.scaleup_link) throw f.error("gpu", "a GPU with scale-up links for an xgmi-mesh layout");
    const int needed = (spec.gpus - 1) * spec.xgmi_links_per_peer;
    if (needed > spec.gpu.scaleup_links) {
      const int most = spec.gpu.scaleup_links / std::max(1, spec.gpus - 1);
      throw x.error("links_per_peer", fmt::format("at most {} link{} per peer ({} GPUs share {} scale-up links each)", most,
                                                  most == 1 ? "" : "s", spec.gpus, spec.gpu.scaleup_links));
    }
  } else if (f.has("xgmi")) {
    throw f.error("xgmi", "no xgmi section for layout " + layout);
  }
  if (const auto bridges = f.optional_map("bridges")) {
    if (spec.layout != NodeLayout::PcieBox) throw f.error("bridges", "no bridges section for layout " + layout);
    bridges->reject_unknown({"links"});
    spec.bridge_links = bridges->count("links", 1, kMaxLinks);
    if (!spec.gpu.scaleup_link) throw f.error("gpu", "a GPU with NVLink when NVLink bridges are fitted");
    if (spec.gpus % 2 != 0) throw f.error("gpus", "an even number of GPUs when NVLink bridges join pairs");
  }
  parse_gpu_links(f, spec, layout);

  const support::Fields pcie = f.map("pcie");
  pcie.reject_unknown({"link", "switches", "p2p"});
  spec.pcie_link = link(pcie, "link");
  if (spec.pcie_link.link_class != LinkClass::Pcie) throw pcie.error("link", "a link of class pcie");
  spec.pcie_switches = pcie.count("switches", 0, kMaxDevicesPerNode, 0);
  spec.p2p = pcie.boolean("p2p", true);

  spec.cpus = f.count("cpus", 1, kMaxDevicesPerNode, 1);
  spec.cpus_per_domain = f.count("cpus_per_domain", 1, kMaxDevicesPerNode, spec.cpus);
  if (spec.cpus % spec.cpus_per_domain != 0) {
    throw f.error("cpus_per_domain", fmt::format("a divisor of cpus ({})", spec.cpus));
  }
  if (spec.cpus_per_domain > 1) {
    spec.cpu_link = link(f, "cpu_link");
    if (spec.cpu_link.link_class != LinkClass::Host) throw f.error("cpu_link", "a link of class host");
  }
  if (f.has("cpu")) spec.cpu = cpu(f, "cpu");

  if (const auto nics = f.optional_map("nics")) {
    nics->reject_unknown({"link", "count", "transport"});
    spec.nics = nics->count("count", 0, kMaxDevicesPerNode);
    if (spec.nics > 0) {
      spec.nic_link = link(*nics, "link");
      if (spec.nic_link->link_class != LinkClass::Network) throw nics->error("link", "a link of class network");
      // GPUDirect RDMA needs a port that supports it and GPUs that do PCIe peer-to-peer.
      const auto& overhead = spec.nic_link->transport_overhead;
      std::vector<std::string> usable;
      for (NicTransport t : {NicTransport::Gdr, NicTransport::Verbs, NicTransport::Socket}) {
        if (overhead[static_cast<std::size_t>(t)] && (t != NicTransport::Gdr || spec.p2p)) usable.emplace_back(to_string(t));
      }
      if (nics->has("transport")) {
        const std::string t = nics->choice("transport", {"gdr", "verbs", "socket"});
        if (std::find(usable.begin(), usable.end(), t) == usable.end()) {
          const bool no_p2p = t == "gdr" && overhead[0] && !spec.p2p;
          throw nics->error("transport",
                            usable.empty() ? "a transport the NIC kind lists (it lists none)"
                                           : fmt::format("a transport {} supports ({}){}", spec.nic_link->name, join_names(usable),
                                                         no_p2p ? "; GPUDirect RDMA needs PCIe peer-to-peer (pcie.p2p)" : ""));
        }
        spec.nic_transport = *parse_nic_transport(t);
      } else if (!usable.empty()) {
        spec.nic_transport = *parse_nic_transport(usable.front());  // fastest first
      }
      spec.nic_transport_overhead = overhead[static_cast<std::size_t>(spec.nic_transport)].value_or(0.0);
    }
  }

  // Devices are spread evenly: switches over CPUs, GPUs and NICs over switches.
  const int attach_points = spec.pcie_switches > 0 ? spec.pcie_switches : spec.cpus;
  const char* attach_key = spec.pcie_switches > 0 ? "pcie.switches" : "cpus";
  if (spec.gpus % attach_points != 0) {
    // Blame whichever of the two keys the user wrote more specifically (an override of the
    // switch count in a scenario, rather than the template's GPU count).
    if (spec.pcie_switches > 0 && pcie.depth("switches") < f.depth("gpus")) {
      throw pcie.error("switches", fmt::format("a divisor of the node's GPU count ({}) so GPUs spread evenly", spec.gpus));
    }
    throw f.error("gpus", fmt::format("a multiple of {} ({}) so GPUs spread evenly", attach_key, attach_points));
  }
  if (spec.nics > 0 && spec.nics % attach_points != 0 && attach_points % spec.nics != 0) {
    throw f.map("nics").error("count", fmt::format("a NIC count that divides or is a multiple of {} ({})", attach_key,
                                                   attach_points));
  }
  if (spec.pcie_switches > 0 && spec.pcie_switches % spec.cpus != 0) {
    throw pcie.error("switches", fmt::format("a multiple of cpus ({})", spec.cpus));
  }
  return spec;
}

CpuSpec Catalog::parse_cpu(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "memory"});
  CpuSpec spec;
  spec.name = r.name;
  spec.source = f.optional_string("source").value_or("");
  const support::Fields m = f.map("memory");
  m.reject_unknown({"kind", "channels", "channel_bandwidth", "efficiency", "latency"});
  spec.memory_kind = m.string("kind");
  spec.memory_channels = m.count("channels", 1, kMaxMemoryChannels);
  spec.channel_bandwidth = m.quantity("channel_bandwidth", support::Quantity::Bandwidth, true);
  spec.memory_efficiency = m.number("efficiency", 0.0);
  if (spec.memory_efficiency > 1.0) throw m.error("efficiency", "a fraction of the peak bandwidth in (0, 1]");
  spec.memory_latency = m.quantity("latency", support::Quantity::Time, false);
  return spec;
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
