// Sweep key paths and --set overrides (models/scenario/overrides.hpp): parsing, the grid of
// points, and the scenario layers of one point as the loader reads them.

#include <catch2/catch.hpp>

#include <filesystem>

#include "models/scenario/overrides.hpp"
#include "models/scenario/overrides_support.hpp"
#include "models/scenario/scenario.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

using namespace ccsim;
using Catch::Matchers::Contains;
using models::SweepAxis;
using test::error_of;
using test::is_rule;
using test::kTrain70b;
using test::load_point;

TEST_CASE("sweep key paths: map keys joined by dots, list indices in brackets", "[sweep]") {
  const auto s = models::parse_key_path("cluster.nodes[12].node.nics.link");
  REQUIRE(s.size() == 5);
  CHECK(s[0].name == "cluster");
  CHECK_FALSE(s[0].indexed);
  CHECK(s[1].name == "nodes");
  CHECK(s[1].indexed);
  CHECK(s[1].index == 12);
  CHECK(s[4].name == "link");
  for (const std::string bad : {"", "a..b", ".a", "a.", "nodes[x].count", "nodes[0", "nodes[]", "[0]", "nodes[0]x", "nodes]"}) {
    INFO(bad);
    CHECK_THROWS_AS(models::parse_key_path(bad), support::InputError);
  }
}

TEST_CASE("sweep --set: values in order; malformed options are named", "[sweep]") {
  const SweepAxis a = models::parse_set_option("cluster.nodes[0].count=16,32,64");
  CHECK(a.key == "cluster.nodes[0].count");
  CHECK(a.values == std::vector<std::string>{"16", "32", "64"});
  CHECK_THROWS_WITH(models::parse_set_option("strategy.tp"), Contains("--set: expected KEY=V1,V2"));
  CHECK_THROWS_WITH(models::parse_set_option("strategy.tp=4,,8"), Contains("--set strategy.tp: expected a non-empty value"));
  CHECK_THROWS_WITH(models::parse_set_option("strategy.tp="), Contains("non-empty value"));
  CHECK_THROWS_WITH(models::parse_set_option("strategy.tp=4,8,4"), Contains("each value once, found '4' twice"));
}

TEST_CASE("sweep grid: the first --set outermost, points in lexicographic order", "[sweep]") {
  const std::vector<SweepAxis> axes{{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}, {"c", {"p", "q"}}};
  REQUIRE(models::grid_size(axes, 1000) == 12);
  // Nested loops in --set order, the brute-force enumeration the index arithmetic must match.
  std::size_t point = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 2; ++k) {
        CHECK(models::grid_point(axes, point++) == std::vector<std::size_t>{i, j, k});
      }
    }
  }
  CHECK_THROWS_WITH(models::grid_size(axes, 11), Contains("a grid of at most 11 points"));
  CHECK(models::grid_size({}, 10) == 1);
}

TEST_CASE("sweep overrides: a list element, a catalog name turned into {base: NAME}, auto", "[sweep]") {
  // 8 DGX H100 -> 16: 128 GPUs; the file's dp: 4 then breaks tp·pp·dp = 8·2·4 = 64 (a rule);
  // strategy.dp=auto removes it and the loader derives dp = 128 / (8·2) = 8.
  CHECK(is_rule(kTrain70b, {{"cluster.nodes[0].count", "16"}}));
  const models::Scenario s = load_point(kTrain70b, {{"cluster.nodes[0].count", "16"}, {"strategy.dp", "auto"}});
  CHECK(s.cluster.total_gpus() == 128);
  CHECK(s.strategy->dp == 8);
  CHECK(s.strategy->tp == 8);  // the rest of the file still applies
  CHECK(s.workload->global_batch_size == 128);

  // node: dgx-h100 (a catalog name) with a deeper key: {base: dgx-h100, nics: {link: ib-xdr}}.
  const models::Scenario x = load_point(kTrain70b, {{"cluster.nodes[0].node.nics.link", "ib-xdr"}, {"cluster.nodes[0].count", "4"},
                                                    {"strategy.dp", "auto"}});
  REQUIRE(x.cluster.groups.size() == 1);
  REQUIRE(x.cluster.groups[0].node.nic_link);
  CHECK(x.cluster.groups[0].node.nic_link->name == "ib-xdr");
  CHECK(x.cluster.groups[0].node.nics == 8);  // dgx-h100's own NIC count
  CHECK(x.cluster.groups[0].count == 4);
  CHECK(x.strategy->dp == 2);

  // The base layers are copied, never changed: the file still loads as it was.
  const std::string path = test::source_path(kTrain70b);
  const auto base = models::load_scenario_layers(path);
  models::point_layers(base, {{"strategy.dp", "auto"}, {"cluster.nodes[0].count", "16"}});
  const models::Scenario again = models::load_scenario(base, path, test::shipped_catalog());
  CHECK(again.strategy->dp == 4);
  CHECK(again.cluster.total_gpus() == 64);

  // A map key set outside any list: only that key is in the --set layer, the rest merges.
  const models::Scenario o = load_point(kTrain70b, {{"cluster.fabric.oversubscription", "2"}});
  CHECK(o.cluster.fabric.oversubscription == 2);
  CHECK(o.cluster.fabric.wiring == models::Wiring::RailOptimized);
}

