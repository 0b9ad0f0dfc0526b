#include "models/hardware/topology_summary.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <cmath>
#include <limits>
#include <stdexcept>
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

/// "gpu-pcie-switch": the link's end roles, closest to the GPU first (as the links table).
std::string between_label(const Topology& t, LinkId id) {
  const Device* a = &t.device(t.link_source(id));
  const Device* b = &t.device(t.link_target(id));
  if (role_rank(*b) < role_rank(*a)) std::swap(a, b);
  return role_name(*a) + "-" + role_name(*b);
}

/// "1 GPU each" / "shared by 2 GPUs".
std::string sharing(int gpus) { return gpus == 1 ? "1 GPU each" : fmt::format("shared by {} GPUs", gpus); }

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

InjectionLimit injection_limit(const Cluster& c, std::size_t group, std::span<const double> efficiency) {
  const Topology& t = c.topology;
  InjectionLimit out;
  const auto first = std::find(c.node_group.begin(), c.node_group.end(), static_cast<int>(group));
  if (first == c.node_group.end()) return out;
  const NodeDevices& node = c.nodes[static_cast<std::size_t>(first - c.node_group.begin())];
  const auto eff = [&](const Link& l) { return l.kind < efficiency.size() ? efficiency[l.kind] : 1.0; };
  // A NIC's network ports as one link (a NIC with two ports to the fabric has their sum).
  const auto port = [&](DeviceId nic) {
    InjectionLink p;
    p.nic_port = true;
    p.bandwidth = 0;
    for (LinkId id : t.out_links(nic)) {
      const Link& l = t.link(id);
      if (l.link_class != LinkClass::Network) continue;
      if (p.kind.empty()) {
        p.kind = t.link_kind_name(l);
        p.between = between_label(t, id);
        p.efficiency = eff(l);
      }
      p.bandwidth += l.bandwidth;
    }
    return p;
  };
  double line = 0;
  for (DeviceId nic : node.nics) line += port(nic).bandwidth;
  out.line_rate_per_gpu = node.gpus.empty() ? 0.0 : line / static_cast<double>(node.gpus.size());
  if (line <= 0) return out;

  // Each GPU's way: its route to its own NIC, then that NIC's ports.
  std::vector<std::pair<DeviceId, std::vector<LinkId>>> ways;
  std::map<LinkId, int> crossing;
  std::map<DeviceId, int> nic_users;
  for (DeviceId g : node.gpus) {
    const DeviceId nic = t.device(g).nic;
    if (nic == kNoDevice) continue;
    std::vector<LinkId> links;
    try {
      links = t.route(g, nic, 1).path.links;
    } catch (const std::runtime_error&) {
      continue;  // a what-if cut the GPU off its NIC: it injects nothing
    }
    for (LinkId id : links) crossing[id] += 1;
    nic_users[nic] += 1;
    ways.emplace_back(nic, std::move(links));
  }
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [nic, links] : ways) {
    std::vector<InjectionLink> on_way;
    for (LinkId id : links) {
      const Link& l = t.link(id);
      on_way.push_back({t.link_kind_name(l), between_label(t, id), l.bandwidth, eff(l), crossing[id], false});
    }
    InjectionLink p = port(nic);
    if (p.bandwidth <= 0) continue;
    p.gpus = nic_users[nic];
    on_way.push_back(p);
    double least = std::numeric_limits<double>::infinity();
    for (const auto& l : on_way) least = std::min(least, l.per_gpu());
    if (!(least < best * (1 - 1e-9))) continue;
    best = least;
    out.binding.clear();
    for (const auto& l : on_way) {
      if (l.per_gpu() > least * (1 + 1e-9)) continue;
      // One entry per (kind, between): a route crossing two alike links names them once.
      const bool seen = std::any_of(out.binding.begin(), out.binding.end(),
                                    [&](const InjectionLink& b) { return b.kind == l.kind && b.between == l.between; });
      if (!seen) out.binding.push_back(l);
    }
  }
  if (std::isfinite(best)) {
    out.per_gpu = best;
    out.nic_binds = std::any_of(out.binding.begin(), out.binding.end(), [](const InjectionLink& l) { return l.nic_port; });
  }
  return out;
}

