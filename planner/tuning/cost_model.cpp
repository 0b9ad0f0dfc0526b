#include "planner/tuning/cost_model.hpp"

#include "planner/algorithms/registry.hpp"
#include "support/data_dir.hpp"

#include <algorithm>
#include <limits>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::planner {

using support::Fields;
using support::Quantity;

namespace {

std::filesystem::path calibration_dir() {
  const std::filesystem::path base = support::data_dir();
  return base / "calibration";
}

/// A bandwidth factor or link efficiency: a fraction in [0.01, 1]. Below 1 % a collective
/// would take a hundred times its wire time, which no library's table holds; the bound keeps
/// a typo (1e-300) from producing times beyond any range.
double fraction(const Fields& f, std::string_view key) {
  const double v = f.number(key, 0.0);
  if (v < 0.01 || v > 1.0) throw f.error(key, "a fraction of the link bandwidth in [0.01, 1]");
  return v;
}

constexpr const char* kFamilies = "an architecture family (volta, ampere, hopper, blackwell) or an AMD architecture such as gfx942";

}  // namespace

std::string CostModel::default_path() { return (calibration_dir() / "nccl.yaml").string(); }

std::string CostModel::default_path(const models::Cluster& cluster) {
  const bool amd = !cluster.spec.groups.empty() && cluster.spec.groups.front().node.gpu.vendor == "amd";
  return (calibration_dir() / (amd ? "rccl.yaml" : "nccl.yaml")).string();
}

CostModel CostModel::load(const std::string& path) {
  return from_yaml(support::load_yaml_map_file(path, {"a collective calibration table (like scenarios/calibration/nccl.yaml)"}));
}

CostModel CostModel::from_yaml(const support::YamlSource& doc) {
  const Fields root({doc}, "");
  root.reject_unknown({"source", "protocols", "protocol_rules", "algorithms", "link_efficiency", "bandwidth_caps", "calibration", "p2p", "launch"});
  // `calibration:` is the provenance `ccsim calibrate` writes (logs, fit report): not read here.
  if (const auto provenance = root.find("calibration"); provenance && !provenance->node.IsMap()) {
    throw root.error("calibration", "a map (the provenance block ccsim calibrate writes)");
  }
  CostModel m;
  m.source_ = root.optional_string("source").value_or("");
  m.read_protocol_rules(root);
  const Fields protocols = root.map("protocols");
  protocols.reject_unknown({"LL", "LL128", "Simple"});
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    const Fields f = protocols.map(to_string(p));
    f.reject_unknown({"chunk"});
    m.chunk_[static_cast<std::size_t>(p)] = f.quantity("chunk", Quantity::Bytes, true);
  }
  m.read_algorithms(root);
  m.read_caps(root);
  m.read_link_efficiency(root);
  if (const auto launch = root.optional_map("launch")) {  // CUDA graph launch (graph_latency)
    launch->reject_unknown({"source", "graph_latency"});
    if (const auto graph = launch->optional_map("graph_latency")) {
      for (const auto& layer : graph->layers()) {
        for (const auto& kv : layer.node) {
          const std::string family = kv.first.Scalar();
          if (m.graph_latency_.count(family) != 0) continue;
          if (!is_architecture_family(family)) {
            throw support::InputError(support::location_of({kv.first, layer.file}), graph->key_path(family), kFamilies,
                                      "'" + family + "'");
          }
          m.graph_latency_[family] = graph->quantity(family, Quantity::Time, false);
        }
      }
    }
  }
  if (const auto p2p = root.optional_map("p2p")) {  // point-to-point figures (p2p_net_channel_bandwidth)
    p2p->reject_unknown({"net_channel_bandwidth"});
    if (p2p->find("net_channel_bandwidth")) {
      m.p2p_net_channel_bandwidth_ = p2p->quantity("net_channel_bandwidth", Quantity::Bandwidth, true);
    }
  }
  return m;
}

