#pragma once
// `ccsim collective ... --dump-channels`: the channels ccsim plans for the group
// (planner/collective/channel_plan.hpp), printed instead of simulating: the ring order of every
// ring channel as GPU names, the searched rings of a direct-link node, the ranks of each node
// when nodes hold different numbers, and the tree pairs with their heads.

#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "planner/collective/channel_plan.hpp"

namespace ccsim::cli {

/// The dump as text: a header line naming the group, then one table per part.
std::string channel_dump_text(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                              const planner::ChannelPlan& plan);
/// The dump as a JSON document (2-space indent, trailing newline).
std::string channel_dump_json(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                              const planner::ChannelPlan& plan);

}  // namespace ccsim::cli
