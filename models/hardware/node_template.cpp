// Node templates (nodes.yaml, and node references in scenarios): a resolved entry read into a
// NodeSpec, its layout's GPU links expanded, every count checked against what the node's
// devices can hold. An importer of another description of a node (an NCCL topology dump,
// `nvidia-smi topo -m`) produces such a template.

#include "models/hardware/catalog.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "models/hardware/detail/catalog_detail.hpp"
#include "support/numbers.hpp"

namespace ccsim::models {
namespace {

using detail::join_names;
using detail::kMaxLinks;

// Ranges of counts: far above any built system, they catch typos and overflow.
constexpr int kMaxGpusPerNode = 4096;
constexpr int kMaxDevicesPerNode = 4096;

/// The GPU interconnect sections of each layout: `nvswitch` (chips, generation, NVLink SHARP),
/// `xgmi` (links per peer) and `bridges` (NVLink bridges of a pcie-box); each is refused for
/// the other layouts.
void parse_scaleup_sections(const support::Fields& f, NodeSpec& spec, const std::string& layout) {
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
}

/// The `nics` section: count, port link and the transport that moves GPU data.
void parse_nics(const Catalog& catalog, const support::Fields& f, NodeSpec& spec) {
  if (const auto nics = f.optional_map("nics")) {
    nics->reject_unknown({"link", "count", "transport", "gdr_level", "gdr_read"});
    // NCCL_NET_GDR_LEVEL's names (LOC: never) and NCCL_NET_GDR_READ (node_builders.cpp apply_gdr).
    if (nics->has("gdr_level")) {
      const std::string level = nics->choice("gdr_level", {"LOC", "PIX", "PXB", "PHB", "SYS"});
      spec.gdr_level = level == "LOC" ? PathType::Nvl : level == "PIX" ? PathType::Pix : level == "PXB" ? PathType::Pxb
                       : level == "PHB" ? PathType::Phb : PathType::Sys;
    }
    if (nics->has("gdr_read")) spec.gdr_read = nics->boolean("gdr_read", true);
    spec.nics = nics->count("count", 0, kMaxDevicesPerNode);
    if (spec.nics > 0) {
      spec.nic_link = catalog.link(*nics, "link");
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
}

/// Devices are spread evenly: switches over CPUs, GPUs and NICs over switches.
void check_device_spread(const support::Fields& f, const support::Fields& pcie, const NodeSpec& spec) {
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

/// `pcie.tree`: the explicit attachment points (switches or CPU root ports) with their GPUs and
/// NICs. Every GPU index in [0, gpus) and NIC index in [0, nics) appears exactly once; CPU
/// indices are below `cpus`. Links default to `pcie.link`; a device's link defaults to its
/// entry's `link`. Switch entries are counted in pcie_switches.
void Catalog::parse_pcie_tree(const support::Fields& pcie, NodeSpec& spec) const {
  if (pcie.has("switches")) throw pcie.error("switches", "no switches count beside a tree (the tree lists its switches)");
  const std::vector<support::YamlSource> items = pcie.list("tree");
  if (items.empty()) throw pcie.error("tree", "a non-empty list of switches, e.g. [{cpu: 0, gpus: [0, 1], nics: [0]}]");
  std::vector<int> gpu_seen(static_cast<std::size_t>(spec.gpus), -1);
  std::vector<int> nic_seen(static_cast<std::size_t>(spec.nics), -1);
  spec.pcie_switches = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const support::Fields item({items[i]}, support::element_path(pcie.key_path("tree"), i));
    item.reject_unknown({"cpu", "switch", "link", "gpu_link", "nic_link", "gpus", "nics"});
    PcieAttachSpec a;
    a.cpu = item.count("cpu", 0, spec.cpus - 1, 0);
    a.is_switch = item.boolean("switch", true);
    const auto pcie_link = [&](std::string_view key, const LinkSpec& fallback) {
      if (!item.has(key)) return fallback;
      LinkSpec l = link(item, key);
      if (l.link_class != LinkClass::Pcie) throw item.error(key, "a link of class pcie");
      return l;
    };
    a.link = pcie_link("link", spec.pcie_link);
    a.gpu_link = pcie_link("gpu_link", a.link);
    a.nic_link = pcie_link("nic_link", a.link);
    const auto indices = [&](std::string_view key, int limit, std::vector<int>& seen, const char* what) {
      std::vector<int> out;
      if (!item.has(key)) return out;
      const support::YamlSource list = *item.find(key);
      if (!list.node.IsSequence()) throw item.error(key, fmt::format("a list of {} indices", what));
      for (std::size_t k = 0; k < list.node.size(); ++k) {
        const YAML::Node& e = list.node[k];
        const support::Parsed<std::int64_t> v = e.IsScalar() ? support::parse_integer(e.Scalar()) : support::Parsed<std::int64_t>{};
        const std::string found = e.IsScalar() ? support::quote_token(e.Scalar()) : support::describe_node(e);
        const support::SourceLocation at = support::location_of(support::YamlSource{e, list.file});
        if (!v || v.value < 0 || v.value >= limit) {
          throw support::InputError(at, item.key_path(key),
                                    limit == 0 ? fmt::format("no {} indices (the node has no {}s)", what, what)
                                               : fmt::format("{} indices from 0 to {}", what, limit - 1),
                                    found);
        }
        int& owner = seen[static_cast<std::size_t>(v.value)];
        if (owner >= 0) {
          throw support::InputError(at, item.key_path(key), fmt::format("each {} listed once", what),
                                    fmt::format("{} {} again (already in {})", what, v.value,
                                                support::element_path(pcie.key_path("tree"), static_cast<std::size_t>(owner))));
        }
        owner = static_cast<int>(i);
        out.push_back(static_cast<int>(v.value));
      }
      return out;
    };
    a.gpus = indices("gpus", spec.gpus, gpu_seen, "GPU");
    a.nics = indices("nics", spec.nics, nic_seen, "NIC");
    if (a.is_switch) ++spec.pcie_switches;
    spec.pcie_tree.push_back(std::move(a));
  }
  const auto missing = [&](const std::vector<int>& seen, const char* what) {
    for (std::size_t k = 0; k < seen.size(); ++k) {
      if (seen[k] < 0) throw pcie.error("tree", fmt::format("every {} of the node in one entry ({} {} is in none)", what, what, k));
    }
  };
  missing(gpu_seen, "GPU");
  missing(nic_seen, "NIC");
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

  parse_scaleup_sections(f, spec, layout);
  parse_gpu_links(f, spec, layout);

  const support::Fields pcie = f.map("pcie");
  pcie.reject_unknown({"link", "switches", "p2p", "tree"});
  spec.pcie_link = link(pcie, "link");
  if (spec.pcie_link.link_class != LinkClass::Pcie) throw pcie.error("link", "a link of class pcie");
  if (!pcie.has("tree")) spec.pcie_switches = pcie.count("switches", 0, kMaxDevicesPerNode, 0);
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

  parse_nics(*this, f, spec);
  if (pcie.has("tree")) {
    parse_pcie_tree(pcie, spec);
  } else {
    check_device_spread(f, pcie, spec);
  }
  return spec;
}

}  // namespace ccsim::models
