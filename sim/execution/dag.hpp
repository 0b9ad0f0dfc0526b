#pragma once
// A directed acyclic graph of numbered nodes in compressed rows, and the earliest-start
// schedule of nodes with fixed durations over it. The execution graph's op dependencies
// (sim/execution/execution_graph.hpp) and a workload step's ops (program dependencies and stream
// order, planner/workload/step_executor.hpp) are both built here: the DAG knows nodes and edges,
// not what they stand for.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ccsim::sim {

/// `size()` nodes numbered 0 .. size() − 1, each with its successors (the nodes that depend on
/// it) in compressed rows and its number of dependencies. Built once, read only.
class Dag {
 public:
  Dag() = default;
  /// From predecessor rows: node i depends on preds[pred_begin[i] .. pred_begin[i + 1]).
  /// pred_begin has one entry more than there are nodes, starts at 0, never decreases and ends
  /// at preds.size(). A predecessor named twice in one node's row counts twice (the node is
  /// then its successor twice). Each node's successors are listed in ascending node order.
  /// Throws std::invalid_argument when pred_begin is empty, does not start at 0, decreases or
  /// does not end at preds.size(), or a predecessor is not a node.
  Dag(std::span<const std::uint32_t> pred_begin, std::span<const std::uint32_t> preds);

  std::uint32_t size() const { return static_cast<std::uint32_t>(dep_count_.size()); }
  /// The nodes that depend on `node`, in the order above.
  std::span<const std::uint32_t> successors(std::uint32_t node) const {
    return {succ_.data() + succ_begin_[node], succ_begin_[node + 1] - succ_begin_[node]};
  }
  /// Number of dependencies of each node (the length of its predecessor row).
  const std::vector<std::uint32_t>& dependency_counts() const { return dep_count_; }

 private:
  std::vector<std::uint32_t> succ_begin_{0};  ///< succ_[succ_begin_[i] .. succ_begin_[i + 1]): successors of i
  std::vector<std::uint32_t> succ_;
  std::vector<std::uint32_t> dep_count_;
};

/// When one node of a fixed-duration schedule runs: seconds from the schedule's start.
struct NodeTiming {
  double start = 0;
  double end = 0;
};

/// The earliest-start schedule of a Dag whose nodes take fixed times.
struct DagSchedule {
  std::vector<NodeTiming> timing;  ///< per node; a node that never became ready keeps {0, 0}
  std::uint32_t scheduled = 0;     ///< nodes that ran: all of them unless the graph has a cycle
};

/// Every node starts as soon as all its predecessors have ended (at 0 without any) and runs
/// for duration[node] seconds: start = max over predecessors of their end, end = start +
/// duration. Ready nodes are taken from a LIFO stack: the nodes without dependencies pushed in
/// ascending order, a node pushed when its last predecessor ends (the times do not depend on
/// this order; the order is fixed all the same). Nodes on or behind a cycle never become ready
/// (DagSchedule::scheduled < size()). Throws std::invalid_argument when duration has not one
/// entry per node.
DagSchedule earliest_start(const Dag& dag, std::span<const double> duration);
/// The same with each node's duration chosen when it starts: duration(node, start) seconds
/// (a node whose cost depends on when it runs, such as an op during a timed link event).
DagSchedule earliest_start(const Dag& dag, const std::function<double(std::uint32_t, double)>& duration);

}  // namespace ccsim::sim
