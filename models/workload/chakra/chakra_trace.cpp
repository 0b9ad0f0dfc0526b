#include "models/workload/chakra/chakra_trace.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <nlohmann/json.hpp>

#include "models/workload/chakra/chakra_et.pb.h"
#include "support/input_error.hpp"
#include "support/input_file.hpp"

namespace ccsim::models::chakra {

namespace pb = ChakraProtoMsg;

namespace {

/// One node of a rank as read, before it becomes a ProgramOp.
struct RawNode {
  pb::Node node;
  std::size_t index = 0;  ///< position in the file (0: the first node after the metadata)
};

std::string type_name(int type) {
  if (pb::NodeType_IsValid(type)) return pb::NodeType_Name(static_cast<pb::NodeType>(type));
  return fmt::format("node type {}", type);
}

/// Where a node's problem is: the file, and the node by position and id.
struct NodeWhere {
  const std::string& file;
  std::size_t index;
  std::uint64_t id;
  [[noreturn]] void fail(const std::string& field, const std::string& expected, const std::string& found) const {
    throw support::InputError({file, 0, 0}, fmt::format("node {} (id {}){}{}", index, id, field.empty() ? "" : ".", field), expected, found);
  }
};

const pb::AttributeProto* find_attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

/// An integer attribute of any integer kind (ASTRA-sim reads int64_val or int32_val by name;
/// any integer case is taken here), or nullopt when absent.
std::optional<long long> int_attr(const pb::Node& n, const std::string& name, const NodeWhere& at) {
  const pb::AttributeProto* a = find_attr(n, name);
  if (a == nullptr) return std::nullopt;
  using A = pb::AttributeProto;
  switch (a->value_case()) {
    case A::kInt32Val: return a->int32_val();
    case A::kInt64Val: return a->int64_val();
    case A::kUint32Val: return a->uint32_val();
    case A::kSint32Val: return a->sint32_val();
    case A::kSint64Val: return a->sint64_val();
    case A::kFixed32Val: return a->fixed32_val();
    case A::kSfixed32Val: return a->sfixed32_val();
    case A::kSfixed64Val: return a->sfixed64_val();
    case A::kUint64Val:
    case A::kFixed64Val: {
      const std::uint64_t v = a->value_case() == A::kUint64Val ? a->uint64_val() : a->fixed64_val();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<long long>::max())) at.fail("attr." + name, "an integer below 2^63", std::to_string(v));
      return static_cast<long long>(v);
    }
    default: at.fail("attr." + name, "an integer value (int64_val, as ASTRA-sim writes it)", "another kind of value");
  }
}

std::optional<std::string> string_attr(const pb::Node& n, const std::string& name, const NodeWhere& at) {
  const pb::AttributeProto* a = find_attr(n, name);
  if (a == nullptr) return std::nullopt;
  if (a->value_case() != pb::AttributeProto::kStringVal) at.fail("attr." + name, "a string_val", "another kind of value");
  return a->string_val();
}

long long non_negative(std::optional<long long> v, const std::string& field, const NodeWhere& at, bool required) {
  if (!v) {
    if (required) at.fail("attr." + field, "the attribute", "none");
    return 0;
  }
  if (*v < 0) at.fail("attr." + field, "a non-negative integer", std::to_string(*v));
  return *v;
}

std::optional<Collective> collective_of(long long type) {
  switch (type) {
    case pb::ALL_REDUCE: return Collective::AllReduce;
    case pb::REDUCE: return Collective::Reduce;
    case pb::ALL_GATHER: return Collective::AllGather;
    case pb::BROADCAST: return Collective::Broadcast;
    case pb::ALL_TO_ALL: return Collective::AlltoAll;
    case pb::REDUCE_SCATTER:
    case pb::REDUCE_SCATTER_BLOCK: return Collective::ReduceScatter;
    default: return std::nullopt;
  }
}

