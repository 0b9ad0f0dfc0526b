#include "planner/synthesis/msccl_xml.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <limits>
#include <numeric>
#include <pugixml.hpp>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "support/input_error.hpp"

namespace ccsim::planner::synthesis {

using models::BufferKind;
using models::Collective;
using models::Op;
using models::OpKind;
using models::Slice;
using support::InputError;

namespace {

struct CollName {
  Collective c;
  const char* name;
};
constexpr CollName kCollectives[] = {{Collective::AllGather, "allgather"}, {Collective::ReduceScatter, "reducescatter"},
                                     {Collective::AllReduce, "allreduce"}, {Collective::Broadcast, "broadcast"},
                                     {Collective::Reduce, "reduce"},       {Collective::AlltoAll, "alltoall"}};

const char* coll_name(Collective c) {
  for (const CollName& n : kCollectives) {
    if (n.c == c) return n.name;
  }
  throw std::invalid_argument(fmt::format("MSCCL has no form of {}", models::to_string(c)));
}

const char* buffer_name(BufferKind b) { return b == BufferKind::Input ? "i" : (b == BufferKind::Output ? "o" : "s"); }

/// The loop's buffer in MSCCL's chunking: the output for AllGather, the input otherwise.
std::uint64_t loop_bytes(Collective c, std::uint64_t bytes, int n) {
  const models::BufferSizes b = models::buffer_sizes(c, bytes, n);
  return std::max(b.input, b.output);
}

}  // namespace

std::uint64_t msccl_chunk_bytes(const models::Schedule& s) {
  const models::BufferSizes b = models::buffer_sizes(s.collective, s.bytes, s.nranks);
  std::uint64_t g = std::gcd(b.input, b.output);
  for (const models::RankProgram& r : s.ranks) {
    g = std::gcd(g, r.scratch_bytes);
    for (const Op& op : r.ops) {
      for (const Slice& sl : {op.src, op.dst}) {
        if (sl.bytes == 0) continue;
        g = std::gcd(g, std::gcd(sl.offset, sl.bytes));
      }
    }
  }
  return g;
}

std::string to_msccl_xml(const models::Schedule& s, const std::string& name, std::uint64_t min_bytes, std::uint64_t max_bytes) {
  if (s.granularity != models::Granularity::Step) throw std::invalid_argument("to_msccl_xml: a phase-granularity schedule has no MSCCL form");
  const std::uint64_t chunk = msccl_chunk_bytes(s);
  if (chunk == 0) throw std::invalid_argument("to_msccl_xml: an empty schedule");
  const models::BufferSizes b = models::buffer_sizes(s.collective, s.bytes, s.nranks);
  const std::uint64_t per_loop = loop_bytes(s.collective, s.bytes, s.nranks) / chunk;
  const auto limit = [&](const std::string& what) {
    return InputError({"<command line>", 0, 0}, "--out",
                      "a schedule within MSCCL's limits (a count of at most 71 chunks, 256 steps per thread block, 1024 steps per rank)", what,
                      "the chunk grid is already the coarsest on which the trees are exact; fewer ranks (--ranks, --group) make fewer steps");
  };
  pugi::xml_document doc;
  pugi::xml_node algo = doc.append_child("algo");
  algo.append_attribute("name") = name.c_str();
  algo.append_attribute("proto") = "Simple";
  algo.append_attribute("nchannels") = s.channels;
  algo.append_attribute("nchunksperloop") = static_cast<unsigned long long>(per_loop);
  algo.append_attribute("ngpus") = s.nranks;
  algo.append_attribute("coll") = coll_name(s.collective);
  algo.append_attribute("inplace") = 0;
  algo.append_attribute("outofplace") = 1;
  algo.append_attribute("minBytes") = static_cast<unsigned long long>(min_bytes);
  algo.append_attribute("maxBytes") = static_cast<unsigned long long>(max_bytes);
  int channels = 1;
  for (int r = 0; r < s.nranks; ++r) {
    const models::RankProgram& prog = s.ranks[static_cast<std::size_t>(r)];
    // Thread blocks: sends to a peer on a channel, receives from a peer on a channel, local ops;
    // ids in that order (sends by peer, then receives by peer, then local), contiguous.
    using Key = std::tuple<int, int, int, int>;  // (class: 0 send, 1 recv, 2 local; peer; channel)
    std::map<Key, std::vector<std::size_t>> blocks;
    std::vector<Key> key_of(prog.ops.size());
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      if (op.kind == OpKind::SwitchSend || op.kind == OpKind::SwitchRecv) {
        throw std::invalid_argument("to_msccl_xml: in-switch (NVLS) ops have no MSCCL form");
      }
      const bool zero = (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) && op.dst.bytes == 0;
      Key k = op.kind == OpKind::Send ? Key{0, op.peer, op.channel, 0}
              : op.is_recv()          ? Key{1, op.peer, op.channel, 0}
                                      : Key{2, -1, 0, 0};
      if (zero) k = Key{2, -1, 0, 0};
      key_of[i] = k;
      blocks[k].push_back(i);
      channels = std::max(channels, static_cast<int>(op.channel) + 1);
    }
    std::map<Key, int> block_id;
    for (const auto& [k, ops] : blocks) block_id[k] = static_cast<int>(block_id.size());
    // Steps: the op's position in its block, after the nop steps carrying its extra dependencies.
    std::vector<int> step_of(prog.ops.size(), -1);
    std::map<Key, int> next_step;
    std::set<std::pair<int, int>> referenced;
    struct Planned {
      std::vector<std::pair<int, int>> deps;  // (tb, step) outside its own block, sorted
    };
    std::vector<Planned> plan(prog.ops.size());
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const Key k = key_of[i];
      for (std::uint32_t d : prog.deps(i)) {
        if (key_of[d] == k) continue;  // earlier in the same block: implied by the order
        plan[i].deps.push_back({block_id[key_of[d]], step_of[d]});
      }
      std::sort(plan[i].deps.begin(), plan[i].deps.end());
      plan[i].deps.erase(std::unique(plan[i].deps.begin(), plan[i].deps.end()), plan[i].deps.end());
      const int extra = std::max(0, static_cast<int>(plan[i].deps.size()) - 1);
      step_of[i] = next_step[k] + extra;
      next_step[k] = step_of[i] + 1;
      for (const auto& d : plan[i].deps) referenced.insert(d);
    }
    int steps_on_rank = 0;
    for (const auto& [k, n] : next_step) {
      if (n > kMscclMaxStepsPerBlock) throw limit(fmt::format("{} steps in one thread block of rank {}", n, r));
      steps_on_rank += n;
    }
    if (steps_on_rank > kMscclMaxStepsPerRank) throw limit(fmt::format("{} steps on rank {}", steps_on_rank, r));
    const models::BufferSizes bs = b;
    pugi::xml_node gpu = algo.append_child("gpu");
    gpu.append_attribute("id") = r;
    gpu.append_attribute("i_chunks") = static_cast<unsigned long long>(bs.input / chunk);
    gpu.append_attribute("o_chunks") = static_cast<unsigned long long>(bs.output / chunk);
    gpu.append_attribute("s_chunks") = static_cast<unsigned long long>(prog.scratch_bytes / chunk);
    for (const auto& [k, ops] : blocks) {
      const int id = block_id[k];
      pugi::xml_node tb = gpu.append_child("tb");
      tb.append_attribute("id") = id;
      tb.append_attribute("send") = std::get<0>(k) == 0 ? std::get<1>(k) : -1;
      tb.append_attribute("recv") = std::get<0>(k) == 1 ? std::get<1>(k) : -1;
      tb.append_attribute("chan") = std::get<2>(k);
      int step = 0;
      const auto add_step = [&](const char* type, const Slice& src, bool has_src, const Slice& dst, bool has_dst, std::uint64_t bytes,
                                std::pair<int, int> dep, std::uint32_t latency_steps) {
        const std::uint64_t cnt = bytes / chunk;
        if (cnt > static_cast<std::uint64_t>(kMscclMaxCount)) throw limit(fmt::format("a step of {} chunks on rank {}", cnt, r));
        pugi::xml_node st = tb.append_child("step");
        st.append_attribute("s") = step;
        st.append_attribute("type") = type;
        st.append_attribute("srcbuf") = buffer_name(has_src ? src.buffer : dst.buffer);
        st.append_attribute("srcoff") = has_src ? static_cast<long long>(src.offset / chunk) : -1LL;
        st.append_attribute("dstbuf") = buffer_name(has_dst ? dst.buffer : src.buffer);
        st.append_attribute("dstoff") = has_dst ? static_cast<long long>(dst.offset / chunk) : -1LL;
        st.append_attribute("cnt") = static_cast<unsigned long long>(cnt);
        st.append_attribute("depid") = dep.first;
        st.append_attribute("deps") = dep.second;
        st.append_attribute("hasdep") = referenced.count({id, step}) ? 1 : 0;
        if (latency_steps != 1) st.append_attribute("ccsim_steps") = latency_steps;
        ++step;
      };
      for (std::size_t i : ops) {
        const Op& op = prog.ops[i];
        const auto& deps = plan[i].deps;
        for (std::size_t d = 0; d + 1 < deps.size(); ++d) add_step("nop", {}, false, {}, false, 0, deps[d], 1);
        const std::pair<int, int> dep = deps.empty() ? std::pair<int, int>{-1, -1} : deps.back();
        const bool zero = (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) && op.dst.bytes == 0;
        if (zero) {
          add_step("nop", {}, false, {}, false, 0, dep, op.steps);
          continue;
        }
        switch (op.kind) {
          case OpKind::Send: add_step("s", op.src, true, {}, false, op.src.bytes, dep, op.steps); break;
          case OpKind::Recv: add_step("r", {}, false, op.dst, true, op.dst.bytes, dep, op.steps); break;
          case OpKind::RecvReduce: add_step("rrc", op.src, true, op.dst, true, op.dst.bytes, dep, op.steps); break;
          case OpKind::Copy: add_step("cpy", op.src, true, op.dst, true, op.dst.bytes, dep, op.steps); break;
          case OpKind::Reduce: add_step("re", op.src, true, op.dst, true, op.dst.bytes, dep, op.steps); break;
          default: break;
        }
      }
    }
  }
  algo.attribute("nchannels") = std::max(channels, s.channels);
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

