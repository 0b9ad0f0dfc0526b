#pragma once
// Compute calibration (`ccsim calibrate`): fits one GPU's constants of the compute
// model (planner::ComputeCalibration, scenarios/calibration/compute.yaml) to the user's
// measurements, by least squares on relative error (validate/calibrate/least_squares.hpp):
//
// * a GEMM benchmark (`m,n,k,dtype,seconds`, validate/calibrate/calibration_inputs.hpp) fits
//   gemm_efficiency, gemm_k_overhead and kernel_overhead directly through
//   planner::estimate_compute of one GEMM op per row (every row is fitted; the GPU is the
//   scenario's). Memory-bound shapes (small k) are timed at the table's memory_efficiency,
//   which only the step times fit: a GEMM table of compute-bound shapes fits best;
// * measured step times (`overrides,step_time`) fit the constants the GEMM table did not:
//   gemm_efficiency, attention_efficiency, attention_backward_efficiency, memory_efficiency and
//   kernel_overhead (in that order); each row's step is simulated by planner::WorkloadRunner on
//   the scenario with the row's overrides, as `ccsim run` would (the scenario's engine, the
//   default collective and serving tables). Rows are split into fitted and held-out rows.
//
// Which constants are fitted, per table: a constant whose 10 % change moves no fitted row's
// simulated time by more than 1e-9 of it is not fitted (the rows do not constrain it); a
// constant whose sensitivity column (relative change of each fitted row per relative change of
// the constant) lies within kSeparationSine of the span of the columns of the constants before
// it cannot be separated from them by these rows, and keeps its table value. Both are reported,
// with the reason, in the report and in the written table's provenance.
//
// Least squares: residual of a row = simulated / measured − 1, minimized by
// fit_bounded_least_squares from the table's values. The GEMM fit runs first, then the step fit
// from its result. `kSeparationSine` and the 10 % probe are this file's choices, not sources.
//
// Bounds: efficiencies in [0.01, 1] (the loader's range; physically (0, 1]), kernel_overhead in
// [0, 1 ms], gemm_k_overhead in [0, 65536] elements.

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "planner/workload/workload_runner.hpp"
#include "validate/calibrate/calibration_inputs.hpp"
#include "validate/calibrate/step_time_model.hpp"

namespace ccsim::validate {

struct ComputeCalibrationRequest {
  std::string scenario;                ///< scenario file with a workload (as for `ccsim run`)
  std::string step_times;              ///< CSV overrides,step_time (required)
  std::string gemm;                    ///< CSV m,n,k,dtype,seconds (optional)
  std::string holdout = "alternate";   ///< alternate | none | row numbers "1,3" (step-time rows)
  std::string out;                     ///< calibration table to write; empty: none
  std::string compute_table;           ///< starting table; empty: ComputeCalibration::default_path()
};

/// Fits, prints the fit report to `report`, writes `out` (atomically) when non-empty. Throws
/// support::InputError on bad input (any input file, an override the scenario rejects, a row whose
/// layout does not fit in memory, fewer fitted rows than constants to fit, a bad --holdout) and
/// support::OutputError when `out` cannot be written.
void calibrate_compute(const ComputeCalibrationRequest& request, std::ostream& report);

/// A constant a fit may change.
enum class ComputeConstant { GemmEfficiency, GemmKOverhead, AttentionEfficiency, AttentionBackwardEfficiency, MemoryEfficiency, KernelOverhead };
std::string_view to_string(ComputeConstant c);
/// The field of `c` that holds `constant` (seconds for KernelOverhead, elements for GemmKOverhead).
double& constant_slot(planner::ComputeCalibration& c, ComputeConstant constant);

/// Sensitivity columns within this sine of the span of earlier ones (about 3°) are "not separable".
inline constexpr double kSeparationSine = 0.05;

struct ConstantFit {
  ComputeConstant constant{};
  double before = 0;    ///< table value (seconds / elements / fraction)
  double after = 0;     ///< fitted value, or `before` when not fitted
  bool fitted = false;
  std::string source;   ///< "GEMM table" or "step times": the data that fitted it or left it out
  std::string reason;   ///< why it was not fitted (empty when fitted)
};

struct RowResult {
  int row = 0;          ///< 0-based data row
  int line = 0;         ///< line in the CSV file
  std::string label;    ///< overrides or GEMM shape
  double measured = 0;  ///< seconds
  double before = 0;    ///< simulated with the starting table, seconds
  double after = 0;     ///< simulated with the fitted constants, seconds
  bool held_out = false;
};

/// One table's fit.
struct TableFit {
  std::string file;
  std::vector<ConstantFit> constants;
  std::vector<RowResult> rows;
  std::vector<int> fit_rows, holdout_rows;
  double mape_fit_before = 0, mape_fit_after = 0;          ///< percent, over fitted rows
  double mape_holdout_before = 0, mape_holdout_after = 0;  ///< percent, over held-out rows (0 when none)
  bool converged = true;
};

struct ComputeCalibrationResult {
  std::string gpu;                           ///< catalog name of the scenario's (first) GPU
  planner::ComputeCalibration defaults;      ///< the starting table's `defaults`
  planner::ComputeCalibration start;         ///< the starting table for `gpu`
  planner::ComputeCalibration fitted;        ///< `start` with the fitted constants
  std::optional<TableFit> gemm;              ///< when a GEMM table was given
  TableFit steps;
};

/// Time of each GEMM row as one GEMM op (batch 1, 2·m·n·k FLOPs) through planner::estimate_compute, seconds.
std::vector<double> gemm_times(const std::vector<GemmRow>& rows, const models::GpuSpec& gpu, const planner::ComputeCalibration& c);

/// The fit without output (calibrate_compute = this + print_compute_calibration + the file).
ComputeCalibrationResult fit_compute_calibration(const ComputeCalibrationRequest& request);
/// The report calibrate_compute prints: per table, each row's measured / before / after / error,
/// MAPE on fitted and held-out rows, each constant's table and fitted value or why it was kept.
void print_compute_calibration(const ComputeCalibrationResult& result, std::ostream& report);
/// The fitted table (format of scenarios/calibration/compute.yaml, loadable by
/// ComputeCalibration::load): `defaults` as in the starting table, `gpus: {gpu: fitted}`, and a
/// `provenance` block (inputs with sha256, `date` (ISO 8601 UTC), fitted values beside the
/// table's, rows, MAPE, constants not fitted and why).
std::string compute_calibration_yaml(const ComputeCalibrationResult& result, const ComputeCalibrationRequest& request,
                                     const std::string& date);

}  // namespace ccsim::validate
