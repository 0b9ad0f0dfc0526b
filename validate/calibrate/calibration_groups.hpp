#pragma once
// The table figures `ccsim calibrate` moves (validate/calibrate/calibrate.cpp): figures of a collective
// cost table addressed by their YAML path, and the groups of figures that move together (one
// offset or multiplier per group), with their physical bounds.

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "models/hardware/cluster.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::validate::calibration {

using planner::Protocol;

/// A figure of the table: a map path, and an index when the figure is an item of a list (caps).
struct Address {
  std::vector<std::string> keys;
  int index = -1;
  std::string text() const {
    std::string out;
    for (const std::string& k : keys) out += (out.empty() ? "" : ".") + k;
    if (index >= 0) out += fmt::format("[{}]", index);
    return out;
  }
};

enum class Unit { Seconds, Fraction, Bandwidth };

/// The node at `keys` under `root`, or an undefined node.
YAML::Node find_node(const YAML::Node& root, const std::vector<std::string>& keys);
/// A figure's value: seconds ("6.6us"), a fraction, or bytes/second ("36.7GB/s").
double parse_value(const YAML::Node& node, Unit unit);
/// The value a figure written as `v` reads back as (latencies to 0.1 ns, others to 5 digits).
double rounded(double v, Unit unit);

struct Member {
  Address address;
  double base = 0;  // the table's value
};

struct Group {
  std::string name;
  bool offset = true;     // seconds added to every member; else a multiplier of every member
  Unit unit = Unit::Seconds;
  double lo = 0, hi = 0;  // bounds on the parameter (offset in seconds or multiplier)
  std::vector<Member> members;
  /// Evaluated only when a fitted row chose one of these (algorithm table name, protocol)
  /// pairs (empty: always): a forward step of its figures moves no other row.
  std::vector<std::pair<std::string, Protocol>> used_by;
  /// A per-algorithm refinement: evaluated only when the fitted rows chose its (algorithm,
  /// protocol) and another algorithm with the same protocol (else it is the shared group).
  bool refinement = false;
};

/// Builds the groups the table `table` and the cluster offer, in fitting priority (shared
/// latency groups, link efficiencies, protocol factors and caps, NVLS efficiency,
/// per-algorithm refinements); `arch` is the GPU architecture the per-family rows are read for.
std::vector<Group> make_groups(const YAML::Node& table, const models::Cluster& cluster, const std::string& arch);
/// The table with parameter vector `theta` applied to `groups` (members of several groups sum
/// their offsets and multiply their factors, in group order), clamped to physical bounds.
YAML::Node apply(const YAML::Node& base, const std::vector<Group>& groups, const std::vector<double>& theta);
/// The parameters that leave the table as it is (offset 0, multiplier 1).
std::vector<double> neutral(const std::vector<Group>& groups);

}  // namespace ccsim::validate::calibration
