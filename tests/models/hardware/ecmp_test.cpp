// ECMP path choice on a fat tree (FabricSpec::ecmp): with `balanced` every leaf uplink and
// every spine downlink carries the same number of a full AlltoAll's flows (counted from the
// wiring, not from the rotation); with `hash` (the default) the per-connection hash collides.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "support/hash.hpp"
#include "models/hardware/router.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

/// `nodes` DGX H100, 4 nodes per leaf (with 6 nodes the second leaf group is half full),
/// rail-optimized or ToR, with the given oversubscription and ECMP mode.
models::Cluster fabric(const test::TempDir& dir, const std::string& wiring, int oversubscription, const std::string& ecmp,
                       int nodes = 8, int nodes_per_leaf = 4) {
  const std::string file = dir.write(fmt::format("{}-{}-{}-{}-{}.yaml", wiring, oversubscription, ecmp, nodes, nodes_per_leaf), fmt::format(R"(name: ecmp-{}
cluster:
  nodes:
    - node: dgx-h100
      count: {}
  fabric:
    kind: fat-tree
    wiring: {}
    nodes_per_leaf: {}
    oversubscription: {}
    ecmp: {}
)", ecmp, nodes, wiring, nodes_per_leaf, oversubscription, ecmp));
  return models::build_cluster(models::load_scenario(file, test::shipped_catalog()).cluster);
}

struct Spread {
  std::map<models::LinkId, int> up;    ///< leaf -> spine link: flows over it
  std::map<models::LinkId, int> down;  ///< spine -> leaf link: flows over it
  std::map<models::DeviceId, int> leaving;   ///< per leaf: flows whose destination NIC is on another leaf
  std::map<models::DeviceId, int> arriving;  ///< per leaf: flows whose source NIC is on another leaf
};

/// Routes every ordered pair of GPUs on different nodes, on `channels` channels (one
/// connection each, hashed as the execution graph hashes it).
Spread spread(const models::Cluster& c, int channels) {
  const models::Topology& t = c.topology;
  models::Router router(c);
  const auto leaf_of = [&](models::DeviceId gpu) {
    for (models::LinkId id : t.out_links(t.device(gpu).nic))
      if (t.device(t.link_target(id)).kind == models::DeviceKind::NetworkSwitch) return t.link_target(id);
    return models::kNoDevice;
  };
  Spread s;
  // Every leaf uplink and spine downlink, also those no flow takes.
  for (models::LinkId id = 0; id < t.num_links(); ++id) {
    const models::Device& a = t.device(t.link_source(id));
    const models::Device& b = t.device(t.link_target(id));
    if (a.kind != models::DeviceKind::NetworkSwitch || b.kind != models::DeviceKind::NetworkSwitch) continue;
    (a.tier == 1 ? s.up : s.down)[id] = 0;
  }
  const auto& gpus = t.gpus();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      if (t.device(gpus[i]).node == t.device(gpus[j]).node) continue;
      for (int ch = 0; ch < channels; ++ch) {
        const models::DeviceId la = leaf_of(gpus[i]), lb = leaf_of(gpus[j]);
        if (la != lb) {
          ++s.leaving[la];
          ++s.arriving[lb];
        }
        const std::uint64_t key = (static_cast<std::uint64_t>(i) << 40) ^ (static_cast<std::uint64_t>(j) << 16) ^ static_cast<std::uint64_t>(ch);
        const models::Path& p = router.route(gpus[i], gpus[j], support::splitmix64(key), static_cast<std::uint32_t>(ch));
        for (models::LinkId id : p.links) {
          if (s.up.count(id)) ++s.up[id];
          if (s.down.count(id)) ++s.down[id];
        }
      }
    }
  }
  return s;
}

}  // namespace

