#include "models/collective/collective.hpp"

#include <array>
#include <cctype>
#include <string>

namespace ccsim::models {

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "AllReduce";
    case Collective::ReduceScatter: return "ReduceScatter";
    case Collective::AllGather: return "AllGather";
    case Collective::Broadcast: return "Broadcast";
    case Collective::Reduce: return "Reduce";
    case Collective::AlltoAll: return "AlltoAll";
    case Collective::SendRecv: return "SendRecv";
  }
  return "?";
}

std::string_view nccl_tests_name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AlltoAll: return "alltoall";
    case Collective::SendRecv: return "sendrecv";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view s) {
  std::string key;
  for (char ch : s)
    if (ch != '_' && ch != '-') key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                       Collective::Reduce, Collective::AlltoAll, Collective::SendRecv}) {
    std::string name;
    for (char ch : to_string(c)) name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (name == key) return c;
  }
  return std::nullopt;
}

double busbw_factor(Collective c, int n) {
  switch (c) {
    case Collective::AllReduce: return 2.0 * (n - 1) / n;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AlltoAll: return static_cast<double>(n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return 1.0;
  }
  return 1.0;
}

BufferSizes buffer_sizes(Collective c, std::uint64_t bytes, int n) {
  const auto per_rank = bytes / static_cast<std::uint64_t>(n);
  switch (c) {
    case Collective::ReduceScatter: return {bytes, per_rank};
    case Collective::AllGather: return {per_rank, bytes};
    default: return {bytes, bytes};
  }
}

bool has_root(Collective c) { return c == Collective::Broadcast || c == Collective::Reduce; }

bool sized_per_rank(Collective c) {
  return c == Collective::ReduceScatter || c == Collective::AllGather || c == Collective::AlltoAll;
}

std::uint64_t size_granule(Collective c, std::uint32_t element_bytes, int nranks) {
  return static_cast<std::uint64_t>(element_bytes) * (sized_per_rank(c) ? static_cast<std::uint64_t>(nranks) : 1);
}

}  // namespace ccsim::models