pb::CollectiveCommType comm_type_of(Collective c) {
  switch (c) {
    case Collective::AllReduce: return pb::ALL_REDUCE;
    case Collective::Reduce: return pb::REDUCE;
    case Collective::AllGather: return pb::ALL_GATHER;
    case Collective::Broadcast: return pb::BROADCAST;
    case Collective::AlltoAll: return pb::ALL_TO_ALL;
    case Collective::ReduceScatter: return pb::REDUCE_SCATTER;
    case Collective::SendRecv: break;
  }
  throw std::invalid_argument("chakra_files: a SendRecv is no collective node");
}

std::optional<Stream> stream_named(const std::string& s) {
  for (int i = 0; i < kStreams; ++i)
    if (to_string(static_cast<Stream>(i)) == s) return static_cast<Stream>(i);
  return std::nullopt;
}

ParallelDim dim_of(Stream s) {
  switch (s) {
    case Stream::TpComm: return ParallelDim::TP;
    case Stream::CpComm: return ParallelDim::CP;
    case Stream::EpComm: return ParallelDim::EP;
    case Stream::PpComm: return ParallelDim::PP;
    case Stream::Compute:
    case Stream::DpComm: break;
  }
  return ParallelDim::DP;
}

std::string kind_name(ProgramOpKind k) {
  switch (k) {
    case ProgramOpKind::Gemm: return "gemm";
    case ProgramOpKind::Attention: return "attention";
    case ProgramOpKind::Memory: return "memory";
    case ProgramOpKind::Collective: return "collective";
    case ProgramOpKind::SendRecv: return "sendrecv";
  }
  return "?";
}

std::vector<RawNode> parse_nodes(const std::string& bytes, const std::string& file, std::string* version) {
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  bool clean_eof = false;
  pb::GlobalMetadata meta;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&meta, &in, &clean_eof)) {
    throw support::InputError({file, 0, 0}, "GlobalMetadata", "a length-delimited GlobalMetadata message first (Chakra ET)",
                              clean_eof ? std::string("an empty file") : "a truncated or malformed message at byte 0");
  }
  if (version != nullptr) *version = meta.version();
  std::vector<RawNode> out;
  for (;;) {
    const auto offset = in.ByteCount();
    RawNode r;
    r.index = out.size();
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&r.node, &in, &clean_eof)) {
      if (clean_eof) break;
      throw support::InputError({file, 0, 0}, fmt::format("node {}", out.size()), "a length-delimited Node message",
                                fmt::format("a truncated or malformed message at byte {} of {}", offset, bytes.size()));
    }
    out.push_back(std::move(r));
  }
  return out;
}

/// A trace file through ccsim's one input reader (support/input_file.hpp), capped below 2 GiB
/// (protobuf's ArrayInputStream takes an int size; real training traces are far smaller).
std::string read_bytes(const std::string& path, const char* what) {
  return support::read_input_file(path, support::InputFileRequest(what, (1ull << 31) - 1));
}

/// comm_group.json: ASTRA-sim's {"ID": [ranks...]} (Workload::initialize_comm_groups).
std::map<std::string, std::vector<int>> read_comm_groups(const std::string& path, int world) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_bytes(path, "ASTRA-sim's communicator groups (comm_group.json)"));
  } catch (const nlohmann::json::exception& e) {
    throw support::InputError({path, 0, 0}, "comm_group.json", "JSON (ASTRA-sim's communicator groups: {\"ID\": [ranks...]})", e.what());
  }
  if (!j.is_object()) throw support::InputError({path, 0, 0}, "comm_group.json", "an object {\"ID\": [ranks...]}", j.type_name());
  std::map<std::string, std::vector<int>> out;
  for (const auto& [id, ranks] : j.items()) {
    if (!ranks.is_array() || ranks.empty()) throw support::InputError({path, 0, 0}, id, "a non-empty list of ranks", ranks.dump());
    std::set<int> seen;
    std::vector<int> g;
    for (const auto& r : ranks) {
      if (!r.is_number_integer() || r.get<long long>() < 0 || r.get<long long>() >= world || !seen.insert(r.get<int>()).second) {
        throw support::InputError({path, 0, 0}, id, fmt::format("distinct ranks in 0 .. {}", world - 1), r.dump());
      }
      g.push_back(r.get<int>());
    }
    out.emplace(id, std::move(g));
  }
  return out;
}