namespace {

/// line:column of `offset` in `text` (1-based).
support::SourceLocation where(const std::string& file, const std::string& text, std::ptrdiff_t offset) {
  support::SourceLocation loc{file, 1, 1};
  if (offset < 0) return {file, 0, 0};
  for (std::ptrdiff_t i = 0; i < offset && i < static_cast<std::ptrdiff_t>(text.size()); ++i) {
    if (text[static_cast<std::size_t>(i)] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& file) : text_(text), file_(file) {
    const pugi::xml_parse_result ok = doc_.load_string(text.c_str(), pugi::parse_default);
    if (!ok) throw InputError(where(file, text, ok.offset), "xml", "well-formed XML", ok.description());
    algo_ = doc_.child("algo");
    if (!algo_) throw InputError(where(file, text, 0), "algo", "an MSCCL file: a top-level <algo> element", first_element_name());
  }

  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& key, const std::string& expected, const std::string& found) const {
    throw InputError(where(file_, text_, n.offset_debug()), key, expected, found);
  }

  std::string text_attr(const pugi::xml_node& n, const char* attr, const std::string& key) const {
    const pugi::xml_attribute a = n.attribute(attr);
    if (!a) fail(n, key + "." + attr, fmt::format("a '{}' attribute on <{}>", attr, n.name()), "none");
    return a.value();
  }

  std::int64_t int_attr(const pugi::xml_node& n, const char* attr, const std::string& key, std::int64_t lo, std::int64_t hi) const {
    const std::string v = text_attr(n, attr, key);
    std::int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size()) fail(n, key + "." + attr, "an integer", "'" + v + "'");
    if (x < lo || x > hi) fail(n, key + "." + attr, fmt::format("an integer from {} to {}", lo, hi), v);
    return x;
  }

