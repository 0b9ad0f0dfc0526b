#pragma once
// NCCL's own spellings of algorithm and protocol choices: the lists of NCCL_ALGO and
// NCCL_PROTO. Syntax as NCCL 2.24+ parses them (src/graph/tuning.cc, parseList):
//
//   Ring,Tree                       only these (names compared case-insensitively, strcasecmp)
//   ^NVLS                           every algorithm but these
//   ring;allreduce:tree,ring        ';'-separated entries, each but the first with a function
//                                   prefix (Broadcast, Reduce, AllGather, ReduceScatter,
//                                   AllReduce); a later entry replaces the list of its function
//
// NCCL_ALGO names (ncclAlgoStr): Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT;
// NCCL_PROTO names (ncclProtoStr): LL, LL128, Simple. An unknown name, an unknown prefix, or an
// entry after the first without a prefix is refused, as NCCL refuses it (ncclInvalidUsage).
// Empty elements ("Ring,,Tree") are skipped, as strtok skips them in NCCL.
//
// ccsim's reading: NCCL's names map to ccsim's algorithms (Ring ring, Tree tree, NVLS nvls,
// NVLSTree nvls-tree, PAT pat); ccsim's own library names (halving-doubling, ...) may be listed
// too. CollNetDirect and CollNetChain (SHARP reduction in the network switches) have no model in
// ccsim: they are recorded (AlgorithmFilter::collnet) so the caller can say so. AlltoAll and
// SendRecv are point-to-point in NCCL: no NCCL_ALGO entry applies to them.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/collective/collective.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/protocol.hpp"
#include "planner/algorithms/registry.hpp"

namespace ccsim::planner {

/// The algorithms an NCCL_ALGO value enables for one collective.
struct AlgorithmFilter {
  bool exclude = false;          ///< "^A,B": every algorithm NCCL considers but those named
  std::vector<Algorithm> named;  ///< the ccsim algorithms named, in the order given, each once
  bool collnet = false;          ///< CollNetDirect or CollNetChain named (no CollNet model in ccsim)

  /// The algorithms an automatic choice may take when NCCL's tuner considers `nccl_eligible`
  /// (nccl_algorithms(), registry order): with `exclude`, those not named; otherwise the named
  /// ones among `nccl_eligible` (a named NCCL algorithm that NCCL would not consider here is
  /// dropped, as NCCL drops it), then the named algorithms NCCL never picks for this collective
  /// (ccsim's own), both in registry order.
  std::vector<Algorithm> apply(const std::vector<Algorithm>& nccl_eligible, models::Collective collective) const;
};

/// Whether `text` uses NCCL_ALGO's list syntax (',', '^', ';' or a "function:" prefix) rather
/// than naming one algorithm. "synth:FILE" is not a list.
bool is_nccl_list(std::string_view text);

/// The NCCL_ALGO value `text` for `collective`: nullopt when no entry applies to it (an entry
/// for other functions only, or AlltoAll and SendRecv, which NCCL runs point-to-point).
/// Throws std::invalid_argument, saying what NCCL would say: an unknown name, an unknown
/// function prefix, an entry after the first without a prefix, an empty value.
std::optional<AlgorithmFilter> parse_nccl_algo(std::string_view text, models::Collective collective);

/// The NCCL_PROTO value `text` for `collective`: the protocols it enables ("^LL": LL128 and
/// Simple), nullopt when no entry applies. Throws std::invalid_argument as parse_nccl_algo.
std::optional<EnumSet<Protocol>> parse_nccl_proto(std::string_view text, models::Collective collective);

/// "LL, Simple": the protocols of `set`, in the order LL, LL128, Simple.
std::string to_string(const EnumSet<Protocol>& set);

}  // namespace ccsim::planner
