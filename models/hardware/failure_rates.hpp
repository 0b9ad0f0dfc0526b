#pragma once
// Failure classes of a training job and their default rates from a public fleet report.
//
// Source of every default: Llama 3 team, "The Llama 3 Herd of Models" (Meta, arXiv 2407.21783,
// 2024), section 3.3.4 and Table 5: a 54-day snapshot of pre-training Llama 3 405B on 16,384 H100
// GPUs (2,048 nodes of 8 GPUs, one 400G NIC per GPU) saw 466 job interruptions, 47 planned
// (automated maintenance) and 419 unexpected, each with its root cause counted. A class's rate is
// its count over the component-time of that snapshot: count / (units × 54 days), per unit and
// year. The table's causes are grouped into ccsim's classes as the `causes` field says.

#include <span>
#include <string_view>

namespace ccsim::models {

/// What one failure class is counted per in a job.
enum class FailureUnit { Gpu, Nic, Node };

/// One failure class: its name (the `reliability.rates` key), what it is counted per, its
/// default rate and what it does to the job.
struct FailureClass {
  std::string_view name;
  FailureUnit unit;
  double per_year;          ///< failures per unit and year (the default, from `count`)
  int count;                ///< interruptions of this class in Meta's 54-day snapshot
  bool removes_node;        ///< the node leaves the job until repaired (GPU, HBM, NIC, host); else the job restarts on the same nodes
  std::string_view causes;  ///< the rows of Table 5 grouped here
};

/// The failure classes, in report order: gpu, hbm, nic, network, host, software, maintenance.
std::span<const FailureClass> failure_classes();

/// The class named `name`, or nullptr.
const FailureClass* find_failure_class(std::string_view name);

/// "GPU", "NIC" or "node".
std::string_view failure_unit_name(FailureUnit u);

}  // namespace ccsim::models
