#include "validate/replay/plans/verbs_plan.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace ccsim::validate::replay {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::string rank_nic(int rank, int nranks, const BackendOptions& options, std::vector<std::string> host_devices) {
  if (host_devices.empty()) {
    throw ReplayError(
        "verbs: this host has no RDMA device (ibv_get_device_list found none); load a NIC driver, or "
        "for soft-RoCE: rdma link add rxe0 type rxe netdev <interface>");
  }
  std::sort(host_devices.begin(), host_devices.end());
  if (!options.rail_of_rank.empty() && options.rail_of_rank.size() != static_cast<std::size_t>(nranks)) {
    throw ReplayError("verbs: the rails give " + std::to_string(options.rail_of_rank.size()) +
                      " ranks a NIC, expected one rail per rank (" + std::to_string(nranks) + ")");
  }
  int rail = options.rail_of_rank.empty() ? 0 : options.rail_of_rank[static_cast<std::size_t>(rank)];
  if (rail < 0) throw ReplayError("verbs: rank " + std::to_string(rank) + " has rail " + std::to_string(rail) + ", expected a rail >= 0");
  if (options.nics.size() == 1) {
    // One name: every rail on that device (a test host with one NIC or one soft-RoCE device).
    rail = 0;
  }
  if (!options.nics.empty()) {
    if (static_cast<std::size_t>(rail) >= options.nics.size()) {
      throw ReplayError("verbs: rank " + std::to_string(rank) + " is on rail " + std::to_string(rail) + " but --nics names " +
                        std::to_string(options.nics.size()) + " device(s) (" + join(options.nics) +
                        "): expected one device per rail, rails 0.." + std::to_string(rail) + " at least");
    }
    const std::string& nic = options.nics[static_cast<std::size_t>(rail)];
    if (!std::binary_search(host_devices.begin(), host_devices.end(), nic)) {
      throw ReplayError("verbs: --nics names " + nic + " for rail " + std::to_string(rail) +
                        ", which is not an RDMA device of this host (devices: " + join(host_devices) + ")");
    }
    return nic;
  }
  if (static_cast<std::size_t>(rail) >= host_devices.size()) {
    throw ReplayError("verbs: rank " + std::to_string(rank) + " is on rail " + std::to_string(rail) + " but this host has " +
                      std::to_string(host_devices.size()) + " RDMA device(s) (" + join(host_devices) +
                      "): name one device per rail with --nics, or one for all (--nics " + host_devices.front() + ")");
  }
  return host_devices[static_cast<std::size_t>(rail)];
}

int choose_gid_index(std::span<const GidEntry> table) {
  auto nonzero = [](const GidEntry& e) { return std::any_of(e.gid.begin(), e.gid.end(), [](std::uint8_t b) { return b != 0; }); };
  auto ipv4_mapped = [](const GidEntry& e) {
    return std::all_of(e.gid.begin(), e.gid.begin() + 10, [](std::uint8_t b) { return b == 0; }) && e.gid[10] == 0xff &&
           e.gid[11] == 0xff;
  };
  for (const auto& e : table) {
    if (e.type == GidEntry::Type::RoceV2 && ipv4_mapped(e)) return e.index;
  }
  for (const auto& e : table) {
    if (e.type == GidEntry::Type::RoceV2 && nonzero(e)) return e.index;
  }
  for (const auto& e : table) {
    if (nonzero(e)) return e.index;
  }
  throw ReplayError("verbs: the port's GID table has no address (" + std::to_string(table.size()) +
                    " entries, all zero): expected an IP address on the RoCE port's network interface");
}

std::vector<RdmaConnection> rank_connections(const models::Schedule& s, int rank) {
  const auto& program = s.ranks.at(static_cast<std::size_t>(rank));
  std::map<std::pair<std::int32_t, std::uint16_t>, RdmaConnection> by_key;
  for (std::uint32_t i = 0; i < program.ops.size(); ++i) {
    const auto& op = program.ops[i];
    if (op.kind == models::OpKind::SwitchSend || op.kind == models::OpKind::SwitchRecv) {
      throw ReplayError("verbs: rank " + std::to_string(rank) + " op " + std::to_string(i) +
                        " is an in-switch reduction (NVLS); the verbs backend has no in-switch reduction: use --algo other than nvls");
    }
    const bool send = op.kind == models::OpKind::Send;
    const bool recv = op.kind == models::OpKind::Recv || op.kind == models::OpKind::RecvReduce;
    if (!send && !recv) continue;
    if (op.peer < 0 || op.peer >= s.nranks || op.peer == rank) {
      throw ReplayError("verbs: rank " + std::to_string(rank) + " op " + std::to_string(i) + " has peer " + std::to_string(op.peer) +
                        ", expected another rank in 0.." + std::to_string(s.nranks - 1));
    }
    auto& c = by_key[{op.peer, op.channel}];
    c.peer = op.peer;
    c.channel = op.channel;
    (send ? c.send_ops : c.recv_ops).push_back(i);
  }
  std::vector<RdmaConnection> out;
  out.reserve(by_key.size());
  for (auto& [key, c] : by_key) out.push_back(std::move(c));
  return out;
}

