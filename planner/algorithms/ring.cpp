// Ring algorithms (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters
// of workstations", JPDC 2009; NCCL's ring): n−1 ReduceScatter steps and n−1 AllGather steps
// around the ring, each moving 1/n of the data; chains for Broadcast and Reduce.

#include <numeric>

#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

/// Circular prefix sums of chunk sizes: sum of `count` consecutive chunks ending at `last`
/// (indices last, last−1, ..., mod n) in O(1), so phase-granularity rings stay O(n).
class ChunkSums {
 public:
  explicit ChunkSums(const std::vector<Range>& chunks) : prefix_(chunks.size() + 1, 0) {
    for (std::size_t i = 0; i < chunks.size(); ++i) prefix_[i + 1] = prefix_[i] + chunks[i].bytes;
  }
  std::uint64_t ending_at(int last, int count) const {
    const int n = static_cast<int>(prefix_.size()) - 1;
    const int hi = mod(last, n) + 1;  // exclusive end of the range
    const int lo = hi - count;        // may be negative: wraps around
    const auto sum = [&](int a, int b) { return prefix_[static_cast<std::size_t>(b)] - prefix_[static_cast<std::size_t>(a)]; };
    return lo >= 0 ? sum(lo, hi) : sum(0, hi) + sum(n + lo, n);
  }

 private:
  std::vector<std::uint64_t> prefix_;
};

/// ReduceScatter with nccl-tests semantics (rank r ends with the sum of block r), around the
/// ring `members` (position i holds rank members[i]).
void ring_reduce_scatter_collective(Builder& b, int c, const std::vector<int>& members) {
  const int n = b.nranks();
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const auto piece = [&](int j) { return part({static_cast<std::uint64_t>(j) * block, block}, b.element_size(), b.request().channels, c); };
  const auto own = [&](int r) {
    Range p = piece(r);
    p.offset -= static_cast<std::uint64_t>(r) * block;
    return p;
  };
  const auto at = [&](int i) { return members[static_cast<std::size_t>(mod(i, n))]; };
  const std::uint32_t pool = b.latency_pool();
  for (int i = 0; i < n; ++i) {
    const int r = at(i);
    if (n == 1) {
      b.copy(r, in(piece(0)), out(own(0)));
      continue;
    }
    const int next = at(i + 1), prev = at(i - 1);
    if (b.granularity() == models::Granularity::Phase) {
      // Every block has the same size here (S/n per block, split alike per channel).
      const std::uint64_t bytes = piece(0).bytes * static_cast<std::uint64_t>(n - 1);
      b.send(r, next, in({0, bytes}), c, {}, static_cast<std::uint32_t>(n - 1), pool);
      b.recv(r, prev, out({0, bytes}), c, {}, static_cast<std::uint32_t>(n - 1));
      continue;
    }
    b.need_scratch(r, b.request().bytes);
    std::uint32_t last = kNone;
    for (int s = 0; s < n - 1; ++s) {
      // Position i passes on the partial sum of the block owned by position i − s − 1.
      const int k = at(i - s - 1);
      b.send(r, next, s == 0 ? in(piece(k)) : scratch(piece(k)), c, {last});
      const int k2 = at(i - s - 2);
      last = s == n - 2 ? b.recv_reduce(r, prev, in(piece(k2)), out(own(r)), c)
                        : b.recv_reduce(r, prev, in(piece(k2)), scratch(piece(k2)), c);
    }
  }
}

/// AllGather with nccl-tests semantics (every rank ends with all blocks in rank order),
/// around the ring `members`.
void ring_all_gather_collective(Builder& b, int c, const std::vector<int>& members) {
  const int n = b.nranks();
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const Range local = part({0, block}, b.element_size(), b.request().channels, c);
  const auto piece = [&](int j) { return Range{static_cast<std::uint64_t>(j) * block + local.offset, local.bytes}; };
  const auto at = [&](int i) { return members[static_cast<std::size_t>(mod(i, n))]; };
  const std::uint32_t pool = b.latency_pool();
  for (int i = 0; i < n; ++i) {
    const int r = at(i);
    const int next = at(i + 1), prev = at(i - 1);
    b.copy(r, in(local), out(piece(r)));
    if (n == 1) continue;
    if (b.granularity() == models::Granularity::Phase) {
      const auto bytes = local.bytes * static_cast<std::uint64_t>(n - 1);
      b.send(r, next, in({0, bytes}), c, {}, static_cast<std::uint32_t>(n - 1), pool);
      b.recv(r, prev, out({0, bytes}), c, {}, static_cast<std::uint32_t>(n - 1));
      continue;
    }
    std::uint32_t last = kNone;
    for (int s = 0; s < n - 1; ++s) {
      b.send(r, next, s == 0 ? in(local) : out(piece(at(i - s))), c, {last});
      last = b.recv(r, prev, out(piece(at(i - s - 1))), c);
    }
  }
}