std::string describe_binding(const InjectionLimit& limit) {
  if (limit.binding.empty()) return "no GPU reaches a NIC";
  std::string out;
  // Grouped by kind: "pcie-gen5 (gpu-pcie-switch and nic-pcie-switch links: ...)".
  std::vector<std::string> kinds;
  for (const auto& l : limit.binding)
    if (std::find(kinds.begin(), kinds.end(), l.kind) == kinds.end()) kinds.push_back(l.kind);
  for (const std::string& kind : kinds) {
    std::vector<const InjectionLink*> of;
    for (const auto& l : limit.binding)
      if (l.kind == kind) of.push_back(&l);
    const InjectionLink& l = *of.front();
    const std::string figure = l.efficiency == 1.0
                                   ? support::format_bandwidth(l.bandwidth)
                                   : fmt::format("{} credited of {}", support::format_bandwidth(l.bandwidth * l.efficiency),
                                                 support::format_bandwidth(l.bandwidth));
    if (!out.empty()) out += " and ";
    if (l.nic_port) {
      out += fmt::format("the NIC line rate ({} {} port: {} per NIC, {})", kind, l.between, figure, sharing(l.gpus));
      continue;
    }
    std::string betweens;
    for (std::size_t i = 0; i < of.size(); ++i) betweens += (i == 0 ? "" : i + 1 == of.size() ? " and " : ", ") + of[i]->between;
    out += fmt::format("{} ({} link{}: {} per link, {})", kind, betweens, of.size() == 1 ? "" : "s", figure, sharing(l.gpus));
  }
  return out;
}

TopologySummary summarize(const Cluster& c, std::span<const double> efficiency, const std::string& calibration) {
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
  s.calibration = calibration;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    s.groups[g].raw = injection_limit(c, g);
    s.groups[g].credited = efficiency.empty() ? s.groups[g].raw : injection_limit(c, g, efficiency);
  }
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
  const std::string credited_header = s.calibration.empty() ? std::string("credited") : "credited (" + s.calibration + ")";
  support::TextTable injection({"node", "NIC line rate", "NICs", "reachable", credited_header}, {false, true, true, true, true});
  const auto reach = [&](const InjectionLimit& l) {
    return s.fabric == "none" || l.per_gpu <= 0 ? std::string("-") : support::format_bandwidth(l.per_gpu);
  };
  for (const auto& g : s.groups) {
    injection.add_row({g.node, s.fabric == "none" ? std::string("no fabric") : support::format_bandwidth(g.injection_per_gpu),
                       std::to_string(g.nics_per_node), reach(g.raw), reach(g.credited)});
  }
  out += injection.render();
  // What binds: the NIC's line rate, or a link between the GPU and its NIC (reachable on the
  // catalog's bandwidths, credited with the calibration's link efficiencies).
  if (s.fabric != "none") {
    for (const auto& g : s.groups) {
      if (g.raw.per_gpu <= 0) continue;
      const auto verdict = [&](const InjectionLimit& l) {
        return l.nic_binds ? describe_binding(l) + " binds"
                           : fmt::format("{} binds, below the NIC line rate ({})", describe_binding(l),
                                         support::format_bandwidth(l.line_rate_per_gpu));
      };
      out += fmt::format("  {}, reachable: {}\n", g.node, verdict(g.raw));
      if (!s.calibration.empty()) out += fmt::format("  {}, credited: {}\n", g.node, verdict(g.credited));
    }
  }
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

namespace {

/// An injection limit as JSON: bytes/s per GPU and the binding links (null per GPU when no GPU
/// reaches a NIC).
nlohmann::json limit_json(const InjectionLimit& l) {
  using nlohmann::json;
  json binding = json::array();
  for (const auto& b : l.binding) {
    binding.push_back({{"kind", b.kind}, {"between", b.between}, {"nic_port", b.nic_port}, {"bandwidth_Bps", b.bandwidth},
                       {"efficiency", b.efficiency}, {"gpus", b.gpus}, {"per_gpu_Bps", b.per_gpu()}});
  }
  return {{"per_gpu_Bps", l.per_gpu > 0 ? json(l.per_gpu) : json(nullptr)}, {"nic_binds", l.nic_binds}, {"binding", binding},
          {"note", l.binding.empty() ? json(nullptr) : json(describe_binding(l))}};
}

}  // namespace

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
                                {"injection_per_gpu_Bps", s.fabric == "none" ? json(nullptr) : json(g.injection_per_gpu)},
                                {"injection_limit", limit_json(g.raw)},
                                {"credited_injection_limit", limit_json(g.credited)}});
  }
  j["calibration"] = s.calibration.empty() ? json(nullptr) : json(s.calibration);
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
