#pragma once
// Inputs of the compute calibration (`ccsim calibrate`, validate/calibrate/compute_calibration.hpp): the
// user's measured step times and GEMM benchmark as CSV files, the holdout choice, and the
// sha256 of every input file for the fitted table's provenance.
//
// CSV (RFC 4180 quoting: a field in double quotes may hold commas and semicolons, "" is a quote);
// lines whose first non-blank character is `#` and blank lines are skipped; the first other line
// is the header and must name exactly the columns below, in that order.
//
// Step times (`overrides,step_time`): one measured step per row.
//   overrides  `key=value;key=value` (may be empty: the scenario as it is). A key is a dotted
//              path into the scenario YAML, as Megatron-style configs are written
//              (`strategy.tp`, `workload.micro_batch_size`, `cluster.fabric.oversubscription`);
//              a number indexes a list (`cluster.nodes.0.count`); the value is read as YAML
//              (`8`, `true`, `fp8`, `[mlp, core_attn]`). Setting strategy.tp, pp or cp or a
//              cluster key without strategy.dp derives dp from the GPU count (Megatron:
//              dp = world / (tp·pp·cp)); validate/calibrate/step_time_model.hpp applies them.
//   step_time  seconds: a plain number (`0.0123`) or a time with a unit (`12.3ms`, `850us`), > 0.
// GEMM table (`m,n,k,dtype,seconds`): one GEMM C[m×n] = A[m×k]·B[k×n] per row, m, n, k positive
//   integers, dtype bf16 | fp16 | fp8 | fp32, seconds as step_time.
// Every bad field is a support::InputError naming the file, its line, the column and what was found.

#include <string>
#include <utility>
#include <vector>

namespace ccsim::validate {

/// One measured step: the scenario with `overrides` applied took `seconds`.
struct StepTimeRow {
  int line = 0;                                              ///< 1-based line in the CSV file
  std::string text;                                          ///< the overrides field as written
  std::vector<std::pair<std::string, std::string>> overrides;  ///< (dotted key, YAML scalar), in order
  double seconds = 0;                                        ///< measured step time, seconds
};

/// One benchmarked GEMM.
struct GemmRow {
  int line = 0;
  std::int64_t m = 0, n = 0, k = 0;  ///< elements
  std::string dtype;                 ///< bf16 | fp16 | fp8 | fp32
  double seconds = 0;                ///< measured time of one GEMM, seconds
};

/// Reads a step-times CSV. Throws support::InputError (file:line, column, expected, found) on a
/// missing file, a wrong header, a row with a wrong number of fields, an override that is not
/// `key=value` with a dotted key, a time that is not positive, or a file without rows.
std::vector<StepTimeRow> read_step_times(const std::string& path);

/// Reads a GEMM table CSV. Throws support::InputError as read_step_times.
std::vector<GemmRow> read_gemm_table(const std::string& path);

/// A time field: a plain decimal number of seconds or a number with a time unit (units.hpp);
/// must be > 0. Throws support::InputError at `file`:`line`, key `column`.
double parse_measured_time(const std::string& text, const std::string& file, int line, const std::string& column);

/// Splits rows 0 .. rows−1 (0-based data rows, in file order) into (fit, holdout) by `spec`:
/// "alternate" (fit 0, 2, 4, ...; hold out 1, 3, ...; with a single row it is fitted), "none"
/// (fit all), or a comma-separated list of row numbers to hold out ("1,4"). Throws
/// support::InputError (key `--holdout`) for an unknown word, a number out of range or repeated,
/// or a list that holds out every row.
std::pair<std::vector<int>, std::vector<int>> split_holdout(const std::string& spec, int rows);

/// Lowercase hex SHA-256 of the file's bytes (OpenSSL EVP). Throws support::InputError when the
/// file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace ccsim::validate
