#include "models/hardware/topology.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <tuple>

#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <fmt/format.h>

namespace ccsim::models {
namespace {

/// Route cost, compared lexicographically: latency (integer picoseconds, so equal-cost
/// paths compare exactly), then the sum of link-class ranks, then hops.
struct Cost {
  std::int64_t latency_ps = 0;
  std::int64_t class_rank = 0;
  std::int64_t hops = 0;
  friend bool operator<(const Cost& a, const Cost& b) {
    return std::tie(a.latency_ps, a.class_rank, a.hops) < std::tie(b.latency_ps, b.class_rank, b.hops);
  }
  friend bool operator==(const Cost& a, const Cost& b) = default;
  friend Cost operator+(const Cost& a, const Cost& b) {
    return {a.latency_ps + b.latency_ps, a.class_rank + b.class_rank, a.hops + b.hops};
  }
};

constexpr std::int64_t kInfinite = std::numeric_limits<std::int64_t>::max() / 4;
constexpr Cost kInfiniteCost{kInfinite, kInfinite, kInfinite};

Cost cost_of(const Link& l) {
  return {static_cast<std::int64_t>(std::llround(l.latency * 1e12)), static_cast<std::int64_t>(l.link_class), 1};
}

/// The transit rules of routing and max-flow (see topology.hpp). `is_source`/`is_sink`
/// say whether a device is an endpoint; `source_node`/`sink_node` whether a node holds one.
template <typename IsSource, typename IsSink, typename SourceNode, typename SinkNode>
bool transit_allowed(const Topology& t, LinkId id, unsigned classes, const IsSource& is_source,
                     const IsSink& is_sink, const SourceNode& source_node, const SinkNode& sink_node) {
  const Link& l = t.link(id);
  if (l.failed) return false;
  if ((classes & (1U << static_cast<unsigned>(l.link_class))) == 0) return false;
  const DeviceId u = t.link_source(id);
  const DeviceId v = t.link_target(id);
  const Device& du = t.device(u);
  const Device& dv = t.device(v);
  if (du.kind == DeviceKind::Gpu && !is_source(u)) return false;
  if (dv.kind == DeviceKind::Gpu && !is_sink(v)) return false;
  if (l.link_class != LinkClass::Network) {
    if (du.kind == DeviceKind::Nic && !sink_node(du.node)) return false;   // leaving the network into a host
    if (dv.kind == DeviceKind::Nic && !source_node(dv.node)) return false; // entering the network from a host
  }
  return true;
}

/// Edge predicate for a route from src to dst.
struct RouteFilter {
  const Topology* topology = nullptr;
  DeviceId src = kNoDevice;
  DeviceId dst = kNoDevice;
  bool operator()(const Topology::Graph::edge_descriptor& e) const { return allows(topology->graph()[e]); }
  bool allows(LinkId id) const {
    const int src_node = topology->device(src).node;
    const int dst_node = topology->device(dst).node;
    return transit_allowed(
        *topology, id, 0xFU, [&](DeviceId d) { return d == src; }, [&](DeviceId d) { return d == dst; },
        [&](int n) { return n == src_node; }, [&](int n) { return n == dst_node; });
  }
};

/// Stops Dijkstra once `target` is settled: every vertex closer than the target is final then,
/// which is all the equal-cost path enumeration needs (edge costs are positive).
struct StopAt : boost::default_dijkstra_visitor {
  struct Reached {};
  DeviceId target = kNoDevice;
  template <typename Vertex, typename Graph>
  void examine_vertex(Vertex u, const Graph&) const {
    if (static_cast<DeviceId>(u) == target) throw Reached{};
  }
};

std::vector<Cost> shortest_costs(const Topology& t, DeviceId from, const RouteFilter& filter, DeviceId target) {
  using Graph = Topology::Graph;
  boost::filtered_graph<Graph, RouteFilter> fg(t.graph(), filter);
  std::vector<Cost> dist(t.num_devices(), kInfiniteCost);
  const auto weight = boost::make_function_property_map<Graph::edge_descriptor, Cost>(
      [&t](const Graph::edge_descriptor& e) { return cost_of(t.link(t.graph()[e])); });
  StopAt stop;
  stop.target = target;
  try {
    boost::dijkstra_shortest_paths(
        fg, from,
        boost::weight_map(weight)
            .distance_map(boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, fg)))
            .distance_compare(std::less<Cost>())
            .distance_combine(std::plus<Cost>())
            .distance_inf(kInfiniteCost)
            .distance_zero(Cost{})
            .visitor(stop));
  } catch (const StopAt::Reached&) {
  }
  // Vertices discovered but not settled carry tentative distances; keep only settled ones
  // (strictly closer than the target) and the target itself.
  if (target != kNoDevice && dist[target].latency_ps < kInfinite) {
    const Cost limit = dist[target];
    for (auto& d : dist)
      if (limit < d) d = kInfiniteCost;
  }
  return dist;
}

}  // namespace

