#include "models/collective/schedule.hpp"

#include "support/hash.hpp"

#include <limits>
#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace ccsim::models {

std::uint32_t RankProgram::add(Op op, std::span<const std::uint32_t> deps) {
  const auto index = static_cast<std::uint32_t>(ops.size());
  op.dep_begin = static_cast<std::uint32_t>(dep_pool.size());
  op.dep_count = 0;
  for (std::uint32_t d : deps) {
    if (d >= index) throw std::logic_error("RankProgram::add: dependency on a later op");
    dep_pool.push_back(d);
    ++op.dep_count;
  }
  ops.push_back(op);
  return index;
}

std::uint64_t Op::bytes() const { return is_send() ? src.bytes : dst.bytes; }

std::size_t Schedule::op_count() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.ops.size();
  return n;
}

std::vector<std::uint64_t> Schedule::bytes_sent() const {
  std::vector<std::uint64_t> sent(ranks.size(), 0);
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const Op& op : ranks[r].ops)
      if (op.is_send()) sent[r] += op.src.bytes;
  return sent;
}

std::string_view to_string(Granularity g) { return g == Granularity::Step ? "step" : "phase"; }

std::optional<Granularity> parse_granularity(std::string_view s) {
  for (Granularity g : {Granularity::Step, Granularity::Phase})
    if (to_string(g) == s) return g;
  return std::nullopt;
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::Send: return "send";
    case OpKind::Recv: return "recv";
    case OpKind::RecvReduce: return "recv-reduce";
    case OpKind::Copy: return "copy";
    case OpKind::Reduce: return "reduce";
    case OpKind::SwitchSend: return "switch-send";
    case OpKind::SwitchRecv: return "switch-recv";
  }
  return "?";
}

Schedule replicate(const Schedule& s, int copies) {
  if (copies < 1) throw std::invalid_argument("replicate: at least one copy");
  if (static_cast<std::int64_t>(s.nranks) * copies > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("replicate: too many ranks");
  }
  if (copies == 1) return s;
  std::uint32_t pools = 0;  // latency pools are numbered from 1 on sends; 0 = none
  for (const auto& rank : s.ranks)
    for (const auto& op : rank.ops)
      if (op.kind == OpKind::Send) pools = std::max(pools, op.tag);
  const auto groups = static_cast<std::uint32_t>(s.switch_groups.size());
  Schedule out = s;
  out.nranks = s.nranks * copies;
  out.ranks.clear();
  out.ranks.reserve(static_cast<std::size_t>(out.nranks));
  out.switch_groups.clear();
  for (int j = 0; j < copies; ++j) {
    out.switch_groups.insert(out.switch_groups.end(), s.switch_groups.begin(), s.switch_groups.end());
    for (const auto& rank : s.ranks) {
      RankProgram copy = rank;
      for (Op& op : copy.ops) {
        if (op.peer >= 0) op.peer += j * s.nranks;
        if (op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv) {
          op.tag += static_cast<std::uint32_t>(j) * groups;
        } else if (op.kind == OpKind::Send && op.tag > 0) {
          op.tag += static_cast<std::uint32_t>(j) * pools;
        }
      }
      out.ranks.push_back(std::move(copy));
    }
  }
  return out;
}

namespace {

std::uint64_t input_value(int rank, std::uint64_t element) {
  return support::splitmix64((static_cast<std::uint64_t>(rank) << 40) ^ element);
}

constexpr std::uint64_t kPoison = 0xDEADBEEFDEADBEEFULL;

class Executor {
 public:
  explicit Executor(const Schedule& s) : s_(s), n_(s.nranks), e_(s.element_size) {}

  VerifyResult run() {
    if (s_.granularity != Granularity::Step) return fail("phase-granularity schedules are timed, not verified");
    if (static_cast<int>(s_.ranks.size()) != n_) return fail(fmt::format("{} rank programs for {} ranks", s_.ranks.size(), n_));
    if (e_ == 0) return fail("element size 0");
    const BufferSizes sizes = buffer_sizes(s_.collective, s_.bytes, n_);
    if (sizes.input % e_ != 0 || sizes.output % e_ != 0) return fail("buffer sizes are not whole elements");
    in_.resize(n_);
    out_.resize(n_);
    scratch_.resize(n_);
    for (int r = 0; r < n_; ++r) {
      in_[r].resize(sizes.input / e_);
      for (std::uint64_t i = 0; i < in_[r].size(); ++i) in_[r][i] = input_value(r, i);
      out_[r].assign(sizes.output / e_, kPoison);
      if (s_.ranks[r].scratch_bytes % e_ != 0) return fail(fmt::format("rank {}: scratch is not whole elements", r));
      scratch_[r].assign(s_.ranks[r].scratch_bytes / e_, kPoison);
    }
    if (auto error = number_messages(); !error.empty()) return fail(error);
    if (auto error = execute(); !error.empty()) return fail(error);
    return check();
  }

 private:
  using Key = std::tuple<int, int, int, std::uint32_t>;  // src, dst, channel, sequence

