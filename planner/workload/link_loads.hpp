#pragma once
// What one step puts on each link: the traffic of every communication op instance, summed
// over the step, and the link's utilisation.

#include <span>
#include <vector>

#include "models/hardware/topology.hpp"
#include "planner/workload/lowering.hpp"

namespace ccsim::planner {

struct LinkLoad {
  models::LinkId link = 0;
  double bytes = 0;        ///< wire bytes per step
  double busy = 0;         ///< seconds per step with data on the link (summed over ops)
  double peak = 0;         ///< highest instantaneous utilisation seen in any op
  double utilisation = 0;  ///< bytes / (capacity × step time)
};

/// What link_loads reads.
struct LinkLoadInput {
  const models::Topology& topology;
  std::span<const int> op_comm;            ///< per Program op: index into `costs`, or -1 (no communication)
  std::span<const CommCost> costs;         ///< the lowered communication ops
  /// Fraction of a link's bandwidth data reaches, by Topology link kind index (missing: 1);
  /// capacity = bandwidth (bytes/s per direction) × efficiency.
  std::span<const double> link_efficiency;
  double step_time = 0;                    ///< seconds
};

/// Every link that carried data, by utilisation descending (ties: by link id): each op
/// instance adds its cost's LinkRecords (bytes and busy summed, peak the maximum), and
/// utilisation = bytes / (capacity × step_time).
std::vector<LinkLoad> link_loads(const LinkLoadInput& in);

}  // namespace ccsim::planner
