#pragma once
// The graph schedule synthesis works on (ForestColl, Zhao et al., arXiv 2402.06787): the
// group's GPUs as compute vertices, and the switches between them (NVSwitch, NICs, leaves,
// spines) as vertices that forward but neither send nor receive data of their own. Arcs carry
// the bandwidth of a link in one direction.
//
// The graph is the one ccsim's engines see, so that a schedule synthesized on it loads the
// links the engines charge it for (they route every send with models::Router):
//  * inside a node, the links of the router's routes between the group's GPUs (NVLink, the
//    NVSwitch, PCIe switches, CPUs, host memory), each once; the routes themselves are kept
//    (SynthesisGraph::routes) so that switch removal prefers the paths the router takes;
//  * a GPU reaches the network only through its own NIC (Device::nic, as the router routes it):
//    one arc GPU -> NIC and one NIC -> GPU, each the router's route with its bandwidth, so a
//    GPU never borrows the NIC of a neighbour on its PCIe switch. A NIC is two vertices, its way
//    out and its way in, so that no path turns around inside it;
//  * the network links between the NICs of the group's nodes and the fabric's switches that
//    serve them.
// Failed links are absent. Limitations: a PCIe link shared by a GPU's NIC traffic and its PCIe
// peer traffic is counted in both (the engines share it; NVLink nodes never route peers over
// PCIe, so this only concerns PCIe-only nodes spanning several nodes); between leaves the
// router picks a spine by hash while the trees take the spine their splitting chose.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"

namespace ccsim::planner::synthesis {

struct SynthesisArc {
  int from = 0;
  int to = 0;
  double bandwidth = 0;                ///< bytes per second in this direction
  std::vector<models::LinkId> links;   ///< the topology links it stands for, in path order
};

struct SynthesisGraph {
  int compute = 0;  ///< vertices 0 .. compute − 1 are the ranks, in rank order
  /// Per vertex: its device in the topology (kNoDevice for vertices of a hand-built graph).
  std::vector<models::DeviceId> device;
  std::vector<std::string> name;  ///< per vertex, for messages and the tree XML
  std::vector<SynthesisArc> arcs;
  /// The router's route (its links) between ranks of one node: switch removal prefers arcs that
  /// are these routes. Empty for a hand-built graph.
  std::map<std::pair<int, int>, std::vector<models::LinkId>> routes;

  int vertices() const { return static_cast<int>(name.size()); }
  /// Adds a vertex; returns its id.
  int add_vertex(std::string vertex_name, models::DeviceId d = models::kNoDevice);
  void add_arc(int from, int to, double bandwidth, std::vector<models::LinkId> links = {});
  /// The graph with every arc reversed (ReduceScatter's trees are AllGather trees on it).
  SynthesisGraph reversed() const;
};

/// The synthesis graph of ranks placed on `gpus` (rank i on gpus[i]). Throws
/// support::InputError (key "ranks") when fewer than two ranks are given, a GPU is listed twice
/// or some rank cannot reach another over up links ("rank 3 (node1/gpu2) cannot reach rank 0").
SynthesisGraph synthesis_graph(const models::Cluster& cluster, models::Router& router,
                               const std::vector<models::DeviceId>& gpus);

}  // namespace ccsim::planner::synthesis
