#include "models/scenario/cluster_section.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

/// Upper bounds; far above any built system, they guard against typos and overflow.
constexpr int kMaxNodes = 1 << 20;
/// The largest cluster, in GPUs: what `ccsim topo` builds and summarises in about 1.2 GiB
/// (measured, Release: 32,768 × dgx-h100 = 262,144 GPUs, 7 s CPU, 1.25 GB peak; memory and
/// time grow linearly, so 2^20 GPUs would need ~5 GB and failed with bad_alloc).
constexpr int kMaxClusterGpus = 1 << 18;
constexpr int kMaxSpines = 4096;
/// Leaf-spine links of a fat tree: 2^18, 16x the 16,384-GPU rail-optimized SuperPOD scenario's
/// (512 leaves x 32 spines = 16,384); beyond it building and routing take minutes.
constexpr std::int64_t kMaxLeafSpineLinks = 1 << 18;  // switch radix limits real spines to a few hundred

FabricTier parse_tier(const support::Fields& f, const Catalog& catalog) {
  f.reject_unknown({"link", "latency"});
  FabricTier tier;
  if (f.has("link")) {
    tier.link = catalog.link(f, "link");
    if (tier.link->link_class != LinkClass::Network) throw f.error("link", "a link of class network");
  }
  if (f.has("latency")) tier.latency = f.quantity("latency", support::Quantity::Time, false);
  return tier;
}

FabricSpec parse_fabric(const support::Fields& f, const Catalog& catalog) {
  f.reject_unknown({"kind", "wiring", "nodes_per_leaf", "spines", "oversubscription", "leaf", "spine", "nodes_per_pod",
                    "cores", "pod_oversubscription", "core", "ecmp"});
  FabricSpec spec;
  const std::string kind = f.choice("kind", {"single-switch", "fat-tree"});
  spec.kind = kind == "fat-tree" ? FabricKind::FatTree : FabricKind::SingleSwitch;
  if (spec.kind == FabricKind::SingleSwitch) {
    for (const char* key : {"wiring", "nodes_per_leaf", "spines", "oversubscription", "spine", "nodes_per_pod", "cores",
                            "pod_oversubscription", "core", "ecmp"}) {
      if (f.has(key)) throw f.error(key, "no '" + std::string(key) + "' key for a single-switch fabric (only kind and leaf)");
    }
  } else {
    spec.wiring = f.choice("wiring", {"rail-optimized", "tor"}, "rail-optimized") == "tor" ? Wiring::Tor : Wiring::RailOptimized;
    spec.ecmp = f.choice("ecmp", {"hash", "balanced"}, "hash") == "balanced" ? Ecmp::Balanced : Ecmp::Hash;
    spec.nodes_per_leaf = f.count("nodes_per_leaf", 1, kMaxNodes, 0);
    spec.spines = f.count("spines", 1, kMaxSpines, 0);
    // Real fat trees are built from 1:1 to about 8:1; 1000:1 is a bound far beyond that which
    // keeps every derived uplink within the physical bandwidth range.
    constexpr double kMaxOversubscription = 1000.0;
    const std::string expected = "a ratio of downlink to uplink bandwidth from 1 to 1000, such as 2 or 2:1";
    spec.oversubscription = f.ratio("oversubscription", 1.0, expected, 1.0);
    if (spec.oversubscription > kMaxOversubscription) throw f.error("oversubscription", expected);
    // Third tier (pods of whole leaf groups under core switches): its keys need nodes_per_pod,
    // and nodes_per_pod needs nodes_per_leaf and must be a multiple of it. Whether there is
    // more than one pod is checked with the node count (parse_cluster).
    if (f.has("nodes_per_pod")) {
      spec.nodes_per_pod = f.count("nodes_per_pod", 1, kMaxNodes);
      if (spec.nodes_per_leaf == 0) {
        throw f.error("nodes_per_pod", "no 'nodes_per_pod' without 'nodes_per_leaf' (pods are made of whole leaf groups)");
      }
      if (spec.nodes_per_pod % spec.nodes_per_leaf != 0) {
        throw f.error("nodes_per_pod", fmt::format("a multiple of nodes_per_leaf ({}): pods are made of whole leaf groups",
                                                   spec.nodes_per_leaf));
      }
      spec.cores = f.count("cores", 1, kMaxSpines, 0);
      const std::string pod_expected = "a ratio of spine downlink to uplink (core) bandwidth from 1 to 1000, such as 7 or 7:1";
      spec.pod_oversubscription = f.ratio("pod_oversubscription", 1.0, pod_expected, 1.0);
      if (spec.pod_oversubscription > kMaxOversubscription) throw f.error("pod_oversubscription", pod_expected);
    } else {
      for (const char* key : {"cores", "pod_oversubscription", "core"}) {
        if (f.has(key)) throw f.error(key, "no '" + std::string(key) + "' key without 'nodes_per_pod' (a two-tier fat tree has no core tier)");
      }
    }
  }
  if (const auto leaf = f.optional_map("leaf")) spec.leaf = parse_tier(*leaf, catalog);
  if (const auto spine = f.optional_map("spine")) spec.spine = parse_tier(*spine, catalog);
  if (const auto core = f.optional_map("core")) spec.core = parse_tier(*core, catalog);
  return spec;
}

}  // namespace

