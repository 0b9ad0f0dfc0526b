// NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23+) for AllGather and ReduceScatter with one
// rank per node: every rank's block travels a binomial tree over the distances 2^d, farthest
// first, so a small collective takes ⌈log2 n⌉ network steps where a ring takes n − 1, and a
// large one sends each block exactly once per rank (n − 1 blocks out, as a ring does).
//
// From NCCL's source (src/include/collectives.h PatAGAlgorithm / PatRSAlgorithm, src/transport/
// generic.cc ncclTransportPatConnect, src/enqueue.cc chunk sizes):
// * peers: at dimension d a rank sends to the rank 2^d away and receives from the rank 2^d the
//   other way (AllGather one direction, ReduceScatter the other);
// * AllGather: the block of rank q reaches rank q + s (mod n) along the bits of s from the
//   highest down: a rank forwards at dimension d the blocks it holds whose distance s' is a
//   multiple of 2^(d+1) and s' + 2^d < n. Every rank receives every other block exactly once
//   (at the dimension of the lowest set bit of its distance). ReduceScatter runs the same trees
//   reversed, dimensions upwards, partial sums reduced at every hop;
// * the data loops over the per-rank block in chunks of chunkSize (Simple's 512 KiB, halved
//   while chunkSize × nChannels × 32 (AllGather; 16 for ReduceScatter) exceeds the size, down to
//   64 KiB), each loop one whole tree;
// * aggregation: when a channel's share of a block is small, blocks of one dimension travel
//   together: aggFactor doubles while chunkSize / (channel block × aggFactor) ≥ 2 and
//   aggFactor < n / 2, and a message (postFreq) carries aggFactor blocks.
//
// In the Schedule every block is its own send, so the data is exact; the blocks of one message
// after its first pay no step latency (steps 0), so a message of A blocks costs one latency and
// A blocks of bandwidth. Loops after the first stream behind it (steps 0), as a pipeline does.
// Phase granularity (chosen past kStepRanks ranks) is the fluid form: one loop of the whole
// block, the same step latencies, a block forwarded only once all of it has arrived.
// NCCL's linear latency term (tuning.cc: nRanks × 2.8 us) is the cost table's rank_latency
// (scenarios/calibration/nccl.yaml, pat). What is not modelled: NCCL's bounded number of steps in
// flight (NCCL_STEPS).

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

/// NCCL's default Simple chunk (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8), for a request without the
/// cost table's (AlgorithmRequest::chunk_bytes 0).
constexpr std::uint64_t kSimpleChunkBytes = 512 * 1024;

