// NCCL's policy (planner/tuning/nccl_policy.hpp): the algorithms its tuner considers per
// collective and placement, what an explicitly asked NVLS algorithm needs, the protocols of a
// candidate, and the granularity rule. Expected values follow NCCL's rules as the header states them.

#include <catch2/catch.hpp>

#include "planner/tuning/cost_model.hpp"
#include "planner/tuning/nccl_policy.hpp"
#include "test_support.hpp"

using namespace ccsim;
using models::Collective;
using models::Granularity;
using planner::Algorithm;
using planner::Protocol;

namespace {
planner::NcclGroup group(Collective c, int ranks, int nodes, int per_node, bool nvls_nodes) {
  return {.collective = c, .ranks = ranks, .nodes = nodes, .ranks_per_node = per_node, .nvls_all_nodes = nvls_nodes,
          .nvls_one_domain = nvls_nodes && nodes == 1};
}
using Algos = std::vector<Algorithm>;
}  // namespace

TEST_CASE("NCCL's algorithms per collective and placement", "[tuning][nccl]") {
  // AllReduce: Ring everywhere, Tree across nodes (inside one node NCCL's model rates it below
  // Ring: tree.cpp); NVLS inside one NVLink SHARP domain of more than one rank; NVLS-tree
  // across several whole NVLS nodes of equal size.
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 16, 2, 8, false)) == Algos{Algorithm::Ring, Algorithm::Tree});
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 8, 1, 8, true)) == Algos{Algorithm::Ring, Algorithm::Nvls});
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 8, 1, 8, false)) == Algos{Algorithm::Ring});
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 1, 1, 1, true)) == Algos{Algorithm::Ring});
  // What an NCCL_ALGO list of names picks from: Tree is enabled inside a node too.
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 8, 1, 8, false), true) == Algos{Algorithm::Ring, Algorithm::Tree});
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 16, 2, 8, true)) ==
        Algos{Algorithm::Ring, Algorithm::Tree, Algorithm::NvlsTree});
  CHECK(planner::nccl_algorithms(group(Collective::AllReduce, 12, 2, 0, true)) == Algos{Algorithm::Ring, Algorithm::Tree});
  // ReduceScatter / AllGather: Ring, and NVLS in one domain; Broadcast and Reduce: Ring;
  // AlltoAll and SendRecv: point-to-point (direct).
  CHECK(planner::nccl_algorithms(group(Collective::ReduceScatter, 8, 1, 8, true)) == Algos{Algorithm::Ring, Algorithm::Nvls});
  CHECK(planner::nccl_algorithms(group(Collective::AllGather, 16, 2, 8, true)) == Algos{Algorithm::Ring});
  CHECK(planner::nccl_algorithms(group(Collective::Broadcast, 8, 1, 8, true)) == Algos{Algorithm::Ring});
  CHECK(planner::nccl_algorithms(group(Collective::AlltoAll, 8, 1, 8, true)) == Algos{Algorithm::Direct});
  CHECK(planner::nccl_algorithms(group(Collective::SendRecv, 16, 2, 8, false)) == Algos{Algorithm::Direct});
}

TEST_CASE("an explicit NVLS algorithm needs its placement", "[tuning][nccl]") {
  CHECK(planner::placement_refusal(Algorithm::Nvls, group(Collective::AllReduce, 16, 2, 8, true)) ==
        "nvls needs all ranks on one NVSwitch with NVLink SHARP (NVSwitch gen3+)");
  CHECK(planner::placement_refusal(Algorithm::Nvls, group(Collective::AllReduce, 1, 1, 1, true)).empty());
  CHECK(planner::placement_refusal(Algorithm::NvlsTree, group(Collective::AllReduce, 16, 2, 8, false)) ==
        "nvls-tree needs whole nodes with NVLink SHARP (NVSwitch gen3+)");
  CHECK(planner::placement_refusal(Algorithm::NvlsTree, group(Collective::AllReduce, 12, 2, 0, true)) ==
        "nvls-tree needs the same number of ranks on every node, in node order");
  CHECK(planner::placement_refusal(Algorithm::NvlsTree, group(Collective::AllReduce, 8, 1, 8, true)).empty());
  CHECK(planner::placement_refusal(Algorithm::Ring, group(Collective::AllReduce, 16, 2, 8, false)).empty());
}

