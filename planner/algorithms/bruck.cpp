// Bruck's algorithms (Bruck, Ho, Kipnis, Upfal, Weathersby, "Efficient algorithms for
// all-to-all communications in multiport message-passing systems", IEEE TPDS 1997):
// ⌈log2 n⌉ steps for any n, at the price of local rotations.

#include <algorithm>
#include <cmath>
#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

void bruck_all_gather(Builder& b) {
  const int n = b.nranks();
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const auto blocks = [&](int first, int count) { return Range{static_cast<std::uint64_t>(first) * block, static_cast<std::uint64_t>(count) * block}; };
  for (int r = 0; r < n; ++r) {
    b.need_scratch(r, b.request().bytes);
    // scratch block i holds rank (r + i)'s block
    std::uint32_t last = b.copy(r, in({0, block}), scratch(blocks(0, 1)));
    for (int d = 1; d < n; d *= 2) {
      const int count = std::min(d, n - d);
      const std::uint32_t s = b.send(r, mod(r - d, n), scratch(blocks(0, count)), 0, {last});
      const std::uint32_t got = b.recv(r, mod(r + d, n), scratch(blocks(d, count)), 0, {last});  // disjoint from the send
      last = b.join(r, {s, got});
    }
    for (int i = 0; i < n; ++i) b.copy(r, scratch(blocks(i, 1)), out(blocks(mod(r + i, n), 1)), {last});
  }
}

void bruck_all_to_all(Builder& b) {
  const int n = b.nranks();
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const auto blk = [&](std::uint64_t base, int i) { return Range{base + static_cast<std::uint64_t>(i) * block, block}; };
  const std::uint64_t pack = b.request().bytes, unpack = 2 * b.request().bytes;
  for (int r = 0; r < n; ++r) {
    b.need_scratch(r, 3 * b.request().bytes);
    // Phase 1: scratch block i = input block (r + i) mod n.
    std::uint32_t last = kNone;
    for (int i = 0; i < n; ++i) last = b.copy(r, in(blk(0, mod(r + i, n))), scratch(blk(0, i)), {last});
    // Phase 2: blocks whose index has bit d move d ranks forward.
    for (int d = 1; d < n; d *= 2) {
      std::vector<int> moving;
      for (int i = 0; i < n; ++i)
        if (i & d) moving.push_back(i);
      for (std::size_t j = 0; j < moving.size(); ++j) last = b.copy(r, scratch(blk(0, moving[j])), scratch(blk(pack, static_cast<int>(j))), {last});
      const Range packed{pack, moving.size() * block};
      const std::uint32_t s = b.send(r, mod(r + d, n), scratch(packed), 0, {last});
      const std::uint32_t got = b.recv(r, mod(r - d, n), scratch({unpack, packed.bytes}), 0, {last});
      last = b.join(r, {s, got});
      for (std::size_t j = 0; j < moving.size(); ++j) last = b.copy(r, scratch(blk(unpack, static_cast<int>(j))), scratch(blk(0, moving[j])), {last});
    }
    // Phase 3: output block (r − i) mod n = scratch block i.
    for (int i = 0; i < n; ++i) b.copy(r, scratch(blk(0, i)), out(blk(0, mod(r - i, n))), {last});
  }
}

}  // namespace

void bruck(Builder& b) {
  if (b.request().collective == models::Collective::AllGather) bruck_all_gather(b);
  else bruck_all_to_all(b);
}

std::string bruck_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AllGather && r.collective != models::Collective::AlltoAll) {
    return "bruck implements AllGather and AlltoAll";
  }
  return r.granularity == models::Granularity::Phase ? "bruck has no phase granularity" : "";
}

double bruck_ops(const AlgorithmRequest& r) {
  const double n = r.nranks;
  const models::Collective c = r.collective;
  // AllGather: a copy in, per step a send, a receive and a join, n copies out.
  // AlltoAll: n copies in, per step d the blocks with bit d set packed and unpacked
  // (2 copies each) around a send, a receive and a join, n copies out.
  double per_rank = 2 * n;
  for (int d = 1; d < r.nranks; d *= 2) {
    if (c == models::Collective::AllGather) {
      per_rank += 3;
      continue;
    }
    double moving = 0;  // indices in [0, n) with bit d set
    const double period = 2.0 * d;
    moving += std::floor(n / period) * d + std::max(0.0, std::fmod(n, period) - d);
    per_rank += 3 + 2 * moving;
  }
  return c == models::Collective::AllGather ? n * (per_rank - n + 1) : n * per_rank;
}

}  // namespace ccsim::planner::detail