/// A rank's nodes in a topological order of their dependencies, ties in file order; throws on
/// a duplicate id, a dependency on a missing node, or a cycle.
std::vector<std::size_t> topological_order(const std::vector<RawNode>& nodes, const std::string& file) {
  std::map<std::uint64_t, std::size_t> index;
  for (const auto& r : nodes) {
    if (!index.emplace(r.node.id(), r.index).second) {
      NodeWhere{file, r.index, r.node.id()}.fail("id", "ids that differ within a rank", fmt::format("id {} twice", r.node.id()));
    }
  }
  std::vector<std::vector<std::size_t>> succ(nodes.size());
  std::vector<std::size_t> pending(nodes.size(), 0);
  for (const auto& r : nodes) {
    const NodeWhere at{file, r.index, r.node.id()};
    std::set<std::uint64_t> deps(r.node.data_deps().begin(), r.node.data_deps().end());
    deps.insert(r.node.ctrl_deps().begin(), r.node.ctrl_deps().end());
    for (std::uint64_t d : deps) {
      const auto it = index.find(d);
      if (it == index.end()) at.fail("data_deps", "ids of nodes of the same rank", fmt::format("id {}, which the rank does not have", d));
      if (it->second == r.index) at.fail("data_deps", "ids of other nodes", "the node itself");
      succ[it->second].push_back(r.index);
      ++pending[r.index];
    }
  }
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (std::size_t s : succ[i])
      if (--pending[s] == 0) ready.insert(s);
  }
  if (order.size() != nodes.size()) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] != 0) NodeWhere{file, i, nodes[i].node.id()}.fail("data_deps", "dependencies without a cycle", "a cycle through this node");
  }
  return order;
}

