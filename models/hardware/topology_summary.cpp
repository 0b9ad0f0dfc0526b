#include "models/hardware/topology_summary.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::models {
namespace {

std::string role_name(const Device& d) {
  if (d.kind == DeviceKind::NetworkSwitch) return d.tier == 1 ? "leaf" : d.tier == 2 ? "spine" : "core";
  return std::string(to_string(d.kind));
}

/// Order of endpoint roles in "between" labels: closest to the GPU first.
int role_rank(const Device& d) {
  switch (d.kind) {
    case DeviceKind::Gpu: return 0;
    case DeviceKind::NvSwitch: return 1;
    case DeviceKind::Nic: return 2;
    case DeviceKind::PcieSwitch: return 3;
    case DeviceKind::Cpu: return 4;
    case DeviceKind::NetworkSwitch: return 4 + d.tier;
    case DeviceKind::Memory: return 5;
  }
  return 9;
}

/// The leaf switch a NIC is cabled to, or kNoDevice.
DeviceId leaf_of(const Topology& t, DeviceId nic) {
  if (nic == kNoDevice) return kNoDevice;
  for (LinkId id : t.out_links(nic)) {
    if (t.link(id).link_class == LinkClass::Network) return t.link_target(id);
  }
  return kNoDevice;
}

/// The direct scale-up link from a to b, if any.
std::optional<LinkId> scaleup_link_between(const Topology& t, DeviceId a, DeviceId b) {
  for (LinkId id : t.out_links(a))
    if (t.link_target(id) == b && t.link(id).link_class == LinkClass::ScaleUp) return id;
  return std::nullopt;
}

/// The kind of position GPU `b` has relative to GPU `a`.
std::string position_of(const Cluster& c, DeviceId a, DeviceId b) {
  const Topology& t = c.topology;
  const Device& da = t.device(a);
  const Device& db = t.device(b);
  if (da.node == db.node) {
    std::vector<std::string> parts;
    const NodeDevices& node = c.nodes[static_cast<std::size_t>(da.node)];
    if (node.nvswitch != kNoDevice) parts.push_back("same NVSwitch");
    else if (const auto direct = scaleup_link_between(t, a, b)) {
      // A kind renamed from xgmi through `base:` is still xGMI.
      const std::size_t kind = t.link(*direct).kind;
      bool xgmi = t.link_kinds()[kind].find("xgmi") != std::string::npos;
      for (const std::string& base : t.link_kind_lineage(kind)) xgmi = xgmi || base.find("xgmi") != std::string::npos;
      parts.push_back(xgmi ? "xGMI peer" : "NVLink peer");
    }
    if (da.pcie_switch != kNoDevice && da.pcie_switch == db.pcie_switch) parts.push_back("same PCIe switch");
    else if (da.cpu == db.cpu) parts.push_back(da.pcie_switch != kNoDevice ? "other PCIe switch, same CPU" : "same CPU");
    else parts.push_back("other CPU");
    std::string label;
    for (const auto& p : parts) label += (label.empty() ? "" : ", ") + p;
    return label;
  }
  const DeviceId la = leaf_of(t, da.nic);
  const DeviceId lb = leaf_of(t, db.nic);
  std::string label = "other node";
  if (da.rail >= 0 && da.rail == db.rail) label += ", same rail";
  else if (da.rail >= 0 && db.rail >= 0) label += ", other rail";
  label += la != kNoDevice && la == lb ? ", same leaf" : ", other leaf";
  const FabricSpec& f = c.spec.fabric;
  if (f.pods(static_cast<int>(c.nodes.size())) > 1) label += da.node / f.nodes_per_pod == db.node / f.nodes_per_pod ? ", same pod" : ", other pod";
  return label;
}

std::string range_label(const char* what, int first, int last) {
  return first == last ? fmt::format("{} {}", what, first) : fmt::format("{} {}-{}", what, first, last);
}

/// The fabric's one-line description, and the pods of a three-tier fat tree.
void summarize_fabric(const Cluster& c, TopologySummary& s) {
  const Topology& t = c.topology;
  const FabricSpec& f = c.spec.fabric;
  s.fabric = std::string(to_string(f.kind));
  if (f.kind == FabricKind::FatTree) {
    int leaves = 0, spines = 0;
    int cores = 0;
    for (DeviceId d = 0; d < t.num_devices(); ++d) {
      if (t.device(d).kind != DeviceKind::NetworkSwitch) continue;
      (t.device(d).tier == 1 ? leaves : t.device(d).tier == 2 ? spines : cores) += 1;
    }
    s.fabric += fmt::format(", {}, {} leaves, {} spines, oversubscription {}:1", to_string(f.wiring), leaves, spines,
                            f.oversubscription);
    if (f.ecmp == Ecmp::Balanced) s.fabric += ", balanced ECMP";  // hashed ECMP, the default, is not named
    const int pods = f.pods(s.nodes);
    if (pods > 1) {
      s.pods = pods;
      s.nodes_per_pod = f.nodes_per_pod;
      s.fabric += fmt::format("; {} pods of {} nodes, {} cores, pod oversubscription {}:1", pods, f.nodes_per_pod, cores,
                              f.pod_oversubscription);
      // Out of pod 0 (a full pod: only the last may be partial): its spines' core links.
      const int spines_per_pod = spines / pods;
      double up = 0;
      for (LinkId id = 0; id < t.num_links(); ++id) {
        const Device& a = t.device(t.link_source(id));
        const Device& b = t.device(t.link_target(id));
        if (a.kind == DeviceKind::NetworkSwitch && a.tier == 2 && b.kind == DeviceKind::NetworkSwitch && b.tier == 3 &&
            a.local < spines_per_pod) {
          up += t.link(id).bandwidth;
        }
      }
      int pod_gpus = 0;
      for (int n = 0; n < std::min(f.nodes_per_pod, s.nodes); ++n) pod_gpus += static_cast<int>(c.nodes[static_cast<std::size_t>(n)].gpus.size());
      s.between_pods_per_gpu = pod_gpus > 0 ? up / pod_gpus : 0.0;
    }
  }
}

/// One row per node group: its template, GPUs, NICs, host memory and injection bandwidth (from
/// the group's first node).
void summarize_groups(const Cluster& c, TopologySummary& s) {
  const Topology& t = c.topology;
  for (std::size_t g = 0; g < c.spec.groups.size(); ++g) {
    const NodeGroupSpec& group = c.spec.groups[g];
    NodeGroupSummary ng;
    ng.node = group.node.name;
    ng.count = group.count;
    ng.gpu = group.node.gpu.name;
    ng.gpus_per_node = group.node.gpus;
    ng.nics_per_node = group.node.nics;
    const auto first = std::find(c.node_group.begin(), c.node_group.end(), static_cast<int>(g)) - c.node_group.begin();
    double injection = 0.0;
    for (DeviceId nic : c.nodes[static_cast<std::size_t>(first)].nics) {
      for (LinkId id : t.out_links(nic))
        if (t.link(id).link_class == LinkClass::Network) injection += t.link(id).bandwidth;
    }
    ng.injection_per_gpu = injection / group.node.gpus;
    ng.cpus_per_node = group.node.cpus;
    if (group.node.cpu) {
      const CpuSpec& cpu = *group.node.cpu;
      ng.cpu = cpu.name;
      ng.memory = fmt::format("{} x {}", cpu.memory_channels, cpu.memory_kind);
      ng.memory_peak = cpu.memory_peak();
      ng.memory_sustained = cpu.memory_sustained();
    }
    if (group.node.nics > 0) {
      ng.nic_transport = std::string(to_string(group.node.nic_transport));
      ng.nic_transport_overhead = group.node.nic_transport_overhead;
    }
    s.groups.push_back(ng);
  }
}

/// Devices by kind, and the physical NVSwitch chips.
void summarize_devices(const Cluster& c, TopologySummary& s) {
  const Topology& t = c.topology;
  std::map<DeviceKind, int> devices;
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    devices[t.device(d).kind] += 1;
    if (t.device(d).kind == DeviceKind::NvSwitch) s.nvswitch_chips += t.device(d).spec;
  }
  s.devices.assign(devices.begin(), devices.end());
}