int dims_of(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

/// NCCL's PAT chunk: the protocol's chunk halved while chunk × channels × divisor exceeds the
/// size (divisor 32 for AllGather, 16 for ReduceScatter), not below 64 KiB.
std::uint64_t pat_chunk(const AlgorithmRequest& r) {
  std::uint64_t chunk = r.chunk_bytes > 0 ? r.chunk_bytes : kSimpleChunkBytes;
  const std::uint64_t divisor = r.collective == models::Collective::AllGather ? 32 : 16;
  while (chunk * static_cast<std::uint64_t>(r.channels) * divisor > r.bytes && chunk > 65536) chunk /= 2;
  return chunk;
}

/// How the data of one channel splits: loops over the block and blocks per message.
struct PatShape {
  int loops = 1;
  int aggregation = 1;
};

PatShape pat_shape(const AlgorithmRequest& r) {
  const int n = r.nranks;
  const std::uint64_t chunk = pat_chunk(r);
  const std::uint64_t channel_block =
      std::max<std::uint64_t>(1, r.bytes / static_cast<std::uint64_t>(n) / static_cast<std::uint64_t>(r.channels));
  PatShape shape;
  while (chunk / (channel_block * static_cast<std::uint64_t>(shape.aggregation)) >= 2 && shape.aggregation < n / 2) {
    shape.aggregation *= 2;
  }
  // Loops of one chunk each, within the planner's chunk budget (pipeline_chunks counts chunks of
  // the channel's whole share, n blocks).
  // Phase granularity is the fluid form: one loop of the whole block, the same step latencies.
  if (r.granularity == models::Granularity::Phase) return shape;
  const std::uint64_t wanted = (channel_block + chunk - 1) / chunk;
  shape.loops = static_cast<int>(std::clamp<std::uint64_t>(wanted, 1, static_cast<std::uint64_t>(std::max(1, r.pipeline_chunks))));
  return shape;
}

/// The distances a rank forwards at dimension d (AllGather) or sends its partial sums of at
/// dimension d (ReduceScatter, as distance s' + 2^d): s' a multiple of 2^(d+1), s' + 2^d < n.
std::vector<int> forwarded(int n, int d) {
  std::vector<int> out;
  for (int s = 0; s + (1 << d) < n; s += 1 << (d + 1)) out.push_back(s);
  return out;
}

void pat_all_gather(Builder& b, const PatShape& shape) {
  const int n = b.nranks();
  const int dims = dims_of(n);
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const Range mine{0, block};
  const auto at = [&](int source, Range piece) { return Range{static_cast<std::uint64_t>(source) * block + piece.offset, piece.bytes}; };
  std::vector<std::uint32_t> own(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) own[static_cast<std::size_t>(r)] = b.copy(r, in(mine), out(at(r, mine)));
  // got[r][s]: the op of rank r that received the block at distance s (s = 0: its own copy).
  std::vector<std::vector<std::uint32_t>> got(static_cast<std::size_t>(n), std::vector<std::uint32_t>(static_cast<std::size_t>(n), kNone));
  for (int c = 0; c < b.request().channels; ++c) {
    const Range share = part(mine, b.element_size(), b.request().channels, c);
    for (int loop = 0; loop < shape.loops; ++loop) {
      const Range piece = part(share, b.element_size(), shape.loops, loop);
      for (int r = 0; r < n; ++r) got[static_cast<std::size_t>(r)][0] = own[static_cast<std::size_t>(r)];
      for (int d = dims - 1; d >= 0; --d) {
        const std::vector<int> distances = forwarded(n, d);
        for (int r = 0; r < n; ++r) {
          const int to = mod(r + (1 << d), n), from = mod(r - (1 << d), n);
          for (std::size_t i = 0; i < distances.size(); ++i) {
            const int s = distances[i];
            // The first block of a message pays the step latency; the loops after the first stream.
            const std::uint32_t steps = loop == 0 && i % static_cast<std::size_t>(shape.aggregation) == 0 ? 1 : 0;
            b.send(r, to, out(at(mod(r - s, n), piece)), c, {got[static_cast<std::size_t>(r)][static_cast<std::size_t>(s)]}, steps);
            const int arrived = s + (1 << d);  // its distance at the receiver
            got[static_cast<std::size_t>(r)][static_cast<std::size_t>(arrived)] =
                b.recv(r, from, out(at(mod(r - arrived, n), piece)), c);
          }
        }
      }
    }
  }
}

void pat_reduce_scatter(Builder& b, const PatShape& shape) {
  const int n = b.nranks();
  const int dims = dims_of(n);
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  const Range mine{0, block};
  const auto at = [&](int dest, Range piece) { return Range{static_cast<std::uint64_t>(dest) * block + piece.offset, piece.bytes}; };
  if (n == 1) {
    b.copy(0, in(mine), out(mine));
    return;
  }
  for (int r = 0; r < n; ++r) b.need_scratch(r, b.request().bytes);
  // partial[r][s]: rank r's last op on its partial sum of block r − s (kNone: still its input).
  std::vector<std::vector<std::uint32_t>> partial(static_cast<std::size_t>(n), std::vector<std::uint32_t>(static_cast<std::size_t>(n)));
  for (int c = 0; c < b.request().channels; ++c) {
    const Range share = part(mine, b.element_size(), b.request().channels, c);
    for (int loop = 0; loop < shape.loops; ++loop) {
      const Range piece = part(share, b.element_size(), shape.loops, loop);
      for (auto& row : partial) std::fill(row.begin(), row.end(), kNone);
      for (int d = 0; d < dims; ++d) {
        const std::vector<int> distances = forwarded(n, d);
        for (int r = 0; r < n; ++r) {
          const int to = mod(r - (1 << d), n), from = mod(r + (1 << d), n);
          for (std::size_t i = 0; i < distances.size(); ++i) {
            const std::uint32_t steps = loop == 0 && i % static_cast<std::size_t>(shape.aggregation) == 0 ? 1 : 0;
            // Send the partial sum at distance s' + 2^d (its contributions from lower dimensions
            // are in): from the input when nothing was added to it, else from scratch.
            const int s_send = distances[i] + (1 << d);
            const auto& sent = partial[static_cast<std::size_t>(r)][static_cast<std::size_t>(s_send)];
            const Range block_piece = at(mod(r - s_send, n), piece);
            b.send(r, to, sent == kNone ? in(block_piece) : scratch(block_piece), c, {sent}, steps);
            // Receive the sender's partial of our block at distance s' (its distance there is
            // s' + 2^d): into scratch, or the output for our own block (s' = 0).
            const int s_keep = distances[i];
            auto& kept = partial[static_cast<std::size_t>(r)][static_cast<std::size_t>(s_keep)];
            const Range keep_piece = at(mod(r - s_keep, n), piece);
            const Slice local = kept == kNone ? in(keep_piece) : s_keep == 0 ? out(piece) : scratch(keep_piece);
            const Slice dst = s_keep == 0 ? out(piece) : scratch(keep_piece);
            kept = b.recv_reduce(r, from, local, dst, c, {kept});
          }
        }
      }
    }
  }
}

}  // namespace

void pat(Builder& b) {
  const PatShape shape = pat_shape(b.request());
  if (b.request().collective == models::Collective::AllGather) pat_all_gather(b, shape);
  else pat_reduce_scatter(b, shape);
}

std::string pat_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AllGather && r.collective != models::Collective::ReduceScatter) {
    return "pat implements AllGather and ReduceScatter";
  }
  // n·(n − 1) block sends per loop, n·log n of them at once: past this the engines' flow sharing
  // takes minutes (512 ranks: over a minute for one size on 2 cores), so it is refused, not hung.
  if (r.nranks > kPatMaxRanks) return fmt::format("pat is simulated up to {} ranks (its n·(n−1) sends per loop), found {}", kPatMaxRanks, r.nranks);
  return "";
}

double pat_ops(const AlgorithmRequest& r) {
  // Per channel and loop every rank sends n − 1 blocks and receives n − 1; AllGather adds one
  // copy per rank.
  const double n = r.nranks;
  const double loops = pat_shape(r).loops;
  // AllGather adds one copy per rank; a ReduceScatter of one rank is one copy.
  if (r.nranks == 1) return 1;
  const double per_rank = 2 * (n - 1) * r.channels * loops + (r.collective == models::Collective::AllGather ? 1 : 0);
  return n * per_rank;
}

// NCCL connects PAT only on communicators with one rank per node (init.cc: maxLocalRanks == 1)
// and its tuner considers it only then (tuning.cc ncclPatEnable: nNodes == nRanks).
std::string pat_placement_refusal(const GroupShape& g) {
  return g.nodes == g.ranks ? "" : "pat needs one rank per node (NCCL connects PAT only when every node holds one rank)";
}
bool pat_nccl_placement(const GroupShape& g) { return g.nodes == g.ranks && g.ranks > 1; }

}  // namespace ccsim::planner::detail
