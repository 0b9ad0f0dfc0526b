#include "models/hardware/perturbation.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>

#include "support/units.hpp"

namespace ccsim::models {
namespace {

bool matches(const std::string& pattern, const std::string& name) { return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0; }

/// `n` names, the first few of them: "node1/gpu0, node1/gpu1, ... (8)".
std::string some(const std::vector<std::string>& names) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(names.size(), 4);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += fmt::format(", ... ({} in all)", names.size());
  return out;
}

/// Rules multiply; their product stays within [1e-6, 1e6] of nominal (a GPU a million times
/// slower is a failed one, and the step's times must stay finite).
constexpr double kLowest = 1e-6, kHighest = 1e6;

void scale(ComputeSpeed& s, double speed, unsigned ops, const support::SourceLocation& where, const std::string& key) {
  for (auto [bit, v] : {std::pair{kGemmOps, &s.gemm}, std::pair{kAttentionOps, &s.attention}, std::pair{kMemoryOps, &s.memory}}) {
    if ((ops & bit) == 0U) continue;
    *v *= speed;
    if (*v < kLowest || *v > kHighest) {
      throw support::InputError(where, key, "rules whose product leaves every GPU between 1e-6 and 1e6 times its nominal speed",
                                fmt::format("a speed of {:g} after this rule", *v), "rules on the same GPU multiply");
    }
  }
}

std::vector<ComputeSpeed>& speeds(Cluster& c) {
  if (c.gpu_speed.empty()) c.gpu_speed.assign(c.topology.gpus().size(), ComputeSpeed{});
  return c.gpu_speed;
}

/// The GPUs (global ranks) a compute rule selects.
std::vector<int> select_gpus(const Cluster& c, const ComputeRule& r) {
  const Topology& t = c.topology;
  std::vector<int> out;
  for (std::size_t g = 0; g < t.gpus().size(); ++g) {
    const Device& d = t.device(t.gpus()[g]);
    const bool hit = !r.gpus.empty()    ? matches(r.gpus, t.name(t.gpus()[g]))
                     : !r.nodes.empty() ? matches(r.nodes, fmt::format("node{}", d.node))
                                        : c.node_group[static_cast<std::size_t>(d.node)] == r.group;
    if (hit) out.push_back(static_cast<int>(g));
  }
  if (out.empty()) {
    const std::string what = !r.gpus.empty()    ? fmt::format("gpus: '{}'", r.gpus)
                             : !r.nodes.empty() ? fmt::format("nodes: '{}'", r.nodes)
                                                : fmt::format("group: {}", r.group);
    const std::string tried = !r.nodes.empty() ? fmt::format("nodes node0 .. node{}", t.num_nodes() - 1)
                              : r.gpus.empty() ? fmt::format("node groups 0 .. {}", c.spec.groups.size() - 1)
                                               : fmt::format("GPUs {} .. {}", t.name(t.gpus().front()), t.name(t.gpus().back()));
    throw support::InputError(r.where, r.key, "a selector that matches at least one GPU", what + " matches none",
                              "the cluster has " + tried);
  }
  return out;
}

std::string gpu_names(const Topology& t, const std::vector<int>& ranks) {
  std::vector<std::string> names;
  names.reserve(ranks.size());
  for (int g : ranks) names.push_back(t.name(t.gpus()[static_cast<std::size_t>(g)]));
  return some(names);
}

void apply_compute(Cluster& c, const ComputeRule& r) {
  const std::vector<int> sel = select_gpus(c, r);
  for (int g : sel) scale(speeds(c)[static_cast<std::size_t>(g)], r.speed, r.ops, r.where, r.key);
  c.perturbations.push_back(fmt::format("{}: {} GPU{} at {:g}× speed ({}): {}", r.key, sel.size(), sel.size() == 1 ? "" : "s", r.speed,
                                        describe_ops(r.ops), gpu_names(c.topology, sel)));
}

void apply_stragglers(Cluster& c, const StragglerRule& r) {
  const std::size_t n = c.topology.gpus().size();
  if (static_cast<std::size_t>(r.count) > n) {
    throw support::InputError(r.where, r.key + ".count", fmt::format("at most the cluster's {} GPUs", n), std::to_string(r.count));
  }
  std::vector<int> pool(n);
  std::iota(pool.begin(), pool.end(), 0);
  std::mt19937_64 gen(r.seed);
  for (std::size_t i = 0; i < static_cast<std::size_t>(r.count); ++i) std::swap(pool[i], pool[i + gen() % (n - i)]);
  std::vector<int> sel(pool.begin(), pool.begin() + r.count);
  std::sort(sel.begin(), sel.end());
  for (int g : sel) scale(speeds(c)[static_cast<std::size_t>(g)], r.speed, r.ops, r.where, r.key);
  c.perturbations.push_back(fmt::format("{}: {} GPU{} drawn with seed {} at {:g}× speed ({}): {}", r.key, sel.size(),
                                        sel.size() == 1 ? "" : "s", r.seed, r.speed, describe_ops(r.ops), gpu_names(c.topology, sel)));
}

std::string selectors(const LinkRule& r) {
  std::string out;
  const auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (!r.from.empty()) add(fmt::format("link: '{} {} {}'", r.from, r.both_directions ? "<->" : "->", r.to));
  if (!r.device.empty()) add(fmt::format("device: '{}'", r.device));
  if (!r.kind.empty()) add(fmt::format("kind: '{}'", r.kind));
  return out;
}

/// Directed links a link rule selects, in id order.
std::vector<LinkId> select_links(const Topology& t, const std::vector<std::string>& names, const LinkRule& r) {
  std::vector<LinkId> out;
  for (LinkId id = 0; id < t.num_links(); ++id) {
    const std::string& a = names[t.link_source(id)];
    const std::string& b = names[t.link_target(id)];
    if (!r.from.empty()) {
      const bool fwd = matches(r.from, a) && matches(r.to, b);
      const bool back = r.both_directions && matches(r.from, b) && matches(r.to, a);
      if (!fwd && !back) continue;
    }
    if (!r.device.empty() && !matches(r.device, a) && !matches(r.device, b)) continue;
    if (!r.kind.empty() && !matches(r.kind, t.link_kind_name(t.link(id)))) continue;
    out.push_back(id);
  }
  if (out.empty()) {
    throw support::InputError(r.where, r.key, "selectors that match at least one link", selectors(r) + " matches none",
                              "devices are named like node0/gpu0, node0/nic0, node0/nvswitch, node0/pcie0, node0/cpu0, leaf0, spine0; "
                              "`ccsim topo --dot FILE` lists them");
  }
  return out;
}

}  // namespace