  static VerifyResult fail(std::string msg) { return {false, std::move(msg)}; }

  std::string number_messages() {
    seq_.resize(n_);
    std::map<std::tuple<int, int, int>, std::uint32_t> send_count, recv_count;
    for (int r = 0; r < n_; ++r) {
      seq_[r].resize(s_.ranks[r].ops.size());
      for (std::size_t i = 0; i < s_.ranks[r].ops.size(); ++i) {
        const Op& op = s_.ranks[r].ops[i];
        for (std::uint32_t d : s_.ranks[r].deps(i))
          if (d >= i) return fmt::format("rank {} op {}: depends on a later op {}", r, i, d);
        if (op.kind == OpKind::Send || op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce) {
          if (op.peer < 0 || op.peer >= n_ || op.peer == r) return fmt::format("rank {} op {}: bad peer {}", r, i, op.peer);
        }
        if (op.kind == OpKind::Send) seq_[r][i] = send_count[{r, op.peer, op.channel}]++;
        if (op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce) seq_[r][i] = recv_count[{op.peer, r, op.channel}]++;
        if ((op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv) && op.tag >= s_.switch_groups.size()) {
          return fmt::format("rank {} op {}: unknown switch group {}", r, i, op.tag);
        }
      }
    }
    if (send_count != recv_count) return "sends and receives do not pair up (counts per rank pair and channel differ)";
    return {};
  }

  std::vector<std::uint64_t>* buffer(int rank, BufferKind kind) {
    switch (kind) {
      case BufferKind::Input: return &in_[rank];
      case BufferKind::Output: return &out_[rank];
      case BufferKind::Scratch: return &scratch_[rank];
    }
    return nullptr;
  }

  /// Element range of a slice; empty error string when valid.
  std::string range(int rank, std::size_t index, const Slice& sl, std::uint64_t& first, std::uint64_t& count) {
    if (sl.offset % e_ != 0 || sl.bytes % e_ != 0) return fmt::format("rank {} op {}: slice not element-aligned", rank, index);
    first = sl.offset / e_;
    count = sl.bytes / e_;
    if (first + count > buffer(rank, sl.buffer)->size()) {
      return fmt::format("rank {} op {}: slice [{}, {}) bytes outside its buffer of {} bytes", rank, index, sl.offset,
                         sl.offset + sl.bytes, buffer(rank, sl.buffer)->size() * e_);
    }
    return {};
  }

  std::vector<std::uint64_t> read(int rank, const Slice& sl, std::uint64_t first, std::uint64_t count) {
    const auto& b = *buffer(rank, sl.buffer);
    return {b.begin() + static_cast<std::ptrdiff_t>(first), b.begin() + static_cast<std::ptrdiff_t>(first + count)};
  }

  /// Runs op i of rank r if it can run now. Returns true when it ran; sets error on a fault.
  bool step(int r, std::size_t i, std::string& error) {
    const Op& op = s_.ranks[r].ops[i];
    std::uint64_t sf = 0, sc = 0, df = 0, dc = 0;
    const bool reads = op.kind != OpKind::Recv && op.kind != OpKind::SwitchRecv;
    const bool writes = !op.is_send();
    if (reads && (error = range(r, i, op.src, sf, sc), !error.empty())) return false;
    if (writes && (error = range(r, i, op.dst, df, dc), !error.empty())) return false;
    if (reads && writes && op.kind != OpKind::Recv && sc != dc) {
      error = fmt::format("rank {} op {} ({}): source and destination sizes differ", r, i, to_string(op.kind));
      return false;
    }
    switch (op.kind) {
      case OpKind::Send: messages_[{r, op.peer, op.channel, seq_[r][i]}] = read(r, op.src, sf, sc); return true;
      case OpKind::SwitchSend: {
        auto& group = switch_sum_[op.tag];
        const auto data = read(r, op.src, sf, sc);
        if (group.empty()) group.assign(data.size(), 0);
        if (group.size() != data.size()) {
          error = fmt::format("rank {} op {}: switch group {} mixes sizes", r, i, op.tag);
          return false;
        }
        for (std::size_t k = 0; k < data.size(); ++k) group[k] += data[k];
        switch_count_[op.tag] += 1;
        return true;
      }
      case OpKind::SwitchRecv: {
        if (switch_count_[op.tag] < s_.switch_groups[op.tag]) return false;
        const auto& group = switch_sum_[op.tag];
        if (group.size() != dc) {
          error = fmt::format("rank {} op {}: receives {} elements from switch group {} of {}", r, i, dc, op.tag, group.size());
          return false;
        }
        auto& b = *buffer(r, op.dst.buffer);
        for (std::uint64_t k = 0; k < dc; ++k) b[df + k] = group[k];
        return true;
      }
      case OpKind::Recv:
      case OpKind::RecvReduce: {
        const auto it = messages_.find({op.peer, r, op.channel, seq_[r][i]});
        if (it == messages_.end()) return false;
        if (it->second.size() != dc) {
          error = fmt::format("rank {} op {} ({} from {}): expects {} bytes, message has {}", r, i, to_string(op.kind),
                              op.peer, dc * e_, it->second.size() * e_);
          return false;
        }
        const auto local = op.kind == OpKind::RecvReduce ? read(r, op.src, sf, sc) : std::vector<std::uint64_t>(dc, 0);
        auto& b = *buffer(r, op.dst.buffer);
        for (std::uint64_t k = 0; k < dc; ++k) b[df + k] = local[k] + it->second[k];
        messages_.erase(it);
        return true;
      }
      case OpKind::Copy:
      case OpKind::Reduce: {
        const auto data = read(r, op.src, sf, sc);
        auto& b = *buffer(r, op.dst.buffer);
        for (std::uint64_t k = 0; k < dc; ++k) b[df + k] = (op.kind == OpKind::Reduce ? b[df + k] : 0) + data[k];
        return true;
      }
    }
    return false;
  }

