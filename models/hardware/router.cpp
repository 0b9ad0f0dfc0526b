#include "models/hardware/router.hpp"

#include <stdexcept>

#include "support/hash.hpp"

namespace ccsim::models {

namespace {
constexpr LinkId kNoLink = ~0U;
std::uint64_t key3(std::uint64_t a, std::uint64_t b, std::uint64_t c) { return (a << 48) ^ (b << 24) ^ c; }
}  // namespace

Router::Router(const Cluster& cluster) : cluster_(cluster), balanced_(cluster.spec.fabric.ecmp == Ecmp::Balanced) {
  const Topology& t = cluster.topology;
  nodes_.resize(cluster.nodes.size());
  // Devices and links of node n are contiguous and created before the next node's.
  std::vector<char> seen(cluster.nodes.size(), 0);
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    const int n = t.device(d).node;
    if (n >= 0 && !seen[static_cast<std::size_t>(n)]) {
      seen[static_cast<std::size_t>(n)] = 1;
      nodes_[static_cast<std::size_t>(n)].first_device = d;
      nodes_[static_cast<std::size_t>(n)].first_link = kNoLink;
    }
  }
  for (LinkId id = 0; id < t.num_links(); ++id) {
    const int n = t.device(t.link_source(id)).node;
    if (n >= 0 && t.device(t.link_target(id)).node == n && nodes_[static_cast<std::size_t>(n)].first_link == kNoLink) {
      nodes_[static_cast<std::size_t>(n)].first_link = id;
    }
  }
  node_gpus_.resize(cluster.nodes.size());
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    const Device& g = t.device(d);
    if (g.kind != DeviceKind::Gpu || g.node < 0 || g.local < 0) continue;
    auto& gpus = node_gpus_[static_cast<std::size_t>(g.node)];
    if (gpus.size() <= static_cast<std::size_t>(g.local)) gpus.resize(static_cast<std::size_t>(g.local) + 1, kNoDevice);
    gpus[static_cast<std::size_t>(g.local)] = d;
  }
  nic_uplink_.assign(t.num_devices(), kNoLink);
  leaf_port_.assign(t.num_devices(), 0);
  leaf_ports_.assign(t.num_devices(), 0);
  leaf_up_.resize(t.num_devices());
  spine_down_.resize(t.num_devices());
  spine_up_.resize(t.num_devices());
  core_down_.resize(t.num_devices());
  const auto put = [](std::vector<LinkId>& v, std::int32_t at, LinkId id) {
    if (v.size() <= static_cast<std::size_t>(at)) v.resize(static_cast<std::size_t>(at) + 1, kNoLink);
    v[static_cast<std::size_t>(at)] = id;
  };
  for (LinkId id = 0; id < t.num_links(); ++id) {
    const Device& a = t.device(t.link_source(id));
    const Device& b = t.device(t.link_target(id));
    if (a.kind == DeviceKind::Nic && b.kind == DeviceKind::NetworkSwitch) {
      nic_uplink_[t.link_source(id)] = id;
      leaf_port_[t.link_source(id)] = leaf_ports_[t.link_target(id)]++;
    }
    if (a.kind == DeviceKind::NetworkSwitch && b.kind == DeviceKind::NetworkSwitch) {
      if (a.tier == 1 && b.tier == 2) leaf_up_[t.link_source(id)].push_back(id);
      if (a.tier == 2 && b.tier == 1) put(spine_down_[t.link_source(id)], b.local, id);
      if (a.tier == 2 && b.tier == 3) spine_up_[t.link_source(id)].push_back(id);
      if (a.tier == 3 && b.tier == 2) put(core_down_[t.link_source(id)], b.local, id);
    }
  }
  // Balanced ECMP: a source port's term of the rotation (FabricSpec::ecmp): its position
  // scaled to the leaf's S uplinks, ⌊i·S/P⌋, then with S a power of two bit-reversed, so that
  // the first P/2^k ports of a leaf (a cluster's first nodes) take every 2^k-th uplink.
  source_turn_.assign(t.num_devices(), 0);
  for (DeviceId nic = 0; nic < t.num_devices(); ++nic) {
    if (nic_uplink_[nic] == kNoLink) continue;
    const DeviceId leaf = t.link_target(nic_uplink_[nic]);
    const std::uint64_t uplinks = leaf_up_[leaf].size();
    if (uplinks == 0) continue;
    std::uint64_t x = static_cast<std::uint64_t>(leaf_port_[nic]) * uplinks / leaf_ports_[leaf];
    if ((uplinks & (uplinks - 1)) == 0) {
      std::uint64_t r = 0;
      for (std::uint64_t bit = 1; bit < uplinks; bit <<= 1, x >>= 1) r = (r << 1) | (x & 1);
      x = r;
    }
    source_turn_[nic] = static_cast<std::uint32_t>(x);
  }
}

