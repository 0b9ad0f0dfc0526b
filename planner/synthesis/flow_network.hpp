#pragma once
// A small integer flow network for the synthesis algorithms (forest.hpp): vertices, arcs with
// whole-unit capacities, and Boost.Graph's push-relabel maximum flow with the minimum cut it
// leaves (the sink side: the vertices that cannot be reached from the source in the residual
// network). Capacities are whole units so that every comparison the synthesis makes is exact.

#include <cstdint>
#include <vector>

namespace ccsim::planner::synthesis {

/// Capacity that no cut of a synthesis network reaches (forced sides of a cut). Below int64's
/// range by a margin so that the solver's excess sums cannot overflow.
inline constexpr std::int64_t kUnbounded = std::int64_t{1} << 55;

class FlowNetwork {
 public:
  explicit FlowNetwork(int vertices = 0) : vertices_(vertices) {}
  int add_vertex() { return vertices_++; }
  int vertices() const { return vertices_; }
  /// Arc u -> v of `capacity` units (ignored when <= 0). Throws std::out_of_range on bad ids.
  void add_arc(int u, int v, std::int64_t capacity);
  /// Arc u -> v of no capacity yet, whose capacity a FlowSolver of this network sets: its index.
  std::size_t add_slot(int u, int v);
  /// Maximum flow from `source` to `sink`, in units (Boost's push_relabel_max_flow). With
  /// `sink_side`, also the sink side of a minimum cut: sink_side[v] = 1 for the vertices not
  /// reachable from the source in the residual network.
  std::int64_t max_flow(int source, int sink, std::vector<char>* sink_side = nullptr) const;

 private:
  friend class FlowSolver;
  struct Arc {
    int from, to;
    std::int64_t capacity;
  };
  int vertices_ = 0;
  std::vector<Arc> arcs_;
};

/// One network solved many times with some capacities changed between runs (the slots): the
/// Boost graph is built once. push_relabel_max_flow starts every run from the capacities.
class FlowSolver {
 public:
  explicit FlowSolver(const FlowNetwork& net);
  ~FlowSolver();
  FlowSolver(const FlowSolver&) = delete;
  FlowSolver& operator=(const FlowSolver&) = delete;
  /// Sets the capacity of arc `index` (an add_arc or add_slot index of the network).
  void set_capacity(std::size_t index, std::int64_t capacity);
  std::int64_t max_flow(int source, int sink, std::vector<char>* sink_side = nullptr);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace ccsim::planner::synthesis