ClusterSpec parse_cluster(const support::Fields& root, const Catalog& catalog, const std::string& file) {
  const support::Fields c = root.map("cluster");
  c.reject_unknown({"name", "nodes", "fabric"});
  ClusterSpec spec;
  spec.name = c.optional_string("name").value_or(fs::path(file).stem().string());
  const std::vector<support::YamlSource> groups = c.list("nodes");
  if (groups.empty()) throw c.error("nodes", "a list of at least one node group");
  std::int64_t gpus = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const support::Fields g({groups[i]}, support::element_path(c.key_path("nodes"), i));
    g.reject_unknown({"node", "count"});
    NodeGroupSpec group;
    group.node = catalog.node(g, "node");
    group.count = g.count("count", 1, kMaxNodes, 1);
    gpus += static_cast<std::int64_t>(group.count) * group.node.gpus;
    if (gpus > kMaxClusterGpus) {
      throw support::RuleError(g.location(g.has("count") ? "count" : "node"), g.key_path(g.has("count") ? "count" : "node"),
                       fmt::format("a cluster of at most {} GPUs", kMaxClusterGpus),
                       fmt::format("{} GPUs in all ({} node{} of {} GPUs here)", gpus, group.count,
                                   group.count == 1 ? "" : "s", group.node.gpus));
    }
    spec.groups.push_back(std::move(group));
  }
  if (const auto fabric = c.optional_map("fabric")) {
    spec.fabric = parse_fabric(*fabric, catalog);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (spec.groups[i].node.nics == 0) {
        const support::Fields g({groups[i]}, support::element_path(c.key_path("nodes"), i));
        throw support::RuleError(g.error("node", "a node with NICs to join the fabric (this template has none)"));
      }
    }
    // Every leaf is cabled to every spine: bound the leaf-spine links before anything is
    // built (the builder's estimate: leaves = groups of nodes_per_leaf x rails when
    // rail-optimized; spines = as given, else the uplink ports of a full leaf).
    if (spec.fabric.kind == FabricKind::FatTree) {
      int max_nics = 0;
      for (const auto& g : spec.groups) max_nics = std::max(max_nics, g.node.nics);
      const std::int64_t nodes = spec.total_nodes();
      const std::int64_t per_leaf = spec.fabric.nodes_per_leaf > 0 ? spec.fabric.nodes_per_leaf : nodes;
      const bool rail = spec.fabric.wiring == Wiring::RailOptimized;
      const std::int64_t leaves = (nodes + per_leaf - 1) / per_leaf * (rail ? max_nics : 1);
      const std::int64_t down_ports = per_leaf * (rail ? 1 : max_nics);
      const std::int64_t spines = spec.fabric.spines > 0
                                      ? spec.fabric.spines
                                      : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(
                                                                      static_cast<double>(down_ports) / spec.fabric.oversubscription)));
      if (leaves > 1 && leaves * spines > kMaxLeafSpineLinks) {
        throw support::RuleError(fabric->location(), c.key_path("fabric"),
                         fmt::format("a fat tree of at most {} leaf-spine links (every leaf is cabled to every spine)",
                                     kMaxLeafSpineLinks),
                         fmt::format("{} leaves x {} spines = {}", leaves, spines, leaves * spines),
                         "set fewer spines, or more nodes_per_leaf");
      }
      if (spec.fabric.nodes_per_pod > 0) {
        // Pods: more than one (one pod needs no core tier); a partly filled last pod is allowed
        // and cabled as a full one. Every spine of every pod is cabled to every core.
        const std::int64_t pods = (nodes + spec.fabric.nodes_per_pod - 1) / spec.fabric.nodes_per_pod;
        if (pods < 2) {
          throw support::RuleError(fabric->error("nodes_per_pod",
                              fmt::format("fewer nodes per pod than the cluster's {} nodes (one pod needs no core tier)", nodes)));
        }
        const std::int64_t leaves_per_pod = spec.fabric.nodes_per_pod / per_leaf * (rail ? max_nics : 1);
        const std::int64_t lanes = std::max<std::int64_t>(
            1, std::llround(static_cast<double>(down_ports) / spec.fabric.oversubscription / static_cast<double>(spines)));
        const std::int64_t cores =
            spec.fabric.cores > 0 ? spec.fabric.cores
                                  : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(static_cast<double>(leaves_per_pod * lanes) /
                                                                                                  spec.fabric.pod_oversubscription)));
        if (pods * spines * cores > kMaxLeafSpineLinks) {
          throw support::RuleError(fabric->location(), c.key_path("fabric"),
                           fmt::format("a fat tree of at most {} spine-core links (every spine is cabled to every core)",
                                       kMaxLeafSpineLinks),
                           fmt::format("{} pods x {} spines x {} cores = {}", pods, spines, cores, pods * spines * cores),
                           "set fewer spines or cores, or more nodes_per_pod");
        }
      }
    }
  } else if (spec.total_nodes() > 1) {
    throw support::RuleError(c.missing("fabric", fmt::format("a fabric section joining the {} nodes", spec.total_nodes())));
  }
  return spec;
}

}  // namespace ccsim::models
