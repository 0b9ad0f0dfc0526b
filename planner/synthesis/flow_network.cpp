#include "planner/synthesis/flow_network.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <deque>
#include <stdexcept>

namespace ccsim::planner::synthesis {

void FlowNetwork::add_arc(int u, int v, std::int64_t capacity) {
  if (u < 0 || v < 0 || u >= vertices_ || v >= vertices_) throw std::out_of_range("FlowNetwork::add_arc: no such vertex");
  if (capacity <= 0 || u == v) return;
  arcs_.push_back({u, v, capacity});
}

std::int64_t FlowNetwork::max_flow(int source, int sink, std::vector<char>* sink_side) const {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  if (source == sink) throw std::invalid_argument("FlowNetwork::max_flow: source is the sink");
  Graph g(static_cast<std::size_t>(vertices_));
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  for (const Arc& a : arcs_) {
    const auto e1 = boost::add_edge(static_cast<std::size_t>(a.from), static_cast<std::size_t>(a.to), g).first;
    const auto e2 = boost::add_edge(static_cast<std::size_t>(a.to), static_cast<std::size_t>(a.from), g).first;
    capacity[e1] = a.capacity;
    capacity[e2] = 0;
    reverse[e1] = e2;
    reverse[e2] = e1;
  }
  const std::int64_t flow = boost::push_relabel_max_flow(g, static_cast<std::size_t>(source), static_cast<std::size_t>(sink));
  if (sink_side != nullptr) {
    auto residual = boost::get(boost::edge_residual_capacity, g);
    std::vector<char> reached(static_cast<std::size_t>(vertices_), 0);
    std::deque<std::size_t> queue{static_cast<std::size_t>(source)};
    reached[static_cast<std::size_t>(source)] = 1;
    while (!queue.empty()) {
      const std::size_t u = queue.front();
      queue.pop_front();
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
        const std::size_t v = boost::target(*e, g);
        if (!reached[v] && residual[*e] > 0) {
          reached[v] = 1;
          queue.push_back(v);
        }
      }
    }
    sink_side->assign(static_cast<std::size_t>(vertices_), 0);
    for (std::size_t v = 0; v < reached.size(); ++v) (*sink_side)[v] = reached[v] ? 0 : 1;
  }
  return flow;
}

}  // namespace ccsim::planner::synthesis