TEST_CASE("balanced ECMP: equal flows on every leaf uplink and spine downlink", "[models][ecmp]") {
  // ToR wiring: every flow between two nodes of different leaves crosses the spine, and the
  // rotation gives each uplink and each spine downlink exactly its share. Rail-optimized wiring:
  // a GPU's flows to the other GPUs of its own node stay in the node (NVLink), so the pairs
  // (port i, port i) of the rotation are missing from cross-rail leaf pairs; an additive
  // rotation over an even number of spines cannot spread those evenly (Z_S with S even has no
  // complete mapping, Hall & Paige 1955), so uplinks differ by up to that share.
  const test::TempDir dir;
  for (const std::string wiring : {"tor", "rail-optimized"}) {
    for (int over : {1, 2}) {
      for (int channels : {1, 2}) {
        for (int nodes : {8, 6}) {
          // (A half-filled rail-optimized leaf group misses a larger share of its rotation to
          // the same-node pairs; its spread is not bounded here.)
          if (wiring == "rail-optimized" && nodes == 6) continue;
          INFO(fmt::format("{} nodes, {} wiring, {}:1, {} channel(s)", nodes, wiring, over, channels));
          const models::Cluster c = fabric(dir, wiring, over, "balanced", nodes);
          const models::Topology& t = c.topology;
          const Spread s = spread(c, channels);
          std::map<models::DeviceId, int> uplinks, downlinks;
          for (const auto& [id, n] : s.up) ++uplinks[t.link_source(id)];
          for (const auto& [id, n] : s.down) ++downlinks[t.link_target(id)];
          REQUIRE(!s.up.empty());
          // Flows an uplink of `leaf` would carry with an even spread; and how far a
          // rail-optimized leaf may be off: the flows from its ports to their own nodes' other
          // GPUs, had they crossed the fabric, spread over at most half the uplinks.
          const auto off = [&](models::DeviceId leaf, int links) {
            if (wiring == "tor") return 0.0;
            const int ports = static_cast<int>(std::count_if(t.gpus().begin(), t.gpus().end(), [&](models::DeviceId g) {
              for (models::LinkId id : t.out_links(t.device(g).nic))
                if (t.link_target(id) == leaf) return true;
              return false;
            }));
            return 2.0 * ports * 7 * channels / links;
          };
          for (const auto& [id, n] : s.up) {
            const models::DeviceId leaf = t.link_source(id);
            const double even = static_cast<double>(s.leaving.at(leaf)) / uplinks.at(leaf);
            CHECK(std::abs(n - even) <= off(leaf, uplinks.at(leaf)));
          }
          for (const auto& [id, n] : s.down) {
            const models::DeviceId leaf = t.link_target(id);
            const double even = static_cast<double>(s.arriving.at(leaf)) / downlinks.at(leaf);
            CHECK(std::abs(n - even) <= off(leaf, downlinks.at(leaf)));
          }
        }
      }
    }
  }
}

TEST_CASE("hashed ECMP (the default) collides: uneven flows per uplink", "[models][ecmp]") {
  const test::TempDir dir;
  const models::Cluster c = fabric(dir, "tor", 1, "hash");
  CHECK(c.spec.fabric.ecmp == models::Ecmp::Hash);
  const Spread s = spread(c, 1);
  const auto [lo, hi] = std::minmax_element(s.up.begin(), s.up.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  // 32 cross-leaf flows per uplink on average (32 GPUs per ToR leaf, each to the 32 GPUs of the
  // other leaves... 32 × 32 × 1 over 32 uplinks, per other leaf); the hash spreads them unevenly.
  CHECK(hi->second > lo->second);
}

TEST_CASE("balanced ECMP on small rail-optimized leaves: no uplink busier than hashing's busiest", "[models][ecmp]") {
  // 2 nodes per leaf (as scenarios/h100-2x8-200g.yaml): each cross-rail flow goes from port i
  // to port 1 − i, so σ(i) + j is the same for all of them, and only the leaves' indices in the
  // rotation spread a leaf's 14 cross-rail flows (7 other rails × 2 ports) over its 2 uplinks:
  // 8 and 6 (7 other leaves alternate 4 / 3 per port). Before they were added, all 14 took one
  // uplink and a 256 MiB AlltoAll ran at 57 % of its bound against hashing's 89 %.
  const test::TempDir dir;
  for (int nodes : {2, 4}) {
    INFO(fmt::format("{} nodes, 2 per leaf", nodes));
    const Spread b = spread(fabric(dir, "rail-optimized", 1, "balanced", nodes, 2), 1);
    const Spread h = spread(fabric(dir, "rail-optimized", 1, "hash", nodes, 2), 1);
    const auto busiest = [](const std::map<models::LinkId, int>& m) {
      int most = 0;
      for (const auto& [id, n] : m) most = std::max(most, n);
      return most;
    };
    CHECK(busiest(b.up) <= busiest(h.up));
    CHECK(busiest(b.down) <= busiest(h.down));
    if (nodes == 2) {
      CHECK(busiest(b.up) == 8);
      CHECK(busiest(b.down) == 8);
    }
  }
}