int find_connection(std::span<const RdmaConnection> connections, int peer, int channel) {
  auto it = std::lower_bound(connections.begin(), connections.end(), std::pair{peer, channel}, [](const RdmaConnection& c, const auto& key) {
    return std::pair{static_cast<int>(c.peer), static_cast<int>(c.channel)} < key;
  });
  if (it == connections.end() || it->peer != peer || it->channel != channel) return -1;
  return static_cast<int>(it - connections.begin());
}

std::uint64_t RegionLayout::offset_of(const models::Slice& s) const {
  switch (s.buffer) {
    case models::BufferKind::Input: return input + s.offset;
    case models::BufferKind::Output: return output + s.offset;
    case models::BufferKind::Scratch: return scratch + s.offset;
  }
  return 0;
}

RegionLayout region_layout(const models::Schedule& s, int rank, const RankBufferBytes& buffers) {
  const auto& program = s.ranks.at(static_cast<std::size_t>(rank));
  RegionLayout l;
  l.buffers = buffers;
  l.input = 0;
  l.output = align_up(l.input + buffers.input, kRegionAlign);
  l.scratch = align_up(l.output + buffers.output, kRegionAlign);
  l.staging = align_up(l.scratch + buffers.scratch, kRegionAlign);
  l.staging_of_op.assign(program.ops.size(), kNoStaging);
  std::uint64_t used = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const auto& op = program.ops[i];
    if (op.kind != models::OpKind::RecvReduce) continue;
    used = align_up(used, kStagingAlign);
    l.staging_of_op[i] = l.staging + used;
    used += op.dst.bytes;
  }
  l.staging_bytes = used;
  l.bytes = std::max(align_up(l.staging + used, kRegionAlign), kRegionAlign);
  return l;
}

std::vector<OpRoute> op_routes(const models::Schedule& s, int rank, std::span<const RdmaConnection> connections,
                               const std::vector<std::vector<Partner>>& partners, std::span<const RegionLayout> layouts) {
  const auto& program = s.ranks.at(static_cast<std::size_t>(rank));
  std::vector<OpRoute> routes(program.ops.size());
  auto where = [&](std::uint32_t i) { return "verbs: rank " + std::to_string(rank) + " op " + std::to_string(i); };
  for (std::size_t q = 0; q < connections.size(); ++q) {
    const auto& c = connections[q];
    for (std::uint32_t k = 0; k < c.recv_ops.size(); ++k) routes[c.recv_ops[k]] = {static_cast<std::int32_t>(q), k, 0};
    for (std::uint32_t k = 0; k < c.send_ops.size(); ++k) {
      const std::uint32_t i = c.send_ops[k];
      const Partner& p = partners.at(static_cast<std::size_t>(rank)).at(i);
      if (p.rank != c.peer || p.sequence != k) {
        throw ReplayError(where(i) + ": the message matching pairs it with rank " + std::to_string(p.rank) + " message " +
                          std::to_string(p.sequence) + ", expected rank " + std::to_string(c.peer) + " message " + std::to_string(k) +
                          " (FIFO per peer and channel)");
      }
      const auto& recv = s.ranks.at(static_cast<std::size_t>(p.rank)).ops.at(p.op);
      if (recv.kind != models::OpKind::Recv && recv.kind != models::OpKind::RecvReduce) {
        throw ReplayError(where(i) + " (a Send) pairs with rank " + std::to_string(p.rank) + " op " + std::to_string(p.op) +
                          ", which is not a Recv or RecvReduce");
      }
      if (recv.dst.bytes != program.ops[i].src.bytes) {
        throw ReplayError(where(i) + " sends " + std::to_string(program.ops[i].src.bytes) + " bytes but rank " + std::to_string(p.rank) +
                          " op " + std::to_string(p.op) + " receives " + std::to_string(recv.dst.bytes));
      }
      const RegionLayout& target = layouts[static_cast<std::size_t>(p.rank)];
      const std::uint64_t offset = recv.kind == models::OpKind::Recv ? target.offset_of(recv.dst) : target.staging_of_op.at(p.op);
      routes[i] = {static_cast<std::int32_t>(q), k, offset};
    }
  }
  return routes;
}