std::string describe_timing(const LinkRule& r) {
  std::string out = "at " + support::format_time(r.at);
  if (std::isfinite(r.duration)) out += " for " + support::format_time(r.duration);
  if (r.every > 0) out += ", every " + support::format_time(r.every);
  return out;
}

namespace {

void apply_link_factor(Cluster& c, const std::vector<std::string>& names, const LinkRule& r) {
  Topology& t = c.topology;
  const std::vector<LinkId> sel = select_links(t, names, r);
  std::vector<std::string> shown;
  if (r.factor == 1.0) {  // a link that is up and unchanged (factor 1, or fail: false): nothing splits
    c.perturbations.push_back(fmt::format("{} ({}): {} link direction{} unchanged", r.key, selectors(r), sel.size(), sel.size() == 1 ? "" : "s"));
    return;
  }
  for (LinkId id : sel) {
    const double now = t.link(id).bandwidth * r.factor;
    if (!(now >= 1.0) || !std::isfinite(now) || now > 1e18) {
      throw support::InputError(r.where, r.key, "factors whose product leaves every link between 1 B/s and 1 EB/s",
                                fmt::format("{:g} B/s on {} -> {} after this rule", now, names[t.link_source(id)], names[t.link_target(id)]),
                                "rules on the same link multiply");
    }
    t.set_bandwidth(id, now);
    if (shown.size() < 4) shown.push_back(names[t.link_source(id)] + " -> " + names[t.link_target(id)]);
  }
  if (sel.size() > shown.size()) shown.push_back(fmt::format("... ({} in all)", sel.size()));
  std::string list;
  for (const auto& s : shown) list += (list.empty() ? "" : ", ") + s;
  c.perturbations.push_back(fmt::format("{} ({}): {} link direction{} at {:g}× bandwidth: {}", r.key, selectors(r), sel.size(),
                                        sel.size() == 1 ? "" : "s", r.factor, list));
}

/// The NICs `r` names when it fails NICs (a `device:` pattern alone that matches only NICs), else empty.
std::vector<DeviceId> failed_nics(const Topology& t, const std::vector<std::string>& names, const LinkRule& r) {
  std::vector<DeviceId> nics;
  if (!r.fail || r.device.empty() || !r.from.empty() || !r.kind.empty()) return nics;
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    if (!matches(r.device, names[d])) continue;
    if (t.device(d).kind != DeviceKind::Nic) return {};
    nics.push_back(d);
  }
  return nics;
}