/// What one node becomes (its deps are set by the caller).
ProgramOp to_op(const pb::Node& n, const NodeWhere& at, int rank, int world, const std::map<std::string, std::vector<int>>* groups,
                long long* tag) {
  ProgramOp op;
  op.name = n.name();
  op.pass = Pass::Other;
  const auto stream_attr = string_attr(n, "ccsim_stream", at);
  const auto kind_attr = string_attr(n, "ccsim_kind", at);
  const pb::AttributeProto* exact = find_attr(n, "ccsim_duration_s");
  if (exact != nullptr && (exact->value_case() != pb::AttributeProto::kDoubleVal || !(exact->double_val() >= 0) || !std::isfinite(exact->double_val()))) {
    at.fail("attr.ccsim_duration_s", "a non-negative finite double_val (seconds)", "another value");
  }
  switch (static_cast<int>(n.type())) {
    case pb::COMP_NODE: {
      op.kind = ProgramOpKind::Gemm;
      if (kind_attr) {
        if (*kind_attr == "attention") op.kind = ProgramOpKind::Attention;
        else if (*kind_attr == "memory") op.kind = ProgramOpKind::Memory;
        else if (*kind_attr != "gemm") at.fail("attr.ccsim_kind", "gemm, attention or memory", "'" + *kind_attr + "'");
      }
      op.flops = static_cast<double>(non_negative(int_attr(n, "num_ops", at), "num_ops", at, false));
      op.bytes = static_cast<double>(non_negative(int_attr(n, "tensor_size", at), "tensor_size", at, false));
      // The runtime first (ASTRA-sim's replay); then FLOPs and bytes (its roofline); else nothing.
      if (exact != nullptr) op.fixed_time = exact->double_val();
      else if (n.duration_micros() > 0) op.fixed_time = static_cast<double>(n.duration_micros()) * 1e-6;
      else if (op.flops == 0 && op.bytes == 0) op.fixed_time = 0;
      break;
    }
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE:
      op.kind = ProgramOpKind::Memory;
      op.bytes = static_cast<double>(non_negative(int_attr(n, "tensor_size", at), "tensor_size", at, false));
      if (op.bytes == 0) op.fixed_time = 0;
      break;
    case pb::METADATA_NODE:
    case pb::INVALID_NODE:
      op.kind = ProgramOpKind::Memory;
      op.fixed_time = 0;
      break;
    case pb::COMM_COLL_NODE: {
      op.kind = ProgramOpKind::Collective;
      op.stream = Stream::DpComm;
      const long long type = non_negative(int_attr(n, "comm_type", at), "comm_type", at, true);
      const auto c = collective_of(type);
      if (!c) {
        at.fail("attr.comm_type", "ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER or REDUCE_SCATTER_BLOCK (the collectives ccsim models)",
                pb::CollectiveCommType_IsValid(static_cast<int>(type)) ? pb::CollectiveCommType_Name(static_cast<pb::CollectiveCommType>(type))
                                                                         : std::to_string(type));
      }
      op.collective = *c;
      op.bytes = static_cast<double>(non_negative(int_attr(n, "comm_size", at), "comm_size", at, true));
      if (const pb::AttributeProto* d = find_attr(n, "involved_dim")) {
        if (d->value_case() != pb::AttributeProto::kBoolList) at.fail("attr.involved_dim", "a bool_list", "another kind of value");
        for (bool b : d->bool_list().values())
          if (!b) at.fail("attr.involved_dim", "every dimension involved (ccsim's fabric has no ASTRA-sim dimensions to select; use pg_name for a subgroup)", "a false entry");
      }
      if (const auto pg = string_attr(n, "pg_name", at); pg && !pg->empty()) {
        if (groups == nullptr || groups->count(*pg) == 0) at.fail("attr.pg_name", "a group of the directory's comm_group.json", "'" + *pg + "'");
        op.group = groups->at(*pg);
        if (std::find(op.group.begin(), op.group.end(), rank) == op.group.end()) {
          at.fail("attr.pg_name", fmt::format("a group that holds rank {}", rank), "'" + *pg + "', which does not");
        }
      } else {
        for (int r = 0; r < world; ++r) op.group.push_back(r);
      }
      break;
    }
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE: {
      const bool send = n.type() == pb::COMM_SEND_NODE;
      op.kind = ProgramOpKind::SendRecv;
      op.collective = Collective::SendRecv;
      op.stream = Stream::PpComm;
      op.bytes = static_cast<double>(non_negative(int_attr(n, "comm_size", at), "comm_size", at, true));
      const std::string peer_field = send ? "comm_dst" : "comm_src";
      const long long peer = non_negative(int_attr(n, peer_field, at), peer_field, at, true);
      if (peer >= world || peer == rank) at.fail("attr." + peer_field, fmt::format("another rank in 0 .. {}", world - 1), std::to_string(peer));
      op.peer = static_cast<int>(peer);
      op.group = send ? std::vector<int>{rank, op.peer} : std::vector<int>{op.peer, rank};
      *tag = int_attr(n, "comm_tag", at).value_or(0);
      break;
    }
    default:
      at.fail("type", "COMP_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, METADATA_NODE or INVALID_NODE",
              type_name(static_cast<int>(n.type())));
  }
  if (stream_attr) {
    const auto s = stream_named(*stream_attr);
    // A receive may sit on any stream (ccsim writes it before the op that needs its data).
    const bool comm = op.kind == ProgramOpKind::Collective || (op.kind == ProgramOpKind::SendRecv && op.group[0] == rank);
    const bool any = op.kind == ProgramOpKind::SendRecv && !comm;
    if (!s || (!any && (*s == Stream::Compute) == comm)) at.fail("attr.ccsim_stream", comm ? "a communication stream ('comm TP', ...)" : "'compute'", "'" + *stream_attr + "'");
    op.stream = *s;
  }
  if (op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv) {
    op.dim = op.kind == ProgramOpKind::SendRecv ? ParallelDim::PP : dim_of(op.stream);
    if (exact != nullptr) at.fail("attr.ccsim_duration_s", "none on a communication node (its time is simulated)", "one");
  }
  return op;
}

