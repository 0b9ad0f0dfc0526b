#pragma once
// NCCL's policy for one collective: which (algorithm, protocol) pairs its tuner considers for a
// group (NCCL 2.28 src/graph/tuning.cc, ncclTopoTuneModel and getAlgoInfo: Ring and Tree for
// AllReduce, NVLSTree across nodes with NVLink SHARP, NVLS inside one NVSwitch domain, Ring for
// the other reductions and gathers, point-to-point for AlltoAll and SendRecv; NVLS and p2p with
// Simple only; LL128 only where the table's protocol rules enable it), what an explicitly
// asked algorithm needs of the placement, the architecture the group is tuned by, and at which
// granularity the planner generates a candidate. The algorithms' own facts come from the
// registry (planner/algorithms/registry.hpp): nccl_collectives, placement, protocols,
// preferred_granularity.

#include <optional>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/collective/schedule.hpp"
#include "models/hardware/cluster.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/protocol.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/tuning/protocol_rules.hpp"

namespace ccsim::planner {

/// Step granularity up to this many ranks (exact); phase granularity above, where available.
inline constexpr int kStepRanks = 64;
/// ... and up to this many ranks × ring channels (a 32-GPU mesh with 15 searched rings runs at
/// phase granularity: its step form has hundreds of concurrent flows re-shared at every step).
inline constexpr int kStepRankChannels = 256;

/// What NCCL's tuner knows of a group when it picks an algorithm (the registry's placement
/// rules read it).
using NcclGroup = GroupShape;

/// The group of the ranks `gpus` (device ids of `cluster`, rank order) running `collective`,
/// with `ranks_per_node` as planned (ChannelPlan::ranks_per_node).
NcclGroup nccl_group(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus, models::Collective collective,
                     int ranks_per_node);

/// Why algorithm `a`, asked for explicitly, cannot run on `g`'s placement (its registry entry's
/// placement_refusal: NVLS needs one NVLink SHARP domain, NVLS-tree whole NVLS nodes of equal
/// size); empty when it can.
std::string placement_refusal(Algorithm a, const NcclGroup& g);

/// The algorithms NCCL's tuner considers for `g`, in registry order (the candidate order, which
/// breaks ties): those whose nccl_collectives hold the collective and whose nccl_placement
/// holds (NVLS with more than one rank, NVLS-tree across more than one node), and, unless
/// `enabled` (the base an NCCL_ALGO list of names picks from), whose nccl_auto holds (Tree
/// across nodes).
std::vector<Algorithm> nccl_algorithms(const NcclGroup& g, bool enabled = false);

/// The protocols a candidate of algorithm `a` runs with, in the order LL, LL128, Simple: `asked`
/// alone when given, else the entry's protocols the table's rules enable by default for
/// `context`; in both cases only those the table has figures for.
std::vector<Protocol> nccl_protocols(Algorithm a, std::optional<Protocol> asked, const CostModel& costs,
                                     const ProtocolContext& context);

/// The GPU architecture NCCL tunes the group by ("sm90"): the lowest compute capability of the
/// ranks' architectures (tuning.cc takes compCapIndex from minCompCap), else the first rank's
/// node's GPU architecture; empty when neither is known.
std::string nccl_architecture(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                              const ProtocolContext& context);

/// Whether a candidate of algorithm `a` is generated at phase granularity when it has a phase
/// form: `asked` Phase; or no granularity asked and more than kStepRanks ranks, more than
/// kStepRankChannels ranks × `channels` (the candidate's ring channels), or an entry that
/// prefers Phase (NCCL's Tree). `asked` Step: never.
bool prefers_phase(Algorithm a, std::optional<models::Granularity> asked, int ranks, int channels);

}  // namespace ccsim::planner