/// Both directions of every link `r` selects go down.
void apply_link_failure(Cluster& c, const std::vector<std::string>& names, const LinkRule& r, std::vector<LinkId>& down) {
  Topology& t = c.topology;
  const std::vector<LinkId> sel = select_links(t, names, r);
  std::set<LinkId> cables;
  for (LinkId id : sel) cables.insert(id & ~1U);
  std::vector<std::string> shown;
  for (LinkId id : cables) {
    t.fail_link(id);
    t.fail_link(Topology::reverse(id));
    down.push_back(id);
    shown.push_back(names[t.link_source(id)] + " <-> " + names[t.link_target(id)]);
  }
  c.perturbations.push_back(fmt::format("{} ({}): {} link{} down: {}", r.key, selectors(r), cables.size(), cables.size() == 1 ? "" : "s", some(shown)));
}

/// NCCL's IB port failover: the GPUs that used a failed NIC move to the node's best remaining NIC.
void apply_nic_failure(Cluster& c, const std::vector<std::string>& names, const LinkRule& r, const std::vector<DeviceId>& nics,
                       std::set<DeviceId>& failed, std::vector<LinkId>& down) {
  Topology& t = c.topology;
  failed.insert(nics.begin(), nics.end());
  std::vector<std::string> moves;
  std::set<int> touched;
  for (DeviceId nic : nics) {
    const int node = t.device(nic).node;
    const NodeDevices& nd = c.nodes[static_cast<std::size_t>(node)];
    for (DeviceId gpu : nd.gpus) {
      if (t.device(gpu).nic != nic) continue;
      DeviceId best = kNoDevice;
      Path best_path;
      for (DeviceId other : nd.nics) {
        if (failed.count(other) != 0U) continue;
        const Path p = t.route(gpu, other, 1).path;
        if (best == kNoDevice || p.bandwidth > best_path.bandwidth ||
            (p.bandwidth == best_path.bandwidth && p.latency < best_path.latency)) {
          best = other;
          best_path = p;
        }
      }
      if (best == kNoDevice && c.nodes.size() == 1) continue;  // one node: no network to reach
      if (best == kNoDevice) {
        throw support::RuleError(r.where, r.key, "a failure that leaves every node at least one NIC",
                                  fmt::format("every NIC of node{} failed", node), "its GPUs would have no network");
      }
      t.device(gpu).nic = best;
      touched.insert(node);
      moves.push_back(fmt::format("{} -> {} ({:.1f} GB/s path)", names[gpu], names[best], best_path.bandwidth / 1e9));
    }
  }
  for (int node : touched) t.split_node_class(node);
  // Nothing passes through a failed NIC any more.
  for (DeviceId nic : nics) {
    for (LinkId id : t.out_links(nic)) {
      t.fail_link(id);
      t.fail_link(Topology::reverse(id));
      down.push_back(id);
    }
  }
  std::vector<std::string> nic_names;
  for (DeviceId nic : nics) nic_names.push_back(names[nic]);
  c.perturbations.push_back(fmt::format("{}: NIC{} failed: {}; GPUs moved: {}", r.key, nics.size() == 1 ? "" : "s", some(nic_names),
                                        moves.empty() ? std::string("none") : some(moves)));
}

