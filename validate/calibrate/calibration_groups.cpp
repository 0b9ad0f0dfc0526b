#include "validate/calibrate/calibration_groups.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "support/units.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/tuning/protocol_rules.hpp"

namespace ccsim::validate::calibration {

namespace {

constexpr std::array<Protocol, 3> kProtocols{Protocol::LL, Protocol::LL128, Protocol::Simple};
/// Link classes in fitting priority: where rows cannot tell which hop is slow, the nearest
/// (most hops on a collective's critical path) takes the latency first.
constexpr std::array<const char*, 4> kClasses{"scale-up", "pcie", "host", "network"};

// ---------------------------------------------------------------------------------------------
// Table figures addressed by path.

/// The text written for a figure: latencies to 0.1 ns, fractions and caps to five digits.
std::string format_value(double v, Unit unit) {
  switch (unit) {
    case Unit::Seconds: return fmt::format("{:.4f}us", v * 1e6);
    case Unit::Bandwidth: return fmt::format("{:.5g}GB/s", v / 1e9);
    case Unit::Fraction: return fmt::format("{:.5g}", v);
  }
  return {};
}

/// Sets the figure at `a` (creating maps on the way), written as `text`.
void set_node(YAML::Node root, const Address& a, const std::string& text) {
  YAML::Node n;
  n.reset(root);
  for (std::size_t i = 0; i < a.keys.size(); ++i) {
    const bool last = i + 1 == a.keys.size();
    if (last && a.index < 0) {
      n[a.keys[i]] = text;
      return;
    }
    YAML::Node child = n[a.keys[i]];
    n.reset(child);
  }
  n[static_cast<std::size_t>(a.index)] = text;
}

}  // namespace

/// The node at `keys` under `root`, or an undefined node. yaml-cpp's operator= on a node
/// assigns content, so the walk rebinds with reset().
YAML::Node find_node(const YAML::Node& root, const std::vector<std::string>& keys) {
  YAML::Node n;
  n.reset(root);
  for (const std::string& k : keys) {
    if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node child = n[k];
    if (!child) return YAML::Node(YAML::NodeType::Undefined);
    n.reset(child);
  }
  return n;
}

double parse_value(const YAML::Node& node, Unit unit) {
  const std::string s = node.IsScalar() ? node.Scalar() : std::string();
  switch (unit) {
    case Unit::Seconds: return support::parse_quantity(s, support::Quantity::Time);
    case Unit::Bandwidth: return support::parse_quantity(s, support::Quantity::Bandwidth);
    case Unit::Fraction: return node.as<double>();
  }
  return 0;
}

/// The value a written figure reads back as (what the fit sees is what the file holds).
double rounded(double v, Unit unit) {
  const std::string s = format_value(v, unit);
  if (unit == Unit::Fraction) return std::stod(s);
  return support::parse_quantity(s, unit == Unit::Seconds ? support::Quantity::Time : support::Quantity::Bandwidth);
}

// ---------------------------------------------------------------------------------------------
// Parameter groups.

namespace {

/// Adds groups of the figures of one table to `groups`.
struct GroupMaker {
  const YAML::Node& table;
  YAML::Node algorithms;  ///< the table's `algorithms:` section
  std::vector<Group>& groups;

  bool has_protocol(std::string_view algo, Protocol p) const {
    return static_cast<bool>(find_node(algorithms, {std::string(algo), "base_latency", std::string(planner::to_string(p))}));
  }