DeviceId Topology::add_device(const Device& device) {
  const DeviceId id = static_cast<DeviceId>(boost::add_vertex(device, graph_));
  if (device.kind == DeviceKind::Gpu) gpus_.push_back(id);
  while (num_nodes_ < device.node + 1) {
    node_class_.push_back(static_cast<int>(representative_.size()));
    perturbed_.push_back(0);
    representative_.push_back(num_nodes_++);
  }
  return id;
}

std::uint16_t Topology::add_gpu_model(const std::string& name) {
  const auto it = std::find(gpu_models_.begin(), gpu_models_.end(), name);
  if (it != gpu_models_.end()) return static_cast<std::uint16_t>(it - gpu_models_.begin());
  gpu_models_.push_back(name);
  return static_cast<std::uint16_t>(gpu_models_.size() - 1);
}

void Topology::set_bandwidth(LinkId id, double bytes_per_second) {
  if (id >= links_.size()) throw std::invalid_argument("set_bandwidth: no such link");
  if (!(bytes_per_second > 0) || !std::isfinite(bytes_per_second)) {
    throw std::invalid_argument("set_bandwidth: a bandwidth above 0 and finite");
  }
  links_[id].bandwidth = bytes_per_second;
  const int a = device(link_source(id)).node;
  const int b = device(link_target(id)).node;
  if (a >= 0) split_node_class(a);
  if (b >= 0 && b != a) split_node_class(b);
}

void Topology::fail_link(LinkId id) {
  if (id >= links_.size()) throw std::invalid_argument("fail_link: no such link");
  links_[id].failed = true;
  const int a = device(link_source(id)).node;
  const int b = device(link_target(id)).node;
  if (a >= 0) split_node_class(a);
  if (b >= 0 && b != a) split_node_class(b);
}

void Topology::restrict_gpus(std::vector<DeviceId> gpus) {
  if (gpus.empty()) throw std::invalid_argument("restrict_gpus: no GPUs");
  std::vector<char> seen(num_devices(), 0);
  for (DeviceId g : gpus) {
    if (g >= num_devices() || device(g).kind != DeviceKind::Gpu) throw std::invalid_argument(fmt::format("restrict_gpus: device {} is not a GPU", g));
    if (seen[g] != 0) throw std::invalid_argument(fmt::format("restrict_gpus: GPU {} listed twice", name(g)));
    seen[g] = 1;
  }
  gpus_ = std::move(gpus);
}

int Topology::class_representative(int cls) const {
  if (cls < 0 || cls >= num_node_classes() || representative_[static_cast<std::size_t>(cls)] < 0) {
    throw std::out_of_range(fmt::format("class_representative: no node class {}", cls));
  }
  return representative_[static_cast<std::size_t>(cls)];
}

