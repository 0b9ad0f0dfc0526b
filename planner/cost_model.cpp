#include "planner/cost_model.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::planner {

using models::Fields;
using models::Quantity;

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  // Case-insensitive, as NCCL_PROTO is.
  const auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
    if (same(to_string(p), s)) return p;
  return std::nullopt;
}

std::string CostModel::default_path() {
  const char* env = std::getenv("CCSIM_DATA_DIR");
  const std::filesystem::path base = env != nullptr && *env != '\0' ? env : CCSIM_DEFAULT_DATA_DIR;
  return (base / "calibration" / "nccl.yaml").string();
}

CostModel CostModel::load(const std::string& path) {
  const models::YamlSource doc = models::load_yaml_file(path);
  const Fields root({doc}, "");
  root.reject_unknown({"source", "protocols", "algorithms", "link_efficiency", "bandwidth_caps"});
  CostModel m;
  m.source_ = root.optional_string("source").value_or("");
  const Fields protocols = root.map("protocols");
  protocols.reject_unknown({"LL", "LL128", "Simple"});
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    const Fields f = protocols.map(to_string(p));
    f.reject_unknown({"chunk"});
    m.chunk_[static_cast<std::size_t>(p)] = f.quantity("chunk", Quantity::Bytes, true);
  }
  const Fields algorithms = root.map("algorithms");
  algorithms.reject_unknown({"ring", "tree", "nvls", "nvls-tree", "default"});
  for (const char* name : {"ring", "tree", "nvls", "nvls-tree", "default"}) {
    auto& entries = m.algorithms_[name];
    const auto a = algorithms.optional_map(name);
    if (!a) {
      if (std::string(name) == "default") throw algorithms.missing("default", "figures for the other algorithms");
      continue;
    }
    a->reject_unknown({"base_latency", "step_overhead", "bandwidth_factor"});
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
      e.bandwidth_factor = factor.number(pn, 0.0);
      if (e.bandwidth_factor > 1.0) throw factor.error(pn, "a fraction of link bandwidth in (0, 1]");
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
  if (const auto caps = root.optional_map("bandwidth_caps")) {
    caps->reject_unknown({"ring", "tree", "nvls", "nvls-tree", "default"});
    for (const char* algo : {"ring", "tree", "nvls", "nvls-tree", "default"}) {
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
            if (arch == "per" || cap.by_arch.count(arch) != 0) continue;
            const auto value = f->find(arch);
            if (!value->node.IsSequence() || value->node.size() != 3) {
              throw f->error(arch, "a list of three bandwidths (one node, two nodes, more than two nodes)");
            }
            std::array<double, 3> v{};
            for (std::size_t i = 0; i < 3; ++i) {
              const YAML::Node& item = value->node[i];
              try {
                v[i] = models::parse_quantity(item.IsScalar() ? item.Scalar() : std::string(), Quantity::Bandwidth);
              } catch (const models::UnitError&) {
                throw models::InputError(models::location_of({item, value->file}), f->key_path(arch),
                                         "a bandwidth such as 36.7GB/s", models::describe_node(item));
              }
              if (v[i] <= 0) throw f->error(arch, "bandwidths above 0");
            }
            cap.by_arch[arch] = v;
          }
        }
        m.caps_[{algo, static_cast<int>(p)}] = cap;
      }
    }
  }
  if (const auto eff = root.optional_map("link_efficiency")) {
    for (const auto& layer : eff->layers()) {
      for (const auto& kv : layer.node) {
        const std::string kind = kv.first.Scalar();
        const double v = eff->number(kind, 0.0);
        if (v > 1.0) throw eff->error(kind, "a fraction of the raw bandwidth in (0, 1]");
        m.link_efficiency_[kind] = v;
      }
    }
  }
  return m;
}

const CostModel::Entry& CostModel::entry(Algorithm a, Protocol p) const {
  const std::string key = a == Algorithm::Ring       ? "ring"
                          : a == Algorithm::Tree     ? "tree"
                          : a == Algorithm::Nvls     ? "nvls"
                          : a == Algorithm::NvlsTree ? "nvls-tree"
                                                     : "default";
  const auto it = algorithms_.find(key);
  static const Entry missing;
  if (it == algorithms_.end()) return missing;
  return it->second[static_cast<std::size_t>(p)];
}

bool CostModel::supports(Algorithm a, Protocol p) const { return entry(a, p).present; }

sim::CostParams CostModel::params(Algorithm a, Protocol p, const models::Topology& topology) const {
  const Entry& e = entry(a, p);
  if (!e.present) {
    throw std::invalid_argument(fmt::format("the calibration table has no figures for {} with {}", to_string(a), to_string(p)));
  }
  sim::CostParams c;
  c.wire_factor = 1.0 / e.bandwidth_factor;
  c.step_latency = e.step_overhead;
  c.base_latency = e.base_latency;
  c.link_efficiency.assign(topology.link_kinds().size(), 1.0);
  for (std::size_t k = 0; k < topology.link_kinds().size(); ++k) {
    const auto it = link_efficiency_.find(topology.link_kinds()[k]);
    if (it != link_efficiency_.end()) c.link_efficiency[k] = it->second;
  }
  return c;
}

double CostModel::max_rate(Algorithm a, Protocol p, const std::string& arch, int nodes, int channels) const {
  const std::string key = a == Algorithm::Ring ? "ring" : a == Algorithm::Tree ? "tree" : "";
  const auto it = caps_.find({key, static_cast<int>(p)});
  if (key.empty() || it == caps_.end()) return std::numeric_limits<double>::infinity();
  const auto arch_it = it->second.by_arch.find(arch);
  if (arch_it == it->second.by_arch.end()) return std::numeric_limits<double>::infinity();
  const double cap = arch_it->second[static_cast<std::size_t>(nodes <= 1 ? 0 : nodes == 2 ? 1 : 2)];
  const double data_rate = it->second.per_rank ? cap / std::max(1, channels) : cap;
  return data_rate / entry(a, p).bandwidth_factor;  // wire bytes per second
}

}  // namespace ccsim::planner