/// protocol_rules: when the library enables each protocol by default.
void CostModel::read_protocol_rules(const Fields& root) {
  if (const auto rules = root.optional_map("protocol_rules")) {
    rules->reject_unknown({"LL", "LL128", "Simple"});
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      const auto f = rules->optional_map(to_string(p));
      if (!f) continue;
      f->reject_unknown({"source", "archs", "max_intra_path", "max_inter_path", "mixed_archs"});
      ProtocolRule rule;
      rule.source = f->optional_string("source").value_or("");
      for (const support::YamlSource& item : f->list("archs")) {
        const std::string arch = item.node.IsScalar() ? item.node.Scalar() : std::string();
        if (architecture_family(arch).empty() && !is_architecture_family(arch)) {
          throw support::InputError(support::location_of(item), f->key_path("archs"),
                                    "architectures (sm80, gfx942) or families (volta, ampere, hopper, blackwell)",
                                    support::describe_node(item.node));
        }
        rule.archs.push_back(arch);
      }
      const auto path_type = [&](const char* key) {
        const std::string v = f->string(key);
        const auto t = parse_path_type(v);
        if (!t) throw f->error(key, "a path type: NVL, PIX, PXB, PHB, SYS or NET");
        return *t;
      };
      rule.max_intra = path_type("max_intra_path");
      rule.max_inter = path_type("max_inter_path");
      rule.mixed_archs = f->boolean("mixed_archs", true);
      rules_[static_cast<std::size_t>(p)] = rule;
    }
  }
}

/// algorithms: latencies, step overheads and bandwidth factors per cost table and protocol.
void CostModel::read_algorithms(const Fields& root) {
  const Fields algorithms = root.map("algorithms");
  algorithms.reject_unknown(cost_table_names());
  for (const std::string_view name : cost_table_names()) {
    auto& entries = algorithms_[std::string(name)];
    const auto a = algorithms.optional_map(name);
    if (!a) {
      if (name == "default") throw algorithms.missing("default", "figures for the other algorithms");
      continue;
    }
    a->reject_unknown({"base_latency", "step_overhead", "bandwidth_factor", "rank_latency"});
    const auto per_rank = a->optional_map("rank_latency");
    if (per_rank) per_rank->reject_unknown({"LL", "LL128", "Simple"});
    const Fields base = a->map("base_latency");
    const Fields factor = a->map("bandwidth_factor");
    const Fields overhead = a->map("step_overhead");
    base.reject_unknown({"LL", "LL128", "Simple"});
    factor.reject_unknown({"LL", "LL128", "Simple"});
    overhead.reject_unknown({"scale-up", "pcie", "host", "network"});
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      const std::string_view pn = to_string(p);
      if (!base.has(pn)) continue;
      Entry& e = entries[static_cast<std::size_t>(p)];
      e.present = true;
      e.base_latency = base.quantity(pn, Quantity::Time, false);
      if (per_rank) e.rank_latency = per_rank->quantity(pn, Quantity::Time, false, 0.0);
      if (const auto by_family = factor.find(pn); by_family && by_family->node.IsMap()) {
        // Keyed by architecture family (NCCL's nvlsEfficiency[compCapIndex]).
        const Fields per = factor.map(pn);
        for (const auto& layer : per.layers()) {
          for (const auto& kv : layer.node) {
            const std::string family = kv.first.Scalar();
            if (!is_architecture_family(family)) {
              throw support::InputError(support::location_of({kv.first, layer.file}), per.key_path(family), kFamilies,
                                        "'" + family + "'");
            }
            const double v = fraction(per, family);
            e.factor_by_family.emplace(family, v);
          }
        }
      } else {
        e.bandwidth_factor = fraction(factor, pn);
      }
      for (models::LinkClass c : {models::LinkClass::ScaleUp, models::LinkClass::Pcie, models::LinkClass::Host,
                                  models::LinkClass::Network}) {
        // Host (socket) hops take the PCIe figures unless given.
        const std::string_view cls = models::to_string(c);
        const std::string_view from = c == models::LinkClass::Host && !overhead.has("host") ? "pcie" : cls;
        if (const auto per = overhead.optional_map(from)) {
          per->reject_unknown({"LL", "LL128", "Simple"});
          e.step_overhead[static_cast<std::size_t>(c)] = per->quantity(pn, Quantity::Time, false, 0.0);
        }
      }
    }
  }
}