void Topology::set_node_classes(const std::vector<int>& classes) {
  if (classes.size() != static_cast<std::size_t>(num_nodes_)) {
    throw std::invalid_argument(fmt::format("set_node_classes: {} classes for {} nodes", classes.size(), num_nodes_));
  }
  const int k = classes.empty() ? 0 : *std::max_element(classes.begin(), classes.end()) + 1;
  std::vector<int> rep(static_cast<std::size_t>(std::max(k, 0)), -1);
  for (int n = num_nodes_; n-- > 0;) {
    const int c = classes[static_cast<std::size_t>(n)];
    if (c < 0) throw std::invalid_argument(fmt::format("set_node_classes: class {} of node {}", c, n));
    rep[static_cast<std::size_t>(c)] = n;
  }
  if (std::find(rep.begin(), rep.end(), -1) != rep.end()) throw std::invalid_argument("set_node_classes: an unused class id");
  node_class_ = classes;
  representative_ = std::move(rep);
}

int Topology::split_node_class(int node) {
  const int old = node_class_.at(static_cast<std::size_t>(node));
  const int fresh = num_node_classes();
  node_class_[static_cast<std::size_t>(node)] = fresh;
  perturbed_[static_cast<std::size_t>(node)] = 1;
  representative_.push_back(node);
  if (representative_[static_cast<std::size_t>(old)] == node) {
    const auto next = std::find(node_class_.begin(), node_class_.end(), old);
    representative_[static_cast<std::size_t>(old)] = next == node_class_.end() ? -1 : static_cast<int>(next - node_class_.begin());
  }
  return fresh;
}

LinkId Topology::add_link(DeviceId a, DeviceId b, const LinkAttrs& attrs) {
  if (a >= num_devices() || b >= num_devices() || a == b) {
    throw std::invalid_argument(fmt::format("add_link: bad endpoints {} and {}", a, b));
  }
  if (!(attrs.bandwidth > 0.0) || !std::isfinite(attrs.bandwidth)) {
    throw std::invalid_argument(fmt::format("add_link {} <-> {}: bandwidth must be positive, got {}", name(a), name(b), attrs.bandwidth));
  }
  if (!(attrs.latency >= 0.0) || !std::isfinite(attrs.latency)) {
    throw std::invalid_argument(fmt::format("add_link {} <-> {}: latency must be >= 0, got {}", name(a), name(b), attrs.latency));
  }
  auto kind_it = std::find(link_kinds_.begin(), link_kinds_.end(), attrs.kind);
  if (kind_it == link_kinds_.end()) {
    kind_it = link_kinds_.insert(link_kinds_.end(), attrs.kind);
    link_kind_lineage_.push_back(attrs.lineage);
  }
  Link l;
  l.link_class = attrs.link_class;
  l.kind = static_cast<std::uint16_t>(kind_it - link_kinds_.begin());
  l.lanes = static_cast<std::uint16_t>(attrs.lanes);
  l.bandwidth = attrs.bandwidth;
  l.latency = attrs.latency;
  const LinkId forward = static_cast<LinkId>(links_.size());
  links_.push_back(l);
  links_.push_back(l);
  ends_.emplace_back(a, b);
  ends_.emplace_back(b, a);
  boost::add_edge(a, b, forward, graph_);
  boost::add_edge(b, a, forward + 1, graph_);
  return forward;
}

std::vector<LinkId> Topology::out_links(DeviceId d) const {
  std::vector<LinkId> out;
  for (const auto& e : boost::make_iterator_range(boost::out_edges(d, graph_)))
    if (!links_[graph_[e]].failed) out.push_back(graph_[e]);
  return out;
}