  const pugi::xml_node& algo() const { return algo_; }
  support::SourceLocation location(const pugi::xml_node& n) const { return where(file_, text_, n.offset_debug()); }

 private:
  std::string first_element_name() const {
    const pugi::xml_node first = doc_.first_child();
    return first ? fmt::format("<{}>", first.name()) : std::string("no element");
  }

  const std::string& text_;
  std::string file_;
  pugi::xml_document doc_;
  pugi::xml_node algo_;
};

MscclHeader header_of(const Reader& x) {
  const pugi::xml_node& a = x.algo();
  MscclHeader h;
  h.where = x.location(a);
  h.name = a.attribute("name").value();
  h.protocol = x.text_attr(a, "proto", "algo");
  if (h.protocol != "Simple" && h.protocol != "LL" && h.protocol != "LL128") x.fail(a, "algo.proto", "Simple, LL or LL128", "'" + h.protocol + "'");
  const std::string coll = x.text_attr(a, "coll", "algo");
  bool known = false;
  for (const CollName& n : kCollectives) {
    if (coll == n.name) {
      h.collective = n.c;
      known = true;
    }
  }
  if (!known) x.fail(a, "algo.coll", "allgather, reducescatter, allreduce, broadcast, reduce or alltoall", "'" + coll + "'");
  h.ranks = static_cast<int>(x.int_attr(a, "ngpus", "algo", 1, 1 << 20));
  h.channels = static_cast<int>(x.int_attr(a, "nchannels", "algo", 1, 64));
  h.chunks_per_loop = x.int_attr(a, "nchunksperloop", "algo", 1, std::int64_t{1} << 40);
  h.in_place = x.int_attr(a, "inplace", "algo", 0, 1) != 0;
  h.out_of_place = x.int_attr(a, "outofplace", "algo", 0, 1) != 0;
  h.min_bytes = static_cast<std::uint64_t>(x.int_attr(a, "minBytes", "algo", 0, std::numeric_limits<std::int64_t>::max()));
  h.max_bytes = static_cast<std::uint64_t>(x.int_attr(a, "maxBytes", "algo", 0, std::numeric_limits<std::int64_t>::max()));
  if (!h.in_place && !h.out_of_place) x.fail(a, "algo.outofplace", "inplace or outofplace (or both) 1", "both 0");
  if (h.max_bytes > 0 && h.min_bytes > h.max_bytes) {
    x.fail(a, "algo.maxBytes", fmt::format("at least minBytes ({}), or 0 for no limit", h.min_bytes), std::to_string(h.max_bytes));
  }
  return h;
}

}  // namespace

