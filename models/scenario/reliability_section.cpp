#include "models/scenario/reliability_section.hpp"

#include <string>

#include "models/hardware/failure_rates.hpp"
#include "support/units.hpp"

namespace ccsim::models {
namespace {

/// A duration key (`30min`, `2h`) or `auto`; nullopt for `auto` or when absent.
std::optional<double> duration_or_auto(const support::Fields& f, std::string_view key) {
  const auto value = f.find(key);
  if (!value) return std::nullopt;
  if (value->node.IsScalar() && value->node.Scalar() == "auto") return std::nullopt;
  return f.quantity(key, support::Quantity::Duration, true);
}

}  // namespace

ReliabilitySpec parse_reliability(const support::Fields& f) {
  f.reject_unknown({"duration", "tokens", "samples", "seed", "policy", "spare_nodes", "checkpoint", "restart", "repair", "shrink",
                    "mtbf", "rates"});
  ReliabilitySpec spec;
  spec.enabled = true;
  if (f.has("duration")) spec.duration = f.quantity("duration", support::Quantity::Duration, true);
  if (f.has("tokens")) spec.tokens = f.number("tokens", 0.0);
  spec.samples = f.count("samples", 1, 1000000, 1000);
  spec.seed = static_cast<std::uint64_t>(f.integer("seed", 0, 1));
  spec.policy = f.choice("policy", {"restart", "shrink"}, "restart") == "shrink" ? RecoveryPolicy::Shrink : RecoveryPolicy::Restart;
  if (const auto v = f.find("spare_nodes"); v && v->node.IsScalar() && v->node.Scalar() == "unlimited") {
    spec.spare_nodes = -1;
  } else if (v) {
    spec.spare_nodes = f.count("spare_nodes", 0, 1 << 20);
  }
  if (const auto c = f.optional_map("checkpoint")) {
    c->reject_unknown({"interval", "save", "load", "write_bandwidth", "read_bandwidth"});
    spec.checkpoint_interval = duration_or_auto(*c, "interval");
    spec.save_time = duration_or_auto(*c, "save");
    spec.load_time = duration_or_auto(*c, "load");
    spec.write_bandwidth = c->quantity("write_bandwidth", support::Quantity::Bandwidth, true, spec.write_bandwidth);
    spec.read_bandwidth = c->quantity("read_bandwidth", support::Quantity::Bandwidth, true, spec.read_bandwidth);
  }
  spec.restart_time = f.quantity("restart", support::Quantity::Duration, false, spec.restart_time);
  spec.repair_time = f.quantity("repair", support::Quantity::Duration, true, spec.repair_time);
  spec.shrink_time = f.quantity("shrink", support::Quantity::Duration, false, spec.shrink_time);
  if (f.has("mtbf")) spec.job_mtbf = f.quantity("mtbf", support::Quantity::Duration, true);
  if (const auto r = f.optional_map("rates")) {
    std::vector<std::string_view> names;
    for (const FailureClass& c : failure_classes()) names.push_back(c.name);
    r->reject_unknown(names);
    for (const FailureClass& c : failure_classes()) {
      if (r->has(c.name)) spec.rates.emplace_back(std::string(c.name), r->number(c.name, 0.0));
    }
  }
  return spec;
}

}  // namespace ccsim::models
