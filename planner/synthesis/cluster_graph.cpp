#include <deque>
#include <fmt/format.h>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "planner/synthesis/synthesis_graph.hpp"
#include "support/input_error.hpp"

// synthesis_graph(): the synthesis graph of a placement on a cluster (synthesis_graph.hpp).

namespace ccsim::planner::synthesis {

using models::DeviceId;
using models::DeviceKind;
using models::LinkId;

namespace {

void check_reachable(const SynthesisGraph& g, bool forward) {
  // Every rank must reach rank 0 and be reached from it (strong connectivity among ranks).
  std::vector<std::vector<int>> next(static_cast<std::size_t>(g.vertices()));
  for (const SynthesisArc& a : g.arcs) next[static_cast<std::size_t>(forward ? a.from : a.to)].push_back(forward ? a.to : a.from);
  std::vector<char> seen(next.size(), 0);
  std::deque<int> queue{0};
  seen[0] = 1;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    for (int v : next[static_cast<std::size_t>(u)]) {
      if (!seen[static_cast<std::size_t>(v)]) {
        seen[static_cast<std::size_t>(v)] = 1;
        queue.push_back(v);
      }
    }
  }
  for (int r = 1; r < g.compute; ++r) {
    if (seen[static_cast<std::size_t>(r)]) continue;
    throw support::InputError({"<command line>", 0, 0}, "--ranks", "ranks that reach each other over links that are up",
                              forward ? fmt::format("rank {} ({}) cannot be reached from rank 0 ({})", r, g.name[static_cast<std::size_t>(r)], g.name[0])
                                      : fmt::format("rank {} ({}) cannot reach rank 0 ({})", r, g.name[static_cast<std::size_t>(r)], g.name[0]),
                              "a failed link or a node without a NIC on the fabric disconnects the group");
  }
}

}  // namespace