const Path& Router::fallback(DeviceId src, DeviceId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  auto it = fallback_cache_.find(key);
  if (it == fallback_cache_.end()) it = fallback_cache_.emplace(key, topology().route(src, dst, 1).path).first;
  return it->second;
}

const Path& Router::local(DeviceId src, DeviceId dst) {
  const Topology& t = topology();
  const int n = t.device(src).node;
  const NodeLayout& node = nodes_[static_cast<std::size_t>(n)];
  // The representative of the node's class is the node whose routes are cached.
  const int cls = t.node_class(n);
  const NodeLayout* rep = &nodes_[static_cast<std::size_t>(t.class_representative(cls))];
  const std::uint64_t key = key3(static_cast<std::uint64_t>(cls), src - node.first_device, dst - node.first_device);
  auto it = local_cache_.find(key);
  if (it == local_cache_.end()) {
    Path p = t.route(rep->first_device + (src - node.first_device), rep->first_device + (dst - node.first_device), 1).path;
    for (LinkId& id : p.links) {
      const int owner = t.device(t.link_source(id)).node;
      if (owner != t.device(rep->first_device).node || t.device(t.link_target(id)).node != owner) {
        return fallback(src, dst);  // leaves the node: not shiftable
      }
      id -= rep->first_link;
    }
    it = local_cache_.emplace(key, std::move(p)).first;
  }
  scratch_ = it->second;
  for (LinkId& id : scratch_.links) id += node.first_link;
  return scratch_;
}

DeviceId Router::pxn_relay(DeviceId src, DeviceId dst) {
  const Topology& t = topology();
  const Device& s = t.device(src);
  const Device& d = t.device(dst);
  if (s.kind != DeviceKind::Gpu || d.kind != DeviceKind::Gpu || s.node < 0 || d.node < 0 || s.node == d.node) return kNoDevice;
  const auto& gpus = node_gpus_[static_cast<std::size_t>(s.node)];
  if (d.local < 0 || static_cast<std::size_t>(d.local) >= gpus.size()) return kNoDevice;
  const DeviceId relay = gpus[static_cast<std::size_t>(d.local)];
  if (relay == kNoDevice || relay == src) return kNoDevice;
  const Device& r = t.device(relay);
  // search.cc: peerGpu->paths[GPU][g1].type <= PATH_NVL, peerGpu->paths[NET][n].type <= PATH_PXB
  // (NCCL_PXN_C2C's PATH_P2C, a NIC behind a Grace CPU's C2C link, is not told apart here) and
  // GDR on for that GPU and NIC.
  if (r.nic == kNoDevice || nic_uplink_[r.nic] == kNoLink || !r.gdr_send || t.device(r.nic).host_bounce) return kNoDevice;
  if (local(src, relay).type != PathType::Nvl) return kNoDevice;
  if (local(relay, r.nic).type > PathType::Pxb) return kNoDevice;
  return relay;
}

