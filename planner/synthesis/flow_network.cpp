#include "planner/synthesis/flow_network.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <deque>
#include <stdexcept>

namespace ccsim::planner::synthesis {

namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, std::int64_t,
                    boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                    boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;

}  // namespace

void FlowNetwork::add_arc(int u, int v, std::int64_t capacity) {
  if (u < 0 || v < 0 || u >= vertices_ || v >= vertices_) throw std::out_of_range("FlowNetwork::add_arc: no such vertex");
  if (capacity <= 0 || u == v) return;
  arcs_.push_back({u, v, capacity});
}

std::size_t FlowNetwork::add_slot(int u, int v) {
  if (u < 0 || v < 0 || u >= vertices_ || v >= vertices_) throw std::out_of_range("FlowNetwork::add_slot: no such vertex");
  arcs_.push_back({u, v, 0});
  return arcs_.size() - 1;
}

std::int64_t FlowNetwork::max_flow(int source, int sink, std::vector<char>* sink_side) const {
  FlowSolver solver(*this);
  return solver.max_flow(source, sink, sink_side);
}

struct FlowSolver::Impl {
  explicit Impl(int n) : g(static_cast<std::size_t>(n)), vertices(n) {}
  Graph g;
  int vertices = 0;
  std::vector<Traits::edge_descriptor> edge;  // per network arc
};

FlowSolver::FlowSolver(const FlowNetwork& net) : impl_(new Impl(net.vertices_)) {
  auto capacity = boost::get(boost::edge_capacity, impl_->g);
  auto reverse = boost::get(boost::edge_reverse, impl_->g);
  // Boost's push-relabel wants every arc paired with a zero-capacity reverse arc.
  for (const auto& a : net.arcs_) {
    const auto e1 = boost::add_edge(static_cast<std::size_t>(a.from), static_cast<std::size_t>(a.to), impl_->g).first;
    const auto e2 = boost::add_edge(static_cast<std::size_t>(a.to), static_cast<std::size_t>(a.from), impl_->g).first;
    capacity[e1] = a.capacity;
    capacity[e2] = 0;
    reverse[e1] = e2;
    reverse[e2] = e1;
    impl_->edge.push_back(e1);
  }
}

FlowSolver::~FlowSolver() { delete impl_; }

void FlowSolver::set_capacity(std::size_t index, std::int64_t capacity) {
  boost::get(boost::edge_capacity, impl_->g)[impl_->edge.at(index)] = capacity;
}

std::int64_t FlowSolver::max_flow(int source, int sink, std::vector<char>* sink_side) {
  if (source == sink) throw std::invalid_argument("FlowSolver::max_flow: source is the sink");
  Graph& g = impl_->g;
  const std::int64_t flow = boost::push_relabel_max_flow(g, static_cast<std::size_t>(source), static_cast<std::size_t>(sink));
  if (sink_side != nullptr) {
    auto residual = boost::get(boost::edge_residual_capacity, g);
    std::vector<char> reached(static_cast<std::size_t>(impl_->vertices), 0);
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
    sink_side->assign(reached.size(), 0);
    for (std::size_t v = 0; v < reached.size(); ++v) (*sink_side)[v] = reached[v] ? 0 : 1;
  }
  return flow;
}

}  // namespace ccsim::planner::synthesis
