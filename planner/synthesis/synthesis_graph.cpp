#include "planner/synthesis/synthesis_graph.hpp"

#include <deque>
#include <fmt/format.h>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "support/input_error.hpp"

namespace ccsim::planner::synthesis {

using models::DeviceId;
using models::DeviceKind;
using models::LinkId;

int SynthesisGraph::add_vertex(std::string vertex_name, DeviceId d) {
  name.push_back(std::move(vertex_name));
  device.push_back(d);
  return vertices() - 1;
}

void SynthesisGraph::add_arc(int from, int to, double bandwidth, std::vector<LinkId> links) {
  if (from < 0 || to < 0 || from >= vertices() || to >= vertices() || from == to) {
    throw std::invalid_argument(fmt::format("SynthesisGraph::add_arc: bad arc {} -> {}", from, to));
  }
  if (!(bandwidth > 0)) return;
  arcs.push_back({from, to, bandwidth, std::move(links)});
}

SynthesisGraph SynthesisGraph::reversed() const {
  SynthesisGraph r = *this;
  for (SynthesisArc& a : r.arcs) {
    std::swap(a.from, a.to);
    // The reversed arc stands for the links of the opposite direction, in its own path order.
    std::vector<LinkId> back;
    for (auto it = a.links.rbegin(); it != a.links.rend(); ++it) back.push_back(models::Topology::reverse(*it));
    a.links = std::move(back);
  }
  r.routes.clear();
  for (const auto& [pair, links] : routes) {
    std::vector<LinkId> back;
    for (auto it = links.rbegin(); it != links.rend(); ++it) back.push_back(models::Topology::reverse(*it));
    r.routes[{pair.second, pair.first}] = std::move(back);
  }
  return r;
}

}  // namespace ccsim::planner::synthesis
