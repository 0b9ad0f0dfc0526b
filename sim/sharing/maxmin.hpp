#pragma once
// Max-min fair bandwidth sharing, the pure solver under the analytic engine (as SimGrid keeps
// its lmm solver apart from its models).
//
// Progressive filling (Bertsekas & Gallager, "Data Networks", 2nd ed., §6.5.2): raise all
// unfrozen flows' rates together; when a resource saturates, freeze the flows crossing it at
// its fair share (remaining capacity ÷ unfrozen flows); repeat. The result is the unique
// max-min fair allocation: no flow can get more without taking from a flow with less.

#include <cstdint>
#include <span>
#include <vector>

namespace ccsim::sim {

/// Flows over shared resources, in CSR form: flow f uses resources
/// resources[offsets[f] .. offsets[f+1]). Capacities in bytes per second.
struct MaxMinProblem {
  std::vector<double> capacity;
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> resources;

  /// Appends a flow over `flow_resources` (indices into capacity); returns its index.
  std::uint32_t add_flow(std::span<const std::uint32_t> flow_resources);
  std::size_t flows() const { return offsets.size() - 1; }
};

/// Rate of each flow (bytes per second). A flow with no resource gets +infinity.
/// O(I log R) for I flow-resource incidences and R resources.
std::vector<double> solve_max_min(const MaxMinProblem& problem);

}  // namespace ccsim::sim
