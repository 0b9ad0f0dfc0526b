#pragma once
// `ccsim calibrate`: fits a collective cost table (scenarios/calibration/nccl.yaml's format) to
// measured nccl-tests / rccl-tests times of the scenario's cluster.
//
// The model is the simulator itself: every measured row is simulated with the candidate table
// (NCCL's choice of algorithm and protocol included, as `ccsim compare` does), and the table's
// figures are moved to minimise the sum of squared relative errors (simulated − measured) /
// measured over the rows kept for fitting — a projected Levenberg-Marquardt iteration (Moré,
// "The Levenberg-Marquardt algorithm: implementation and theory", 1978) with forward-difference
// Jacobians, solved with Eigen. Figures are moved in groups that share a physical cause:
//   * step overhead of a link class (NVLink / PCIe / host / network transport) for a protocol,
//     and base latency for a protocol: one offset added to every algorithm's figure (a slow
//     network transport slows ring and tree alike), then per-algorithm offsets where rows of
//     two algorithms make them separable;
//   * link efficiency of each link kind the rows load (fraction of the catalog bandwidth);
//   * protocol bandwidth factors (LL, LL128, Simple) and protocol throughput caps, as
//     multipliers of the table's figures; NVLS efficiency.
// Bounds are physical: latencies ≥ 0, efficiencies and factors in [0.01, 1] (the loader's
// range), caps > 0. A group that moves no fitted row is not fitted; a group whose effect on the
// fitted rows is (nearly) a combination of groups already fitted — two figures the data cannot
// separate, such as base latency and per-step overhead when every row has the same number of
// steps — is held at its table value and reported as such.

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/collective/collective.hpp"
#include "support/yaml_fields.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/tuning/cost_model.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

