#include "models/scenario/what_if_section.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace ccsim::models {
namespace {

using support::Fields;

/// The entries of list `key` of `f`, each a map (a single map where `single` allows it).
std::vector<Fields> entries(const Fields& f, std::string_view key, bool single) {
  const auto value = f.find(key);
  std::vector<Fields> out;
  if (!value) return out;
  if (single && value->node.IsMap()) {
    out.push_back(f.map(key));  // a map merges over the layers (includes, --set), as every map does
    return out;
  }
  if (!value->node.IsSequence() || value->node.size() == 0) {
    throw f.error(key, single ? "a map or a non-empty list of maps" : "a non-empty list of maps");
  }
  std::size_t i = 0;
  for (const auto& item : f.list(key)) out.emplace_back(std::vector<support::YamlSource>{item}, f.key_path(key) + "[" + std::to_string(i++) + "]");
  return out;
}

/// speed or slowdown (exactly one; speed = 1 / slowdown).
double read_speed(const Fields& e) {
  const bool speed = e.has("speed");
  if (speed == e.has("slowdown")) {
    throw support::InputError(e.location(), e.path(), "one of speed (fraction of nominal) or slowdown (its inverse)",
                              speed ? "both" : "neither");
  }
  const char* key = speed ? "speed" : "slowdown";
  const double v = e.number(key, 0.0);
  if (v < 1e-6 || v > 1e6) throw e.error(key, "a number from 1e-6 to 1e6");
  return speed ? v : 1.0 / v;
}

unsigned read_ops(const Fields& e) {
  if (!e.has("ops")) return kAllOps;
  const auto value = e.find("ops");
  if (!value->node.IsSequence() || value->node.size() == 0) throw e.error("ops", "a non-empty list of gemm, attention, memory");
  unsigned ops = 0;
  for (const auto& item : value->node) {
    const std::string s = item.IsScalar() ? item.Scalar() : std::string();
    const unsigned bit = s == "gemm" ? kGemmOps : s == "attention" ? kAttentionOps : s == "memory" ? kMemoryOps : 0U;
    if (bit == 0) {
      throw support::InputError(support::location_of({item, value->file}), e.key_path("ops"), "gemm, attention or memory",
                                support::describe_node(item));
    }
    ops |= bit;
  }
  return ops;
}

ComputeRule read_compute(const Fields& e) {
  e.reject_unknown({"gpus", "nodes", "group", "speed", "slowdown", "ops"});
  ComputeRule r;
  r.where = e.location();
  r.key = e.path();
  const int selectors = static_cast<int>(e.has("gpus")) + static_cast<int>(e.has("nodes")) + static_cast<int>(e.has("group"));
  if (selectors != 1) {
    throw support::InputError(r.where, r.key, "exactly one selector: gpus (a GPU name pattern), nodes (a node pattern) or group (an index)",
                              selectors == 0 ? "none" : std::to_string(selectors) + " of them");
  }
  if (e.has("gpus")) r.gpus = e.string("gpus");
  if (e.has("nodes")) r.nodes = e.string("nodes");
  if (e.has("group")) r.group = e.count("group", 0, 1 << 20);
  if ((e.has("gpus") && r.gpus.empty()) || (e.has("nodes") && r.nodes.empty())) throw e.error(e.has("gpus") ? "gpus" : "nodes", "a non-empty pattern");
  r.speed = read_speed(e);
  r.ops = read_ops(e);
  return r;
}

StragglerRule read_stragglers(const Fields& e) {
  e.reject_unknown({"count", "speed", "slowdown", "seed", "ops"});
  StragglerRule r;
  r.where = e.location();
  r.key = e.path();
  r.count = e.count("count", 1, 1 << 24);
  r.speed = read_speed(e);
  r.seed = static_cast<std::uint64_t>(e.integer("seed", 0, 0));
  r.ops = read_ops(e);
  return r;
}

/// "A -> B" or "A <-> B" into r.from, r.to, r.both_directions.
void read_link_pattern(const Fields& e, LinkRule& r) {
  const std::string s = e.string("link");
  const auto trim = [](std::string t) {
    const auto b = t.find_first_not_of(" \t");
    const auto x = t.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : t.substr(b, x - b + 1);
  };
  std::size_t at = s.find("<->");
  std::size_t width = 3;
  r.both_directions = at != std::string::npos;
  if (!r.both_directions) {
    at = s.find("->");
    width = 2;
  }
  if (at != std::string::npos) {
    r.from = trim(s.substr(0, at));
    r.to = trim(s.substr(at + width));
  }
  if (at == std::string::npos || r.from.empty() || r.to.empty() || r.to.find("->") != std::string::npos) {
    throw e.error("link", "two device patterns joined by -> (one direction) or <-> (both), like 'leaf4 -> spine*'");
  }
}

/// `at`, `for` and `every` of a timed link rule (LinkRule::at): times up to a day.
void read_timing(const Fields& e, LinkRule& r) {
  constexpr double kDay = 86400;
  constexpr double kFinest = 1e-6;  // an event window is at least a microsecond: an op's run crosses few
  if (!e.has("at")) {
    for (const char* k : {"for", "every"}) {
      if (e.has(k)) throw e.error(k, "'at' as well (when the event starts, seconds from the step's start: 'at: 2.5s')", "");
    }
    return;
  }
  r.at = e.quantity("at", support::Quantity::Time, false);
  if (r.at > kDay) throw e.error("at", "a start time from 0 to 1 day");
  if (e.has("for")) {
    r.duration = e.quantity("for", support::Quantity::Time, true);
    if (r.duration > kDay || r.duration < kFinest) {
      throw e.error("for", "a duration from 1 us to 1 day (a flap faster than that is a static rule at its mean factor)");
    }
  }
  if (e.has("every")) {
    if (!e.has("for")) throw e.error("every", "'for' as well (how long each flap lasts: 'for: 50ms, every: 1s')");
    r.every = e.quantity("every", support::Quantity::Time, true);
    if (r.every > kDay || r.every < kFinest) throw e.error("every", "a period from 1 us to 1 day");
    if (r.every <= r.duration) {
      throw e.error("every", fmt::format("a period longer than 'for' ({:g} s): a flap that never ends is a static rule (leave out at, for and every)", r.duration));
    }
  }
}

LinkRule read_link(const Fields& e) {
  e.reject_unknown({"link", "device", "kind", "factor", "fail", "at", "for", "every"});
  LinkRule r;
  r.where = e.location();
  r.key = e.path();
  if (e.has("link")) read_link_pattern(e, r);
  if (e.has("device")) r.device = e.string("device");
  if (e.has("kind")) r.kind = e.string("kind");
  if ((e.has("device") && r.device.empty()) || (e.has("kind") && r.kind.empty())) throw e.error(e.has("device") ? "device" : "kind", "a non-empty pattern");
  if (!e.has("link") && !e.has("device") && !e.has("kind")) {
    throw support::InputError(r.where, r.key, "at least one selector: link ('A -> B'), device (a pattern) or kind (a link kind pattern)",
                              "none");
  }
  r.fail = e.boolean("fail", false);
  // `fail: false` alone is a link that is up (factor 1): what a sweep over fail=false,true needs.
  if (r.fail ? e.has("factor") : !e.has("factor") && !e.has("fail")) {
    throw support::InputError(r.where, r.key, "one of factor (a bandwidth multiplier), fail: true (down) or fail: false (up)", r.fail ? "both" : "neither");
  }
  if (!r.fail) {
    r.factor = e.number("factor", 0.0, 1.0);
    if (r.factor < 1e-6 || r.factor > 1e6) throw e.error("factor", "a bandwidth factor from 1e-6 to 1e6 (a link that is down takes fail: true)");
  }
  read_timing(e, r);
  return r;
}

}  // namespace

WhatIfSpec parse_what_if(const Fields& f) {
  f.reject_unknown({"compute", "stragglers", "links"});
  WhatIfSpec w;
  for (const Fields& e : entries(f, "compute", false)) w.compute.push_back(read_compute(e));
  for (const Fields& e : entries(f, "stragglers", true)) w.stragglers.push_back(read_stragglers(e));
  for (const Fields& e : entries(f, "links", false)) w.links.push_back(read_link(e));
  return w;
}

}  // namespace ccsim::models