std::string Topology::name(DeviceId id) const {
  const Device& d = device(id);
  switch (d.kind) {
    case DeviceKind::Gpu: return fmt::format("node{}/gpu{}", d.node, d.local);
    case DeviceKind::NvSwitch: return fmt::format("node{}/nvswitch", d.node);
    case DeviceKind::PcieSwitch: return fmt::format("node{}/pcie{}", d.node, d.local);
    case DeviceKind::Cpu: return fmt::format("node{}/cpu{}", d.node, d.local);
    case DeviceKind::Nic: return fmt::format("node{}/nic{}", d.node, d.local);
    case DeviceKind::NetworkSwitch: return fmt::format("{}{}", d.tier == 1 ? "leaf" : d.tier == 2 ? "spine" : "core", d.local);
    case DeviceKind::Memory: return fmt::format("node{}/mem{}", d.node, d.local);
  }
  return "?";
}

PathType Topology::classify(const std::vector<LinkId>& links) const {
  bool all_scaleup = true;
  int cpus = 0;
  int pcie_switches = 0;
  for (std::size_t i = 0; i < links.size(); ++i) {
    const Link& l = link(links[i]);
    if (l.link_class == LinkClass::Network) return PathType::Net;
    const bool to_memory = device(link_source(links[i])).kind == DeviceKind::Memory ||
                           device(link_target(links[i])).kind == DeviceKind::Memory;
    if (l.link_class == LinkClass::Host && !to_memory) return PathType::Sys;
    if (l.link_class != LinkClass::ScaleUp) all_scaleup = false;
    if (i + 1 < links.size()) {
      const DeviceKind k = device(link_target(links[i])).kind;
      cpus += k == DeviceKind::Cpu ? 1 : 0;
      pcie_switches += k == DeviceKind::PcieSwitch ? 1 : 0;
    }
  }
  if (cpus > 0) return PathType::Phb;
  if (all_scaleup) return PathType::Nvl;
  return pcie_switches <= 1 ? PathType::Pix : PathType::Pxb;
}

Path Topology::make_path(std::vector<LinkId> links) const {
  Path p;
  p.bandwidth = links.empty() ? 0.0 : std::numeric_limits<double>::infinity();
  for (LinkId id : links) {
    p.latency += link(id).latency;
    p.bandwidth = std::min(p.bandwidth, link(id).bandwidth);
  }
  p.type = classify(links);
  p.links = std::move(links);
  return p;
}

Route Topology::search(DeviceId src, DeviceId dst, std::size_t max_alternatives) const {
  const RouteFilter forward{this, src, dst};
  // Link costs are the same in both directions and the transit rules are symmetric under
  // reversal, so the cost from v to dst equals the cost of the reversed search from dst to v.
  const std::vector<Cost> from_src = shortest_costs(*this, src, forward, dst);
  const std::vector<Cost> to_dst = shortest_costs(*this, dst, RouteFilter{this, dst, src}, src);
  const Cost total = from_src[dst];
  if (total.latency_ps >= kInfinite) {
    throw std::runtime_error(fmt::format("no path from {} to {}", name(src), name(dst)));
  }
  const auto on_dag = [&](LinkId id) {
    const DeviceId u = link_source(id);
    const DeviceId v = link_target(id);
    return from_src[u].latency_ps < kInfinite && to_dst[v].latency_ps < kInfinite && forward.allows(id) &&
           from_src[u] + cost_of(link(id)) + to_dst[v] == total;
  };

  // Count equal-cost paths by dynamic programming over the shortest-path DAG.
  std::vector<DeviceId> order;
  for (DeviceId v = 0; v < num_devices(); ++v) {
    if (from_src[v].latency_ps < kInfinite && to_dst[v].latency_ps < kInfinite && from_src[v] + to_dst[v] == total) {
      order.push_back(v);
    }
  }
  std::sort(order.begin(), order.end(), [&](DeviceId a, DeviceId b) { return from_src[a] < from_src[b]; });
  std::vector<double> count(num_devices(), 0.0);
  count[src] = 1.0;
  for (DeviceId u : order) {
    if (u == dst) continue;
    for (const auto& e : boost::make_iterator_range(boost::out_edges(u, graph_))) {
      const LinkId id = graph_[e];
      if (on_dag(id)) count[link_target(id)] += count[u];
    }
  }

  Route route;
  route.ecmp_paths = count[dst];
  // List up to max_alternatives paths by depth-first search in link order.
  std::vector<LinkId> stack;
  const std::size_t wanted = std::max<std::size_t>(1, max_alternatives);
  std::function<void(DeviceId)> walk = [&](DeviceId u) {
    if (route.alternatives.size() >= wanted) return;
    if (u == dst) {
      route.alternatives.push_back(make_path(stack));
      return;
    }
    for (const auto& e : boost::make_iterator_range(boost::out_edges(u, graph_))) {
      const LinkId id = graph_[e];
      if (!on_dag(id)) continue;
      stack.push_back(id);
      walk(link_target(id));
      stack.pop_back();
      if (route.alternatives.size() >= wanted) return;
    }
  };
  walk(src);
  route.path = route.alternatives.front();
  return route;
}