  std::string execute() {
    std::vector<std::vector<char>> done(n_);
    std::vector<std::size_t> first_pending(n_, 0);
    std::size_t remaining = 0;
    for (int r = 0; r < n_; ++r) {
      done[r].assign(s_.ranks[r].ops.size(), 0);
      remaining += s_.ranks[r].ops.size();
    }
    while (remaining > 0) {
      bool progress = false;
      for (int r = 0; r < n_; ++r) {
        const auto& ops = s_.ranks[r].ops;
        for (std::size_t i = first_pending[r]; i < ops.size(); ++i) {
          if (done[r][i]) continue;
          bool ready = true;
          for (std::uint32_t d : s_.ranks[r].deps(i)) ready = ready && done[r][d];
          if (!ready) continue;
          std::string error;
          if (step(r, i, error)) {
            done[r][i] = 1;
            --remaining;
            progress = true;
          } else if (!error.empty()) {
            return error;
          }
        }
        while (first_pending[r] < ops.size() && done[r][first_pending[r]]) ++first_pending[r];
      }
      if (!progress) {
        for (int r = 0; r < n_; ++r) {
          if (first_pending[r] < s_.ranks[r].ops.size()) {
            const Op& op = s_.ranks[r].ops[first_pending[r]];
            return fmt::format("deadlock: rank {} op {} ({} peer {}) can never run", r, first_pending[r], to_string(op.kind), op.peer);
          }
        }
      }
    }
    if (!messages_.empty()) {
      const auto& [key, data] = *messages_.begin();
      return fmt::format("message from rank {} to rank {} on channel {} never received", std::get<0>(key), std::get<1>(key),
                         std::get<2>(key));
    }
    return {};
  }

  VerifyResult check() {
    const std::uint64_t in_count = in_.empty() ? 0 : in_[0].size();
    const std::uint64_t out_count = out_.empty() ? 0 : out_[0].size();
    const auto sum = [&](std::uint64_t i) {
      std::uint64_t total = 0;
      for (int j = 0; j < n_; ++j) total += in_[j][i];
      return total;
    };
    for (int r = 0; r < n_; ++r) {
      if (s_.collective == Collective::Reduce && r != s_.root) continue;
      for (std::uint64_t i = 0; i < out_count; ++i) {
        std::uint64_t expected = 0;
        switch (s_.collective) {
          case Collective::AllReduce:
          case Collective::Reduce: expected = sum(i); break;
          case Collective::ReduceScatter: expected = sum(static_cast<std::uint64_t>(r) * out_count + i); break;
          case Collective::AllGather: expected = in_[i / in_count][i % in_count]; break;
          case Collective::Broadcast: expected = in_[s_.root][i]; break;
          case Collective::AlltoAll: {
            const std::uint64_t block = out_count / n_;
            expected = in_[i / block][static_cast<std::uint64_t>(r) * block + i % block];
            break;
          }
          case Collective::SendRecv: expected = in_[(r + n_ - 1) % n_][i]; break;
        }
        if (out_[r][i] != expected) {
          return fail(fmt::format("{} {} over {} ranks: rank {} output element {} is wrong{}", s_.algorithm,
                                  to_string(s_.collective), n_, r, i, out_[r][i] == kPoison ? " (never written)" : ""));
        }
      }
    }
    return {};
  }

  const Schedule& s_;
  int n_;
  std::uint32_t e_;
  std::vector<std::vector<std::uint64_t>> in_, out_, scratch_;
  std::vector<std::vector<std::uint32_t>> seq_;
  std::map<Key, std::vector<std::uint64_t>> messages_;
  std::map<std::uint32_t, std::vector<std::uint64_t>> switch_sum_;
  std::map<std::uint32_t, int> switch_count_;
};

}  // namespace

VerifyResult verify(const Schedule& schedule) {
  if (schedule.collective == Collective::AlltoAll) {
    const auto count = schedule.bytes / std::max<std::uint32_t>(1, schedule.element_size);
    if (count % static_cast<std::uint64_t>(schedule.nranks) != 0) {
      return {false, "AlltoAll needs an element count divisible by the rank count"};
    }
  }
  return Executor(schedule).run();
}

}  // namespace ccsim::models