/// Pipelined chain from the root (Broadcast) or towards it (Reduce).
void ring_chain(Builder& b, int c, bool broadcast) {
  const int n = b.nranks();
  const int root = b.request().root;
  const Range mine = part({0, b.request().bytes}, b.element_size(), b.request().channels, c);
  const int chunks = b.request().pipeline_chunks;
  for (int r = 0; r < n; ++r) {
    if (n == 1) {
      b.copy(r, in(mine), out(mine));
      continue;
    }
    if (broadcast) {
      const int p = mod(r - root, n);
      const int prev = mod(r - 1, n), next = mod(r + 1, n);
      if (p == 0) b.copy(r, in(mine), out(mine));
      for (int k = 0; k < chunks; ++k) {
        const Range chunk = part(mine, b.element_size(), chunks, k);
        if (p == 0) {
          b.send(r, next, in(chunk), c, {}, chunk_steps(k));
        } else {
          const std::uint32_t got = b.recv(r, prev, out(chunk), c);
          if (p < n - 1) b.send(r, next, out(chunk), c, {got}, chunk_steps(k));
        }
      }
    } else {
      const int p = mod(r - root - 1, n);  // the root is last in the chain
      const int prev = mod(r - 1, n), next = mod(r + 1, n);
      if (p > 0 && p < n - 1) b.need_scratch(r, b.request().bytes);
      for (int k = 0; k < chunks; ++k) {
        const Range chunk = part(mine, b.element_size(), chunks, k);
        if (p == 0) {
          b.send(r, next, in(chunk), c, {}, chunk_steps(k));
        } else if (p < n - 1) {
          const std::uint32_t got = b.recv_reduce(r, prev, in(chunk), scratch(chunk), c);
          b.send(r, next, scratch(chunk), c, {got}, chunk_steps(k));
        } else {
          b.recv_reduce(r, prev, in(chunk), out(chunk), c);
        }
      }
    }
  }
}

}  // namespace

std::vector<std::uint32_t> ring_reduce_scatter(Builder& b, const std::vector<int>& members, Range region,
                                               BufferKind local, int channel, const std::vector<std::uint32_t>& entry) {
  const int n = static_cast<int>(members.size());
  std::vector<std::uint32_t> exit(entry);
  const auto chunk = [&](int k) { return part(region, b.element_size(), n, k); };
  const auto at = [&](BufferKind kind, Range r) { return Slice{kind, r.offset, r.bytes}; };
  std::vector<Range> chunks;
  for (int k = 0; k < n; ++k) chunks.push_back(chunk(k));
  const ChunkSums sums(chunks);
  const std::uint32_t pool = b.latency_pool();
  for (int i = 0; i < n; ++i) {
    const int rank = members[static_cast<std::size_t>(i)];
    if (n == 1) {
      if (local == BufferKind::Input) exit[0] = b.copy(rank, in(region), out(region), {entry[0]});
      continue;
    }
    const int next = members[static_cast<std::size_t>(mod(i + 1, n))];
    const int prev = members[static_cast<std::size_t>(mod(i - 1, n))];
    if (b.granularity() == models::Granularity::Phase) {
      const auto steps = static_cast<std::uint32_t>(n - 1);
      b.send(rank, next, at(local, {region.offset, sums.ending_at(i, n - 1)}), channel, {entry[i]}, steps, pool);
      exit[i] = b.recv(rank, prev, out({region.offset, sums.ending_at(i - 1, n - 1)}), channel, {entry[i]}, steps);
      continue;
    }
    std::uint32_t last = kNone;
    for (int s = 0; s < n - 1; ++s) {
      const int k = mod(i - s, n);
      b.send(rank, next, s == 0 ? at(local, chunks[k]) : out(chunks[k]), channel, {s == 0 ? entry[i] : last});
      const int k2 = mod(i - s - 1, n);
      last = b.recv_reduce(rank, prev, at(local, chunks[k2]), out(chunks[k2]), channel, {entry[i]});
    }
    exit[i] = last;
  }
  return exit;
}

