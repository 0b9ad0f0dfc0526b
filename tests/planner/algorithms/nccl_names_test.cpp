// NCCL's spellings (planner/algorithms/nccl_names.hpp, algorithms.hpp parse_algorithm): the
// algorithm names of NCCL_ALGO case-insensitively, its lists, '^' exclusions and per-function
// entries as NCCL 2.24+ tuning.cc parseList reads them, NCCL_PROTO likewise, and the values NCCL
// refuses (unknown name, unknown prefix, an entry after the first without a prefix).

#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/nccl_names.hpp"

using namespace ccsim;
using models::Collective;
using planner::Algorithm;
using planner::Protocol;
using Algos = std::vector<Algorithm>;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("NCCL's algorithm names parse case-insensitively to ccsim's algorithms", "[nccl_names]") {
  // ncclAlgoStr: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT.
  CHECK(planner::parse_algorithm("Ring") == Algorithm::Ring);
  CHECK(planner::parse_algorithm("RING") == Algorithm::Ring);
  CHECK(planner::parse_algorithm("Tree") == Algorithm::Tree);
  CHECK(planner::parse_algorithm("NVLS") == Algorithm::Nvls);
  CHECK(planner::parse_algorithm("NVLSTree") == Algorithm::NvlsTree);
  CHECK(planner::parse_algorithm("nvlstree") == Algorithm::NvlsTree);
  CHECK(planner::parse_algorithm("NVLS-Tree") == Algorithm::NvlsTree);
  CHECK(planner::parse_algorithm("PAT") == Algorithm::Pat);
  CHECK(planner::parse_algorithm("Rabenseifner") == Algorithm::HalvingDoubling);
  // CollNet has no model: not an algorithm of ccsim's.
  CHECK(planner::parse_algorithm("CollNetDirect") == std::nullopt);
  CHECK(planner::parse_algorithm("Rings") == std::nullopt);
  CHECK(planner::parse_algorithm("vLLM-OneShot") == std::nullopt);  // a kernel, not a library algorithm
}

TEST_CASE("NCCL_ALGO lists: inclusion, exclusion, per-function entries", "[nccl_names]") {
  SECTION("a list enables the named algorithms, in NCCL's spelling, each once") {
    const auto f = planner::parse_nccl_algo("Ring,tree,RING", Collective::AllReduce);
    REQUIRE(f);
    CHECK_FALSE(f->exclude);
    CHECK(f->named == Algos{Algorithm::Ring, Algorithm::Tree});
    CHECK_FALSE(f->collnet);
  }
  SECTION("^ excludes; empty elements are skipped as strtok skips them") {
    const auto f = planner::parse_nccl_algo("^NVLS,,NVLSTree", Collective::AllReduce);
    REQUIRE(f);
    CHECK(f->exclude);
    CHECK(f->named == Algos{Algorithm::Nvls, Algorithm::NvlsTree});
  }
  SECTION("per-function entries: a later entry replaces its function's list; unnamed functions keep the first") {
    const std::string text = "ring;allreduce:^tree;AllGather:PAT,ring";
    CHECK(planner::parse_nccl_algo(text, Collective::AllReduce)->exclude);
    CHECK(planner::parse_nccl_algo(text, Collective::AllReduce)->named == Algos{Algorithm::Tree});
    CHECK(planner::parse_nccl_algo(text, Collective::AllGather)->named == Algos{Algorithm::Pat, Algorithm::Ring});
    CHECK(planner::parse_nccl_algo(text, Collective::Broadcast)->named == Algos{Algorithm::Ring});
    // Only prefixed entries: the other functions keep NCCL's default (nullopt).
    CHECK(planner::parse_nccl_algo("allreduce:tree", Collective::ReduceScatter) == std::nullopt);
    // AlltoAll and SendRecv are point-to-point: no NCCL_ALGO entry applies.
    CHECK(planner::parse_nccl_algo("Ring", Collective::AlltoAll) == std::nullopt);
    CHECK(planner::parse_nccl_algo("Ring", Collective::SendRecv) == std::nullopt);
  }
  SECTION("CollNet is recorded, not an algorithm") {
    const auto f = planner::parse_nccl_algo("CollNetDirect,collnetchain,Ring", Collective::AllReduce);
    REQUIRE(f);
    CHECK(f->collnet);
    CHECK(f->named == Algos{Algorithm::Ring});
  }
  SECTION("values NCCL refuses (ncclInvalidUsage), with NCCL's reason") {
    CHECK_THAT(error_of([] { (void)planner::parse_nccl_algo("Ring,Trees", Collective::AllReduce); }),
               Catch::Contains("unknown algorithm 'Trees'"));
    // A bad name in another function's entry is refused too, as NCCL checks every entry.
    CHECK_THAT(error_of([] { (void)planner::parse_nccl_algo("allgather:Bogus", Collective::AllReduce); }),
               Catch::Contains("unknown algorithm 'Bogus'"));
    CHECK_THAT(error_of([] { (void)planner::parse_nccl_algo("alltoall:ring", Collective::AllReduce); }),
               Catch::Contains("unknown function prefix 'alltoall'"));
    CHECK_THAT(error_of([] { (void)planner::parse_nccl_algo("ring;tree", Collective::AllReduce); }),
               Catch::Contains("every entry after the first needs a function prefix"));
    CHECK_THAT(error_of([] { (void)planner::parse_nccl_algo("", Collective::AllReduce); }), Catch::Contains("an empty value"));
    // NCCL does not trim: " Tree" is no name.
    CHECK_THAT(error_of([] { (void)planner::parse_nccl_algo("Ring, Tree", Collective::AllReduce); }),
               Catch::Contains("unknown algorithm ' Tree'"));
  }
}

