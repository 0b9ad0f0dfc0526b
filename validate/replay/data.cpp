#include "validate/replay/data.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace ccsim::validate::replay {

namespace {

/// Calls f(T{}) with the C++ type of `t`.
template <class F>
decltype(auto) dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::Int8: return f(std::int8_t{});
    case DataType::Uint8: return f(std::uint8_t{});
    case DataType::Int32: return f(std::int32_t{});
    case DataType::Uint32: return f(std::uint32_t{});
    case DataType::Int64: return f(std::int64_t{});
    case DataType::Uint64: return f(std::uint64_t{});
    case DataType::Float: return f(float{});
    case DataType::Double: return f(double{});
  }
  return f(float{});
}

/// The element type's value of an integer: 8-bit types wrap modulo 2^8 (two's complement for
/// int8, defined since C++20).
template <class T>
T as(std::int64_t v) {
  if constexpr (sizeof(T) == 1) return static_cast<T>(static_cast<std::uint8_t>(v & 0xff));
  return static_cast<T>(v);
}

template <class T>
T sum_over_ranks(int nranks, std::uint64_t element) {
  // Sequential sum in the element type: exact for every type (integers below 2^24, or wrapping
  // 8-bit integers whose sum modulo 2^8 does not depend on order).
  T total = as<T>(0);
  for (int j = 0; j < nranks; ++j) total = as<T>(static_cast<std::int64_t>(total) + input_value(j, element));
  return total;
}

}  // namespace

bool parse_data_type(std::string_view name, DataType& out) {
  static const std::pair<std::string_view, DataType> names[] = {
      {"int8", DataType::Int8},     {"char", DataType::Int8},     {"uint8", DataType::Uint8},   {"int32", DataType::Int32},
      {"int", DataType::Int32},     {"uint32", DataType::Uint32}, {"int64", DataType::Int64},   {"uint64", DataType::Uint64},
      {"float", DataType::Float},   {"float32", DataType::Float}, {"double", DataType::Double}, {"float64", DataType::Double},
  };
  for (const auto& [n, t] : names) {
    if (n == name) {
      out = t;
      return true;
    }
  }
  return false;
}

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::Int8: return "int8";
    case DataType::Uint8: return "uint8";
    case DataType::Int32: return "int32";
    case DataType::Uint32: return "uint32";
    case DataType::Int64: return "int64";
    case DataType::Uint64: return "uint64";
    case DataType::Float: return "float";
    case DataType::Double: return "double";
  }
  return "?";
}

std::uint32_t size_of(DataType t) {
  return dispatch(t, [](auto v) { return static_cast<std::uint32_t>(sizeof(v)); });
}

double SizeResult::mean_time() const {
  if (iteration_times.empty()) return 0;
  double total = 0;
  for (double t : iteration_times) total += t;
  return total / static_cast<double>(iteration_times.size());
}

double SizeResult::median_time() const {
  if (iteration_times.empty()) return 0;
  std::vector<double> t = iteration_times;
  std::sort(t.begin(), t.end());
  const std::size_t m = t.size() / 2;
  return t.size() % 2 == 1 ? t[m] : 0.5 * (t[m - 1] + t[m]);
}

std::int64_t input_value(int rank, std::uint64_t element) {
  const std::uint64_t v = static_cast<std::uint64_t>(rank) * 29 + element * 7 + element / 61;
  return 1 + static_cast<std::int64_t>(v % 61);
}

void fill_input(DataType t, int rank, void* dst, std::uint64_t count) {
  dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(dst);
    for (std::uint64_t i = 0; i < count; ++i) p[i] = as<T>(input_value(rank, i));
  });
}

void fill_poison(DataType t, void* dst, std::uint64_t count) {
  dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(dst);
    // -1 (all ones for unsigned types): no output is negative, and the 8-bit sums of positive
    // inputs reach 0xff only by chance (the check then misses that element, as nccl-tests' would).
    std::fill(p, p + count, as<T>(-1));
  });
}

void add(DataType t, void* dst, const void* a, const void* b, std::uint64_t count) {
  dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    T* d = static_cast<T*>(dst);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    if constexpr (sizeof(T) == 1) {
      for (std::uint64_t i = 0; i < count; ++i) d[i] = as<T>(static_cast<std::int64_t>(x[i]) + y[i]);
    } else {
      for (std::uint64_t i = 0; i < count; ++i) d[i] = static_cast<T>(x[i] + y[i]);
    }
  });
}