std::vector<std::uint32_t> ring_all_gather(Builder& b, const std::vector<int>& members, Range region, int channel,
                                           const std::vector<std::uint32_t>& entry) {
  const int n = static_cast<int>(members.size());
  std::vector<std::uint32_t> exit(entry);
  if (n == 1) return exit;
  std::vector<Range> chunks;
  for (int k = 0; k < n; ++k) chunks.push_back(part(region, b.element_size(), n, k));
  const ChunkSums sums(chunks);
  const std::uint32_t pool = b.latency_pool();
  for (int i = 0; i < n; ++i) {
    const int rank = members[static_cast<std::size_t>(i)];
    const int next = members[static_cast<std::size_t>(mod(i + 1, n))];
    const int prev = members[static_cast<std::size_t>(mod(i - 1, n))];
    if (b.granularity() == models::Granularity::Phase) {
      const auto steps = static_cast<std::uint32_t>(n - 1);
      b.send(rank, next, out({region.offset, sums.ending_at(i + 1, n - 1)}), channel, {entry[i]}, steps, pool);
      exit[i] = b.recv(rank, prev, out({region.offset, sums.ending_at(i, n - 1)}), channel, {entry[i]}, steps);
      continue;
    }
    std::uint32_t last = kNone;
    for (int s = 0; s < n - 1; ++s) {
      b.send(rank, next, out(chunks[static_cast<std::size_t>(mod(i + 1 - s, n))]), channel, {s == 0 ? entry[i] : last});
      last = b.recv(rank, prev, out(chunks[static_cast<std::size_t>(mod(i - s, n))]), channel, {entry[i]});
    }
    exit[i] = last;
  }
  return exit;
}

void ring(Builder& b) {
  const int n = b.nranks();
  std::vector<int> identity(static_cast<std::size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  const auto& orders = b.request().ring_orders;
  for (int c = 0; c < b.request().channels; ++c) {
    const std::vector<int>& members = orders.empty() ? identity : orders[static_cast<std::size_t>(c) % orders.size()];
    switch (b.request().collective) {
      case models::Collective::AllReduce: {
        const Range region = part({0, b.request().bytes}, b.element_size(), b.request().channels, c);
        const std::vector<std::uint32_t> none(static_cast<std::size_t>(n), kNone);
        const auto reduced = ring_reduce_scatter(b, members, region, BufferKind::Input, c, none);
        ring_all_gather(b, members, region, c, reduced);
        break;
      }
      case models::Collective::ReduceScatter: ring_reduce_scatter_collective(b, c, members); break;
      case models::Collective::AllGather: ring_all_gather_collective(b, c, members); break;
      case models::Collective::Broadcast: ring_chain(b, c, true); break;
      case models::Collective::Reduce: ring_chain(b, c, false); break;
      default: break;
    }
  }
}

std::string ring_refusal(const AlgorithmRequest& r) {
  const models::Collective c = r.collective;
  if (c == models::Collective::AlltoAll || c == models::Collective::SendRecv) {
    return "ring does not implement " + std::string(models::to_string(c));
  }
  if (r.granularity == models::Granularity::Phase && (c == models::Collective::Broadcast || c == models::Collective::Reduce)) {
    return "ring chains have no phase granularity";
  }
  return {};
}

double ring_ops(const AlgorithmRequest& r) {
  const double n = r.nranks;
  const double ch = r.channels;
  const models::Collective c = r.collective;
  if (r.granularity != models::Granularity::Step || n < 2) return 0;
  // Per channel, rank and step a send and a receive; AllReduce has two passes.
  if (c == models::Collective::AllReduce) return ch * n * 4 * (n - 1);
  if (c == models::Collective::ReduceScatter || c == models::Collective::AllGather) return ch * n * 2 * (n - 1);
  return 0;
}

}  // namespace ccsim::planner::detail
