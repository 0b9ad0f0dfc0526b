// libFuzzer target: the CSV inputs of the compute calibration (validate/calibrate/calibration_inputs.hpp),
// read the way `ccsim calibrate` reads them: the same bytes as a step-times file and as a GEMM
// table, then the holdout split of the step rows. Contract: success or a user-input error
// (tests/fuzz/fuzz_support.hpp).

#include "tests/fuzz/fuzz_support.hpp"
#include "validate/calibrate/calibration_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ccsim::fuzz::write_input("calibration.csv", data, size);
  ccsim::fuzz::expect_success_or_input_error("read_step_times", [&] {
    const auto rows = ccsim::validate::read_step_times(path);
    const auto split = ccsim::validate::split_holdout("alternate", static_cast<int>(rows.size()));
    (void)split;
  });
  ccsim::fuzz::expect_success_or_input_error("read_gemm_table", [&] {
    const auto rows = ccsim::validate::read_gemm_table(path);
    (void)rows;
  });
  return 0;
}