void add_unique(std::vector<std::uint32_t>& v, std::uint32_t x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

std::vector<ChakraNodeView> parse_chakra_file(const std::string& bytes, const std::string& file) {
  std::vector<ChakraNodeView> out;
  for (const auto& r : parse_nodes(bytes, file, nullptr)) out.push_back({r.node.id(), static_cast<int>(r.node.type()), r.node.name()});
  return out;
}

std::vector<ChakraRankFile> chakra_rank_files(const std::string& dir) {
  namespace fs = std::filesystem;
  static const std::regex name_re(R"((.+)\.([0-9]{1,6})\.et)");
  std::vector<ChakraRankFile> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, m, name_re)) out.push_back({m[1], std::stoi(m[2]), name, it->path().string()});
  }
  std::sort(out.begin(), out.end(), [](const ChakraRankFile& a, const ChakraRankFile& b) { return a.name < b.name; });
  return out;
}

ChakraTrace read_chakra_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    // What the path is instead (stat only: a FIFO is not opened).
    const std::string problem = support::input_file_problem(dir);
    const std::string found = problem.empty() ? "a regular file" : problem == "no such file" ? "no such directory" : problem;
    throw support::InputError({dir, 0, 0}, "--chakra", "a directory of Chakra traces PREFIX.R.et", found);
  }
  std::map<std::string, std::map<int, std::string>> by_prefix;
  for (const ChakraRankFile& f : chakra_rank_files(dir)) {
    const auto [it, fresh] = by_prefix[f.prefix].emplace(f.rank, f.path);
    if (!fresh) {
      // PREFIX.0.et and PREFIX.00.et: which one is rank 0? (ASTRA-sim opens PREFIX.0.et.)
      throw support::InputError({dir, 0, 0}, "--chakra", fmt::format("one file per rank ({}.{}.et for rank {})", f.prefix, f.rank, f.rank),
                                fmt::format("two: {} and {}", fs::path(it->second).filename().string(), f.name));
    }
  }
  if (by_prefix.empty()) throw support::InputError({dir, 0, 0}, "--chakra", "Chakra traces PREFIX.R.et (one per rank, R from 0)", "none");
  if (by_prefix.size() > 1) {
    throw support::InputError({dir, 0, 0}, "--chakra", "the traces of one workload (one PREFIX)",
                              fmt::format("{} prefixes ('{}', '{}', ...)", by_prefix.size(), by_prefix.begin()->first, std::next(by_prefix.begin())->first));
  }
  ChakraTrace t;
  t.prefix = by_prefix.begin()->first;
  const auto& files = by_prefix.begin()->second;
  const int last = files.rbegin()->first;  // ranks run from 0 to the highest one found
  for (int r = 0; r <= last; ++r) {
    const auto it = files.find(r);
    if (it == files.end()) {
      throw support::InputError({dir, 0, 0}, "--chakra", fmt::format("{}.R.et for every rank R from 0 to {}", t.prefix, last),
                                fmt::format("no {}.{}.et", t.prefix, r));
    }
    t.files.push_back(it->second);
  }
  const int world = static_cast<int>(t.files.size());
  std::map<std::string, std::vector<int>> groups;
  const std::string groups_path = (fs::path(dir) / "comm_group.json").string();
  if (fs::exists(groups_path, ec)) {
    groups = read_comm_groups(groups_path, world);
    t.comm_groups = true;
  }

  Program& p = t.program;
  p.ranks.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) p.ranks[static_cast<std::size_t>(r)].stage = r;
  // Per op: its file, its node index and id, and a send/receive's tag (for messages and matching).
  struct Origin {
    std::size_t file_index;
    std::size_t node;
    std::uint64_t id;
    long long tag;
  };
  std::vector<Origin> origin;
  for (int r = 0; r < world; ++r) {
    const std::string& file = t.files[static_cast<std::size_t>(r)];
    std::string version;
    const std::vector<RawNode> nodes = parse_nodes(read_bytes(file, "a Chakra execution trace"), file, &version);
    if (r == 0) t.version = version;
    const std::vector<std::size_t> order = topological_order(nodes, file);
    std::map<std::uint64_t, std::uint32_t> op_of;  // node id -> global op id
    for (std::size_t i : order) {
      const pb::Node& n = nodes[i].node;
      const NodeWhere at{file, i, n.id()};
      long long tag = 0;
      ProgramOp op = to_op(n, at, r, world, t.comm_groups ? &groups : nullptr, &tag);
      std::set<std::uint64_t> deps(n.data_deps().begin(), n.data_deps().end());
      deps.insert(n.ctrl_deps().begin(), n.ctrl_deps().end());
      for (std::uint64_t d : deps) op.deps.push_back(op_of.at(d));
      std::sort(op.deps.begin(), op.deps.end());
      op_of[n.id()] = p.add(r, std::move(op));
      origin.push_back({static_cast<std::size_t>(r), i, n.id(), tag});
    }
  }

  // Instances: the k-th collective of a group on each of its ranks; a send and its receive.
  const auto where = [&](std::uint32_t op) { return NodeWhere{t.files[origin[op].file_index], origin[op].node, origin[op].id}; };
  std::map<std::vector<int>, std::vector<std::vector<std::uint32_t>>> coll;  // group -> per member (by position) its ops
  std::map<std::tuple<int, int, long long>, std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>> p2p;  // (src, dst, tag) -> sends, recvs
  for (int r = 0; r < world; ++r) {
    for (std::uint32_t id : p.ranks[static_cast<std::size_t>(r)].ops) {
      const ProgramOp& op = p.ops[id];
      if (op.kind == ProgramOpKind::Collective) {
        auto& per = coll[op.group];
        per.resize(op.group.size());
        const auto pos = static_cast<std::size_t>(std::find(op.group.begin(), op.group.end(), r) - op.group.begin());
        per[pos].push_back(id);
      } else if (op.kind == ProgramOpKind::SendRecv) {
        auto& e = p2p[{op.group[0], op.group[1], origin[id].tag}];
        (r == op.group[0] ? e.first : e.second).push_back(id);
      }
    }
  }
  std::vector<std::vector<std::uint32_t>> instances;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> receives;  // (send, its receive)
  for (const auto& [group, per] : coll) {
    for (std::size_t m = 1; m < per.size(); ++m) {
      if (per[m].size() != per[0].size()) {
        const std::uint32_t any = per[m].empty() ? per[0].front() : per[m].front();
        where(any).fail("attr.comm_type", fmt::format("the same number of collectives on every rank of the group (rank {}: {})", group[0], per[0].size()),
                        fmt::format("{} on rank {}", per[m].size(), group[m]));
      }
    }
    for (std::size_t k = 0; k < per[0].size(); ++k) {
      std::vector<std::uint32_t> inst;
      for (const auto& ops : per) {
        const ProgramOp& a = p.ops[per[0][k]];
        const ProgramOp& b = p.ops[ops[k]];
        if (a.collective != b.collective || a.bytes != b.bytes) {
          where(ops[k]).fail("attr.comm_size", fmt::format("collective {} of its group as on rank {}: {} of {} bytes", k, group[0], to_string(a.collective), a.bytes),
                             fmt::format("{} of {} bytes", to_string(b.collective), b.bytes));
        }
        inst.push_back(ops[k]);
      }
      instances.push_back(std::move(inst));
    }
  }
  for (const auto& [key, sr] : p2p) {
    const auto& [sends, recvs] = sr;
    if (sends.size() != recvs.size()) {
      const std::uint32_t any = sends.size() > recvs.size() ? sends[recvs.size()] : recvs[sends.size()];
      where(any).fail(sends.size() > recvs.size() ? "comm_dst" : "comm_src",
                      fmt::format("a matching {} on rank {} (same source, destination and tag {})", sends.size() > recvs.size() ? "COMM_RECV_NODE" : "COMM_SEND_NODE",
                                  sends.size() > recvs.size() ? std::get<1>(key) : std::get<0>(key), std::get<2>(key)),
                      "none");
    }
    for (std::size_t k = 0; k < sends.size(); ++k) {
      if (p.ops[sends[k]].bytes != p.ops[recvs[k]].bytes) {
        where(recvs[k]).fail("attr.comm_size", fmt::format("the size of its send ({} bytes)", p.ops[sends[k]].bytes), fmt::format("{} bytes", p.ops[recvs[k]].bytes));
      }
      receives.emplace_back(sends[k], recvs[k]);
    }
  }
  // Every copy of an instance waits for what any copy waits for: they start together.
  const std::vector<std::uint32_t> pred = stream_predecessors(p);
  for (const auto& inst : instances) {
    std::vector<std::uint32_t> all;
    for (std::uint32_t id : inst) {
      for (std::uint32_t d : p.ops[id].deps) add_unique(all, d);
      if (pred[id] != ~0U) add_unique(all, pred[id]);
    }
    std::sort(all.begin(), all.end());
    for (std::uint32_t id : inst) {
      std::vector<std::uint32_t> deps;
      for (std::uint32_t d : all)
        if (d != pred[id]) deps.push_back(d);
      p.ops[id].deps = std::move(deps);
    }
  }
  // A receive ends when its data has arrived: after its send (which does not wait for it).
  for (const auto& [send, recv] : receives) add_unique(p.ops[recv].deps, send);
  // The ranks together must not deadlock (a collective order that differs between ranks).
  {
    const std::size_t n = p.ops.size();
    std::vector<std::vector<std::uint32_t>> succ(n);
    std::vector<std::size_t> pending(n, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::vector<std::uint32_t> in = p.ops[i].deps;
      if (pred[i] != ~0U) add_unique(in, pred[i]);
      for (std::uint32_t d : in) {
        succ[d].push_back(i);
        ++pending[i];
      }
    }
    std::vector<std::uint32_t> stack;
    for (std::uint32_t i = 0; i < n; ++i)
      if (pending[i] == 0) stack.push_back(i);
    std::size_t done = 0;
    while (!stack.empty()) {
      const std::uint32_t i = stack.back();
      stack.pop_back();
      ++done;
      for (std::uint32_t s : succ[i])
        if (--pending[s] == 0) stack.push_back(s);
    }
    if (done != n) {
      for (std::uint32_t i = 0; i < n; ++i) {
        if (pending[i] != 0 && (p.ops[i].kind == ProgramOpKind::Collective || p.ops[i].kind == ProgramOpKind::SendRecv)) {
          where(i).fail("", "collectives and sends in an order every rank can follow (the ranks deadlock)", "a wait that never ends at this node");
        }
      }
      where(0).fail("", "ranks that do not deadlock", "a deadlock");
    }
  }
  return t;
}