/// Every GPU of a node a failed link touches (an end in the node, or a switch its NICs attach
/// to) still reaches and is reached by the next GPU of its node and a GPU of another node.
/// Throws InputError at `rule` (the last failure rule) naming the first pair that cannot.
void check_connected(const Cluster& c, const std::vector<std::string>& names, const std::vector<LinkId>& down, const LinkRule& rule) {
  const Topology& t = c.topology;
  std::set<int> nodes;
  std::set<DeviceId> switches;
  for (LinkId id : down) {
    for (DeviceId d : {t.link_source(id), t.link_target(id)}) {
      if (t.device(d).node >= 0) nodes.insert(t.device(d).node);
      if (t.device(d).kind == DeviceKind::NetworkSwitch) switches.insert(d);
    }
  }
  if (!switches.empty()) {
    for (std::size_t n = 0; n < c.nodes.size(); ++n) {
      for (DeviceId nic : c.nodes[n].nics) {
        // Every link of the NIC, down ones included (they still name where it was attached).
        for (const auto& e : boost::make_iterator_range(boost::out_edges(nic, t.graph())))
          if (switches.count(t.link_target(t.graph()[e])) != 0U) nodes.insert(static_cast<int>(n));
      }
    }
  }
  const auto reach = [&](DeviceId a, DeviceId b) {
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      try {
        (void)t.route(x, y, 1);
      } catch (const std::runtime_error&) {
        throw support::RuleError(rule.where, rule.key, "failures that leave every GPU a path to every other",
                                  fmt::format("no path from {} to {} after the failed links", names[x], names[y]),
                                  "fail fewer links, or give the degraded ones a `factor:`");
      }
    }
  };
  for (int n : nodes) {
    const auto& gpus = c.nodes[static_cast<std::size_t>(n)].gpus;
    const int other = n == 0 ? (c.nodes.size() > 1 ? 1 : -1) : 0;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (gpus.size() > 1) reach(gpus[i], gpus[(i + 1) % gpus.size()]);
      if (other >= 0 && !c.nodes[static_cast<std::size_t>(other)].gpus.empty()) reach(gpus[i], c.nodes[static_cast<std::size_t>(other)].gpus.front());
    }
  }
}

}  // namespace

std::string describe_ops(unsigned ops) {
  if (ops == kAllOps) return "all ops";
  std::string out;
  const auto add = [&](const char* s) { out += (out.empty() ? "" : ", ") + std::string(s); };
  if ((ops & kGemmOps) != 0U) add("gemm");
  if ((ops & kAttentionOps) != 0U) add("attention");
  if ((ops & kMemoryOps) != 0U) add("memory");
  return out;
}

namespace {

/// The window of `r` that holds at or after t: [start, end) with end > t (start may be ≤ t), or
/// start = +inf when none does.
std::pair<double, double> window_from(const LinkRule& r, double t) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (r.every <= 0) return t < r.at + r.duration ? std::make_pair(r.at, r.at + r.duration) : std::make_pair(kInf, kInf);
  double k = t <= r.at ? 0.0 : std::floor((t - r.at) / r.every);
  double start = r.at + k * r.every;
  if (start + r.duration <= t) start = r.at + (k + 1) * r.every;
  return {start, start + r.duration};
}

}  // namespace

