// libFuzzer target: a scenario YAML file, loaded against the shipped hardware catalog and built
// into a cluster, as `ccsim topo|collective|run` do (cli/options.cpp load_scenario_file, then
// models::build_cluster). Contract: success or a user-input error (tests/fuzz/fuzz_support.hpp).
//
// The loader accepts clusters of up to 262,144 GPUs, and building one that large is legitimately
// slow (7.6 s and 1.25 GB for `ccsim topo` in a release build), so the cluster is built only up to kMaxFuzzGpus (2,048 GPUs); larger ones are loaded and checked but
// not built, to keep every input within -timeout: under ASan + UBSan on a loaded 2-core machine
// the shipped 16,384-GPU scenario took 14 s to build and was reported as a timeout after 24
// minutes of a one-hour run. Building large clusters is covered by the test suite and benchmarks.

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/algorithms/registry.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {
constexpr int kMaxFuzzGpus = 1 << 11;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ccsim::models::Catalog catalog = ccsim::models::Catalog::load(ccsim::models::Catalog::default_dir());
  const std::string path = ccsim::fuzz::write_input("scenario.yaml", data, size);
  ccsim::fuzz::expect_success_or_input_error("load_scenario + build_cluster", [&] {
    const ccsim::models::Scenario scenario =
        ccsim::models::load_scenario(path, catalog, {.algorithm_names = ccsim::planner::algorithm_names()});
    if (scenario.cluster.total_gpus() > kMaxFuzzGpus) return;
    const ccsim::models::Cluster cluster = ccsim::models::build_cluster(scenario.cluster);
    (void)cluster;
  });
  return 0;
}
