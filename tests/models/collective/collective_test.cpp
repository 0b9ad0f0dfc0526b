#include <catch2/catch.hpp>

#include "models/collective/collective.hpp"

using namespace ccsim;
using models::Collective;

TEST_CASE("nccl-tests sizes: per rank for ReduceScatter, AllGather and AlltoAll, whole elements otherwise", "[models][collective]") {
  // 8 ranks of 4-byte floats: an AllGather size is a multiple of 8 × 4 = 32 bytes (one float
  // per rank at least), an AllReduce size a multiple of 4; 2-byte halves on 3 ranks: 6 and 2.
  for (const Collective c : {Collective::ReduceScatter, Collective::AllGather, Collective::AlltoAll}) {
    CHECK(models::sized_per_rank(c));
    CHECK(models::size_granule(c, 4, 8) == 32);
    CHECK(models::size_granule(c, 2, 3) == 6);
  }
  for (const Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce, Collective::SendRecv}) {
    CHECK_FALSE(models::sized_per_rank(c));
    CHECK(models::size_granule(c, 4, 8) == 4);
    CHECK(models::size_granule(c, 2, 3) == 2);
  }
}
