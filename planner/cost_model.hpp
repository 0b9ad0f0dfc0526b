#pragma once
// Protocol and algorithm cost parameters, loaded from a calibration table
// (scenarios/calibration/nccl.yaml by default: NCCL's published constants). Nothing here is a
// constant in code: every figure comes from the table, which names its source.

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "models/topology.hpp"
#include "models/yaml_fields.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "sim/engine.hpp"

namespace ccsim::planner {

/// NCCL's protocols: LL (8-byte stores, half of them flags), LL128 (128-byte lines with 8
/// flag bytes), Simple (bulk copies with fences).
enum class Protocol : std::uint8_t { LL, LL128, Simple };
std::string_view to_string(Protocol p);
std::optional<Protocol> parse_protocol(std::string_view s);

class CostModel {
 public:
  /// Loads a calibration table. Throws models::InputError on bad files.
  static CostModel load(const std::string& path);
  /// $CCSIM_DATA_DIR/calibration/nccl.yaml, or the source tree's.
  static std::string default_path();

  /// Whether the table has figures for (algorithm, protocol).
  bool supports(Algorithm a, Protocol p) const;
  /// Engine cost parameters for (algorithm, protocol) on `topology` (link efficiencies are
  /// matched to the topology's link kinds by name). Throws std::invalid_argument when the
  /// table has no entry for the pair.
  sim::CostParams params(Algorithm a, Protocol p, const models::Topology& topology) const;
  /// NCCL's throughput cap for (algorithm, protocol) as the highest rate of one connection
  /// (source, destination, channel),
  /// wire bytes per second, or +inf when the table has none. `arch` is the GPU architecture
  /// ("sm90"), `nodes` the nodes the collective spans, `channels` the rings / trees it uses.
  /// A per-rank cap C (Ring LL) gives each of a rank's `channels` concurrent transfers C /
  /// channels of data per second; a per-channel cap gives each transfer C; both times the
  /// protocol's wire bytes per data byte.
  double max_rate(Algorithm a, Protocol p, const std::string& arch, int nodes, int channels) const;
  /// Pipeline chunk size of the protocol, bytes.
  double chunk_bytes(Protocol p) const { return chunk_[static_cast<std::size_t>(p)]; }
  const std::string& source() const { return source_; }

 private:
  struct Entry {
    bool present = false;
    double base_latency = 0;                 // seconds
    std::array<double, 4> step_overhead{};   // seconds by LinkClass
    double bandwidth_factor = 1;
  };
  const Entry& entry(Algorithm a, Protocol p) const;

  std::map<std::string, std::array<Entry, 3>> algorithms_;  // "ring", "tree", "nvls", "nvls-tree", "default"
  std::array<double, 3> chunk_{};
  std::map<std::string, double> link_efficiency_;
  struct Cap {
    bool per_rank = false;
    std::map<std::string, std::array<double, 3>> by_arch;  // bytes/s for 1, 2, >2 nodes
  };
  std::map<std::pair<std::string, int>, Cap> caps_;  // (algorithm table name, protocol) -> cap
  std::string source_;
};

}  // namespace ccsim::planner
