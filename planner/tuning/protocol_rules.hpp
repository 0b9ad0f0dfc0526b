#pragma once
// GPU architecture families and the rules that decide whether a protocol is offered by default.
//
// Architecture families. NCCL keys its per-generation constants (protocol throughput caps,
// NVLS efficiency) by a compute-capability index, not by the exact architecture (NCCL 2.28
// src/graph/tuning.cc, ncclTopoTuneModel: compCapIndex = minCompCap >= 100 ? Blackwell :
// >= 90 ? Hopper : >= 80 ? Ampere : Volta). So sm75 (Turing) uses the Volta row and sm86 /
// sm89 (GA10x, Ada) the Ampere row. RCCL keys its constants by the exact gfx architecture
// (ROCm/rccl src/graph/tuning.cc, IsArchMatch(gcn, "gfx942")), so an AMD GPU's family is its
// architecture string.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "models/hardware/router.hpp"
#include "models/hardware/kinds.hpp"

namespace ccsim::planner {

/// NVIDIA compute capability of an "smXY" / "smXYZ" architecture (sm86 -> 86, sm100 -> 100);
/// nullopt for anything else.
std::optional<int> compute_capability(std::string_view arch);

/// The family whose constants an architecture uses: "volta", "ampere", "hopper" or "blackwell"
/// for NVIDIA (NCCL's compCapIndex rule above), the architecture itself for AMD ("gfx942"),
/// empty for strings that are neither.
std::string architecture_family(std::string_view arch);

/// The architecture whose family NCCL tunes a communicator of `archs` by: the lowest compute
/// capability (tuning.cc takes compCapIndex from minCompCap); for AMD or unknown strings, the
/// first. Empty for an empty list.
std::string tuning_architecture(const std::vector<std::string>& archs);

/// Whether `key` names a family a calibration table may key constants by: one of the four
/// NVIDIA families or a "gfx..." architecture.
bool is_architecture_family(std::string_view key);

/// What the default-protocol rules look at, for one collective.
struct ProtocolContext {
  std::vector<std::string> archs;      ///< distinct GPU architectures of the ranks, first rank's first
  int nodes = 1;                       ///< nodes the ranks span
  models::PathType intra = models::PathType::Nvl;  ///< farthest path between ring neighbours on one node
  models::PathType inter = models::PathType::Pix;  ///< farthest path from a rank's GPU to its NIC (nodes > 1)
};

/// Builds the context of the ranks `gpus` (device ids, rank order) of `cluster`: the paths
/// between consecutive ranks of each node in rank order (with wrap-around, as a ring joins
/// them), and from each rank's GPU to its nearest NIC when the ranks span several nodes. One
/// node of each node class (Topology::node_class) and choice of local GPUs is inspected: nodes
/// of one class with the ranks on the same local GPUs are alike. With `router` (a
/// models::Router of `cluster`), the paths are the router's (the same as Topology::route's,
/// from its per-class cache: no search of a 16,384-GPU topology per call).
ProtocolContext protocol_context(const models::Cluster& cluster, const std::vector<models::DeviceId>& gpus,
                                 models::Router* router = nullptr);

/// When a library enables a protocol by default. All conditions must hold.
struct ProtocolRule {
  /// Architectures on which it is enabled: exact ("sm70", "gfx942") or a family ("hopper").
  std::vector<std::string> archs;
  models::PathType max_intra = models::PathType::Net;  ///< farthest intra-node path allowed
  models::PathType max_inter = models::PathType::Net;  ///< farthest GPU-to-NIC path allowed (nodes > 1)
  bool mixed_archs = true;  ///< whether ranks of different architectures may use it
  std::string source;

  /// Empty when the rule allows the protocol in `c`, else the reason it does not.
  std::string refusal(const ProtocolContext& c) const;
};

/// Parses "nvl", "pix", "pxb", "phb", "sys", "net" (case-insensitive).
std::optional<models::PathType> parse_path_type(std::string_view s);

}  // namespace ccsim::planner