/// Links by (class, kind, endpoint kinds, bandwidth), with their bandwidth per GPU.
void summarize_links(const Cluster& c, TopologySummary& s) {
  const Topology& t = c.topology;
  std::map<std::tuple<LinkClass, std::string, std::string, double>, LinkGroupSummary> groups;
  std::map<std::tuple<LinkClass, std::string, std::string, double>, std::set<DeviceId>> group_gpus;
  std::map<std::tuple<LinkClass, std::string, std::string, double>, std::set<int>> group_nodes;
  std::map<std::tuple<LinkClass, std::string, std::string, double>, double> gpu_endpoint_bandwidth;
  for (LinkId id = 0; id < t.num_links(); id += 2) {
    const Link& l = t.link(id);
    const Device* a = &t.device(t.link_source(id));
    const Device* b = &t.device(t.link_target(id));
    if (role_rank(*b) < role_rank(*a)) std::swap(a, b);
    const std::string between = role_name(*a) + "-" + role_name(*b);
    const auto key = std::make_tuple(l.link_class, t.link_kind_name(l), between, l.bandwidth);
    auto& g = groups[key];
    for (DeviceId end : {t.link_source(id), t.link_target(id)}) {
      const Device& dev = t.device(end);
      if (dev.kind == DeviceKind::Gpu) {
        group_gpus[key].insert(end);
        gpu_endpoint_bandwidth[key] += l.bandwidth;
      }
      if (dev.node >= 0) group_nodes[key].insert(dev.node);
    }
    g.kind = t.link_kind_name(l);
    g.link_class = l.link_class;
    g.between = between;
    g.links += 1;
    g.lanes += l.lanes;
    g.bandwidth_per_link = std::max(g.bandwidth_per_link, l.bandwidth);
    g.total_bandwidth += l.bandwidth;
  }
  // Per GPU: for links that end at GPUs, the bandwidth each such GPU has on them (both ends of
  // a GPU-GPU link count); for other links, the total shared by the GPUs of the nodes they
  // serve (all GPUs for switch-to-switch links).
  std::vector<int> gpus_in_node(c.nodes.size(), 0);
  for (std::size_t n = 0; n < c.nodes.size(); ++n) gpus_in_node[n] = static_cast<int>(c.nodes[n].gpus.size());
  for (auto& [key, g] : groups) {
    if (!group_gpus[key].empty()) {
      g.per_gpu = gpu_endpoint_bandwidth[key] / static_cast<double>(group_gpus[key].size());
    } else {
      int served = 0;
      for (int n : group_nodes[key]) served += gpus_in_node[static_cast<std::size_t>(n)];
      if (served == 0) served = s.gpus;
      g.per_gpu = served > 0 ? g.total_bandwidth / served : 0.0;
    }
    s.links.push_back(g);
  }
}