  /// An offset of the latencies (base_latency, or step_overhead of link class `cls`) of `algos`
  /// with `protocols`, bounded below so every member stays at or above 0.
  void latency_group(const std::string& name, const std::vector<std::string_view>& algos, const std::vector<Protocol>& protocols,
                     const char* cls) {
    Group g;
    g.name = name;
    for (Protocol p : protocols) {
      const std::string pn(planner::to_string(p));
      for (std::string_view algo : algos) {
        if (!has_protocol(algo, p)) continue;
        Address a;
        if (cls == nullptr) {
          a.keys = {"algorithms", std::string(algo), "base_latency", pn};
        } else {
          if (!find_node(algorithms, {std::string(algo), "step_overhead", cls}).IsMap()) continue;
          a.keys = {"algorithms", std::string(algo), "step_overhead", cls, pn};
        }
        const YAML::Node v = find_node(table, a.keys);
        g.members.push_back({a, v ? parse_value(v, Unit::Seconds) : 0.0});
        g.used_by.emplace_back(algo, p);
      }
    }
    if (g.members.empty()) return;
    double lowest = std::numeric_limits<double>::infinity();
    for (const Member& m : g.members) lowest = std::min(lowest, m.base);
    g.lo = -lowest;
    g.hi = 1.0;  // a second per step: far beyond any transport
    groups.push_back(std::move(g));
  }

  /// A multiplier of the plain-number figures at algorithms.ALGO.<keys> (bandwidth factors,
  /// NVLS efficiency), bounded so every member stays in [0.01, 1].
  void fraction_group(const std::string& name, Protocol p, const std::vector<std::string_view>& algos,
                      const std::vector<std::string>& keys) {
    Group g;
    g.name = name;
    g.offset = false;
    g.unit = Unit::Fraction;
    double highest = 0, lowest = 1;
    for (std::string_view algo : algos) {
      Address a;
      a.keys = {"algorithms", std::string(algo)};
      a.keys.insert(a.keys.end(), keys.begin(), keys.end());
      const YAML::Node v = find_node(table, a.keys);
      if (!v || !v.IsScalar()) continue;
      const double base = parse_value(v, Unit::Fraction);
      g.members.push_back({a, base});
      g.used_by.emplace_back(algo, p);
      highest = std::max(highest, base);
      lowest = std::min(lowest, base);
    }
    if (g.members.empty()) return;
    g.lo = 0.01 / lowest;
    g.hi = 1.0 / highest;
    groups.push_back(std::move(g));
  }

  /// A multiplier of each link kind's efficiency in `cluster` on GPUs of `arch`.
  void link_efficiency_groups(const models::Cluster& cluster, const std::string& arch) {
    const planner::CostModel costs = planner::CostModel::from_yaml({table, nullptr});
    const auto& kinds = cluster.topology.link_kinds();
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      Group g;
      g.name = "link_efficiency " + kinds[k];
      g.offset = false;
      g.unit = Unit::Fraction;
      const double base = costs.link_efficiency(cluster.topology, k, arch).value_or(1.0);
      Address a;
      a.keys = {"link_efficiency", kinds[k]};
      if (find_node(table, a.keys).IsMap()) a.keys.push_back(arch);
      g.members.push_back({a, base});
      g.lo = 0.01 / base;
      g.hi = 1.0 / base;
      groups.push_back(std::move(g));
    }
  }

  /// A multiplier of every throughput cap of protocol `p` for architecture family `family`.
  void cap_group(Protocol p, const std::string& family, const std::vector<std::string_view>& tables) {
    const std::string pn(planner::to_string(p));
    Group cap;
    cap.name = fmt::format("bandwidth_caps {} {} (all algorithms)", pn, family);
    cap.offset = false;
    cap.unit = Unit::Bandwidth;
    for (std::string_view algo : tables) {
      const YAML::Node row = find_node(table, {"bandwidth_caps", std::string(algo), pn, family});
      if (!row || !row.IsSequence()) continue;
      for (std::size_t i = 0; i < row.size(); ++i) {
        cap.members.push_back(
            {Address{{"bandwidth_caps", std::string(algo), pn, family}, static_cast<int>(i)}, parse_value(row[i], Unit::Bandwidth)});
      }
      cap.used_by.emplace_back(algo, p);
    }
    if (!cap.members.empty()) {
      cap.lo = 0.01;
      cap.hi = 100.0;
      groups.push_back(std::move(cap));
    }
  }
};

}  // namespace

