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
  std::string source_;
};

}  // namespace ccsim::planner
