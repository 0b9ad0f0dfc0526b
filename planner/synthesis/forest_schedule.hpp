#pragma once
// The Schedule of a ForestColl forest (forest.hpp): every root's block split over its trees in
// proportion to their weights, each tree's share pipelined in chunks down the tree (AllGather)
// or up the reversed tree with a reduction at every vertex (ReduceScatter); AllReduce is the
// ReduceScatter followed by the AllGather, a root starting to broadcast its block once its
// reduction is done. A vertex's first child's partial is received and reduced at once
// (RecvReduce); every further child's lands in scratch of its own without waiting and joins the
// sum by a local Reduce, so a fan-in of k costs one step latency, not k. Step granularity: data-exact, verify() checks it.
//
// Op order: chunk by chunk, tree by tree, edge by edge, the same order on both ends of every
// connection (FIFO matching), every dependency and every earlier message of a connection
// earlier in that order, so the schedule cannot deadlock. The first chunk of a tree edge pays
// the hop's latency, later chunks stream behind it (Op::steps = 0): a tree of height h costs
// h latencies, as NCCL's pipelined trees do.

#include <cstdint>

#include "models/collective/schedule.hpp"
#include "planner/synthesis/forest.hpp"

namespace ccsim::planner::synthesis {

/// Pipeline chunks per tree share for size `bytes` when none is asked for: shares of at least
/// 512 KiB are cut in up to 16 chunks of at least 256 KiB (NCCL's Simple chunk is 128–512 KiB).
int default_chunks(std::uint64_t bytes, int ranks, std::size_t trees);

/// `f` with every root's tree weights rounded to whole chunks of a grid of `grid` chunks per
/// block (largest remainders; a tree rounded to 0 is left out), weight_per_root = grid: the form
/// MSCCL's chunked buffers can express. Exact when every weight × grid / weight_per_root is whole.
Forest on_grid(const Forest& f, int grid);
/// The smallest grid of at least `at_least` chunks per block on which `f`'s weights are exact,
/// or 0 when that grid would exceed `at_most`.
int exact_grid(const Forest& f, int at_least, int at_most);

/// Builds AllGather from `allgather`, ReduceScatter from `reducescatter` (trees found on the
/// reversed graph), AllReduce from both. `bytes` is the nccl-tests size S (AllGather: the
/// output; ReduceScatter and AllReduce: the input), a whole number of elements per rank.
/// Throws std::invalid_argument for another collective, a missing forest, a forest of another
/// rank count, or a size that is not a whole number of elements per rank. `chunks` = 0: grid
/// mode, one pipeline chunk per weight unit (the forests from on_grid, every root's weights summing
/// to the same grid G; the size must be a whole number of elements per chunk of 1/G of a block).
models::Schedule forest_schedule(models::Collective collective, const Forest* allgather, const Forest* reducescatter,
                                 std::uint64_t bytes, std::uint32_t element_size, int chunks);

}  // namespace ccsim::planner::synthesis