/// Builds the groups the table and the cluster offer.
std::vector<Group> make_groups(const YAML::Node& table, const models::Cluster& cluster, const std::string& arch) {
  std::vector<Group> groups;
  GroupMaker make{table, find_node(table, {"algorithms"}), groups};
  // The cost tables (the `algorithms:` keys), in the registry's order.
  const std::vector<std::string_view>& tables = planner::cost_table_names();
  const std::string family = planner::architecture_family(arch);
  const std::vector<std::string_view> all(tables.begin(), tables.end());
  // Shared latency groups first (a slow hop or launch slows every algorithm alike), per-hop
  // before base, per protocol (LL, LL128 and Simple pay different per-step costs).
  for (Protocol p : kProtocols) {
    for (const char* cls : kClasses) {
      make.latency_group(fmt::format("step_overhead {} {} (all algorithms)", cls, planner::to_string(p)), all, {p}, cls);
    }
    make.latency_group(fmt::format("base_latency {} (all algorithms)", planner::to_string(p)), all, {p}, nullptr);
  }
  // Link efficiencies of the cluster's link kinds.
  make.link_efficiency_groups(cluster, arch);
  // Protocol bandwidth factors and throughput caps, as multipliers.
  for (Protocol p : kProtocols) {
    const std::string pn(planner::to_string(p));
    make.fraction_group(fmt::format("bandwidth_factor {} (all algorithms)", pn), p, all, {"bandwidth_factor", pn});
    make.cap_group(p, family, tables);
  }
  // NVLS efficiency (nvlsEfficiency), keyed by family.
  const std::vector<std::string_view>& nvls = planner::nvls_cost_tables();
  std::string nvls_list;
  for (std::string_view t : nvls) nvls_list += (nvls_list.empty() ? "" : ", ") + std::string(t);
  make.fraction_group("NVLS efficiency (" + nvls_list + ") " + family, Protocol::Simple, nvls, {"bandwidth_factor", "Simple", family});
  // Per-algorithm latency offsets: separable from the shared ones only with rows of two
  // algorithms, so they come last.
  for (Protocol p : kProtocols) {
    for (std::string_view algo : tables) {
      if (!make.has_protocol(algo, p)) continue;
      for (const char* cls : kClasses) {
        make.latency_group(fmt::format("step_overhead {} {} ({})", cls, planner::to_string(p), algo), {algo}, {p}, cls);
      }
      make.latency_group(fmt::format("base_latency {} ({})", planner::to_string(p), algo), {algo}, {p}, nullptr);
    }
  }
  for (Group& g : groups)
    if (g.offset && g.name.find("(all ") == std::string::npos) g.refinement = true;
  return groups;
}

/// The table with parameter vector `theta` applied to `groups` (members of several groups sum
/// their offsets and multiply their factors, in group order).
YAML::Node apply(const YAML::Node& base, const std::vector<Group>& groups, const std::vector<double>& theta) {
  YAML::Node table = YAML::Clone(base);
  std::map<std::string, std::pair<double, Unit>> values;  // address -> value so far
  std::map<std::string, Address> addresses;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const Member& m : groups[g].members) {
      const std::string key = m.address.text();
      auto [it, fresh] = values.try_emplace(key, m.base, groups[g].unit);
      addresses.emplace(key, m.address);
      double& v = it->second.first;
      v = groups[g].offset ? v + theta[g] : v * theta[g];
    }
  }
  for (auto& [key, value] : values) {
    double v = value.first;
    if (value.second == Unit::Fraction) v = std::clamp(v, 0.01, 1.0);
    if (value.second == Unit::Seconds) v = std::max(v, 0.0);
    set_node(table, addresses.at(key), format_value(v, value.second));
  }
  return table;
}

std::vector<double> neutral(const std::vector<Group>& groups) {
  std::vector<double> theta(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) theta[g] = groups[g].offset ? 0.0 : 1.0;
  return theta;
}

}  // namespace ccsim::validate::calibration