namespace ccsim::validate {

/// One measured time.
struct CalibrationRow {
  std::string log;    ///< file the row came from
  int line = 0;       ///< line in that file
  std::string test;   ///< "all_reduce_perf"
  int test_index = 0;  ///< which test of the log (a log may hold the same test twice)
  models::Collective collective = models::Collective::AllReduce;
  int nranks = 0;
  std::uint32_t element = 4;  ///< bytes per element
  std::uint64_t size = 0;     ///< nccl-tests size, bytes
  double measured = 0;        ///< seconds
  bool fit = true;            ///< false: held out (predicted, not fitted)
  /// The algorithm / protocol the measurement ran with, when known (NCCL_ALGO / NCCL_PROTO, or
  /// a `ccsim replay --algo` log): the row is simulated with it instead of NCCL's choice.
  std::optional<planner::Algorithm> algorithm;
  std::optional<planner::Protocol> protocol;
};

/// The rows of a parsed log (`tests` of file `log`): out-of-place times, ranks from the log or
/// `ranks`. Throws support::InputError (file:line) for a test without a collective (use --op)
/// or rank count, an unknown data type, or a time that is not above 0.
std::vector<CalibrationRow> calibration_rows(const std::string& log, const std::vector<LogTest>& tests, std::optional<int> ranks);

/// Which rows are held out of the fit.
struct Holdout {
  /// Collectives / Ranks: cross-prediction — fit on the other collectives or rank counts,
  /// predict these (every size of them).
  enum class Mode { Alternate, None, Sizes, Collectives, Ranks } mode = Mode::Alternate;
  std::vector<std::uint64_t> sizes;  ///< Mode::Sizes: sizes (bytes) held out
  std::vector<models::Collective> collectives{};  ///< Mode::Collectives: collectives held out
  std::vector<int> ranks{};  ///< Mode::Ranks: rank counts held out
};
/// Sets each row's `fit`: Alternate holds out every other distinct size of each (log, test) in
/// increasing order, starting with the second (a test with one size is fitted); None fits all;
/// Sizes holds out the rows of the sizes listed; Collectives and Ranks the rows of the
/// collectives or rank counts listed.
void assign_holdout(std::vector<CalibrationRow>& rows, const Holdout& holdout);

/// One group of table figures moved together.
struct CalibrationParameter {
  /// Held: material and separable, but the fitted rows determine fewer parameters than there
  /// are such groups; those ranked lower (by materiality and separability) keep the table's value.
  enum class Status { Fitted, NotSeparable, Unconstrained, Held };
  std::string name;     ///< "step_overhead network LL (all algorithms)"
  bool offset = true;   ///< true: seconds added to every member; false: a multiplier of every member
  double value = 0;     ///< fitted offset (seconds) or multiplier (1: unchanged)
  Status status = Status::Unconstrained;
  /// Why it was not fitted; for a fitted group that no fitted row uses at the fitted values,
  /// that it was moved only so that NCCL's choice is another one.
  std::string note;
  /// Table path of each figure ("algorithms.ring.step_overhead.network.LL") with its value
  /// before and after (seconds, fraction, or bytes/second for caps).
  struct Member {
    std::string path;
    double before = 0;
    double after = 0;
  };
  std::vector<Member> members;
  std::vector<std::size_t> rows;  ///< indices of the fitted rows whose simulated time it moves
};

struct CalibrationResult {
  YAML::Node table;  ///< the fitted table (the base document with the fitted figures; no provenance)
  std::vector<CalibrationParameter> parameters;  ///< every group considered
  std::vector<double> before;  ///< simulated seconds per row with the base table
  std::vector<double> after;   ///< simulated seconds per row with the fitted table
  std::vector<std::string> choice_before, choice_after;  ///< "tree/LL": NCCL's choice per row
  int iterations = 0;          ///< Levenberg-Marquardt iterations
  int fitted = 0;              ///< groups fitted
};

struct CalibrateOptions {
  int max_iterations = 40;
  /// A group is separable when the part of its (normalised) effect on the fitted rows that the
  /// groups fitted before it cannot produce has norm ≥ this (sine of the angle to their span).
  double separability = 0.2;
  /// A group is constrained by the rows only when a typical move of it (1 us of latency, 10 %
  /// of a bandwidth figure) changes some fitted row's time by at least this fraction.
  double materiality = 1e-3;
  /// By default every group that no fitted row uses at the end (moved only so that NCCL's
  /// choice is another one: an NVLS efficiency pushed to 1 % so that tree wins) is returned to
  /// the table's value and the fit resumes without it, so the table changes no figure the logs
  /// did not measure. True: such groups stay moved and are reported
  /// (CalibrationParameter::note) — a closer fit of the logs, but they change other layouts.
  bool free_unused = false;
  int threads = 0;  ///< Jacobian columns evaluated in parallel; 0: hardware threads
  /// Scale c of the Cauchy loss on relative residuals (0.1: rows about 10 % off weigh half);
  /// 0 for plain least squares. nccl-tests' first sizes often carry warm-up effects.
  double robust_scale = 0.1;
  /// Called with (what, simulations done so far, 0) before each simulation of the rows (the
  /// fit's unit of work: one run of every fitted row at one point), from the calling thread and
  /// from the Jacobian's worker threads, so it must be thread-safe (support::Progress is). The
  /// number of simulations is not known in advance (it depends on the iterations), hence no
  /// total. Empty: nothing.
  std::function<void(const std::string& what, std::size_t done, std::size_t total)> progress;
};

/// Thrown when a row cannot be simulated on the cluster (a collective no algorithm runs at that
/// size or rank count): names the row.
struct RowError : std::invalid_argument {
  RowError(const std::string& what, std::string log_, int line_, std::string test_)
      : std::invalid_argument(what), log(std::move(log_)), line(line_), test(std::move(test_)) {}
  std::string log;
  int line = 0;
  std::string test;
};

/// Thrown when the rows cannot support a fit (no fitted rows). With fewer fitted rows than
/// material, separable groups, the fit moves as many groups as there are fitted rows (the
/// others are Status::Held), so a log is never refused for its length.
struct CalibrationError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Fits the table `base` (a parsed calibration table) to `rows` on `cluster` with the analytic
/// engine. Throws support::InputError when `base` is not a valid table, CalibrationError when
/// the rows cannot support a fit, std::invalid_argument when a row cannot be simulated (too
/// many ranks for the cluster).
CalibrationResult calibrate(const models::Cluster& cluster, const support::YamlSource& base, const std::vector<CalibrationRow>& rows,
                            const CalibrateOptions& options = {});

/// Simulated seconds of each row with `table` (NCCL's choice), and the choice ("ring/LL128")
/// when `choices` is given. Throws as calibrate().
std::vector<double> simulate_rows(const models::Cluster& cluster, const support::YamlSource& table,
                                  const std::vector<CalibrationRow>& rows, std::vector<std::string>* choices = nullptr);

/// Mean absolute percentage error of `simulated` against the rows' measured times, over the
/// rows with fit == `fitted` (and, when `log` is not empty, from that log); -1 when there are none.
double calibration_mape(const std::vector<CalibrationRow>& rows, const std::vector<double>& simulated, bool fitted,
                        const std::string& log = {});

}  // namespace ccsim::validate