Route Topology::route(DeviceId src, DeviceId dst, std::size_t max_alternatives) const {
  if (src >= num_devices() || dst >= num_devices() || src == dst) {
    throw std::invalid_argument(fmt::format("route: bad endpoints {} and {}", src, dst));
  }
  const Device& s = device(src);
  const Device& d = device(dst);
  const bool gpus = s.kind == DeviceKind::Gpu && d.kind == DeviceKind::Gpu;

  // Two GPUs joined by a direct scale-up link always use it (NVLink bridge, xGMI).
  if (gpus) {
    for (LinkId id : out_links(src)) {
      if (link_target(id) == dst && link(id).link_class == LinkClass::ScaleUp) return search(src, dst, max_alternatives);
    }
  }
  // Waypoints. A GPU without PCIe peer-to-peer stages through host memory (NCCL's SHM
  // transport): within a node, the memory of the receiving GPU's socket, where NCCL's receiver
  // allocates the buffer. Traffic between nodes leaves through the source GPU's own NIC and
  // arrives through the destination GPU's own NIC (one NIC per rank, as NCCL assigns without
  // PXN); without GPUDirect RDMA (no peer-to-peer, a verbs/socket NIC transport, or a GPU too
  // far from its NIC for NCCL_NET_GDR_LEVEL / a send with NCCL_NET_GDR_READ off: Device::gdr_send,
  // gdr_recv) it bounces through the memory of the GPU's socket on that side.
  std::vector<DeviceId> stops{src};
  const auto stop = [&stops](DeviceId v) {
    if (v != kNoDevice && v != stops.back()) stops.push_back(v);
  };
  const auto memory_of = [this](DeviceId cpu) {
    if (cpu == kNoDevice) return kNoDevice;
    return device(cpu).memory != kNoDevice ? device(cpu).memory : cpu;
  };
  const auto bounces = [this](DeviceId nic) { return nic != kNoDevice && device(nic).host_bounce; };
  const bool staged_src = s.kind == DeviceKind::Gpu && !s.p2p;
  const bool staged_dst = d.kind == DeviceKind::Gpu && !d.p2p;
  const bool other_node = gpus && s.node != d.node;
  if (gpus && !other_node) {
    if (staged_src || staged_dst) stop(memory_of(d.cpu));
  } else {
    // A GPU <-> NIC leg of a bouncing NIC (the router composes network routes from such legs).
    const bool to_bouncing_nic =
        s.kind == DeviceKind::Gpu && d.kind == DeviceKind::Nic && (d.host_bounce || (dst == s.nic && !s.gdr_send));
    const bool from_bouncing_nic =
        s.kind == DeviceKind::Nic && d.kind == DeviceKind::Gpu && (s.host_bounce || (src == d.nic && !d.gdr_recv));
    if (staged_src || to_bouncing_nic || (other_node && (bounces(s.nic) || !s.gdr_send))) stop(memory_of(s.cpu));
    if (other_node) {
      stop(s.nic);
      stop(d.nic);
    }
    if (staged_dst || from_bouncing_nic || (other_node && (bounces(d.nic) || !d.gdr_recv))) stop(memory_of(d.cpu));
  }
  stop(dst);
  if (stops.size() == 2) return search(src, dst, max_alternatives);

  std::vector<LinkId> links;
  double ecmp = 1.0;
  for (std::size_t i = 0; i + 1 < stops.size(); ++i) {
    const Route leg = search(stops[i], stops[i + 1], 1);
    links.insert(links.end(), leg.path.links.begin(), leg.path.links.end());
    ecmp *= leg.ecmp_paths;
  }
  Route r;
  r.path = make_path(std::move(links));
  r.alternatives = {r.path};
  r.ecmp_paths = ecmp;
  return r;
}