bool windows_overlap(const LinkRule& a, const LinkRule& b, double horizon, double& when) {
  // Walk both window sequences in time order. At t, each rule's current or next window ends
  // after t; if both hold at the later start they overlap there, else the one that ended first
  // is behind us: go on from its end (which is after t, so the walk moves on).
  double t = 0;
  for (std::size_t guard = 0; guard < 10000000 && t < horizon; ++guard) {
    const auto [sa, ea] = window_from(a, t);
    const auto [sb, eb] = window_from(b, t);
    if (!std::isfinite(sa) || !std::isfinite(sb)) return false;
    const double start = std::max({sa, sb, t});
    if (start >= horizon) return false;
    // Windows that only touch (one ends where the other starts, up to rounding of the decimal
    // times they were written in) do not overlap.
    const double tol = 1e-12 * std::max(1.0, start);
    if (start + tol < ea && start + tol < eb) {
      when = start;
      return true;
    }
    t = std::min(ea, eb);
  }
  return false;
}

WhatIfSpec with_timed_rules(const WhatIfSpec& w, const std::vector<std::size_t>& timed) {
  WhatIfSpec out = w;
  out.links.clear();
  for (std::size_t i = 0; i < w.links.size(); ++i) {
    if (!w.links[i].timed()) {
      out.links.push_back(w.links[i]);
    } else if (std::find(timed.begin(), timed.end(), i) != timed.end()) {
      LinkRule r = w.links[i];
      r.at = -1;
      out.links.push_back(r);
    }
  }
  return out;
}

void apply_what_if(Cluster& c, const WhatIfSpec& w) {
  for (const auto& r : w.compute) apply_compute(c, r);
  for (const auto& r : w.stragglers) apply_stragglers(c, r);
  if (w.links.empty()) return;
  std::vector<std::string> names(c.topology.num_devices());
  for (DeviceId d = 0; d < names.size(); ++d) names[d] = c.topology.name(d);
  std::set<DeviceId> failed;
  std::vector<LinkId> down;
  const LinkRule* last_failure = nullptr;
  for (const auto& r : w.links) {
    if (r.timed()) {
      // Applied by the workload runner while it holds; its selectors are checked here, and the
      // nodes it touches get classes of their own now (no hidden symmetry: the replicas on them
      // are not the same as the others' while it holds, so they need their own representatives).
      const std::vector<LinkId> sel = select_links(c.topology, names, r);
      const std::size_t n = sel.size();
      std::set<int> touched;
      for (LinkId id : sel)
        for (DeviceId d : {c.topology.link_source(id), c.topology.link_target(id)})
          if (c.topology.device(d).node >= 0) touched.insert(c.topology.device(d).node);
      for (int node : touched) c.topology.split_node_class(node);
      c.perturbations.push_back(fmt::format("{} ({}): {} link direction{} {}, timed: {} (ccsim run applies it to the ops that run "
                                            "then; the links here are as they are outside it)",
                                            r.key, selectors(r), n, n == 1 ? "" : "s",
                                            r.fail ? std::string("down") : fmt::format("at {:g}× bandwidth", r.factor), describe_timing(r)));
      continue;
    }
    if (!r.fail) {
      apply_link_factor(c, names, r);
      continue;
    }
    last_failure = &r;
    const std::vector<DeviceId> nics = failed_nics(c.topology, names, r);
    if (!nics.empty()) {
      apply_nic_failure(c, names, r, nics, failed, down);
    } else {
      const std::size_t before = down.size();
      apply_link_failure(c, names, r, down);
      // A NIC whose network port went down is out: its GPUs fail over as for a failed NIC.
      std::vector<DeviceId> ports;
      for (std::size_t i = before; i < down.size(); ++i) {
        for (DeviceId d : {c.topology.link_source(down[i]), c.topology.link_target(down[i])}) {
          const DeviceId other = d == c.topology.link_source(down[i]) ? c.topology.link_target(down[i]) : c.topology.link_source(down[i]);
          if (c.topology.device(d).kind == DeviceKind::Nic && c.topology.device(other).kind == DeviceKind::NetworkSwitch &&
              failed.count(d) == 0U && std::find(ports.begin(), ports.end(), d) == ports.end()) {
            ports.push_back(d);
          }
        }
      }
      if (!ports.empty()) apply_nic_failure(c, names, r, ports, failed, down);
    }
  }
  if (last_failure != nullptr) check_connected(c, names, down, *last_failure);
}

}  // namespace ccsim::models