SynthesisGraph synthesis_graph(const models::Cluster& cluster, models::Router& router, const std::vector<DeviceId>& gpus) {
  const models::Topology& t = cluster.topology;
  if (gpus.size() < 2) {
    throw support::InputError({"<command line>", 0, 0}, "--ranks", "at least 2 ranks to synthesize a collective for", fmt::format("{}", gpus.size()));
  }
  SynthesisGraph g;
  std::unordered_map<DeviceId, int> vertex;
  for (DeviceId d : gpus) {
    if (d >= t.num_devices() || t.device(d).kind != DeviceKind::Gpu) throw std::invalid_argument("synthesis_graph: not a GPU");
    if (!vertex.emplace(d, g.vertices()).second) {
      throw support::InputError({"<command line>", 0, 0}, "--ranks", "distinct GPUs", fmt::format("{} listed twice", t.name(d)));
    }
    g.add_vertex(t.name(d), d);
  }
  g.compute = g.vertices();
  const auto vertex_of = [&](DeviceId d) {
    const auto [it, fresh] = vertex.try_emplace(d, g.vertices());
    if (fresh) g.add_vertex(t.name(d), d);
    return it->second;
  };
  std::set<LinkId> raw;  // topology links that are arcs of their own
  std::map<int, std::vector<int>> ranks_of_node;
  for (int r = 0; r < g.compute; ++r) ranks_of_node[t.device(gpus[static_cast<std::size_t>(r)]).node].push_back(r);
  const auto route_of = [&](int a, int b) -> const models::Path& {
    try {
      return router.route(gpus[static_cast<std::size_t>(a)], gpus[static_cast<std::size_t>(b)]);
    } catch (const std::runtime_error& e) {
      throw support::InputError({"<command line>", 0, 0}, "--ranks", "ranks that reach each other over links that are up",
                                fmt::format("rank {} ({}) cannot reach rank {} ({}): {}", a, g.name[static_cast<std::size_t>(a)], b,
                                            g.name[static_cast<std::size_t>(b)], e.what()));
    }
  };
  // Inside each node: the links of the routes between the group's GPUs (NVLink, PCIe, the host),
  // and each route itself, which edge splitting prefers (synthesis_graph.hpp).
  for (const auto& [node, ranks] : ranks_of_node) {
    for (int a : ranks) {
      for (int b : ranks) {
        if (a == b) continue;
        const models::Path& p = route_of(a, b);
        raw.insert(p.links.begin(), p.links.end());
        g.routes[{a, b}] = p.links;
      }
    }
  }
  // Each GPU to and from its own NIC: the NIC is two vertices, its way out to the network (from
  // its GPUs) and its way in (to them), so no path turns around inside a NIC.
  // A group inside one node never uses the network (the router joins its GPUs inside the node).
  std::map<DeviceId, std::pair<int, int>> nic_vertices;  // NIC -> (egress, ingress)
  for (int r = 0; r < g.compute && ranks_of_node.size() > 1; ++r) {
    const DeviceId gpu = gpus[static_cast<std::size_t>(r)];
    const DeviceId nic = t.device(gpu).nic;
    if (nic == models::kNoDevice) continue;
    bool up = false;
    for (LinkId id : t.out_links(nic)) up = up || t.link(id).link_class == models::LinkClass::Network;
    if (!up) continue;  // a NIC without a network port that is up reaches nothing
    auto it = nic_vertices.find(nic);
    if (it == nic_vertices.end()) {
      const int out = g.add_vertex(t.name(nic) + ".out", nic);
      const int in = g.add_vertex(t.name(nic) + ".in", nic);
      it = nic_vertices.emplace(nic, std::pair<int, int>{out, in}).first;
    }
    models::Path to_nic, from_nic;
    try {
      to_nic = router.route(gpu, nic);
      from_nic = router.route(nic, gpu);
    } catch (const std::runtime_error& e) {
      throw support::InputError({"<command line>", 0, 0}, "--ranks", "ranks that reach each other over links that are up",
                                fmt::format("rank {} ({}) cannot reach its NIC {}: {}", r, g.name[static_cast<std::size_t>(r)], t.name(nic), e.what()));
    }
    g.add_arc(r, it->second.first, to_nic.bandwidth, to_nic.links);
    g.add_arc(it->second.second, r, from_nic.bandwidth, from_nic.links);
  }
  std::set<DeviceId> nics;
  for (const auto& [nic, v] : nic_vertices) nics.insert(nic);
  // The network: links between the group's NICs and the switches that serve them (a leaf with
  // one of the NICs, a spine above such a leaf, a core above such a spine), tier by tier, as
  // the router's leaf-spine(-core) routes use them.
  std::set<DeviceId> fabric(nics.begin(), nics.end());
  for (int tier = 1; tier <= 3; ++tier) {
    std::vector<DeviceId> added;
    for (DeviceId d = 0; d < t.num_devices(); ++d) {
      if (t.device(d).kind != DeviceKind::NetworkSwitch || t.device(d).tier != tier) continue;
      for (LinkId id : t.out_links(d)) {
        if (fabric.count(t.link_target(id)) != 0 && t.link(id).link_class == models::LinkClass::Network) {
          added.push_back(d);
          break;
        }
      }
    }
    fabric.insert(added.begin(), added.end());
  }
  for (LinkId id = 0; id < t.num_links(); ++id) {
    const models::Link& l = t.link(id);
    if (l.failed || l.link_class != models::LinkClass::Network) continue;
    if (fabric.count(t.link_source(id)) != 0 && fabric.count(t.link_target(id)) != 0) raw.insert(id);
  }
  for (LinkId id : raw) {
    const models::Link& l = t.link(id);
    if (l.failed) continue;
    const DeviceId a = t.link_source(id), b = t.link_target(id);
    const auto nic_a = nic_vertices.find(a), nic_b = nic_vertices.find(b);
    if (l.link_class == models::LinkClass::Network && (nic_a != nic_vertices.end() || nic_b != nic_vertices.end())) {
      const int from = nic_a != nic_vertices.end() ? nic_a->second.first : vertex_of(a);
      const int to = nic_b != nic_vertices.end() ? nic_b->second.second : vertex_of(b);
      g.add_arc(from, to, l.bandwidth, {id});
      continue;
    }
    g.add_arc(vertex_of(a), vertex_of(b), l.bandwidth, {id});
  }
  check_reachable(g, true);
  check_reachable(g, false);
  return g;
}

}  // namespace ccsim::planner::synthesis
