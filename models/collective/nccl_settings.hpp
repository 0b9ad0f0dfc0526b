#pragma once
// The NCCL release and the NCCL settings a scenario (simulation.nccl) or a command line fixes,
// where ccsim follows a rule that changed between releases or that a variable overrides.
// Today: the point-to-point channel rules (planner/tuning/p2p_channels.hpp) and PXN.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace ccsim::models {

/// An NCCL release, major.minor (ccsim models no rule that changed within a minor release).
struct NcclVersion {
  int major = 2;
  int minor = 30;
  auto operator<=>(const NcclVersion&) const = default;
};

/// The release whose rules ccsim follows when none is named: NCCL 2.30 (the release the shipped
/// tables, scenarios/calibration/nccl.yaml, were read from).
inline constexpr NcclVersion kDefaultNcclVersion{2, 30};

/// Reads "2.20", "2.20.5" or "2.20.5-1" (NCCL's version spellings: the release tag, the
/// NCCL_VERSION_CODE's dotted form); nullopt for anything else, or a release before 2.0.
std::optional<NcclVersion> parse_nccl_version(std::string_view text);
/// "2.20".
std::string to_string(NcclVersion v);

/// NCCL settings ccsim models; an unset field takes NCCL's default for the release.
struct NcclSettings {
  /// `version`: the release whose rules apply; nullopt: kDefaultNcclVersion.
  std::optional<NcclVersion> version;
  /// `nchannels_per_net_peer`: NCCL_NCHANNELS_PER_NET_PEER (ncclConfig_t::nChannelsPerNetPeer,
  /// 1 .. 64), the channels a send or receive to a peer on another node uses; nullopt: NCCL's
  /// rule for the release.
  std::optional<int> nchannels_per_net_peer;
  /// `pxn_disable`: NCCL_PXN_DISABLE (src/graph/paths.cc; NCCL's default 0, PXN on). With PXN a
  /// point-to-point send to another node (AlltoAll, SendRecv) leaves through the NIC of the
  /// local GPU with the destination's local index, reached over NVLink (search.cc
  /// ncclTopoGetNetDev); with it disabled, through the sender's own NIC.
  std::optional<bool> pxn_disable;

  /// Whether PXN is on (NCCL_PXN_DISABLE unset or 0).
  bool pxn() const { return !pxn_disable.value_or(false); }

  NcclVersion release() const { return version.value_or(kDefaultNcclVersion); }
  bool operator==(const NcclSettings&) const = default;
};

/// The largest NCCL_NCHANNELS_PER_NET_PEER ccsim takes: NCCL's MAXCHANNELS (64 since 2.25;
/// init.cc refuses a config value above it).
inline constexpr int kMaxNcclChannelsPerNetPeer = 64;

}  // namespace ccsim::models
