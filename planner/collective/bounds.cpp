#include "planner/collective/bounds.hpp"

#include <algorithm>
#include <limits>

#include "planner/synthesis/forest.hpp"
#include "planner/synthesis/synthesis_graph.hpp"

namespace ccsim::planner {

using models::Collective;

LowerBound lower_bound(const models::Cluster& cluster, models::Router& router, Collective c,
                       const std::vector<models::DeviceId>& gpus, int root) {
  const models::Topology& t = cluster.topology;
  LowerBound b;
  b.collective = c;
  b.nranks = static_cast<int>(gpus.size());
  b.root = root;
  const int n = b.nranks;
  for (models::DeviceId g : gpus) {
    double out = 0.0;
    for (models::LinkId id : t.out_links(g)) out += t.link(id).bandwidth;
    b.egress.push_back(out);
    b.ingress.push_back(out);  // links are symmetric in the catalog: in = out per direction
  }
  if (n < 2) return b;
  // Latency: from the root (Broadcast), to the root (Reduce), from the ring neighbour
  // (SendRecv), else from the farthest rank to rank 0.
  double far = 0.0, near = std::numeric_limits<double>::infinity();
  for (int r = 0; r < n; ++r) {
    models::DeviceId src = gpus[static_cast<std::size_t>(r)], dst = gpus[0];
    switch (c) {
      case Collective::Broadcast:
        src = gpus[static_cast<std::size_t>(root)];
        dst = gpus[static_cast<std::size_t>(r)];
        break;
      case Collective::Reduce: dst = gpus[static_cast<std::size_t>(root)]; break;
      case Collective::SendRecv: dst = gpus[static_cast<std::size_t>((r + 1) % n)]; break;
      default: break;
    }
    if (src == dst) continue;
    const double lat = router.route(src, dst).latency;
    far = std::max(far, lat);
    near = std::min(near, lat);
  }
  b.alpha_far = far;
  b.alpha_near = near == std::numeric_limits<double>::infinity() ? 0.0 : near;
  b.half = n / 2;
  const std::vector<models::DeviceId> a(gpus.begin(), gpus.begin() + b.half), z(gpus.begin() + b.half, gpus.end());
  b.flow_ab = t.max_flow(a, z);
  b.flow_ba = t.max_flow(z, a);
  if ((c == Collective::AllGather || c == Collective::ReduceScatter) && n <= kForestBoundRanks) {
    synthesis::SynthesisGraph g = synthesis::synthesis_graph(cluster, router, gpus);
    if (c == Collective::ReduceScatter) g = g.reversed();
    synthesis::ForestOptions o;
    o.build_trees = false;
    b.forest_rate = synthesis::allgather_forest(g, o).rate();
  }
  return b;
}

double LowerBound::time(double s) const {
  const int n = nranks;
  if (n < 2) return 0.0;
  const double in_a = half, in_b = n - half;
  double worst = 0.0;
  for (int r = 0; r < n; ++r) {
    double send = 0, recv = 0;
    switch (collective) {
      case Collective::AllReduce: send = recv = s; break;
      case Collective::ReduceScatter: send = s * (n - 1) / n; recv = s / n; break;
      case Collective::AllGather: send = s / n; recv = s * (n - 1) / n; break;
      case Collective::AlltoAll: send = recv = s * (n - 1) / n; break;
      case Collective::Broadcast: (r == root ? send : recv) = s; break;
      case Collective::Reduce: (r == root ? recv : send) = s; break;
      case Collective::SendRecv: send = recv = s; break;
    }
    const auto i = static_cast<std::size_t>(r);
    worst = std::max({worst, send / egress[i], recv / ingress[i]});
  }
  double ab = 0, ba = 0;  // bytes that must cross from the first half to the second, and back
  switch (collective) {
    case Collective::AllReduce: ab = ba = s; break;
    case Collective::ReduceScatter: ab = in_b * s / n; ba = in_a * s / n; break;
    case Collective::AllGather: ab = in_a * s / n; ba = in_b * s / n; break;
    case Collective::AlltoAll: ab = ba = in_a * in_b * s / n; break;
    case Collective::Broadcast: (root < half ? ab : ba) = s; break;
    case Collective::Reduce: (root < half ? ba : ab) = s; break;
    case Collective::SendRecv: ab = ba = s; break;
  }
  const double cut = std::max(flow_ab > 0 ? ab / flow_ab : 0.0, flow_ba > 0 ? ba / flow_ba : 0.0);
  const double forest = forest_rate > 0 ? s / n / forest_rate : 0.0;
  return std::max({alpha_far, worst + alpha_near, cut + alpha_near, forest + alpha_near});
}

}  // namespace ccsim::planner
