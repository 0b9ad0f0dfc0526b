// libFuzzer target: a collective calibration table (scenarios/calibration/nccl.yaml, rccl.yaml),
// loaded by planner::CostModel::load as `--calibration FILE` does. Contract: success or a
// user-input error (tests/fuzz/fuzz_support.hpp).

#include "planner/tuning/cost_model.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ccsim::fuzz::write_input("calibration.yaml", data, size);
  ccsim::fuzz::expect_success_or_input_error("CostModel::load", [&] {
    const ccsim::planner::CostModel model = ccsim::planner::CostModel::load(path);
    (void)model;
  });
  return 0;
}
