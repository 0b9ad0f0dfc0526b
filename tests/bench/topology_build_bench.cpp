// Benchmark: building a cluster Topology from a scenario (issue target: 16,384 GPUs in under
// 2 s and under 1 GiB). Run by scripts/bench, not by ctest: timings on shared machines are noisy.
//
// Usage: ccsim_bench_topology SCENARIO [REPEATS]
// Prints the median and min wall time of load + build over REPEATS runs, the process's peak
// resident memory, and the size of the topology.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SCENARIO [REPEATS]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  using Clock = std::chrono::steady_clock;
  std::vector<double> load_s, build_s;
  std::size_t devices = 0, links = 0, gpus = 0;
  const auto catalog = ccsim::models::Catalog::load(ccsim::models::Catalog::default_dir());
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    const auto scenario = ccsim::models::load_scenario(path, catalog);
    const auto t1 = Clock::now();
    const auto cluster = ccsim::models::build_cluster(scenario.cluster);
    const auto t2 = Clock::now();
    load_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    build_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    devices = cluster.topology.num_devices();
    links = cluster.topology.num_links() / 2;
    gpus = cluster.topology.gpus().size();
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("scenario        %s\n", path.c_str());
  std::printf("gpus            %zu\n", gpus);
  std::printf("devices         %zu\n", devices);
  std::printf("physical links  %zu\n", links);
  std::printf("repeats         %d\n", repeats);
  std::printf("load median     %.3f s (min %.3f s)\n", median(load_s), *std::min_element(load_s.begin(), load_s.end()));
  std::printf("build median    %.3f s (min %.3f s)\n", median(build_s), *std::min_element(build_s.begin(), build_s.end()));
  std::printf("peak RSS        %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
