// Test-only driver of validate::calibrate_compute, standing in for `ccsim calibrate` until the
// command is wired (cli/calibrate_command.cpp):
//   ccsim_calibrate_driver SCENARIO STEP_TIMES [--gemm FILE] [--holdout H] [--out FILE] [--table FILE]
// Prints the fit report on stdout; bad input: the error on stderr and exit code 2, as ccsim does.

#include <iostream>
#include <string>

#include "models/atomic_file.hpp"
#include "models/input_error.hpp"
#include "validate/compute_calibration.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: ccsim_calibrate_driver SCENARIO STEP_TIMES [--gemm FILE] [--holdout H] [--out FILE] [--table FILE]\n";
    return 2;
  }
  ccsim::validate::ComputeCalibrationRequest request;
  request.scenario = argv[1];
  request.step_times = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--gemm") request.gemm = value;
    else if (flag == "--holdout") request.holdout = value;
    else if (flag == "--out") request.out = value;
    else if (flag == "--table") request.compute_table = value;
    else {
      std::cerr << "ccsim_calibrate_driver: unknown option " << flag << "\n";
      return 2;
    }
  }
  try {
    ccsim::validate::calibrate_compute(request, std::cout);
  } catch (const ccsim::models::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const ccsim::models::OutputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
