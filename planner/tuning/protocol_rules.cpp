#include "planner/tuning/protocol_rules.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

namespace ccsim::planner {

std::optional<int> compute_capability(std::string_view arch) {
  if (arch.size() < 3 || arch.substr(0, 2) != "sm") return std::nullopt;
  int value = 0;
  for (char c : arch.substr(2)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || value > 100000) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string architecture_family(std::string_view arch) {
  if (const auto cc = compute_capability(arch)) {
    // NCCL's compCapIndex (src/graph/tuning.cc): every capability below 8.0 uses the Volta row.
    return *cc >= 100 ? "blackwell" : *cc >= 90 ? "hopper" : *cc >= 80 ? "ampere" : "volta";
  }
  if (arch.size() > 3 && arch.substr(0, 3) == "gfx") return std::string(arch);
  return "";
}

std::string tuning_architecture(const std::vector<std::string>& archs) {
  std::string best = archs.empty() ? std::string() : archs.front();
  for (const std::string& a : archs) {
    const auto cc = compute_capability(a);
    const auto best_cc = compute_capability(best);
    if (cc && best_cc && *cc < *best_cc) best = a;
  }
  return best;
}

bool is_architecture_family(std::string_view key) {
  return key == "volta" || key == "ampere" || key == "hopper" || key == "blackwell" ||
         (key.size() > 3 && key.substr(0, 3) == "gfx");
}

std::optional<models::PathType> parse_path_type(std::string_view s) {
  for (models::PathType t : {models::PathType::Nvl, models::PathType::Pix, models::PathType::Pxb, models::PathType::Phb,
                             models::PathType::Sys, models::PathType::Net}) {
    const std::string_view name = models::to_string(t);
    if (name.size() == s.size() && std::equal(name.begin(), name.end(), s.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return t;
    }
  }
  return std::nullopt;
}

ProtocolContext protocol_context(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus, models::Router* router) {
  const models::Topology& t = cluster.topology;
  const auto path_type = [&](models::DeviceId a, models::DeviceId b) {
    return router != nullptr ? router->route(a, b).type : t.route(a, b, 1).path.type;
  };
  ProtocolContext c;
  std::map<int, std::vector<models::DeviceId>> by_node;  // ranks' GPUs per node, rank order
  for (models::DeviceId g : gpus) by_node[t.device(g).node].push_back(g);
  c.nodes = static_cast<int>(by_node.size());
  // Path types are alike on the nodes of one class whose ranks sit on the same local GPUs in
  // the same order: per node, its class and then its ranks' local GPUs.
  std::vector<std::vector<int>> seen;
  for (const auto& [node, members] : by_node) {
    const int group = node >= 0 ? cluster.node_group[static_cast<std::size_t>(node)] : -1;
    if (group >= 0) {
      const std::string& arch = cluster.spec.groups[static_cast<std::size_t>(group)].node.gpu.arch;
      if (std::find(c.archs.begin(), c.archs.end(), arch) == c.archs.end()) c.archs.push_back(arch);
    }
    std::vector<int> key{node >= 0 ? t.node_class(node) : -1};
    for (models::DeviceId g : members) key.push_back(t.device(g).local);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(std::move(key));
    // Ring neighbours on this node (a ring over n > 2 GPUs also closes last -> first).
    const std::size_t n = members.size();
    for (std::size_t i = 0; n > 1 && i < (n == 2 ? 1 : n); ++i) {
      c.intra = std::max(c.intra, path_type(members[i], members[(i + 1) % n]));
    }
    if (by_node.size() > 1) {
      for (models::DeviceId g : members) {
        const models::DeviceId nic = t.device(g).nic;
        if (nic == models::kNoDevice) continue;
        c.inter = std::max(c.inter, path_type(g, nic));
      }
    }
  }
  // The first rank's architecture first, so callers can take archs.front() as "the" one.
  if (!gpus.empty()) {
    const int node0 = t.device(gpus.front()).node;
    if (node0 >= 0) {
      const std::string& arch0 =
          cluster.spec.groups[static_cast<std::size_t>(cluster.node_group[static_cast<std::size_t>(node0)])].node.gpu.arch;
      const auto it = std::find(c.archs.begin(), c.archs.end(), arch0);
      if (it != c.archs.end()) std::rotate(c.archs.begin(), it, it + 1);
    }
  }
  return c;
}

std::string ProtocolRule::refusal(const ProtocolContext& c) const {
  if (!mixed_archs && c.archs.size() > 1) return "ranks of different GPU architectures";
  for (const std::string& arch : c.archs) {
    const std::string family = architecture_family(arch);
    const bool listed = std::any_of(archs.begin(), archs.end(), [&](const std::string& a) { return a == arch || a == family; });
    if (!listed) return fmt::format("not enabled on {}", arch);
  }
  if (c.intra > max_intra) {
    return fmt::format("intra-node path {} is farther than {}", models::to_string(c.intra), models::to_string(max_intra));
  }
  if (c.nodes > 1 && c.inter > max_inter) {
    return fmt::format("GPU-to-NIC path {} is farther than {}", models::to_string(c.inter), models::to_string(max_inter));
  }
  return "";
}

}  // namespace ccsim::planner
