#pragma once
// Protocol and algorithm cost parameters, loaded from a calibration table: by default
// scenarios/calibration/nccl.yaml (NCCL's constants) for NVIDIA GPUs and
// scenarios/calibration/rccl.yaml (RCCL's) for AMD GPUs. Nothing here is a constant in code:
// every figure comes from the table, which names its source. Per-generation figures are keyed
// by architecture family (protocol_rules.hpp: NCCL's compute-capability rows, RCCL's gfx
// architectures).

#include <array>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <optional>
#include <string>
#include <string_view>

#include "models/hardware/topology.hpp"
#include "support/yaml_fields.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/protocol.hpp"
#include "planner/tuning/protocol_rules.hpp"
#include "sim/engine.hpp"

namespace ccsim::planner {

class CostModel {
 public:
  /// Loads a calibration table. Throws support::InputError on bad files (file:line:column,
  /// key, what was expected, what was found).
  static CostModel load(const std::string& path);
  /// The table held by a parsed YAML document (load() after reading the file; `ccsim
  /// calibrate` builds tables in memory). Throws support::InputError as load() does.
  static CostModel from_yaml(const support::YamlSource& doc);
  /// The `algorithms:` entry whose figures algorithm `a` takes: "ring", "tree", "nvls",
  /// "nvls-tree", or "default" for the others.
  static std::string_view table_name(Algorithm a);
  /// $CCSIM_DATA_DIR/calibration/nccl.yaml, or the source tree's.
  static std::string default_path();
  /// The default table for the GPUs of `cluster`: calibration/rccl.yaml when the first node
  /// group's GPU vendor is "amd", else calibration/nccl.yaml (same directory as default_path()).
  static std::string default_path(const models::Cluster& cluster);

  /// Whether the table has figures for (algorithm, protocol).
  bool supports(Algorithm a, Protocol p) const;
  /// Latency paid once per collective for each rank of the group, seconds (the entry's optional
  /// `rank_latency`; NCCL's PAT model charges nRanks × 2.8 us, tuning.cc); 0 without one. The
  /// collective planner adds ranks × this to params()' base_latency.
  double rank_latency(Algorithm a, Protocol p) const;
  /// Empty when the library enables protocol `p` by default for a collective in `context`
  /// (the table's protocol_rules; protocols without a rule are always enabled), else why not.
  std::string default_refusal(Protocol p, const ProtocolContext& context) const;
  /// Engine cost parameters for (algorithm, protocol) on `topology` with GPUs of architecture
  /// `arch` ("sm90"; needed where the bandwidth factor is keyed by family, as NVLS's is).
  /// A link kind takes the efficiency of the nearest entry of [kind name, its catalog lineage]
  /// in the table (an entry keyed by architecture picks `arch`, then its family, then
  /// `default`), else 1. Throws std::invalid_argument when the table has no entry for the
  /// pair, or no factor for the architecture's family.
  sim::CostParams params(Algorithm a, Protocol p, const models::Topology& topology, std::string_view arch = {}) const;
  /// Efficiency of link kind `kind` of `topology` (fraction of raw bandwidth) on GPUs of `arch`,
  /// following the kind's lineage; nullopt when neither the kind nor any ancestor has one.
  std::optional<double> link_efficiency(const models::Topology& topology, std::size_t kind, std::string_view arch = {}) const;
  /// Reports, through the warning sink, each link kind carrying data in `links` that has no
  /// efficiency in the table for `arch` (once per kind name over this model's life).
  void warn_missing_efficiency(const models::Topology& topology, const std::vector<sim::LinkRecord>& links,
                               std::string_view arch = {}) const;
  /// Where warnings go (default: "ccsim: warning: ..." lines on stderr).
  void set_warning_sink(std::function<void(const std::string&)> sink) { warn_ = std::move(sink); }
  /// NCCL's throughput cap for (algorithm, protocol) as the highest rate of one connection
  /// (source, destination, channel),
  /// wire bytes per second, or +inf when the table has none. `arch` is the GPU architecture
  /// ("sm90"; looked up by family), `nodes` the nodes the collective spans, `channels` the
  /// rings / trees it uses.
  /// A per-rank cap C (Ring LL) gives each of a rank's `channels` concurrent transfers C /
  /// channels of data per second; a per-channel cap gives each transfer C; both times the
  /// protocol's wire bytes per data byte. With `ranks` 2 on one node, the cap is scaled by the
  /// table's `two_ranks` factor for the family where it has one (NVIDIA/nccl PR #2343: Ring
  /// LL128 of two Blackwell ranks on NVLink runs at 0.60 of NCCL's model).
  double max_rate(Algorithm a, Protocol p, const std::string& arch, int nodes, int channels, int ranks = 0) const;
  /// The fixed cost of one collective launched from a CUDA graph, seconds (the table's
  /// `launch: {graph_latency: {family: time}}`, looked up by `arch`'s family); nullopt where the
  /// table has no figure for the family (a graph launch then keeps the eager base_latency).
  std::optional<double> graph_latency(std::string_view arch) const;
  /// The rate one point-to-point channel drives through the network, bytes per second (the
  /// table's optional `p2p: {net_channel_bandwidth}`; the shipped figure is NCCL's
  /// NCCL_P2P_PER_CHANNEL_NET_BW, 14 GB/s, paths.cc 2.29); +inf without one. The collective
  /// planner caps each connection of a SendRecv across nodes by it (planner/tuning/p2p_channels.hpp).
  double p2p_net_channel_bandwidth() const { return p2p_net_channel_bandwidth_; }
  /// Pipeline chunk size of the protocol, bytes.
  double chunk_bytes(Protocol p) const { return chunk_[static_cast<std::size_t>(p)]; }
  const std::string& source() const { return source_; }

