// The cuda replay backend on whatever GPUs this machine has (built only with CCSIM_HAVE_CUDA, in
// its own program ccsim_cuda_tests). Without a GPU each test prints "SKIPPED: no CUDA device"
// and returns; ctest reports it as skipped (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt), as
// Catch2 v2 has no SKIP.

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

#include "planner/algorithms/algorithms.hpp"
#include "validate/replay/backends/backends.hpp"

using namespace ccsim;
using namespace ccsim::validate::replay;

namespace {

/// GPUs visible (0 when cudaGetDeviceCount fails).
int gpu_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

/// GPUs visible, or 0 with the reason printed as a skip when there are none.
int visible_gpus() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cout << "SKIPPED: no CUDA device (" << (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0")
              << ")\n";
    return 0;
  }
  return count;
}

models::Schedule schedule(planner::Algorithm a, models::Collective c, int n, std::uint64_t bytes, int channels) {
  planner::AlgorithmRequest req;
  req.collective = c;
  req.nranks = n;
  req.bytes = bytes;
  req.element_size = 4;
  req.channels = channels;
  req.pipeline_chunks = 2;
  return planner::generate(a, req);
}

}  // namespace

TEST_CASE("cuda backend: ring allreduce of 4 ranks computes the sum on the GPUs", "[replay][cuda][gpu]") {
  if (visible_gpus() == 0) return;
  auto backend = make_cuda_backend({});
  CHECK(backend->name() == "cuda");
  CHECK_THAT(backend->describe(4), Catch::Contains("4 ranks on"));
  // S = 4 MiB of float: 4 ranks, 2 channels, 16 steps per channel each of 128 KiB.
  const auto s = schedule(planner::Algorithm::Ring, models::Collective::AllReduce, 4, 4ULL << 20, 2);
  ReplayConfig cfg;
  cfg.warmup = 2;
  cfg.iters = 3;
  const auto r = backend->run(s, cfg);
  INFO(r.first_wrong);
  CHECK(r.wrong == 0);
  CHECK(r.bytes == s.bytes);
  REQUIRE(r.iteration_times.size() == 3);
  REQUIRE(r.ops.size() == 3);
  for (std::size_t it = 0; it < 3; ++it) {
    CHECK(r.ops[it].size() == s.op_count());
    double last = 0;
    for (const auto& op : r.ops[it]) {
      CHECK(op.start >= 0);
      CHECK(op.end >= op.start);
      last = std::max(last, op.end);
    }
    // The iteration ends with its last op.
    CHECK(r.iteration_times[it] == Approx(last));
    // 4 MiB through a ring on any GPU: more than 1 µs, less than 1 s.
    CHECK(r.iteration_times[it] > 1e-6);
    CHECK(r.iteration_times[it] < 1.0);
  }
}

TEST_CASE("cuda backend: every element type and the other collectives", "[replay][cuda][gpu]") {
  if (visible_gpus() == 0) return;
  auto backend = make_cuda_backend({});
  ReplayConfig cfg;
  cfg.warmup = 1;
  cfg.iters = 1;
  cfg.record_ops = false;
  struct Run {
    planner::Algorithm a;
    models::Collective c;
  };
  for (auto [a, c] : {Run{planner::Algorithm::Ring, models::Collective::AllGather},
                      Run{planner::Algorithm::Ring, models::Collective::ReduceScatter},
                      Run{planner::Algorithm::Tree, models::Collective::AllReduce},
                      Run{planner::Algorithm::Nvls, models::Collective::AllReduce}}) {
    for (DataType t : {DataType::Int8, DataType::Uint8, DataType::Int32, DataType::Uint32, DataType::Int64,
                       DataType::Uint64, DataType::Float, DataType::Double}) {
      // 8 KiB per rank; slices in whole elements of t.
      planner::AlgorithmRequest req;
      req.collective = c;
      req.nranks = 4;
      req.bytes = 4ULL * 8 * 1024;
      req.element_size = size_of(t);
      req.pipeline_chunks = 2;
      const auto s = planner::generate(a, req);
      cfg.type = t;
      const auto r = backend->run(s, cfg);
      INFO(fmt::format("{} {} {}: {}", planner::to_string(a), models::to_string(c), to_string(t), r.first_wrong));
      CHECK(r.wrong == 0);
      CHECK(r.ops.empty());
      CHECK(r.iteration_times.size() == 1);
    }
  }
}

TEST_CASE("cuda backend: ops issued directly (CCSIM_CUDA_GRAPH=0) give the same result", "[replay][cuda][gpu]") {
  if (visible_gpus() == 0) return;
  ::setenv("CCSIM_CUDA_GRAPH", "0", 1);
  auto direct = make_cuda_backend({});
  ::unsetenv("CCSIM_CUDA_GRAPH");
  auto graph = make_cuda_backend({});
  CHECK_THAT(direct->describe(4), Catch::Contains("issued directly"));
  CHECK_THAT(graph->describe(4), Catch::Contains("CUDA graph"));
  const auto s = schedule(planner::Algorithm::Ring, models::Collective::AllReduce, 4, 1ULL << 20, 2);
  ReplayConfig cfg;
  cfg.warmup = 1;
  cfg.iters = 2;
  for (auto* b : {direct.get(), graph.get()}) {
    const auto r = b->run(s, cfg);
    INFO(b->describe(4) << ": " << r.first_wrong);
    CHECK(r.wrong == 0);
    CHECK(r.iteration_times.size() == 2);
    CHECK(r.ops.size() == 2);
  }
}

TEST_CASE("cuda backend: devices outside the visible ones are refused", "[replay][cuda][gpu]") {
  const int n = visible_gpus();
  if (n == 0) return;
  BackendOptions o;
  o.devices = {n};
  CHECK_THROWS_WITH(make_cuda_backend(o), Catch::Contains(fmt::format("names device {}", n)));
  o.devices = {0, 0};
  CHECK_THROWS_WITH(make_cuda_backend(o), Catch::Contains("twice"));
}

TEST_CASE("cuda backend: without a GPU, make_cuda_backend says there is none", "[replay][cuda]") {
  if (gpu_count() > 0) return;  // the tests above cover machines with GPUs
  CHECK_THROWS_AS(make_cuda_backend({}), ReplayError);
  CHECK_THROWS_WITH(make_cuda_backend({}), Catch::StartsWith("cuda backend: no CUDA device"));
}