TEST_CASE("An NCCL_ALGO filter applied to the algorithms NCCL's tuner considers", "[nccl_names]") {
  const Algos nvls_node{Algorithm::Ring, Algorithm::Tree, Algorithm::Nvls};  // AllReduce on one NVLS node (nccl_policy_test)
  SECTION("^NVLS keeps the others, in registry order") {
    CHECK(planner::parse_nccl_algo("^NVLS", Collective::AllReduce)->apply(nvls_node, Collective::AllReduce) ==
          Algos{Algorithm::Ring, Algorithm::Tree});
  }
  SECTION("inclusion keeps the named eligible ones in registry order, drops ineligible NCCL ones, adds ccsim's own") {
    // NVLSTree is not eligible on one node (NCCL drops it); halving-doubling is ccsim's own.
    const auto f = planner::parse_nccl_algo("NVLSTree,halving-doubling,Tree,Ring", Collective::AllReduce);
    CHECK(f->apply(nvls_node, Collective::AllReduce) == Algos{Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling});
  }
  SECTION("^ with nothing named keeps everything") {
    CHECK(planner::parse_nccl_algo("^", Collective::AllReduce)->apply(nvls_node, Collective::AllReduce) == nvls_node);
  }
}

TEST_CASE("NCCL_PROTO lists", "[nccl_names]") {
  using Set = planner::EnumSet<Protocol>;
  CHECK(*planner::parse_nccl_proto("LL,ll128", Collective::AllReduce) == Set{Protocol::LL, Protocol::LL128});
  CHECK(*planner::parse_nccl_proto("^LL", Collective::AllReduce) == Set{Protocol::LL128, Protocol::Simple});
  CHECK(planner::to_string(*planner::parse_nccl_proto("^LL", Collective::AllReduce)) == "LL128, Simple");
  // NCCL's own example: "^LL128;allreduce:LL128".
  CHECK(*planner::parse_nccl_proto("^LL128;allreduce:LL128", Collective::AllReduce) == Set{Protocol::LL128});
  CHECK(*planner::parse_nccl_proto("^LL128;allreduce:LL128", Collective::AllGather) == Set{Protocol::LL, Protocol::Simple});
  CHECK(planner::parse_nccl_proto("Simple", Collective::AlltoAll) == std::nullopt);
  CHECK_THAT(error_of([] { (void)planner::parse_nccl_proto("LL256", Collective::AllReduce); }), Catch::Contains("unknown protocol 'LL256'"));
}

TEST_CASE("is_nccl_list tells a list from one name", "[nccl_names]") {
  CHECK(planner::is_nccl_list("Ring,Tree"));
  CHECK(planner::is_nccl_list("^NVLS"));
  CHECK(planner::is_nccl_list("allreduce:ring"));
  CHECK_FALSE(planner::is_nccl_list("Ring"));
  CHECK_FALSE(planner::is_nccl_list("nvls-tree"));
  CHECK_FALSE(planner::is_nccl_list("synth:a,b.xml"));
}
