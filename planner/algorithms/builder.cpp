#include "planner/algorithms/builder.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

namespace ccsim::planner::detail {

Range part(Range range, std::uint32_t element_size, int n, int i) {
  const std::uint64_t elements = range.bytes / element_size;
  const std::uint64_t base = elements / static_cast<std::uint64_t>(n);
  const std::uint64_t extra = elements % static_cast<std::uint64_t>(n);
  const auto k = static_cast<std::uint64_t>(i);
  const std::uint64_t first = k * base + std::min(k, extra);
  const std::uint64_t count = base + (k < extra ? 1 : 0);
  return {range.offset + first * element_size, count * element_size};
}

Builder::Builder(const AlgorithmRequest& request, std::string algorithm) : request_(request) {
  schedule_.collective = request.collective;
  schedule_.algorithm = std::move(algorithm);
  schedule_.nranks = request.nranks;
  schedule_.root = request.root;
  schedule_.bytes = request.bytes;
  schedule_.element_size = request.element_size;
  schedule_.channels = request.channels;
  schedule_.granularity = request.granularity;
  schedule_.ranks.resize(static_cast<std::size_t>(request.nranks));
}

std::uint32_t Builder::add(int rank, Op op, std::initializer_list<std::uint32_t> deps) {
  if (request_.max_ops != 0 && ++ops_ > request_.max_ops) {
    // The planner names the algorithm and the alternatives; this is the generic backstop.
    throw ScheduleTooLarge({"<command line>", 0, 0}, "schedule", fmt::format("at most {} ops", request_.max_ops),
                           fmt::format("more ({} on {} ranks)", schedule_.algorithm, schedule_.nranks));
  }
  // Distinct dependencies, without kNone, in order; on the stack (a generator passes a
  // handful: this runs once per op of schedules with up to millions of ops).
  constexpr std::size_t kInline = 16;
  std::array<std::uint32_t, kInline> inline_kept{};
  std::vector<std::uint32_t> heap_kept;
  std::uint32_t* kept = inline_kept.data();
  if (deps.size() > kInline) {
    heap_kept.resize(deps.size());
    kept = heap_kept.data();
  }
  std::size_t count = 0;
  for (std::uint32_t d : deps)
    if (d != kNone && std::find(kept, kept + count, d) == kept + count) kept[count++] = d;
  return schedule_.ranks[static_cast<std::size_t>(rank)].add(op, {kept, count});
}

std::uint32_t Builder::send(int rank, int peer, Slice src, int channel, std::initializer_list<std::uint32_t> deps,
                            std::uint32_t steps, std::uint32_t pool) {
  Op op;
  op.kind = OpKind::Send;
  op.tag = pool;
  op.peer = peer;
  op.channel = static_cast<std::uint16_t>(channel);
  op.steps = steps;
  op.src = src;
  return add(rank, op, deps);
}

std::uint32_t Builder::recv(int rank, int peer, Slice dst, int channel, std::initializer_list<std::uint32_t> deps,
                            std::uint32_t steps) {
  Op op;
  op.kind = OpKind::Recv;
  op.peer = peer;
  op.channel = static_cast<std::uint16_t>(channel);
  op.steps = steps;
  op.dst = dst;
  return add(rank, op, deps);
}

std::uint32_t Builder::recv_reduce(int rank, int peer, Slice local, Slice dst, int channel,
                                   std::initializer_list<std::uint32_t> deps) {
  Op op;
  op.kind = OpKind::RecvReduce;
  op.peer = peer;
  op.channel = static_cast<std::uint16_t>(channel);
  op.src = local;
  op.dst = dst;
  return add(rank, op, deps);
}

std::uint32_t Builder::copy(int rank, Slice src, Slice dst, std::initializer_list<std::uint32_t> deps) {
  Op op;
  op.kind = OpKind::Copy;
  op.src = src;
  op.dst = dst;
  return add(rank, op, deps);
}

std::uint32_t Builder::reduce(int rank, Slice src, Slice dst, std::initializer_list<std::uint32_t> deps) {
  Op op;
  op.kind = OpKind::Reduce;
  op.src = src;
  op.dst = dst;
  return add(rank, op, deps);
}

std::uint32_t Builder::switch_send(int rank, std::uint32_t group, Slice src, int channel,
                                   std::initializer_list<std::uint32_t> deps, std::uint32_t steps) {
  Op op;
  op.steps = steps;
  op.kind = OpKind::SwitchSend;
  op.peer = models::kSwitch;
  op.tag = group;
  op.channel = static_cast<std::uint16_t>(channel);
  op.src = src;
  return add(rank, op, deps);
}

std::uint32_t Builder::switch_recv(int rank, std::uint32_t group, Slice dst, int channel,
                                   std::initializer_list<std::uint32_t> deps, std::uint32_t steps) {
  Op op;
  op.steps = steps;
  op.kind = OpKind::SwitchRecv;
  op.peer = models::kSwitch;
  op.tag = group;
  op.channel = static_cast<std::uint16_t>(channel);
  op.dst = dst;
  return add(rank, op, deps);
}

std::uint32_t Builder::switch_group(int contributors) {
  schedule_.switch_groups.push_back(contributors);
  return static_cast<std::uint32_t>(schedule_.switch_groups.size() - 1);
}

void Builder::need_scratch(int rank, std::uint64_t bytes) {
  auto& s = schedule_.ranks[static_cast<std::size_t>(rank)].scratch_bytes;
  s = std::max(s, bytes);
}

}  // namespace ccsim::planner::detail