/// bandwidth_caps: throughput caps per cost table, protocol and architecture family.
void CostModel::read_caps(const Fields& root) {
  if (const auto caps = root.optional_map("bandwidth_caps")) {
    caps->reject_unknown(cost_table_names());
    for (const std::string_view algo : cost_table_names()) {
      const auto per_algo = caps->optional_map(algo);
      if (!per_algo) continue;
      per_algo->reject_unknown({"LL", "LL128", "Simple"});
      for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
        const auto f = per_algo->optional_map(to_string(p));
        if (!f) continue;
        Cap cap;
        cap.per_rank = f->choice("per", {"rank", "channel"}) == "rank";
        for (const auto& layer : f->layers()) {
          for (const auto& kv : layer.node) {
            const std::string arch = kv.first.Scalar();
            if (arch == "per" || arch == "two_ranks" || cap.by_family.count(arch) != 0) continue;
            if (!is_architecture_family(arch)) {
              const std::string family = architecture_family(arch);
              throw support::InputError(support::location_of({kv.first, layer.file}), f->key_path(arch), kFamilies,
                                        "'" + arch + "'", family.empty() ? std::string() : "NCCL keys " + arch + " as '" + family + "'");
            }
            const auto value = f->find(arch);
            if (!value->node.IsSequence() || value->node.size() != 3) {
              throw f->error(arch, "a list of three bandwidths (one node, two nodes, more than two nodes)");
            }
            std::array<double, 3> v{};
            for (std::size_t i = 0; i < 3; ++i) {
              const YAML::Node& item = value->node[i];
              try {
                v[i] = support::parse_quantity(item.IsScalar() ? item.Scalar() : std::string(), Quantity::Bandwidth);
              } catch (const support::UnitError&) {
                throw support::InputError(support::location_of({item, value->file}), f->key_path(arch),
                                          "a bandwidth such as 36.7GB/s", support::describe_node(item));
              }
              if (v[i] <= 0) throw f->error(arch, "bandwidths above 0");
            }
            cap.by_family[arch] = v;
          }
        }
        // two_ranks: {family: factor}, the cap's share left when two ranks on one node run it.
        if (const auto two = f->optional_map("two_ranks")) {
          for (const auto& layer : two->layers()) {
            for (const auto& kv : layer.node) {
              const std::string family = kv.first.Scalar();
              if (cap.two_ranks.count(family) != 0) continue;
              if (!is_architecture_family(family)) {
                throw support::InputError(support::location_of({kv.first, layer.file}), two->key_path(family), kFamilies,
                                          "'" + family + "'");
              }
              const double factor = two->number(family, 0.0);
              if (factor > 1) throw two->error(family, "a factor above 0 and at most 1");
              cap.two_ranks[family] = factor;
            }
          }
        }
        caps_[{std::string(algo), static_cast<int>(p)}] = cap;
      }
    }
  }
}

/// link_efficiency: the fraction of each link kind's bandwidth a collective reaches.
void CostModel::read_link_efficiency(const Fields& root) {
  if (const auto eff = root.optional_map("link_efficiency")) {
    for (const auto& layer : eff->layers()) {
      for (const auto& kv : layer.node) {
        const std::string kind = kv.first.Scalar();
        if (link_efficiency_.count(kind) != 0) continue;
        auto& by_arch = link_efficiency_[kind];
        if (!kv.second.IsMap()) {
          const double v = fraction(*eff, kind);
          by_arch["default"] = v;
          continue;
        }
        // Keyed by GPU: NCCL's per-link NVLink figure depends on the compute capability
        // (topo.h ncclTopoNVLinkBw), RCCL's xGMI figure on the gfx architecture.
        const Fields per = eff->map(kind);
        for (const auto& inner : per.layers()) {
          for (const auto& akv : inner.node) {
            const std::string key = akv.first.Scalar();
            if (key != "default" && architecture_family(key).empty() && !is_architecture_family(key)) {
              throw support::InputError(support::location_of({akv.first, inner.file}), per.key_path(key),
                                        "an architecture (sm86, gfx942), a family (volta, ampere, hopper, blackwell) or default",
                                        "'" + key + "'");
            }
            const double v = fraction(per, key);
            by_arch.emplace(key, v);
          }
        }
      }
    }
  }
}

std::string_view CostModel::table_name(Algorithm a) { return algorithm_entry(a).cost_table; }

const CostModel::Entry& CostModel::entry(Algorithm a, Protocol p) const {
  const auto it = algorithms_.find(std::string(table_name(a)));
  static const Entry missing;
  if (it == algorithms_.end()) return missing;
  return it->second[static_cast<std::size_t>(p)];
}

bool CostModel::supports(Algorithm a, Protocol p) const { return entry(a, p).present; }

double CostModel::rank_latency(Algorithm a, Protocol p) const { return entry(a, p).rank_latency; }

double CostModel::bandwidth_factor(Algorithm a, Protocol p, std::string_view arch) const {
  const Entry& e = entry(a, p);
  if (e.factor_by_family.empty()) return e.bandwidth_factor;
  const std::string family = architecture_family(arch);
  const auto it = e.factor_by_family.find(family);
  if (it == e.factor_by_family.end()) {
    throw std::invalid_argument(fmt::format("the calibration table has no bandwidth factor for {} with {} on {} (family '{}')",
                                            to_string(a), to_string(p), arch.empty() ? "an unknown GPU" : arch, family));
  }
  return it->second;
}

std::string CostModel::default_refusal(Protocol p, const ProtocolContext& context) const {
  const auto& rule = rules_[static_cast<std::size_t>(p)];
  return rule ? rule->refusal(context) : std::string();
}