/// Bisection bandwidth: max-flow between the natural halves (of the nodes, else of the GPUs).
void summarize_bisection(const Cluster& c, TopologySummary& s) {
  const Topology& t = c.topology;
  std::vector<DeviceId> left, right;
  if (s.nodes > 1) {
    const int half = s.nodes / 2;
    for (DeviceId g : t.gpus()) (t.device(g).node < half ? left : right).push_back(g);
    s.halves = range_label("nodes", 0, half - 1) + " | " + range_label("nodes", half, s.nodes - 1);
  } else if (s.gpus > 1) {
    const int half = s.gpus / 2;
    for (int r = 0; r < s.gpus; ++r) (r < half ? left : right).push_back(t.gpus()[static_cast<std::size_t>(r)]);
    s.halves = range_label("GPUs", 0, half - 1) + " | " + range_label("GPUs", half, s.gpus - 1);
  }
  if (!left.empty() && !right.empty()) {
    s.bisection = t.max_flow(left, right);
    if (s.nodes == 1) s.bisection_scaleup = t.max_flow(left, right, 1U << static_cast<unsigned>(LinkClass::ScaleUp));
  }
}

/// The route from GPU 0 to the first GPU of each kind of position.
void summarize_positions(const Cluster& c, TopologySummary& s) {
  const Topology& t = c.topology;
  if (s.gpus > 1) {
    const DeviceId g0 = t.gpus().front();
    std::vector<std::string> seen;
    for (std::size_t r = 1; r < t.gpus().size(); ++r) {
      const DeviceId g = t.gpus()[r];
      std::string label = position_of(c, g0, g);
      if (std::find(seen.begin(), seen.end(), label) != seen.end()) continue;
      seen.push_back(label);
      const Route route = t.route(g0, g, 1);
      s.positions.push_back({label, static_cast<int>(r), t.name(g), route.path.type,
                             static_cast<int>(route.path.links.size()), route.path.latency, route.path.bandwidth,
                             route.ecmp_paths});
    }
  }
}

}  // namespace