QueueDepths queue_depths(std::span<const RdmaConnection> connections, std::uint32_t max_qp_wr, std::uint32_t max_cqe) {
  // Σ_q 2·min(m_q, cap) ≤ max_cqe, for the largest cap ≤ max_qp_wr: binary search on cap.
  auto entries = [&](std::uint64_t cap) {
    std::uint64_t total = 0;
    for (const auto& c : connections) total += 2 * std::clamp<std::uint64_t>(c.messages(), 1, cap);
    return total;
  };
  if (max_qp_wr == 0 || entries(1) > max_cqe) {
    throw ReplayError("verbs: " + std::to_string(connections.size()) + " queue pairs need " + std::to_string(entries(1)) +
                      " completion queue entries at depth 1, the device allows " + std::to_string(max_cqe) +
                      " (max_cqe) and " + std::to_string(max_qp_wr) + " work requests per queue (max_qp_wr)");
  }
  std::uint64_t lo = 1, hi = max_qp_wr;  // entries(lo) fits; find the largest cap that fits
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (entries(mid) <= max_cqe) lo = mid;
    else hi = mid - 1;
  }
  QueueDepths d;
  for (const auto& c : connections) d.work_requests.push_back(static_cast<std::uint32_t>(std::clamp<std::uint64_t>(c.messages(), 1, lo)));
  d.completion_entries = static_cast<std::uint32_t>(std::max<std::uint64_t>(entries(lo), 1));
  return d;
}

namespace {

constexpr std::uint8_t kMagic[4] = {'C', 'C', 'V', 'B'};
constexpr std::uint16_t kVersion = 1;

template <class T>
void put(std::vector<std::uint8_t>& out, T v) {
  using U = std::make_unsigned_t<T>;
  const auto u = static_cast<U>(v);
  for (std::size_t b = 0; b < sizeof(T); ++b) out.push_back(static_cast<std::uint8_t>(u >> (8 * b)));
}

template <class T>
T get(std::span<const std::uint8_t> in, std::size_t& at) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (std::size_t b = 0; b < sizeof(T); ++b) u = static_cast<U>(u | static_cast<U>(static_cast<U>(in[at + b]) << (8 * b)));
  at += sizeof(T);
  return static_cast<T>(u);
}

}  // namespace

std::vector<std::uint8_t> serialize(const RankEndpoint& e) {
  std::vector<std::uint8_t> out(std::begin(kMagic), std::end(kMagic));
  out.reserve(kEndpointHeaderBytes + e.qps.size() * kQpEndpointBytes);
  put(out, kVersion);
  put(out, e.rank);
  put(out, e.lid);
  out.insert(out.end(), e.gid.begin(), e.gid.end());
  put(out, e.mtu);
  put(out, e.ethernet);
  put(out, e.region_address);
  put(out, e.rkey);
  put(out, e.region_bytes);
  put(out, static_cast<std::uint32_t>(e.qps.size()));
  for (const auto& q : e.qps) {
    put(out, q.peer);
    put(out, q.channel);
    put(out, q.qp_num);
    put(out, q.psn);
  }
  return out;
}

RankEndpoint parse_endpoint(std::span<const std::uint8_t> bytes, const std::string& from) {
  const std::string what = "verbs: the connection information from " + from;
  if (bytes.size() < kEndpointHeaderBytes) {
    throw ReplayError(what + " is " + std::to_string(bytes.size()) + " bytes, expected at least a " +
                      std::to_string(kEndpointHeaderBytes) + "-byte header");
  }
  if (!std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin())) {
    throw ReplayError(what + " does not start with \"CCVB\": not a ccsim verbs endpoint (ranks running different programs?)");
  }
  std::size_t at = 4;
  const auto version = get<std::uint16_t>(bytes, at);
  if (version != kVersion) {
    throw ReplayError(what + " has format version " + std::to_string(version) + ", expected " + std::to_string(kVersion) +
                      " (ranks running different ccsim builds?)");
  }
  RankEndpoint e;
  e.rank = get<std::int32_t>(bytes, at);
  e.lid = get<std::uint16_t>(bytes, at);
  std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), 16, e.gid.begin());
  at += 16;
  e.mtu = get<std::uint8_t>(bytes, at);
  e.ethernet = get<std::uint8_t>(bytes, at);
  e.region_address = get<std::uint64_t>(bytes, at);
  e.rkey = get<std::uint32_t>(bytes, at);
  e.region_bytes = get<std::uint64_t>(bytes, at);
  const auto count = get<std::uint32_t>(bytes, at);
  const std::uint64_t expected = kEndpointHeaderBytes + std::uint64_t{count} * kQpEndpointBytes;
  if (bytes.size() != expected) {
    throw ReplayError(what + " is " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(expected) + " (header and " +
                      std::to_string(count) + " queue pairs)");
  }
  e.qps.resize(count);
  for (auto& q : e.qps) {
    q.peer = get<std::int32_t>(bytes, at);
    q.channel = get<std::uint16_t>(bytes, at);
    q.qp_num = get<std::uint32_t>(bytes, at);
    q.psn = get<std::uint32_t>(bytes, at);
  }
  return e;
}

}  // namespace ccsim::validate::replay