TEST_CASE("sweep overrides: errors name the --set key", "[sweep]") {
  const auto past = error_of(kTrain70b, {{"cluster.nodes[3].count", "2"}});
  CHECK(past.key() == "--set cluster.nodes[3].count");
  CHECK_THAT(past.what(), Contains("the list cluster.nodes has 1 item") && Contains("found 3"));
  CHECK_THAT(error_of(kTrain70b, {{"cluster.nodes.count", "2"}}).what(), Contains("an index after cluster.nodes") && Contains("cluster.nodes[0]"));
  CHECK_THAT(error_of(kTrain70b, {{"strategy[0]", "2"}}).what(), Contains("a list at strategy"));
  // A number is no catalog name: {base: 8, x: 2} is then not a number, said at the --set.
  CHECK(error_of(kTrain70b, {{"strategy.tp.x", "2"}}).where().file == models::kSetLayerFile);

  // Errors the loader finds in a --set value are located in the --set layer and are not rules.
  const auto unknown = error_of(kTrain70b, {{"strategy.tpp", "4"}});
  CHECK(unknown.where().file == models::kSetLayerFile);
  CHECK_FALSE(is_rule(kTrain70b, {{"strategy.tpp", "4"}}));
  const auto nic = error_of(kTrain70b, {{"cluster.nodes[0].node.nics.link", "ib-qdr"}});
  CHECK(nic.where().file == models::kSetLayerFile);
  CHECK_FALSE(is_rule(kTrain70b, {{"cluster.nodes[0].node.nics.link", "ib-qdr"}}));
  CHECK_FALSE(is_rule(kTrain70b, {{"strategy.tp", "four"}}));
  CHECK_FALSE(is_rule(kTrain70b, {{"workload.model", "llama-3-71b"}}));
  CHECK_FALSE(is_rule(kTrain70b, {{"strategy.tp", "0"}}));
}

TEST_CASE("sweep overrides: relative paths resolve from the file that writes them, as in the scenario", "[sweep]") {
  // base/common.yaml names a model config and a calibration table relative to base/; the
  // scenario in top/ includes it. A point that changes other keys (a list element, a map key,
  // an auto) must still read both from base/, not from the working directory or top/.
  test::TempDir dir;
  std::filesystem::create_directories(dir.path / "base" / "cfg");
  std::filesystem::create_directories(dir.path / "top");
  std::filesystem::copy_file(test::source_path("scenarios/models/llama-3.1-8b.json"), dir.path / "base" / "cfg" / "model.json");
  std::filesystem::copy_file(test::source_path("scenarios/calibration/nccl.yaml"), dir.path / "base" / "cfg" / "table.yaml");
  dir.write("base/common.yaml", R"(
cluster:
  nodes:
    - node: hgx-h100-4gpu
      count: 1
workload:
  model: cfg/model.json
  phase: decode
  batch_size: 1
  context_length: 1024
simulation:
  calibration: cfg/table.yaml
)");
  const std::string top = dir.write("top/scenario.yaml", "include: ../base/common.yaml\nstrategy: {tp: 2, dp: 2}\n");
  const auto layers = models::point_layers(models::load_scenario_layers(top),
                                            {{"cluster.nodes[0].count", "2"}, {"strategy.dp", "auto"},
                                             {"cluster.fabric.kind", "single-switch"}, {"workload.batch_size", "8"}});
  const models::Scenario s = models::load_scenario(layers, top, test::shipped_catalog());
  CHECK(std::filesystem::equivalent(s.model->source_path, dir.path / "base" / "cfg" / "model.json"));
  CHECK(std::filesystem::equivalent(s.simulation.calibration, dir.path / "base" / "cfg" / "table.yaml"));
  CHECK(s.strategy->dp == 4);  // 8 GPUs / tp 2
  CHECK(s.workload->batch_size == 8);
  CHECK(s.cluster.total_gpus() == 8);
}
