#pragma once
// The simulator as the model of a compute calibration (validate/calibrate/compute_calibration.hpp): each
// row of a step-times CSV (validate/calibrate/calibration_inputs.hpp) is the scenario with the row's
// overrides, simulated by planner::WorkloadRunner as `ccsim run` does.
//
// Overrides are applied to the scenario merged with its includes (models::effective_yaml),
// keeping of the workload, strategy and simulation settings only those the user's files write,
// so that derived values (dp, global_batch_size) are derived again for each row. A key is a
// dotted path into the scenario YAML (`strategy.tp`, `workload.micro_batch_size`); a number
// indexes a list (`cluster.nodes.0.count`). Setting strategy.tp, pp or cp or any cluster key
// without strategy.dp derives dp from the GPU count (Megatron: dp = world / (tp·pp·cp)).

#include <memory>
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "planner/workload/workload_runner.hpp"
#include "validate/calibrate/calibration_inputs.hpp"

namespace ccsim::validate {

/// The simulator as a function of the compute constants: every step-times row's step simulated
/// on the scenario with the row's overrides (planner::WorkloadRunner, as `ccsim run`), its
/// lowered communication kept between calls.
class StepTimeModel {
 public:
  /// Reads the rows and builds each row's scenario, cluster and runner. Throws support::InputError
  /// for a bad CSV, a scenario without a workload, an override the scenario loader rejects (at
  /// the CSV's file:line, with the loader's key, expected and found), or a row on another GPU.
  StepTimeModel(const std::string& scenario, const std::string& step_times);
  ~StepTimeModel();
  StepTimeModel(const StepTimeModel&) = delete;
  StepTimeModel& operator=(const StepTimeModel&) = delete;
  const std::vector<StepTimeRow>& rows() const;
  /// The scenario's (first node group's) GPU: the one the calibration is for.
  const models::GpuSpec& gpu() const;
  /// Simulated step time of every row with the constants `c`, seconds (TTFT for prefill, TPOT
  /// for decode, as WorkloadResult::step_time). Throws support::InputError at the row's line when
  /// its layout does not fit in the GPU's memory.
  std::vector<double> operator()(const planner::ComputeCalibration& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ccsim::validate
