// libFuzzer target: a scenario YAML file, loaded against the shipped hardware catalog and built
// into a cluster, as `ccsim topo|collective|run` do (cli/common.cpp load_scenario_file, then
// models::build_cluster). Contract: success or a user-input error (tests/fuzz/fuzz_support.hpp).

#include "models/catalog.hpp"
#include "models/cluster.hpp"
#include "models/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ccsim::models::Catalog catalog = ccsim::models::Catalog::load(ccsim::models::Catalog::default_dir());
  const std::string path = ccsim::fuzz::write_input("scenario.yaml", data, size);
  ccsim::fuzz::expect_success_or_input_error("load_scenario + build_cluster", [&] {
    const ccsim::models::Scenario scenario = ccsim::models::load_scenario(path, catalog);
    const ccsim::models::Cluster cluster = ccsim::models::build_cluster(scenario.cluster);
    (void)cluster;
  });
  return 0;
}
