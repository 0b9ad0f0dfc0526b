// Recursive doubling and recursive halving-doubling (Rabenseifner), with the standard fold
// for rank counts that are not powers of two: rank e ≥ m = 2^⌊log2 n⌋ hands its data to
// rank e − m before the power-of-two core and gets the result after it (Thakur,
// Rabenseifner, Gropp, IJHPCA 2005).

#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {
namespace {

int floor_pow2(int n) {
  int m = 1;
  while (m * 2 <= n) m *= 2;
  return m;
}

Range span(const std::vector<Range>& parts, int lo, int hi) {
  if (hi <= lo) return {parts[static_cast<std::size_t>(std::min(lo, static_cast<int>(parts.size()) - 1))].offset, 0};
  const Range& a = parts[static_cast<std::size_t>(lo)];
  const Range& z = parts[static_cast<std::size_t>(hi - 1)];
  return {a.offset, z.offset + z.bytes - a.offset};
}

/// AllReduce fold-in: extras give their input to their partner; everyone in the core ends
/// with its partial sum in the output. Returns each core rank's last op.
std::vector<std::uint32_t> fold_in(Builder& b, Range all, int m) {
  const int n = b.nranks();
  std::vector<std::uint32_t> last(static_cast<std::size_t>(n), kNone);
  for (int r = 0; r < m; ++r) {
    const int extra = r + m;
    last[static_cast<std::size_t>(r)] = extra < n ? b.recv_reduce(r, extra, in(all), out(all), 0) : b.copy(r, in(all), out(all));
  }
  for (int e = m; e < n; ++e) b.send(e, e - m, in(all), 0);
  return last;
}

void fold_out(Builder& b, Range all, int m, const std::vector<std::uint32_t>& last) {
  for (int e = m; e < b.nranks(); ++e) {
    b.send(e - m, e, out(all), 0, {last[static_cast<std::size_t>(e - m)]});
    b.recv(e, e - m, out(all), 0);
  }
}

void rd_allreduce(Builder& b) {
  const int n = b.nranks();
  const int m = floor_pow2(n);
  const Range all{0, b.request().bytes};
  auto last = fold_in(b, all, m);
  // Each step sends the running sum and receives the partner's into scratch; the reduction
  // waits for both, so the send never reads a half-updated buffer.
  for (int d = 1; d < m; d *= 2) {
    for (int r = 0; r < m; ++r) {
      b.need_scratch(r, b.request().bytes);
      auto& l = last[static_cast<std::size_t>(r)];
      const std::uint32_t s = b.send(r, r ^ d, out(all), 0, {l});
      const std::uint32_t got = b.recv(r, r ^ d, scratch(all), 0, {l});
      l = b.reduce(r, scratch(all), out(all), {s, got});
    }
  }
  fold_out(b, all, m, last);
}

void hd_allreduce(Builder& b) {
  const int n = b.nranks();
  const int m = floor_pow2(n);
  const Range all{0, b.request().bytes};
  std::vector<Range> parts;
  for (int j = 0; j < m; ++j) parts.push_back(part(all, b.element_size(), m, j));
  auto last = fold_in(b, all, m);
  std::vector<int> lo(static_cast<std::size_t>(m), 0), hi(static_cast<std::size_t>(m), m);
  for (int d = m / 2; d >= 1; d /= 2) {  // ReduceScatter by recursive halving
    for (int r = 0; r < m; ++r) {
      auto& l = lo[static_cast<std::size_t>(r)];
      auto& h = hi[static_cast<std::size_t>(r)];
      const int mid = (l + h) / 2;
      const bool lower = (r & d) == 0;
      const Range give = lower ? span(parts, mid, h) : span(parts, l, mid);
      const Range keep = lower ? span(parts, l, mid) : span(parts, mid, h);
      auto& prev = last[static_cast<std::size_t>(r)];
      b.send(r, r ^ d, out(give), 0, {prev});
      prev = b.recv_reduce(r, r ^ d, out(keep), out(keep), 0, {prev});  // keep and give are disjoint
      (lower ? h : l) = mid;
    }
  }
  for (int d = 1; d < m; d *= 2) {  // AllGather by recursive doubling
    for (int r = 0; r < m; ++r) {
      auto& l = lo[static_cast<std::size_t>(r)];
      auto& h = hi[static_cast<std::size_t>(r)];
      const int width = h - l;
      const bool lower = (r & d) == 0;
      const Range theirs = lower ? span(parts, h, h + width) : span(parts, l - width, l);
      auto& prev = last[static_cast<std::size_t>(r)];
      const std::uint32_t s = b.send(r, r ^ d, out(span(parts, l, h)), 0, {prev});
      const std::uint32_t got = b.recv(r, r ^ d, out(theirs), 0, {prev});
      prev = b.join(r, {s, got});  // joins both: the next step sends both halves
      (lower ? h : l) += lower ? width : -width;
    }
  }
  fold_out(b, all, m, last);
}

/// ReduceScatter (n a power of two) by recursive halving over the n blocks, in scratch.
void hd_reduce_scatter(Builder& b) {
  const int n = b.nranks();
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  std::vector<Range> blocks;
  for (int j = 0; j < n; ++j) blocks.push_back({static_cast<std::uint64_t>(j) * block, block});
  for (int r = 0; r < n; ++r) {
    if (n == 1) {
      b.copy(r, in(blocks[0]), out({0, block}));
      continue;
    }
    b.need_scratch(r, b.request().bytes);
    int l = 0, h = n;
    std::uint32_t last = kNone;
    for (int d = n / 2; d >= 1; d /= 2) {
      const int mid = (l + h) / 2;
      const bool lower = (r & d) == 0;
      const Range give = lower ? span(blocks, mid, h) : span(blocks, l, mid);
      const Range keep = lower ? span(blocks, l, mid) : span(blocks, mid, h);
      const bool first = d == n / 2;
      const std::uint32_t s = b.send(r, r ^ d, first ? in(give) : scratch(give), 0, {last});
      const Slice dst = d == 1 ? out({0, block}) : scratch(keep);
      const std::uint32_t got = b.recv_reduce(r, r ^ d, first ? in(keep) : scratch(keep), dst, 0, {last});
      last = b.join(r, {s, got});  // joins both halves of the step
      (lower ? h : l) = mid;
    }
  }
}

/// AllGather: recursive doubling with the fold; with n a power of two this is also the
/// halving-doubling AllGather.
void rd_all_gather(Builder& b) {
  const int n = b.nranks();
  const int m = floor_pow2(n);
  const std::uint64_t block = b.request().bytes / static_cast<std::uint64_t>(n);
  std::vector<Range> blocks;
  for (int j = 0; j < n; ++j) blocks.push_back({static_cast<std::uint64_t>(j) * block, block});
  const Range mine{0, block};
  std::vector<std::uint32_t> last(static_cast<std::size_t>(n), kNone);
  for (int r = 0; r < m; ++r) {
    last[static_cast<std::size_t>(r)] = b.copy(r, in(mine), out(blocks[static_cast<std::size_t>(r)]));
    if (r + m < n) {
      last[static_cast<std::size_t>(r)] = b.recv(r, r + m, out(blocks[static_cast<std::size_t>(r + m)]), 0, {last[static_cast<std::size_t>(r)]});
    }
  }
  for (int e = m; e < n; ++e) b.send(e, e - m, in(mine), 0);
  // Blocks held after the steps of distance < d: the aligned group of d core ranks and
  // their extras (which form a contiguous run above m).
  const auto group = [&](int r, int d) { return span(blocks, r & ~(d - 1), (r & ~(d - 1)) + d); };
  const auto extras = [&](int r, int d) {
    const int base = r & ~(d - 1);
    const int lo = std::min(n, base + m), hi = std::min(n, base + d + m);
    return span(blocks, lo, hi);
  };
  for (int d = 1; d < m; d *= 2) {
    for (int r = 0; r < m; ++r) {
      const int p = r ^ d;
      auto& l = last[static_cast<std::size_t>(r)];
      const std::uint32_t s1 = b.send(r, p, out(group(r, d)), 0, {l});
      const std::uint32_t s2 = extras(r, d).bytes > 0 ? b.send(r, p, out(extras(r, d)), 0, {l}) : kNone;
      const std::uint32_t r1 = b.recv(r, p, out(group(p, d)), 0, {l});
      const std::uint32_t r2 = extras(p, d).bytes > 0 ? b.recv(r, p, out(extras(p, d)), 0, {l}) : kNone;
      l = b.join(r, {s1, s2, r1, r2});  // the step is done when all four are
    }
  }
  for (int e = m; e < n; ++e) {
    b.send(e - m, e, out({0, b.request().bytes}), 0, {last[static_cast<std::size_t>(e - m)]});
    b.recv(e, e - m, out({0, b.request().bytes}), 0);
  }
}

}  // namespace