const Path& Router::route(DeviceId src, DeviceId dst, std::uint64_t flow, std::uint32_t channel, bool pxn) {
  const Topology& t = topology();
  const Device& s = t.device(src);
  const Device& d = t.device(dst);
  if (s.node >= 0 && s.node == d.node) return local(src, dst);
  const bool structured = s.kind == DeviceKind::Gpu && d.kind == DeviceKind::Gpu && s.nic != kNoDevice && d.nic != kNoDevice &&
                          nic_uplink_[s.nic] != kNoLink && nic_uplink_[d.nic] != kNoLink;
  if (!structured) return fallback(src, dst);
  std::vector<LinkId> links;
  // With PXN the send crosses NVLink to the relay GPU and leaves through the relay's NIC.
  const DeviceId relay = pxn ? pxn_relay(src, dst) : kNoDevice;
  DeviceId out_nic = s.nic;
  if (relay != kNoDevice) {
    out_nic = t.device(relay).nic;
    compose(links, local(src, relay));
    compose(links, local(relay, out_nic));
  } else {
    compose(links, local(src, s.nic));
  }
  const LinkId up = nic_uplink_[out_nic];
  const LinkId down = Topology::reverse(nic_uplink_[d.nic]);
  const DeviceId leaf_a = t.link_target(up);
  const DeviceId leaf_b = t.link_source(down);
  links.push_back(up);
  if (leaf_a != leaf_b) {
    const auto& ups = leaf_up_[leaf_a];
    if (ups.empty()) return fallback(src, dst);
    // Balanced: the rotation of the two leaf ports and the channel (see FabricSpec::ecmp).
    // The two leaves' indices are added too (constant for a pair of leaves, so the spread
    // between two leaves is unchanged): with rail-optimized wiring and few nodes per leaf, one
    // source port reaches only a few destination ports (2 nodes per leaf: one, so σ(i) + j is
    // the same for every cross-rail flow), and without them all cross-rail flows of a leaf would
    // take one uplink and arrive over one spine downlink.
    const std::uint64_t turn = static_cast<std::uint64_t>(source_turn_[out_nic]) + leaf_port_[d.nic] +
                               static_cast<std::uint64_t>(t.device(leaf_a).local) +
                               static_cast<std::uint64_t>(t.device(leaf_b).local) + channel;
    const LinkId to_spine = ups[(balanced_ ? turn : flow) % ups.size()];
    const DeviceId spine = t.link_target(to_spine);
    const auto& downs = spine_down_[spine];
    const auto leaf_b_local = static_cast<std::size_t>(t.device(leaf_b).local);
    links.push_back(to_spine);
    if (leaf_b_local < downs.size() && downs[leaf_b_local] != kNoLink) {
      links.push_back(downs[leaf_b_local]);  // leaf b is in the spine's pod
    } else {
      // Another pod: up to a core, down to a spine of leaf b's pod (any of them reaches every
      // core), each chosen by further bits of the flow hash.
      const auto& to_cores = spine_up_[spine];
      const auto& ups_b = leaf_up_[leaf_b];
      if (to_cores.empty() || ups_b.empty()) return fallback(src, dst);
      LinkId to_core = kNoLink, b_up = kNoLink;
      if (balanced_) {
        // The rotation continued: a core by the turn's multiple of the spine count and the two
        // leaves, the destination pod's spine of the same index as the source pod's.
        const auto leaves = static_cast<std::uint64_t>(t.device(leaf_a).local) + static_cast<std::uint64_t>(t.device(leaf_b).local);
        to_core = to_cores[(turn / ups.size() + leaves) % to_cores.size()];
        b_up = ups_b[(turn % ups.size()) % ups_b.size()];
      } else {
        const std::uint64_t h = support::splitmix64(flow);
        to_core = to_cores[h % to_cores.size()];
        b_up = ups_b[(h / to_cores.size()) % ups_b.size()];
      }
      const auto& core_downs = core_down_[t.link_target(to_core)];
      const auto spine_b_local = static_cast<std::size_t>(t.device(t.link_target(b_up)).local);
      if (spine_b_local >= core_downs.size() || core_downs[spine_b_local] == kNoLink) return fallback(src, dst);
      links.push_back(to_core);
      links.push_back(core_downs[spine_b_local]);
      links.push_back(Topology::reverse(b_up));
    }
  }
  links.push_back(down);
  const Path& tail = local(d.nic, dst);
  links.insert(links.end(), tail.links.begin(), tail.links.end());
  scratch_ = t.make_path(std::move(links));
  return scratch_;
}

}  // namespace ccsim::models