TopologySummary summarize(const Cluster& c) {
  const Topology& t = c.topology;
  TopologySummary s;
  s.name = c.spec.name;
  s.nodes = static_cast<int>(c.nodes.size());
  s.gpus = static_cast<int>(t.gpus().size());
  summarize_fabric(c, s);
  summarize_groups(c, s);
  summarize_devices(c, s);
  summarize_links(c, s);
  summarize_bisection(c, s);
  summarize_positions(c, s);
  return s;
}

std::string render_text(const TopologySummary& s) {
  std::string out;
  out += fmt::format("cluster {}: {} node{}, {} GPU{}\n", s.name, s.nodes, s.nodes == 1 ? "" : "s", s.gpus,
                     s.gpus == 1 ? "" : "s");
  for (const auto& g : s.groups) {
    out += fmt::format("  {} x {}: {} x {} per node, {} NIC{}\n", g.count, g.node, g.gpus_per_node, g.gpu,
                       g.nics_per_node, g.nics_per_node == 1 ? "" : "s");
    if (!g.cpu.empty()) {
      out += fmt::format("    host: {} x {} per node; memory per socket {}, {} peak, {} sustained (reads + writes)\n",
                         g.cpus_per_node, g.cpu, g.memory, support::format_bandwidth(g.memory_peak),
                         support::format_bandwidth(g.memory_sustained));
    }
    if (!g.nic_transport.empty()) {
      out += fmt::format("    NIC transport: {}, +{} per message\n", g.nic_transport, support::format_time(g.nic_transport_overhead));
    }
  }
  out += fmt::format("  fabric: {}\n", s.fabric);

  out += "\ndevices\n";
  support::TextTable devices({"kind", "count", ""}, {false, true, false});
  for (const auto& [kind, count] : s.devices) {
    std::string note;
    if (kind == DeviceKind::NvSwitch) note = fmt::format("one logical switch per node; {} physical chips", s.nvswitch_chips);
    devices.add_row({std::string(to_string(kind)), std::to_string(count), note});
  }
  out += devices.render();

  out += "\nlinks (bandwidth per direction)\n";
  support::TextTable links({"kind", "class", "between", "links", "lanes", "per link", "total", "per GPU"},
                           {false, false, false, true, true, true, true, true});
  for (const auto& l : s.links) {
    links.add_row({l.kind, std::string(to_string(l.link_class)), l.between, std::to_string(l.links),
                   std::to_string(l.lanes), support::format_bandwidth(l.bandwidth_per_link), support::format_bandwidth(l.total_bandwidth),
                   support::format_bandwidth(l.per_gpu)});
  }
  out += links.render();

  out += "\ninjection bandwidth into the fabric, per GPU (per direction)\n";
  support::TextTable injection({"node", "per GPU", "NICs"}, {false, true, true});
  for (const auto& g : s.groups) {
    injection.add_row({g.node, s.fabric == "none" ? std::string("no fabric") : support::format_bandwidth(g.injection_per_gpu),
                       std::to_string(g.nics_per_node)});
  }
  out += injection.render();
  if (s.pods > 1) {
    out += fmt::format("\nbetween pods, per GPU (per direction): {}  [{} pods of {} nodes; spine-core links of a full pod ÷ its GPUs]\n",
                       support::format_bandwidth(s.between_pods_per_gpu), s.pods, s.nodes_per_pod);
  }

  if (!s.halves.empty()) {
    out += fmt::format("\nbisection bandwidth (max-flow, per direction): {}  [{}]\n", support::format_bandwidth(s.bisection), s.halves);
    if (s.nodes == 1) out += fmt::format("  over scale-up links only: {}\n", support::format_bandwidth(s.bisection_scaleup));
  }

  if (!s.positions.empty()) {
    out += "\npaths from GPU 0\n";
    support::TextTable paths({"position", "rank", "device", "type", "hops", "latency", "bottleneck", "ECMP"},
                             {false, true, false, false, true, true, true, true});
    for (const auto& p : s.positions) {
      paths.add_row({p.position, std::to_string(p.rank), p.device, std::string(to_string(p.type)), std::to_string(p.hops),
                     support::format_time(p.latency), support::format_bandwidth(p.bandwidth), fmt::format("{}", p.ecmp_paths)});
    }
    out += paths.render();
  }
  return out;
}

