#include "planner/workload/link_loads.hpp"

#include <algorithm>
#include <map>

namespace ccsim::planner {

std::vector<LinkLoad> link_loads(const LinkLoadInput& in) {
  std::map<models::LinkId, LinkLoad> links;
  for (int c : in.op_comm) {
    if (c < 0) continue;
    for (const auto& l : in.costs[static_cast<std::size_t>(c)].links) {
      LinkLoad& a = links[l.link];
      a.link = l.link;
      a.bytes += l.bytes;
      a.busy += l.busy;
      a.peak = std::max(a.peak, l.peak);
    }
  }
  std::vector<LinkLoad> out;
  for (auto& [id, l] : links) {
    const models::Link& link = in.topology.link(id);
    const double eff = link.kind < in.link_efficiency.size() ? in.link_efficiency[link.kind] : 1.0;
    l.utilisation = l.bytes / (link.bandwidth * eff * in.step_time);
    out.push_back(l);
  }
  std::stable_sort(out.begin(), out.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.link < b.link;
  });
  return out;
}

}  // namespace ccsim::planner
