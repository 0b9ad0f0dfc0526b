// libFuzzer target: a compute calibration table (scenarios/calibration/compute.yaml), loaded by
// planner::ComputeCalibration::load for a GPU catalog name, as `ccsim run` does. Contract:
// success or a user-input error (tests/fuzz/fuzz_support.hpp).

#include "planner/workload/workload_runner.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ccsim::fuzz::write_input("compute.yaml", data, size);
  ccsim::fuzz::expect_success_or_input_error("ComputeCalibration::load", [&] {
    // H100-SXM5 is a catalog name the dictionary also carries, so `gpus:` entries get read.
    const auto calibration = ccsim::planner::ComputeCalibration::load(path, "H100-SXM5");
    (void)calibration;
  });
  return 0;
}