std::uint64_t count_wrong(DataType t, models::Collective collective, int root, int rank, int nranks, const void* out,
                          std::uint64_t count, std::string& first) {
  using models::Collective;
  if (collective == Collective::Reduce && rank != root) return 0;
  return dispatch(t, [&](auto zero) -> std::uint64_t {
    using T = decltype(zero);
    const T* o = static_cast<const T*>(out);
    const std::uint64_t n = static_cast<std::uint64_t>(nranks);
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      T expected{};
      switch (collective) {
        case Collective::AllReduce:
        case Collective::Reduce: expected = sum_over_ranks<T>(nranks, i); break;
        case Collective::ReduceScatter: expected = sum_over_ranks<T>(nranks, static_cast<std::uint64_t>(rank) * count + i); break;
        case Collective::AllGather: expected = as<T>(input_value(static_cast<int>(i / (count / n)), i % (count / n))); break;
        case Collective::Broadcast: expected = as<T>(input_value(root, i)); break;
        case Collective::AlltoAll: {
          const std::uint64_t block = count / n;
          expected = as<T>(input_value(static_cast<int>(i / block), static_cast<std::uint64_t>(rank) * block + i % block));
          break;
        }
        case Collective::SendRecv: expected = as<T>(input_value((rank + nranks - 1) % nranks, i)); break;
      }
      if (o[i] != expected) {
        if (wrong == 0 && first.empty()) {
          first = fmt::format("rank {} element {}: expected {}, found {}", rank, i, static_cast<double>(expected), static_cast<double>(o[i]));
        }
        ++wrong;
      }
    }
    return wrong;
  });
}

RankBufferBytes rank_buffer_bytes(const models::Schedule& s, int rank) {
  const models::BufferSizes sizes = models::buffer_sizes(s.collective, s.bytes, s.nranks);
  return {sizes.input, sizes.output, s.ranks.at(static_cast<std::size_t>(rank)).scratch_bytes};
}

void check_replayable(const models::Schedule& s, DataType t) {
  if (s.granularity != models::Granularity::Step) {
    throw ReplayError("phase-granularity schedules fold pipeline steps into one op and carry no exact data: replay needs step granularity");
  }
  if (static_cast<int>(s.ranks.size()) != s.nranks) {
    throw ReplayError(fmt::format("schedule has {} rank programs for {} ranks", s.ranks.size(), s.nranks));
  }
  const std::uint32_t e = size_of(t);
  if (s.element_size != e) {
    throw ReplayError(fmt::format("schedule was lowered for {}-byte elements, the replay's type {} has {} bytes", s.element_size,
                                  to_string(t), e));
  }
  for (int r = 0; r < s.nranks; ++r) {
    const RankBufferBytes b = rank_buffer_bytes(s, r);
    const auto& ops = s.ranks[static_cast<std::size_t>(r)].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const models::Op& op = ops[i];
      const auto check = [&](const models::Slice& sl, const char* which) {
        const std::uint64_t size = sl.buffer == models::BufferKind::Input    ? b.input
                                   : sl.buffer == models::BufferKind::Output ? b.output
                                                                             : b.scratch;
        if (sl.offset % e != 0 || sl.bytes % e != 0) {
          throw ReplayError(fmt::format("rank {} op {}: {} slice [{}, +{}) is not whole {}-byte elements", r, i, which, sl.offset, sl.bytes, e));
        }
        if (sl.offset > size || sl.bytes > size - sl.offset) {
          throw ReplayError(fmt::format("rank {} op {}: {} slice [{}, +{}) outside its buffer of {} bytes", r, i, which, sl.offset, sl.bytes, size));
        }
      };
      const bool reads = op.kind != models::OpKind::Recv && op.kind != models::OpKind::SwitchRecv;
      const bool writes = !op.is_send();
      if (reads) check(op.src, "source");
      if (writes) check(op.dst, "destination");
      if (reads && writes && op.kind != models::OpKind::Recv && op.src.bytes != op.dst.bytes) {
        throw ReplayError(fmt::format("rank {} op {}: source and destination sizes differ", r, i));
      }
      if ((op.kind == models::OpKind::SwitchSend || op.kind == models::OpKind::SwitchRecv) && op.tag >= s.switch_groups.size()) {
        throw ReplayError(fmt::format("rank {} op {}: unknown in-switch group {}", r, i, op.tag));
      }
      for (std::uint32_t d : s.ranks[static_cast<std::size_t>(r)].deps(i)) {
        if (d >= i) throw ReplayError(fmt::format("rank {} op {}: depends on a later op {}", r, i, d));
      }
    }
  }
  // In-switch groups (NVLS): every contribution and every multicast of a group has one size (the
  // host backend reduces into one buffer of it), and the group gets exactly the contributions
  // its receivers wait for (fewer would never complete).
  (void)switch_group_bytes(s);
  std::vector<int> contributions(s.switch_groups.size(), 0);
  for (const auto& rank : s.ranks)
    for (const models::Op& op : rank.ops)
      if (op.kind == models::OpKind::SwitchSend) ++contributions[op.tag];
  for (std::size_t g = 0; g < s.switch_groups.size(); ++g) {
    if (contributions[g] != s.switch_groups[g]) {
      throw ReplayError(fmt::format("in-switch group {} has {} contributions, its receivers wait for {}", g, contributions[g], s.switch_groups[g]));
    }
  }
  (void)match_messages(s);
}

