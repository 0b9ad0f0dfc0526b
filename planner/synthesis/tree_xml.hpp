#pragma once
// ForestColl's spanning-tree XML (its public code's spanning_trees_to_xml): one <tree root index
// nchunks height> per tree, in it one <send src dst path> per edge, parents before children;
// `nchunks` is the tree's weight (its share of the root's block is nchunks / k), `path` the
// vertices from src to dst through the switches. ccsim wraps the trees in
// <trees collective ranks k rate_GBps> and names vertices as the topology does (node0/gpu3).

#include <string>

#include "planner/synthesis/forest.hpp"
#include "planner/synthesis/synthesis_graph.hpp"

namespace ccsim::planner::synthesis {

/// The trees of `f` on `g` as XML; `collective` names what they build ("allgather", or
/// "reducescatter" for trees found on the reversed graph, whose edges carry data child to parent).
std::string to_tree_xml(const Forest& f, const SynthesisGraph& g, const std::string& collective);

}  // namespace ccsim::planner::synthesis
