#pragma once
// The replay test matrix shared by tests/validate/replay/backends/host_replay_test.cpp (host backend, 2-8
// ranks) and tests/validate/replay/backends/mpi_replay_driver.cpp (mpi backend under mpirun): every algorithm
// that implements each collective, at uneven sizes, as Step-granularity Schedules generated
// straight from planner::generate (the generator `ccsim replay` lowers with).
//
// Sizes, in elements of the type (float: 4 bytes):
//   whole-buffer collectives (AllReduce, Broadcast, Reduce, SendRecv): 1, n + 3 and 2^18 + 1
//     (1 MiB + 4 bytes for float): one element, fewer elements than the chunks a ring cuts,
//     a large count that divides by nothing;
//   per-rank collectives (ReduceScatter, AllGather, AlltoAll): 1, 3 and ⌊2^18 / n⌋ + 1
//     elements per rank (nccl-tests' sizes are whole per-rank counts: S = count · n · 4 B).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/collective/collective.hpp"
#include "models/collective/schedule.hpp"
#include "planner/algorithms/algorithms.hpp"

namespace ccsim::test {

struct ReplayCase {
  std::string name;  ///< "allreduce ring 4 ranks 2 channels 1048580 B"
  models::Schedule schedule;
};

inline const std::vector<models::Collective>& replay_collectives() {
  using models::Collective;
  static const std::vector<Collective> all{Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                                           Collective::Reduce,    Collective::AlltoAll,      Collective::SendRecv};
  return all;
}

/// nccl-tests sizes S in bytes for collective `c` over `n` ranks (see the header comment).
inline std::vector<std::uint64_t> replay_sizes(models::Collective c, int n, std::uint32_t element_size, bool large = true) {
  using models::Collective;
  const bool per_rank = c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::AlltoAll;
  const std::uint64_t e = element_size;
  const std::uint64_t big = std::uint64_t{1} << 18;
  std::vector<std::uint64_t> counts = per_rank ? std::vector<std::uint64_t>{1, 3} : std::vector<std::uint64_t>{1, static_cast<std::uint64_t>(n) + 3};
  if (large) counts.push_back(per_rank ? big / static_cast<std::uint64_t>(n) + 1 : big + 1);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t count : counts) sizes.push_back(count * e * (per_rank ? static_cast<std::uint64_t>(n) : 1));
  return sizes;
}

/// The request for algorithm `a` on `n` ranks: 2 pipeline chunks, root 1 (Broadcast, Reduce),
/// nodes of 2 ranks when n is even (1 otherwise) for hierarchical, tree and nvls-tree.
inline planner::AlgorithmRequest replay_request(models::Collective c, int n, std::uint64_t bytes, int channels, std::uint32_t element_size) {
  planner::AlgorithmRequest r;
  r.collective = c;
  r.nranks = n;
  r.root = models::has_root(c) ? std::min(1, n - 1) : 0;
  r.bytes = bytes;
  r.element_size = element_size;
  r.channels = channels;
  r.pipeline_chunks = 2;
  r.ranks_per_node = n % 2 == 0 ? 2 : 1;
  r.granularity = models::Granularity::Step;
  return r;
}

/// Every (collective, algorithm, channels ∈ {1, 2}, size) that planner::generate accepts for
/// `n` ranks. `large`: include the 1 MiB-scale size.
inline std::vector<ReplayCase> replay_matrix(int n, std::uint32_t element_size = 4, bool large = true) {
  std::vector<ReplayCase> cases;
  for (models::Collective c : replay_collectives()) {
    for (planner::Algorithm a : planner::all_algorithms()) {
      for (int channels : {1, 2}) {
        for (std::uint64_t bytes : replay_sizes(c, n, element_size, large)) {
          const planner::AlgorithmRequest r = replay_request(c, n, bytes, channels, element_size);
          if (!planner::unsupported_reason(a, r).empty()) continue;
          cases.push_back({fmt::format("{} {} {} ranks {} channel{} {} B", models::to_string(c), planner::to_string(a), n, channels,
                                       channels == 1 ? "" : "s", bytes),
                           planner::generate(a, r)});
        }
      }
    }
  }
  return cases;
}

/// A ring AllReduce of `n` ranks whose first Recv or RecvReduce on rank 1 writes one element
/// further than it should (a shifted destination: the bug a replay must catch), with `bytes`
/// (a multiple of 4·n that leaves room for the shift).
inline models::Schedule corrupted_ring_allreduce(int n, std::uint64_t bytes) {
  models::Schedule s = planner::generate(planner::Algorithm::Ring, replay_request(models::Collective::AllReduce, n, bytes, 1, 4));
  for (models::Op& op : s.ranks[1].ops) {
    if (op.kind != models::OpKind::Recv && op.kind != models::OpKind::RecvReduce) continue;
    // One element later, or earlier when the slice ends the buffer (a RecvReduce's local
    // operand moves with it, so the op stays well-formed).
    const bool later = op.dst.offset + op.dst.bytes + 4 <= bytes;
    op.dst.offset = later ? op.dst.offset + 4 : op.dst.offset - 4;
    if (op.kind == models::OpKind::RecvReduce) op.src.offset = later ? op.src.offset + 4 : op.src.offset - 4;
    break;
  }
  return s;
}

}  // namespace ccsim::test