std::vector<std::pair<std::string, std::string>> chakra_files(const Program& program, const std::string& prefix) {
  const int world = static_cast<int>(program.ranks.size());
  std::vector<int> everyone(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) everyone[static_cast<std::size_t>(r)] = r;
  // Communicator groups other than the world, numbered from 1 in order of first use.
  std::map<std::vector<int>, int> group_id;
  std::vector<const std::vector<int>*> group_list;
  for (const auto& rank : program.ranks) {
    for (std::uint32_t id : rank.ops) {
      const ProgramOp& op = program.ops[id];
      if ((op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv) && op.group.empty()) {
        throw std::invalid_argument("chakra_files: a communication op without an explicit group (a per-rank Program is needed)");
      }
      if (op.kind == ProgramOpKind::Collective && op.group != everyone && group_id.count(op.group) == 0) {
        group_id.emplace(op.group, static_cast<int>(group_id.size()) + 1);
        group_list.push_back(&group_id.find(op.group)->first);
      }
    }
  }
  const std::vector<std::uint32_t> pred = stream_predecessors(program);
  const auto attr = [](pb::Node& n, const std::string& name) {
    pb::AttributeProto* a = n.add_attr();
    a->set_name(name);
    return a;
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (int r = 0; r < world; ++r) {
    const auto& ops = program.ranks[static_cast<std::size_t>(r)].ops;
    std::map<std::uint32_t, std::uint64_t> local;
    std::map<std::vector<int>, long long> tags;  // (src, dst) -> sends or receives so far
    std::ostringstream s;
    pb::GlobalMetadata meta;
    meta.set_version(kChakraVersion);
    google::protobuf::util::SerializeDelimitedToOstream(meta, &s);
    for (std::uint32_t id : ops) {
      const ProgramOp& op = program.ops[id];
      pb::Node n;
      n.set_id(local.size());
      n.set_name(op.name);
      std::vector<std::uint64_t> deps;
      for (std::uint32_t d : op.deps)
        if (const auto it = local.find(d); it != local.end()) deps.push_back(it->second);
      if (pred[id] != ~0U) deps.push_back(local.at(pred[id]));
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      for (std::uint64_t d : deps) n.add_data_deps(d);
      attr(n, "is_cpu_op")->set_bool_val(false);
      switch (op.kind) {
        case ProgramOpKind::Gemm:
        case ProgramOpKind::Attention:
        case ProgramOpKind::Memory:
          n.set_type(pb::COMP_NODE);
          attr(n, "num_ops")->set_int64_val(std::llround(op.flops));
          attr(n, "tensor_size")->set_uint64_val(static_cast<std::uint64_t>(std::llround(op.bytes)));
          if (op.fixed_time >= 0) {
            n.set_duration_micros(static_cast<std::uint64_t>(std::llround(op.fixed_time * 1e6)));
            attr(n, "ccsim_duration_s")->set_double_val(op.fixed_time);
          }
          break;
        case ProgramOpKind::Collective:
          n.set_type(pb::COMM_COLL_NODE);
          attr(n, "comm_type")->set_int64_val(comm_type_of(op.collective));
          attr(n, "comm_size")->set_int64_val(std::llround(op.bytes));
          if (op.group != everyone) attr(n, "pg_name")->set_string_val(std::to_string(group_id.at(op.group)));
          break;
        case ProgramOpKind::SendRecv: {
          const bool send = op.group[0] == r;
          n.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
          attr(n, "comm_src")->set_int32_val(op.group[0]);
          attr(n, "comm_dst")->set_int32_val(op.group[1]);
          attr(n, "comm_tag")->set_int32_val(static_cast<std::int32_t>(tags[op.group]++));
          attr(n, "comm_size")->set_int64_val(std::llround(op.bytes));
          break;
        }
      }
      attr(n, "ccsim_kind")->set_string_val(kind_name(op.kind));
      attr(n, "ccsim_stream")->set_string_val(std::string(to_string(op.stream)));
      local[id] = n.id();
      google::protobuf::util::SerializeDelimitedToOstream(n, &s);
    }
    out.emplace_back(fmt::format("{}.{}.et", prefix, r), s.str());
  }
  if (!group_list.empty()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < group_list.size(); ++i) j[std::to_string(i + 1)] = *group_list[i];
    out.emplace_back("comm_group.json", j.dump(2) + "\n");
  }
  return out;
}

}  // namespace ccsim::models::chakra