std::vector<std::uint64_t> switch_group_bytes(const models::Schedule& s) {
  std::vector<std::uint64_t> bytes(s.switch_groups.size(), 0);
  std::vector<char> seen(s.switch_groups.size(), 0);
  for (int r = 0; r < s.nranks; ++r) {
    const auto& ops = s.ranks[static_cast<std::size_t>(r)].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const models::Op& op = ops[i];
      if (op.kind != models::OpKind::SwitchSend && op.kind != models::OpKind::SwitchRecv) continue;
      if (op.tag >= bytes.size()) throw ReplayError(fmt::format("rank {} op {}: unknown in-switch group {}", r, i, op.tag));
      const std::uint64_t b = op.kind == models::OpKind::SwitchSend ? op.src.bytes : op.dst.bytes;
      if (seen[op.tag] && b != bytes[op.tag]) {
        throw ReplayError(fmt::format("rank {} op {}: {} bytes to in-switch group {}, whose other ops move {} bytes", r, i, b, op.tag,
                                      bytes[op.tag]));
      }
      seen[op.tag] = 1;
      bytes[op.tag] = b;
    }
  }
  return bytes;
}

std::vector<std::vector<Partner>> match_messages(const models::Schedule& s) {
  using models::OpKind;
  std::vector<std::vector<Partner>> partner(s.ranks.size());
  // Sends and receives per (source, destination, channel), in op order.
  std::map<std::tuple<int, int, int>, std::vector<std::uint32_t>> sends, recvs;
  for (int r = 0; r < s.nranks; ++r) {
    const auto& ops = s.ranks[static_cast<std::size_t>(r)].ops;
    partner[static_cast<std::size_t>(r)].assign(ops.size(), Partner{});
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      const models::Op& op = ops[i];
      const bool p2p = op.kind == OpKind::Send || op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce;
      if (!p2p) continue;
      if (op.peer < 0 || op.peer >= s.nranks || op.peer == r) throw ReplayError(fmt::format("rank {} op {}: bad peer {}", r, i, op.peer));
      if (op.kind == OpKind::Send) {
        sends[{r, op.peer, op.channel}].push_back(i);
      } else {
        recvs[{op.peer, r, op.channel}].push_back(i);
      }
    }
  }
  for (const auto& [key, list] : sends) {
    const auto& [src, dst, channel] = key;
    const auto it = recvs.find(key);
    const std::size_t received = it == recvs.end() ? 0 : it->second.size();
    if (received != list.size()) {
      throw ReplayError(fmt::format("rank {} sends {} messages to rank {} on channel {}, which receives {}", src, list.size(), dst, channel, received));
    }
    for (std::uint32_t k = 0; k < list.size(); ++k) {
      const std::uint32_t si = list[k], ri = it->second[k];
      const models::Op& send = s.ranks[static_cast<std::size_t>(src)].ops[si];
      const models::Op& recv = s.ranks[static_cast<std::size_t>(dst)].ops[ri];
      if (send.src.bytes != recv.dst.bytes) {
        throw ReplayError(fmt::format("message {} from rank {} to rank {} on channel {}: {} bytes sent, {} expected", k, src, dst, channel,
                                      send.src.bytes, recv.dst.bytes));
      }
      partner[static_cast<std::size_t>(src)][si] = {dst, ri, k};
      partner[static_cast<std::size_t>(dst)][ri] = {src, si, k};
    }
  }
  for (const auto& [key, list] : recvs) {
    if (sends.find(key) == sends.end()) {
      throw ReplayError(fmt::format("rank {} receives {} messages from rank {} on channel {}, which sends none", std::get<1>(key), list.size(),
                                    std::get<0>(key), std::get<2>(key)));
    }
  }
  return partner;
}

}  // namespace ccsim::validate::replay