 private:
  struct Entry {
    bool present = false;
    double base_latency = 0;                 // seconds
    double rank_latency = 0;                 // seconds per rank of the group
    std::array<double, 4> step_overhead{};   // seconds by LinkClass
    double bandwidth_factor = 1;
    std::map<std::string, double> factor_by_family;  // when keyed by architecture family
  };
  const Entry& entry(Algorithm a, Protocol p) const;
  // from_yaml's sections (each throws support::InputError as from_yaml does).
  void read_protocol_rules(const support::Fields& root);
  void read_algorithms(const support::Fields& root);
  void read_caps(const support::Fields& root);
  void read_link_efficiency(const support::Fields& root);
  double bandwidth_factor(Algorithm a, Protocol p, std::string_view arch) const;

  std::map<std::string, std::array<Entry, 3>> algorithms_;  // "ring", "tree", "nvls", "nvls-tree", "default"
  std::array<double, 3> chunk_{};
  /// kind -> (architecture, family or "default") -> efficiency; "default" alone for plain numbers
  std::map<std::string, std::map<std::string, double>> link_efficiency_;
  struct Cap {
    bool per_rank = false;
    std::map<std::string, std::array<double, 3>> by_family;  // bytes/s for 1, 2, >2 nodes
    std::map<std::string, double> two_ranks;                 // family -> factor, 2 ranks on one node
  };
  std::map<std::pair<std::string, int>, Cap> caps_;  // (algorithm table name, protocol) -> cap
  std::array<std::optional<ProtocolRule>, 3> rules_;
  double p2p_net_channel_bandwidth_ = std::numeric_limits<double>::infinity();
  std::map<std::string, double> graph_latency_;  // family -> seconds (launch.graph_latency)
  std::string source_;
  std::function<void(const std::string&)> warn_;
  struct Warned {
    std::mutex mutex;
    std::set<std::string> kinds;
  };
  std::shared_ptr<Warned> warned_ = std::make_shared<Warned>();  // shared by copies
};

}  // namespace ccsim::planner
