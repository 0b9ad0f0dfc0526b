// vLLM's custom all-reduce kernels as Schedules, and vLLM's choice between them and NCCL.
// Rules and sources: vllm_allreduce.hpp.

#include "planner/algorithms/vllm_allreduce.hpp"

#include <stdexcept>
#include <string>

#include "planner/algorithms/generators.hpp"
#include "planner/algorithms/registry.hpp"

namespace ccsim::planner {

std::string_view to_string(VllmAllReduce a) {
  if (const auto entry = vllm_algorithm(a)) return to_string(*entry);
  return "nccl";
}

std::optional<Algorithm> vllm_algorithm(VllmAllReduce a) {
  switch (a) {
    case VllmAllReduce::Nccl: return std::nullopt;
    case VllmAllReduce::OneShot: return Algorithm::VllmOneShot;
    case VllmAllReduce::TwoShot: return Algorithm::VllmTwoShot;
  }
  return std::nullopt;
}

bool vllm_custom_allreduce_enabled(const VllmGroup& g) {
  if (g.disabled || !g.same_node) return false;
  // _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]; world size 1 needs no all-reduce.
  if (g.world_size != 2 && g.world_size != 4 && g.world_size != 6 && g.world_size != 8) return false;
  // "not supported on more than two PCIe-only GPUs"
  if (g.world_size > 2 && !g.fully_connected) return false;
  return g.p2p;  // _can_p2p
}

VllmAllReduce vllm_allreduce_choice(const VllmGroup& g, std::uint64_t bytes) {
  if (!vllm_custom_allreduce_enabled(g)) return VllmAllReduce::Nccl;
  // should_custom_ar: multiples of 16 bytes, below max_size, world 2 or fully connected.
  if (bytes % 16 != 0 || bytes >= kVllmCustomAllReduceMaxSize) return VllmAllReduce::Nccl;
  if (g.world_size == 2) return VllmAllReduce::OneShot;
  // custom_all_reduce.cuh, REDUCE_CASE: 1-stage below 512 KiB on ≤ 4 GPUs, 256 KiB on ≤ 8.
  if ((g.world_size <= 4 && bytes < 512 * 1024) || (g.world_size <= 8 && bytes < 256 * 1024)) return VllmAllReduce::OneShot;
  return VllmAllReduce::TwoShot;
}

models::Schedule vllm_custom_allreduce(VllmAllReduce kind, int nranks, std::uint64_t bytes, std::uint32_t element_size) {
  if (kind == VllmAllReduce::Nccl) throw std::invalid_argument("vllm_custom_allreduce: NCCL has no custom-kernel schedule");
  if (nranks < 1) throw std::invalid_argument("vllm_custom_allreduce: needs at least one rank");
  if (element_size == 0 || bytes % element_size != 0) {
    throw std::invalid_argument("vllm_custom_allreduce: the size must be a whole number of elements");
  }
  AlgorithmRequest req;
  req.collective = models::Collective::AllReduce;
  req.nranks = nranks;
  req.bytes = bytes;
  req.element_size = element_size;
  req.channels = kind == VllmAllReduce::TwoShot ? 2 : 1;  // stage 2 on its own channel: its transfers never match stage 1's
  detail::Builder b(req, std::string(to_string(kind)));
  using detail::in;
  using detail::out;
  using detail::Range;
  using detail::scratch;
  const int n = nranks;
  const Range all{0, bytes};
  if (kind == VllmAllReduce::OneShot) {
    // cross_device_reduce_1stage: each rank loads the whole vector from every peer's
    // registered buffer and writes the sum to its own output.
    for (int r = 0; r < n; ++r) {
      if (n > 1) b.need_scratch(r, static_cast<std::uint64_t>(n - 1) * bytes);
      std::uint32_t last = b.copy(r, in(all), out(all));
      for (int k = 1; k < n; ++k) {
        const int peer = (r + k) % n;
        b.send(r, (r + n - k) % n, in(all), 0);  // the peer r − k loads this rank's input
        const Range slot{static_cast<std::uint64_t>(k - 1) * bytes, bytes};
        const std::uint32_t got = b.recv(r, peer, scratch(slot), 0);
        last = b.reduce(r, scratch(slot), out(all), {last, got});
      }
    }
    return b.take();
  }
  // cross_device_reduce_2stage: rank r reduces block r from all peers (reduce-scatter), then
  // every rank loads the other reduced blocks (all-gather), after a barrier between stages.
  const auto blk = [&](int j) { return detail::part(all, element_size, n, j); };
  std::vector<std::uint32_t> reduced(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const Range mine = blk(r);
    if (n > 1) b.need_scratch(r, static_cast<std::uint64_t>(n - 1) * mine.bytes);
    std::uint32_t last = b.copy(r, in(mine), out(mine));
    for (int k = 1; k < n; ++k) {
      const int peer = (r + k) % n;
      const int reader = (r + n - k) % n;
      b.send(r, reader, in(blk(reader)), 0);
      const Range slot{static_cast<std::uint64_t>(k - 1) * mine.bytes, mine.bytes};
      const std::uint32_t got = b.recv(r, peer, scratch(slot), 0);
      last = b.reduce(r, scratch(slot), out(mine), {last, got});
    }
    reduced[static_cast<std::size_t>(r)] = last;
  }
  for (int r = 0; r < n; ++r) {
    for (int k = 1; k < n; ++k) {
      const int peer = (r + k) % n;
      const int reader = (r + n - k) % n;
      b.send(r, reader, out(blk(r)), 1, {reduced[static_cast<std::size_t>(r)]});
      b.recv(r, peer, out(blk(peer)), 1, {reduced[static_cast<std::size_t>(r)]});
    }
  }
  return b.take();
}

namespace detail {

namespace {
std::string vllm_refusal(Algorithm a, const AlgorithmRequest& r) {
  if (r.collective != models::Collective::AllReduce) return std::string(to_string(a)) + " implements AllReduce";
  if (r.granularity == models::Granularity::Phase) return std::string(to_string(a)) + " has no phase granularity";
  return {};
}
}  // namespace

models::Schedule vllm_one_shot(const AlgorithmRequest& r) {
  return vllm_custom_allreduce(VllmAllReduce::OneShot, r.nranks, r.bytes, r.element_size);
}

models::Schedule vllm_two_shot(const AlgorithmRequest& r) {
  return vllm_custom_allreduce(VllmAllReduce::TwoShot, r.nranks, r.bytes, r.element_size);
}

std::string vllm_one_shot_refusal(const AlgorithmRequest& r) { return vllm_refusal(Algorithm::VllmOneShot, r); }
std::string vllm_two_shot_refusal(const AlgorithmRequest& r) { return vllm_refusal(Algorithm::VllmTwoShot, r); }

double vllm_one_shot_ops(const AlgorithmRequest& r) {
  // Per rank a copy, then per peer a send, a receive and a reduction.
  const double n = r.nranks;
  return n * (1 + 3 * (n - 1));
}

double vllm_two_shot_ops(const AlgorithmRequest& r) {
  // Per rank stage 1 as one-shot's (a copy, per peer a send, a receive and a reduction), and
  // stage 2 a send and a receive per peer.
  const double n = r.nranks;
  return n * (1 + 5 * (n - 1));
}

}  // namespace detail

}  // namespace ccsim::planner
