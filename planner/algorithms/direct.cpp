// Direct and pairwise exchanges: every rank talks to every other rank, all at once (direct)
// or in n−1 steps of one partner each (pairwise, as MPI implementations do for large AlltoAll).

#include <algorithm>
#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {
namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

void direct(Builder& b) {
  const int n = b.nranks();
  const auto c = b.request().collective;
  if (c == models::Collective::SendRecv) {
    // Each peer's bytes in near-equal parts over its channels (NCCL's p2pnChannelsPerPeer: a
    // large send uses them all, enqueue.cc), one connection per channel.
    const Range all{0, b.request().bytes};
    const int k = std::max(1, b.request().channels);
    for (int r = 0; r < n; ++r) {
      if (n == 1) {
        b.copy(r, in(all), out(all));
        continue;
      }
      for (int ch = 0; ch < k; ++ch) {
        const Range piece = part(all, b.element_size(), k, ch);
        b.send(r, mod(r + 1, n), in(piece), ch);
        b.recv(r, mod(r - 1, n), out(piece), ch);
      }
    }
    return;
  }
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const auto blk = [&](int j) { return Range{static_cast<std::uint64_t>(j) * block, block}; };
  const bool gather = c == models::Collective::AllGather;
  for (int r = 0; r < n; ++r) {
    b.copy(r, in(gather ? Range{0, block} : blk(r)), out(blk(r)));
    for (int k = 1; k < n; ++k) {
      const int j = mod(r + k, n);
      b.send(r, j, in(gather ? Range{0, block} : blk(j)), 0);
    }
    for (int k = 1; k < n; ++k) {
      const int j = mod(r - k, n);
      b.recv(r, j, out(blk(j)), 0);
    }
  }
}

void pairwise(Builder& b) {
  const int n = b.nranks();
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const auto blk = [&](int j) { return Range{static_cast<std::uint64_t>(j) * block, block}; };
  for (int r = 0; r < n; ++r) {
    std::uint32_t last = b.copy(r, in(blk(r)), out(blk(r)));
    for (int k = 1; k < n; ++k) {
      const std::uint32_t s = b.send(r, mod(r + k, n), in(blk(mod(r + k, n))), 0, {last});
      const std::uint32_t got = b.recv(r, mod(r - k, n), out(blk(mod(r - k, n))), 0, {last});
      last = b.join(r, {s, got});  // next step after both
    }
  }
}

std::string direct_refusal(const AlgorithmRequest& r) {
  const models::Collective c = r.collective;
  if (c != models::Collective::AlltoAll && c != models::Collective::AllGather && c != models::Collective::SendRecv) {
    return "direct implements AlltoAll, AllGather and SendRecv";
  }
  return {};
}

double direct_ops(const AlgorithmRequest& r) {
  const double n = r.nranks;
  // One copy per rank, a send and a receive per ordered pair.
  // SendRecv: a send and a receive per rank and channel.
  return r.collective == models::Collective::SendRecv ? 2 * n * std::max(1, r.channels) : n + 2 * n * (n - 1);
}

std::string pairwise_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AlltoAll) return "pairwise implements AlltoAll";
  return r.granularity == models::Granularity::Phase ? "pairwise has no phase granularity" : "";
}

double pairwise_ops(const AlgorithmRequest& r) {
  const double n = r.nranks;
  // One copy, then per step a send, a receive and a join.
  return n + 3 * n * (n - 1);
}

}  // namespace ccsim::planner::detail