std::optional<double> CostModel::link_efficiency(const models::Topology& topology, std::size_t kind, std::string_view arch) const {
  // The kind's own name first (a calibration row for a renamed kind wins), then its catalog
  // ancestry nearest first. Within a row: the exact architecture, its family, then default.
  const auto lookup = [&](const std::string& name) -> std::optional<double> {
    const auto it = link_efficiency_.find(name);
    if (it == link_efficiency_.end()) return std::nullopt;
    for (const std::string& key : {std::string(arch), architecture_family(arch), std::string("default")}) {
      if (key.empty()) continue;
      if (const auto v = it->second.find(key); v != it->second.end()) return v->second;
    }
    return std::nullopt;
  };
  if (const auto v = lookup(topology.link_kinds()[kind])) return v;
  for (const std::string& base : topology.link_kind_lineage(kind)) {
    if (const auto v = lookup(base)) return v;
  }
  return std::nullopt;
}

sim::CostParams CostModel::params(Algorithm a, Protocol p, const models::Topology& topology, std::string_view arch) const {
  const Entry& e = entry(a, p);
  if (!e.present) {
    throw std::invalid_argument(fmt::format("the calibration table has no figures for {} with {}", to_string(a), to_string(p)));
  }
  sim::CostParams c;
  c.wire_factor = 1.0 / bandwidth_factor(a, p, arch);
  c.step_latency = e.step_overhead;
  c.base_latency = e.base_latency;
  c.link_efficiency.assign(topology.link_kinds().size(), 1.0);
  for (std::size_t k = 0; k < topology.link_kinds().size(); ++k) {
    c.link_efficiency[k] = link_efficiency(topology, k, arch).value_or(1.0);
  }
  return c;
}

void CostModel::warn_missing_efficiency(const models::Topology& topology, const std::vector<sim::LinkRecord>& links,
                                        std::string_view arch) const {
  std::vector<bool> seen(topology.link_kinds().size(), false);
  for (const sim::LinkRecord& r : links) {
    const std::size_t k = topology.link(r.link).kind;
    if (seen[k] || r.bytes <= 0) continue;
    // Host-memory links carry the catalog's sustained bandwidth already (cpus.yaml efficiency).
    if (topology.device(topology.link_source(r.link)).kind == models::DeviceKind::Memory ||
        topology.device(topology.link_target(r.link)).kind == models::DeviceKind::Memory) {
      continue;
    }
    seen[k] = true;
    if (link_efficiency(topology, k, arch)) continue;
    const std::string& name = topology.link_kinds()[k];
    {
      const std::lock_guard<std::mutex> lock(warned_->mutex);
      if (!warned_->kinds.insert(name).second) continue;
    }
    std::string lineage;
    for (const std::string& base : topology.link_kind_lineage(k)) {
      if (base != name) lineage += (lineage.empty() ? "" : ", ") + base;
    }
    const std::string message = fmt::format(
        "link kind '{}'{} has no link_efficiency{} in the calibration table ({}); its full catalog bandwidth is used", name,
        lineage.empty() ? std::string() : " (based on " + lineage + ")", arch.empty() ? std::string() : fmt::format(" for {}", arch),
        source_.empty() ? "no source" : source_);
    if (warn_) {
      warn_(message);
    } else {
      std::cerr << "ccsim: warning: " << message << "\n";
    }
  }
}

double CostModel::max_rate(Algorithm a, Protocol p, const std::string& arch, int nodes, int channels, int ranks) const {
  const std::string key(algorithm_entry(a).capped ? table_name(a) : "");
  const auto it = caps_.find({key, static_cast<int>(p)});
  if (key.empty() || it == caps_.end()) return std::numeric_limits<double>::infinity();
  const auto family_it = it->second.by_family.find(architecture_family(arch));
  if (family_it == it->second.by_family.end()) return std::numeric_limits<double>::infinity();
  double cap = family_it->second[static_cast<std::size_t>(nodes <= 1 ? 0 : nodes == 2 ? 1 : 2)];
  if (nodes <= 1 && ranks == 2) {
    if (const auto two = it->second.two_ranks.find(family_it->first); two != it->second.two_ranks.end()) cap *= two->second;
  }
  const double data_rate = it->second.per_rank ? cap / std::max(1, channels) : cap;
  return data_rate / bandwidth_factor(a, p, arch);  // wire bytes per second
}

std::optional<double> CostModel::graph_latency(std::string_view arch) const {
  const auto it = graph_latency_.find(architecture_family(arch));
  if (it == graph_latency_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ccsim::planner
