// Synthesized schedules on the host backend: ForestColl trees exported as MSCCL XML and read back
// run on real threads and buffers with every element right (the data check of ccsim replay).
#include <catch2/catch.hpp>

#include <string>

#include "planner/collective/synthesis_runner.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "planner/tuning/cost_model.hpp"
#include "support/input_file.hpp"
#include "test_support.hpp"
#include "validate/replay/replay.hpp"

using namespace ccsim;

TEST_CASE("replay host backend: synthesized schedules from MSCCL XML compute their collective", "[validate][replay][synthesis]") {
  const auto backend = validate::replay::make_backend("host");
  validate::replay::ReplayConfig config;
  config.warmup = 1;
  config.iters = 2;
  SECTION("the shipped 4-rank AllGather file at two sizes") {
    const std::string path = test::source_path("tests/data/synthesis/dgx-h100-4ranks-allgather.msccl.xml");
    const std::string text = support::read_input_file(path, "an MSCCL XML schedule");
    for (std::uint64_t bytes : {std::uint64_t{128}, std::uint64_t{1} << 16}) {
      const models::Schedule s = planner::synthesis::from_msccl_xml(text, path, bytes, 4);
      CHECK(backend->run(s, config).wrong == 0);
    }
  }
  SECTION("AllReduce and ReduceScatter on the 4 + 6 GPU cluster, exported and read back") {
    const models::Cluster c = test::cluster_at("tests/data/synthesis/unequal-4-6-gpus.yaml");
    const planner::CostModel costs = planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"));
    for (models::Collective coll : {models::Collective::AllReduce, models::Collective::ReduceScatter}) {
      INFO(models::to_string(coll));
      planner::synthesis::SynthesisOptions o;
      o.collective = coll;
      o.gpus.assign(c.topology.gpus().begin(), c.topology.gpus().end());
      planner::synthesis::SynthesisRunner runner(c, costs, o);
      const planner::synthesis::GridSchedule g = runner.grid_schedule();
      const std::string xml = planner::synthesis::to_msccl_xml(g.schedule, "t", 0, 0);
      const models::Schedule s = planner::synthesis::from_msccl_xml(xml, "t.xml", g.schedule.bytes * 4, 4);
      CHECK(backend->run(s, config).wrong == 0);
      CHECK(backend->run(runner.schedule(g.schedule.bytes * 4), config).wrong == 0);
    }
  }
}
