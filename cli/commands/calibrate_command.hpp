#pragma once
// `ccsim calibrate --scenario S LOG... [--out FILE] [--holdout alternate|none|SIZES]`: fits the
// collective cost table to nccl-tests / rccl-tests logs measured on the scenario's cluster
// (validate/calibrate/calibrate.hpp), prints the fit report (parameters fitted and not, each row's
// measured / before / after time, MAPE on fitted and held-out sizes per log) and writes the
// fitted table with its provenance. With --step-times / --gemm it fits the compute model
// instead (validate/calibrate/compute_calibration.hpp).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct CalibrateCliOptions {
  std::vector<std::string> logs;
  std::string scenario;
  std::string out;
  bool out_given = false;  ///< --out was given (an empty name is an error)
  std::string holdout = "alternate";
  std::string calibration;  ///< the table fitting starts from (default: the scenario's)
  std::string catalog;
  std::string op;
  std::string algo = "auto";      ///< the algorithm the logs ran with (NCCL_ALGO), or auto: NCCL's choice
  std::string protocol = "auto";  ///< likewise the protocol (NCCL_PROTO)
  int ranks = 0;
  std::string format = "text";
  std::string step_times;
  std::string gemm;
  std::string compute_calibration;
  std::string loss = "cauchy";
  double separability = 0.2;
  bool free_unused = false;
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateCliOptions& options);
/// Throws support::InputError on bad input (exit 2).
int run_calibrate(const CalibrateCliOptions& options);

}  // namespace ccsim::cli