void recursive_doubling(Builder& b) {
  if (b.request().collective == models::Collective::AllReduce) rd_allreduce(b);
  else rd_all_gather(b);
}

void halving_doubling(Builder& b) {
  switch (b.request().collective) {
    case models::Collective::AllReduce: hd_allreduce(b); break;
    case models::Collective::ReduceScatter: hd_reduce_scatter(b); break;
    default: rd_all_gather(b); break;
  }
}

namespace {
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace

std::string halving_doubling_refusal(const AlgorithmRequest& r) {
  const models::Collective c = r.collective;
  const bool phase = r.granularity == models::Granularity::Phase;
  if (c == models::Collective::AllReduce) return phase ? "halving-doubling has no phase granularity" : "";
  if ((c == models::Collective::ReduceScatter || c == models::Collective::AllGather) && power_of_two(r.nranks)) {
    return phase ? "halving-doubling has no phase granularity" : "";
  }
  return "halving-doubling implements AllReduce, and ReduceScatter/AllGather on powers of two";
}

std::string recursive_doubling_refusal(const AlgorithmRequest& r) {
  const models::Collective c = r.collective;
  if (c != models::Collective::AllReduce && c != models::Collective::AllGather) {
    return "recursive doubling implements AllReduce and AllGather";
  }
  return r.granularity == models::Granularity::Phase ? "recursive doubling has no phase granularity" : "";
}

}  // namespace ccsim::planner::detail