MscclHeader read_msccl_header(const std::string& text, const std::string& file) { return header_of(Reader(text, file)); }

models::Schedule from_msccl_xml(const std::string& text, const std::string& file, std::uint64_t bytes, std::uint32_t element_size) {
  const Reader x(text, file);
  const MscclHeader h = header_of(x);
  const int n = h.ranks;
  const std::uint64_t loop = loop_bytes(h.collective, bytes, n);
  const std::uint64_t per_loop = static_cast<std::uint64_t>(h.chunks_per_loop);
  if (bytes == 0 || loop % per_loop != 0 || (loop / per_loop) % element_size != 0) {
    throw InputError({file, 0, 0}, "size", fmt::format("a size whose loop buffer ({} bytes here) is a whole number of the file's {} chunks of whole {}-byte elements",
                                                       loop, per_loop, element_size),
                     fmt::format("{} bytes", bytes));
  }
  const std::uint64_t chunk = loop / per_loop;
  const models::BufferSizes sizes = models::buffer_sizes(h.collective, bytes, n);
  models::Schedule s;
  s.collective = h.collective;
  s.algorithm = "synthesized";
  s.nranks = n;
  s.bytes = bytes;
  s.element_size = element_size;
  s.channels = h.channels;
  s.granularity = models::Granularity::Step;
  s.ranks.resize(static_cast<std::size_t>(n));
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (pugi::xml_node gpu : x.algo().children("gpu")) {
    const int id = static_cast<int>(x.int_attr(gpu, "id", "gpu", 0, n - 1));
    const std::string key = fmt::format("gpu[{}]", id);
    if (seen[static_cast<std::size_t>(id)]) x.fail(gpu, key + ".id", "each GPU once", fmt::format("gpu {} twice", id));
    seen[static_cast<std::size_t>(id)] = 1;
    const std::int64_t big = std::int64_t{1} << 40;
    const std::int64_t chunks[3] = {x.int_attr(gpu, "i_chunks", key, 0, big), x.int_attr(gpu, "o_chunks", key, 0, big),
                                    x.int_attr(gpu, "s_chunks", key, 0, big)};
    // In-place only: the input is the output's own part, as MSCCL runs it (sendbuff inside recvbuff).
    const bool in_place = h.in_place && !h.out_of_place;
    const std::uint64_t in_chunks = sizes.input / chunk, out_chunks = sizes.output / chunk;
    if (!in_place && chunks[0] != 0 && static_cast<std::uint64_t>(chunks[0]) != in_chunks) {
      x.fail(gpu, key + ".i_chunks", fmt::format("{} (the input of {} at the file's chunking)", in_chunks, models::to_string(h.collective)),
             std::to_string(chunks[0]));
    }
    if (static_cast<std::uint64_t>(chunks[1]) != out_chunks) {
      x.fail(gpu, key + ".o_chunks", fmt::format("{} (the output of {} at the file's chunking)", out_chunks, models::to_string(h.collective)),
             std::to_string(chunks[1]));
    }
    constexpr std::uint64_t kMaxScratch = std::uint64_t{1} << 44;  // 16 TiB: far above any GPU, far below overflow
    if (static_cast<std::uint64_t>(chunks[2]) > kMaxScratch / chunk) {
      x.fail(gpu, key + ".s_chunks", fmt::format("a scratch buffer of at most 16 TiB ({} chunks of {} bytes)", kMaxScratch / chunk, chunk),
             std::to_string(chunks[2]));
    }
    models::RankProgram& prog = s.ranks[static_cast<std::size_t>(id)];
    prog.scratch_bytes = static_cast<std::uint64_t>(chunks[2]) * chunk;
    std::optional<std::uint32_t> seed;  // in-place: the copy of the rank's input into its place in the output
    if (in_place) {
      if (h.collective != Collective::AllGather && h.collective != Collective::AllReduce) {
        x.fail(x.algo(), "algo.inplace", "an out-of-place schedule (ccsim reads in-place-only files for allgather and allreduce)",
               std::string(coll_name(h.collective)) + " in place only");
      }
      Op copy;
      copy.kind = OpKind::Copy;
      copy.src = {BufferKind::Input, 0, sizes.input};
      copy.dst = {BufferKind::Output, h.collective == Collective::AllGather ? static_cast<std::uint64_t>(id) * sizes.input : 0, sizes.input};
      seed = prog.add(copy);
    }
    struct Step {
      pugi::xml_node node;
      std::string type;
      Slice src, dst;
      std::int64_t cnt = 0;
      int dep_tb = -1, dep_step = -1;
      std::uint32_t latency = 1;
    };
    struct Block {
      int send = -1, recv = -1, chan = 0;
      std::vector<Step> steps;
    };
    std::map<int, Block> blocks;
    for (pugi::xml_node tb : gpu.children("tb")) {
      const int bid = static_cast<int>(x.int_attr(tb, "id", key + ".tb", 0, 1 << 16));
      const std::string tkey = fmt::format("{}.tb[{}]", key, bid);
      if (blocks.count(bid)) x.fail(tb, tkey + ".id", "each thread block id once on a GPU", fmt::format("thread block {} twice", bid));
      Block b;
      b.send = static_cast<int>(x.int_attr(tb, "send", tkey, -1, n - 1));
      b.recv = static_cast<int>(x.int_attr(tb, "recv", tkey, -1, n - 1));
      b.chan = static_cast<int>(x.int_attr(tb, "chan", tkey, 0, h.channels - 1));
      if (b.send == id || b.recv == id) x.fail(tb, tkey, "peers other than the thread block's own GPU", fmt::format("peer {} on gpu {}", id, id));
      int index = 0;
      for (pugi::xml_node st : tb.children("step")) {
        const std::string skey = fmt::format("{}.step[{}]", tkey, index);
        Step step;
        step.node = st;
        const std::int64_t sidx = x.int_attr(st, "s", skey, 0, 1 << 20);
        if (sidx != index) x.fail(st, skey + ".s", fmt::format("{} (steps numbered in order from 0)", index), std::to_string(sidx));
        step.type = x.text_attr(st, "type", skey);
        static const std::set<std::string> types{"s", "r", "rrc", "cpy", "re", "rcs", "rrcs", "rrs", "nop"};
        if (!types.count(step.type)) x.fail(st, skey + ".type", "s, r, rrc, cpy, re, rcs, rrcs, rrs or nop", "'" + step.type + "'");
        step.cnt = x.int_attr(st, "cnt", skey, 0, kMscclMaxCount);
        const auto slice = [&](const char* buf_attr, const char* off_attr) {
          const std::string buf = x.text_attr(st, buf_attr, skey);
          const std::int64_t off = x.int_attr(st, off_attr, skey, -1, big);
          BufferKind kind = BufferKind::Input;
          std::int64_t limit_chunks = in_place ? static_cast<std::int64_t>(in_chunks) : chunks[0];
          if (buf == "o") {
            kind = BufferKind::Output;
            limit_chunks = chunks[1];
          } else if (buf == "s") {
            kind = BufferKind::Scratch;
            limit_chunks = chunks[2];
          } else if (buf != "i") {
            x.fail(st, skey + "." + buf_attr, "i, o or s", "'" + buf + "'");
          }
          if (off < 0 || off + step.cnt > limit_chunks) {
            x.fail(st, skey + "." + off_attr, fmt::format("an offset from 0 with {} chunks inside the buffer's {}", step.cnt, limit_chunks),
                   std::to_string(off));
          }
          return Slice{kind, static_cast<std::uint64_t>(off) * chunk, static_cast<std::uint64_t>(step.cnt) * chunk};
        };
        const bool uses_src = step.type == "s" || step.type == "rrc" || step.type == "cpy" || step.type == "re" || step.type == "rrcs" ||
                              step.type == "rrs";
        const bool uses_dst = step.type == "r" || step.type == "rrc" || step.type == "cpy" || step.type == "re" || step.type == "rcs" ||
                              step.type == "rrcs";
        if (uses_src) step.src = slice("srcbuf", "srcoff");
        if (uses_dst) step.dst = slice("dstbuf", "dstoff");
        const bool sends = step.type == "s" || step.type == "rcs" || step.type == "rrcs" || step.type == "rrs";
        const bool recvs = step.type == "r" || step.type == "rrc" || step.type == "rcs" || step.type == "rrcs" || step.type == "rrs";
        if (sends && b.send < 0) x.fail(st, skey + ".type", "a send in a thread block with a send peer", "'" + step.type + "' with send=-1");
        if (recvs && b.recv < 0) x.fail(st, skey + ".type", "a receive in a thread block with a recv peer", "'" + step.type + "' with recv=-1");
        step.dep_tb = static_cast<int>(x.int_attr(st, "depid", skey, -1, 1 << 16));
        step.dep_step = static_cast<int>(x.int_attr(st, "deps", skey, -1, 1 << 20));
        (void)x.int_attr(st, "hasdep", skey, 0, 1);
        if (st.attribute("ccsim_steps")) step.latency = static_cast<std::uint32_t>(x.int_attr(st, "ccsim_steps", skey, 0, 1 << 20));
        b.steps.push_back(step);
        ++index;
      }
      blocks[bid] = std::move(b);
    }
    // Thread block ids 0 .. k−1 (MSCCL indexes its thread blocks by id).
    int expect = 0;
    for (const auto& [bid, b] : blocks) {
      if (bid != expect) x.fail(gpu, key + ".tb", fmt::format("thread block ids 0 to {} without gaps", blocks.size() - 1), fmt::format("no thread block {}", expect));
      ++expect;
    }
    for (const auto& [bid, b] : blocks) {
      for (const Step& st : b.steps) {
        if (st.dep_tb < 0) continue;
        const auto it = blocks.find(st.dep_tb);
        if (it == blocks.end() || st.dep_step < 0 || st.dep_step >= static_cast<int>(it->second.steps.size())) {
          x.fail(st.node, fmt::format("{}.tb[{}].depid", key, bid), "a step of a thread block of this GPU",
                 fmt::format("thread block {} step {}", st.dep_tb, st.dep_step));
        }
      }
    }
    // Order the steps: each after its predecessor in its block and after its dependency (a
    // topological order, ties by step index then block id: canonical for a given file).
    std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> next;
    std::map<std::pair<int, int>, int> indegree;
    for (const auto& [bid, b] : blocks) {
      for (int i = 0; i < static_cast<int>(b.steps.size()); ++i) {
        indegree[{bid, i}] += 0;
        if (i > 0) {
          next[{bid, i - 1}].push_back({bid, i});
          ++indegree[{bid, i}];
        }
        if (b.steps[static_cast<std::size_t>(i)].dep_tb >= 0) {
          next[{b.steps[static_cast<std::size_t>(i)].dep_tb, b.steps[static_cast<std::size_t>(i)].dep_step}].push_back({bid, i});
          ++indegree[{bid, i}];
        }
      }
    }
    using Item = std::tuple<int, int>;  // (step, block)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (const auto& [k, d] : indegree) {
      if (d == 0) ready.push({k.second, k.first});
    }
    std::map<std::pair<int, int>, std::vector<std::uint32_t>> done_ops;  // step -> the ops it stands for (a nop: what it waits for)
    std::size_t ordered = 0;
    while (!ready.empty()) {
      const auto [i, bid] = ready.top();
      ready.pop();
      ++ordered;
      const Block& b = blocks[bid];
      const Step& st = b.steps[static_cast<std::size_t>(i)];
      std::vector<std::uint32_t> deps;
      if (i > 0) deps = done_ops[{bid, i - 1}];
      if (i == 0 && seed) deps.push_back(*seed);
      if (st.dep_tb >= 0) {
        const auto& d = done_ops[{st.dep_tb, st.dep_step}];
        deps.insert(deps.end(), d.begin(), d.end());
      }
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      const auto op = [&](OpKind kind, int peer, Slice src, Slice dst, const std::vector<std::uint32_t>& d) {
        Op o;
        o.kind = kind;
        o.peer = peer;
        o.channel = static_cast<std::uint16_t>(b.chan);
        o.steps = st.latency;
        o.src = src;
        o.dst = dst;
        return prog.add(o, d);
      };
      std::vector<std::uint32_t> mine;
      if ((st.type == "nop" || st.cnt == 0) && deps.size() <= 8) {
        mine = deps;  // a nop is only what it waits for
      } else if (st.type == "nop" || st.cnt == 0) {
        // A nop that waits for many ops becomes a zero-byte join, so chains of them stay linear.
        mine = {op(OpKind::Copy, -1, Slice{BufferKind::Output, 0, 0}, Slice{BufferKind::Output, 0, 0}, deps)};
      } else if (st.type == "s") {
        mine = {op(OpKind::Send, b.send, st.src, {}, deps)};
      } else if (st.type == "r") {
        mine = {op(OpKind::Recv, b.recv, {}, st.dst, deps)};
      } else if (st.type == "rrc") {
        mine = {op(OpKind::RecvReduce, b.recv, st.src, st.dst, deps)};
      } else if (st.type == "cpy") {
        mine = {op(OpKind::Copy, -1, st.src, st.dst, deps)};
      } else if (st.type == "re") {
        mine = {op(OpKind::Reduce, -1, st.src, st.dst, deps)};
      } else if (st.type == "rcs") {
        const std::uint32_t r = op(OpKind::Recv, b.recv, {}, st.dst, deps);
        mine = {op(OpKind::Send, b.send, st.dst, {}, {r})};
      } else if (st.type == "rrcs") {
        const std::uint32_t r = op(OpKind::RecvReduce, b.recv, st.src, st.dst, deps);
        mine = {op(OpKind::Send, b.send, st.dst, {}, {r})};
      } else {  // rrs: the sum goes on without being stored; ccsim stages it in scratch
        const Slice tmp{BufferKind::Scratch, prog.scratch_bytes, st.src.bytes};
        prog.scratch_bytes += st.src.bytes;
        const std::uint32_t r = op(OpKind::RecvReduce, b.recv, st.src, tmp, deps);
        mine = {op(OpKind::Send, b.send, tmp, {}, {r})};
      }
      done_ops[{bid, i}] = mine;
      for (const auto& nx : next[{bid, i}]) {
        if (--indegree[nx] == 0) ready.push({nx.second, nx.first});
      }
    }
    if (ordered != indegree.size()) x.fail(gpu, key, "dependencies without a cycle", "a cycle among its steps' dependencies");
  }
  for (int r = 0; r < n; ++r) {
    if (!seen[static_cast<std::size_t>(r)]) x.fail(x.algo(), "algo", fmt::format("a <gpu> for each of the {} ranks", n), fmt::format("no gpu {}", r));
  }
  return s;
}

}  // namespace ccsim::planner::synthesis