TEST_CASE("a candidate's protocols: NVLS and point-to-point Simple only, LL128 where its rule allows", "[tuning][nccl]") {
  const planner::CostModel costs = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
  planner::ProtocolContext hopper;  // one node of H100s on NVLink: LL128's rule holds
  hopper.archs = {"sm90"};
  planner::ProtocolContext mixed = hopper;  // LL128 is off for mixed architectures (mixed_archs: false)
  mixed.archs = {"sm80", "sm90"};
  using Protocols = std::vector<Protocol>;
  const Protocols all{Protocol::LL, Protocol::LL128, Protocol::Simple};
  CHECK(planner::nccl_protocols(Algorithm::Ring, std::nullopt, costs, hopper) == all);
  CHECK(planner::nccl_protocols(Algorithm::Ring, std::nullopt, costs, mixed) == Protocols{Protocol::LL, Protocol::Simple});
  CHECK(planner::nccl_protocols(Algorithm::Nvls, std::nullopt, costs, hopper) == Protocols{Protocol::Simple});
  CHECK(planner::nccl_protocols(Algorithm::Direct, std::nullopt, costs, hopper) == Protocols{Protocol::Simple});
  // Asked for: that protocol alone, where the table has figures (NVLS has Simple only).
  CHECK(planner::nccl_protocols(Algorithm::Direct, Protocol::LL, costs, hopper) == Protocols{Protocol::LL});
  CHECK(planner::nccl_protocols(Algorithm::Ring, Protocol::LL128, costs, mixed) == Protocols{Protocol::LL128});
  CHECK(planner::nccl_protocols(Algorithm::Nvls, Protocol::LL, costs, hopper).empty());
}

TEST_CASE("granularity: phase above 64 ranks or 256 ranks x ring channels, and for the Tree", "[tuning][nccl]") {
  CHECK_FALSE(planner::prefers_phase(Algorithm::Ring, std::nullopt, 64, 4));  // 64 ranks, 256 rank-channels: step
  CHECK(planner::prefers_phase(Algorithm::Ring, std::nullopt, 65, 1));
  CHECK(planner::prefers_phase(Algorithm::Ring, std::nullopt, 64, 5));        // 320 > 256
  CHECK(planner::prefers_phase(Algorithm::Tree, std::nullopt, 2, 1));         // NCCL's Tree: phase by default
  CHECK_FALSE(planner::prefers_phase(Algorithm::Tree, Granularity::Step, 1024, 1));
  CHECK(planner::prefers_phase(Algorithm::Bruck, Granularity::Phase, 2, 1));
}

TEST_CASE("protocol rules: nodes of one class with other local GPUs are read each (DGX-1 x 2)", "[nccl-policy][node-class]") {
  // Ranks {0, 1, 8, 13} and their mirror {0, 5, 8, 9} of two DGX-1 nodes: each has one node on
  // an NVLinked pair (local 0-1) and one on a pair without NVLink (local 0-5), so both see the
  // same farthest ring path inside a node (not NVL), whichever node comes first.
  const models::Cluster c = models::build_cluster(
      models::load_scenario(test::source_path("tests/data/node-classes/dgx1-2node.yaml"), test::shipped_catalog()).cluster);
  const auto gpus = [&](std::initializer_list<int> ranks) {
    std::vector<models::DeviceId> out;
    for (int r : ranks) out.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
    return out;
  };
  const planner::ProtocolContext a = planner::protocol_context(c, gpus({0, 1, 8, 13}));
  const planner::ProtocolContext b = planner::protocol_context(c, gpus({0, 5, 8, 9}));
  CHECK(a.intra == b.intra);
  CHECK(a.intra != models::PathType::Nvl);
  CHECK(planner::protocol_context(c, gpus({0, 1, 8, 9})).intra == models::PathType::Nvl);
}