nlohmann::json to_json(const TopologySummary& s) {
  using nlohmann::json;
  json j;
  j["name"] = s.name;
  j["nodes"] = s.nodes;
  j["gpus"] = s.gpus;
  j["fabric"] = s.fabric;
  j["node_groups"] = json::array();
  for (const auto& g : s.groups) {
    j["node_groups"].push_back({{"node", g.node}, {"count", g.count}, {"gpu", g.gpu}, {"gpus_per_node", g.gpus_per_node},
                                {"nics_per_node", g.nics_per_node}, {"cpus_per_node", g.cpus_per_node},
                                {"cpu", g.cpu.empty() ? json(nullptr) : json(g.cpu)},
                                {"memory", g.memory.empty() ? json(nullptr) : json(g.memory)},
                                {"memory_peak_Bps", g.memory_peak}, {"memory_sustained_Bps", g.memory_sustained},
                                {"nic_transport", g.nic_transport.empty() ? json(nullptr) : json(g.nic_transport)},
                                {"nic_transport_overhead_s", std::round(g.nic_transport_overhead * 1e12) / 1e12},
                                {"injection_per_gpu_Bps", s.fabric == "none" ? json(nullptr) : json(g.injection_per_gpu)}});
  }
  j["devices"] = json::object();
  for (const auto& [kind, count] : s.devices) j["devices"][std::string(to_string(kind))] = count;
  j["nvswitch_chips"] = s.nvswitch_chips;
  j["links"] = json::array();
  for (const auto& l : s.links) {
    j["links"].push_back({{"kind", l.kind}, {"class", std::string(to_string(l.link_class))}, {"between", l.between},
                          {"links", l.links}, {"lanes", l.lanes}, {"bandwidth_per_link_Bps", l.bandwidth_per_link},
                          {"total_bandwidth_Bps", l.total_bandwidth}, {"per_gpu_Bps", l.per_gpu}});
  }
  j["bisection_Bps"] = s.bisection;
  if (s.nodes == 1) j["bisection_scaleup_Bps"] = s.bisection_scaleup;
  j["halves"] = s.halves;
  if (s.pods > 1) {
    j["pods"] = s.pods;
    j["nodes_per_pod"] = s.nodes_per_pod;
    j["between_pods_per_gpu_Bps"] = s.between_pods_per_gpu;
  }
  j["paths_from_gpu0"] = json::array();
  for (const auto& p : s.positions) {
    j["paths_from_gpu0"].push_back({{"position", p.position}, {"rank", p.rank}, {"device", p.device},
                                    {"type", std::string(to_string(p.type))}, {"hops", p.hops},
                                    {"latency_s", std::round(p.latency * 1e12) / 1e12},  // whole picoseconds
                                    {"bandwidth_Bps", p.bandwidth},
                                    {"ecmp_paths", static_cast<std::uint64_t>(std::llround(p.ecmp_paths))}});
  }
  return j;
}

void write_dot(const Cluster& c, std::ostream& out) {
  const Topology& t = c.topology;
  out << "graph \"" << c.spec.name << "\" {\n  graph [rankdir=TB];\n  node [fontsize=10];\n";
  const auto shape = [](DeviceKind k) {
    switch (k) {
      case DeviceKind::Gpu: return "box";
      case DeviceKind::NvSwitch: return "hexagon";
      case DeviceKind::PcieSwitch: return "diamond";
      case DeviceKind::Cpu: return "ellipse";
      case DeviceKind::Nic: return "cds";
      case DeviceKind::NetworkSwitch: return "octagon";
      case DeviceKind::Memory: return "cylinder";
    }
    return "box";
  };
  for (std::size_t n = 0; n < c.nodes.size(); ++n) {
    out << "  subgraph cluster_node" << n << " {\n    label=\"node" << n << "\";\n";
    for (DeviceId d = 0; d < t.num_devices(); ++d) {
      if (t.device(d).node != static_cast<int>(n)) continue;
      out << "    d" << d << " [label=\"" << t.name(d) << "\", shape=" << shape(t.device(d).kind) << "];\n";
    }
    out << "  }\n";
  }
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    if (t.device(d).node >= 0) continue;
    out << "  d" << d << " [label=\"" << t.name(d) << "\", shape=" << shape(t.device(d).kind) << "];\n";
  }
  for (LinkId id = 0; id < t.num_links(); id += 2) {
    const Link& l = t.link(id);
    out << "  d" << t.link_source(id) << " -- d" << t.link_target(id) << " [label=\"" << t.link_kind_name(l) << " "
        << support::format_bandwidth(l.bandwidth) << "\"];\n";
  }
  out << "}\n";
}

}  // namespace ccsim::models