double Topology::max_flow(std::span<const DeviceId> sources, std::span<const DeviceId> sinks, unsigned classes) const {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = num_devices();
  std::vector<char> is_source(n, 0), is_sink(n, 0);
  std::vector<char> source_node(static_cast<std::size_t>(num_nodes_) + 1, 0), sink_node(source_node.size(), 0);
  const auto node_slot = [](int node) { return static_cast<std::size_t>(node + 1); };  // -1 (fabric) -> 0
  for (DeviceId s : sources) {
    is_source.at(s) = 1;
    source_node[node_slot(device(s).node)] = 1;
  }
  for (DeviceId t : sinks) {
    if (is_source.at(t)) throw std::invalid_argument("max_flow: sources and sinks overlap");
    is_sink[t] = 1;
    sink_node[node_slot(device(t).node)] = 1;
  }
  if (sources.empty() || sinks.empty()) return 0.0;

  FlowGraph g(n + 2);
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse_edge = boost::get(boost::edge_reverse, g);
  // Boost's push-relabel wants every arc paired with a zero-capacity reverse arc, so each
  // direction of a link becomes its own arc + residual pair.
  const auto add_arc = [&](std::size_t a, std::size_t b, std::int64_t cap) {
    if (cap <= 0) return;
    const auto e1 = boost::add_edge(a, b, g).first;
    const auto e2 = boost::add_edge(b, a, g).first;
    capacity[e1] = cap;
    capacity[e2] = 0;
    reverse_edge[e1] = e2;
    reverse_edge[e2] = e1;
  };
  const auto allowed = [&](LinkId id) {
    return transit_allowed(
        *this, id, classes, [&](DeviceId d) { return is_source[d] != 0; }, [&](DeviceId d) { return is_sink[d] != 0; },
        [&](int node) { return source_node[node_slot(node)] != 0; }, [&](int node) { return sink_node[node_slot(node)] != 0; });
  };
  const auto rounded = [](double bw) { return static_cast<std::int64_t>(std::llround(bw)); };
  // What each device can send and receive at most: the super-source and super-sink arcs carry
  // exactly that, which cannot limit the flow. (A global "infinite" capacity on every such arc
  // would overflow int64 in the solver's excess sums at 8,192 sources.)
  std::vector<std::int64_t> out_capacity(n, 0), in_capacity(n, 0);
  for (LinkId id = 0; id < links_.size(); id += 2) {
    const std::int64_t ab = allowed(id) ? rounded(link(id).bandwidth) : 0;
    const std::int64_t ba = allowed(id + 1) ? rounded(link(id + 1).bandwidth) : 0;
    add_arc(link_source(id), link_target(id), ab);
    add_arc(link_target(id), link_source(id), ba);
    out_capacity[link_source(id)] += ab;
    in_capacity[link_target(id)] += ab;
    out_capacity[link_target(id)] += ba;
    in_capacity[link_source(id)] += ba;
  }
  const std::size_t super_source = n;
  const std::size_t super_sink = n + 1;
  for (DeviceId s : sources) add_arc(super_source, s, out_capacity[s]);
  for (DeviceId t : sinks) add_arc(t, super_sink, in_capacity[t]);
  return static_cast<double>(boost::push_relabel_max_flow(g, super_source, super_sink));
}

}  // namespace ccsim::models
