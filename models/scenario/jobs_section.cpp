#include "models/scenario/jobs_section.hpp"

#include <charconv>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "models/scenario/strategy_section.hpp"
#include "models/scenario/workload_section.hpp"

namespace ccsim::models {
namespace {

using support::Fields;

/// `a-b` or `a` (non-negative integers), or nullopt.
std::optional<std::pair<long long, long long>> parse_range(const std::string& s) {
  const auto number = [](std::string_view t) -> std::optional<long long> {
    long long v = 0;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size() || v < 0) return std::nullopt;
    return v;
  };
  const auto dash = s.find('-');
  if (dash == std::string::npos) {
    const auto v = number(s);
    if (!v) return std::nullopt;
    return std::pair{*v, *v};
  }
  const auto a = number(std::string_view(s).substr(0, dash));
  const auto b = number(std::string_view(s).substr(dash + 1));
  if (!a || !b || *b < *a) return std::nullopt;
  return std::pair{*a, *b};
}

/// The indices of `key` in `p` (a list of integers and "a-b" ranges, or one such string), each
/// below `limit` and listed once.
std::vector<int> read_indices(const Fields& p, std::string_view key, int limit, const char* what) {
  const auto value = p.find(key);
  const std::string expected = fmt::format("{} indices from 0 to {}: a list of integers and ranges such as \"0-63\", or a string of them such as \"0-7,16-23\"", what, limit - 1);
  std::vector<YAML::Node> items;
  if (value->node.IsScalar()) {
    items.push_back(value->node);
  } else if (value->node.IsSequence() && value->node.size() > 0) {
    for (const auto& item : value->node) items.push_back(item);
  } else {
    throw p.error(key, expected);
  }
  std::vector<int> out;
  std::set<int> seen;
  for (const auto& item : items) {
    const support::SourceLocation where = support::location_of({item, value->file});
    if (!item.IsScalar()) throw support::InputError(where, p.key_path(key), expected, support::describe_node(item));
    // A string may hold several, comma-separated ("0-7,16-23", as ccsim prints them).
    const std::string& text = item.Scalar();
    for (std::size_t from = 0; from <= text.size();) {
      const std::size_t comma = std::min(text.find(',', from), text.size());
      std::string part = text.substr(from, comma - from);
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      from = comma + 1;
      const auto range = parse_range(part);
      if (!range) throw support::InputError(where, p.key_path(key), expected, "'" + part + "'");
      if (range->second >= limit) {
        // A rule on the cluster's size (a sweep over the cluster reports the point infeasible).
        throw support::RuleError(support::InputError(where, p.key_path(key), expected, fmt::format("{} (the cluster has {} {}s)", part, limit, what)));
      }
      for (long long i = range->first; i <= range->second; ++i) {
        if (!seen.insert(static_cast<int>(i)).second) {
          throw support::InputError(where, p.key_path(key), fmt::format("each {} listed once", what), fmt::format("{} {} again", what, i));
        }
        out.push_back(static_cast<int>(i));
      }
    }
  }
  return out;
}

JobPlacement read_placement(const Fields& job, const ClusterSpec& cluster) {
  JobPlacement out;
  if (!job.has("placement")) {
    out.location = job.location();
    return out;
  }
  out.location = job.location("placement");
  const auto value = job.find("placement");
  if (value->node.IsScalar()) {
    const std::string policy = job.choice("placement", {"packed", "spread", "leaf", "best"});
    out.policy = policy == "packed" ? PlacementPolicy::Packed
                 : policy == "spread" ? PlacementPolicy::Spread
                 : policy == "leaf" ? PlacementPolicy::Leaf
                                    : PlacementPolicy::Best;
    return out;
  }
  if (!value->node.IsMap()) {
    throw job.error("placement", "a policy (packed, spread, leaf, best) or a map with gpus or nodes");
  }
  const Fields p = job.map("placement");
  p.reject_unknown({"gpus", "nodes"});
  if (p.has("gpus") == p.has("nodes")) {
    throw support::InputError(p.location(), p.path(), "one of gpus (GPU indices) or nodes (node indices)", p.has("gpus") ? "both" : "neither");
  }
  if (p.has("gpus")) {
    out.policy = PlacementPolicy::Gpus;
    out.indices = read_indices(p, "gpus", cluster.total_gpus(), "GPU");
  } else {
    out.policy = PlacementPolicy::Nodes;
    out.indices = read_indices(p, "nodes", cluster.total_nodes(), "node");
  }
  return out;
}

/// Global GPU indices of each node (nodes numbered group by group, GPUs node by node).
std::vector<int> first_gpu_of_nodes(const ClusterSpec& cluster) {
  std::vector<int> first;
  int g = 0;
  for (const auto& group : cluster.groups) {
    for (int i = 0; i < group.count; ++i) {
      first.push_back(g);
      g += group.node.gpus;
    }
  }
  first.push_back(g);
  return first;
}

}  // namespace

std::string_view to_string(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::Gpus: return "gpus";
    case PlacementPolicy::Nodes: return "nodes";
    case PlacementPolicy::Packed: return "packed";
    case PlacementPolicy::Spread: return "spread";
    case PlacementPolicy::Leaf: return "leaf";
    case PlacementPolicy::Best: return "best";
  }
  return "?";
}

std::vector<JobSpec> parse_jobs(const Fields& root, const ClusterSpec& cluster, std::span<const std::string_view> algorithm_names,
                                const std::string& scenario_path) {
  const auto value = root.find("jobs");
  if (!value->node.IsSequence() || value->node.size() == 0) throw root.error("jobs", "a non-empty list of jobs (maps with workload, strategy, placement)");
  const std::vector<int> node_first = first_gpu_of_nodes(cluster);
  std::vector<JobSpec> jobs;
  std::map<std::string, std::size_t> names;
  std::map<int, std::size_t> owner;  // GPU -> job that lists it
  std::size_t i = 0;
  for (const auto& item : root.list("jobs")) {
    const std::string path = support::element_path("jobs", i);
    if (!item.node.IsMap()) {
      throw support::InputError(support::location_of(item), path, "a map with workload, strategy, placement and start", support::describe_node(item.node));
    }
    const Fields job(std::vector<support::YamlSource>{item}, path);
    job.reject_unknown({"name", "workload", "strategy", "placement", "start"});
    JobSpec js;
    js.location = job.location();
    js.name = job.optional_string("name").value_or(fmt::format("job{}", i));
    if (js.name.empty()) throw job.error("name", "a non-empty name");
    if (const auto [it, fresh] = names.emplace(js.name, i); !fresh) {
      throw job.error("name", fmt::format("a name no other job has (jobs[{}] is '{}')", it->second, js.name));
    }
    if (!job.has("workload")) throw job.missing("workload", "a workload section (model, phase, ...) for the job");
    js.workload = parse_workload(job.map("workload"));
    js.placement = read_placement(job, cluster);
    // Listed GPUs fix the job's size: its strategy is checked against them, as a one-job
    // scenario's is against the cluster.
    std::vector<int> gpus;
    if (js.placement.policy == PlacementPolicy::Gpus) gpus = js.placement.indices;
    if (js.placement.policy == PlacementPolicy::Nodes) {
      for (int n : js.placement.indices)
        for (int g = node_first[static_cast<std::size_t>(n)]; g < node_first[static_cast<std::size_t>(n) + 1]; ++g) gpus.push_back(g);
    }
    const Fields strategy = job.has("strategy") ? job.map("strategy") : Fields({}, path + ".strategy");
    js.strategy = parse_strategy(strategy, static_cast<int>(gpus.size()), algorithm_names, "the placement's");
    if (!gpus.empty() && static_cast<std::int64_t>(gpus.size()) != js.gpus()) {
      throw support::RuleError(support::InputError(js.placement.location, path + ".placement",
                                                   fmt::format("tp·pp·cp·dp = {} GPUs", js.gpus()), fmt::format("{} GPUs", gpus.size())));
    }
    if (js.gpus() > cluster.total_gpus()) {
      throw support::RuleError(strategy.error(strategy.has("dp") ? "dp" : "tp",
                                              fmt::format("a job of at most the cluster's {} GPUs (tp·pp·cp·dp = {})", cluster.total_gpus(), js.gpus())));
    }
    for (int g : gpus) {
      if (const auto [it, fresh] = owner.emplace(g, i); !fresh) {
        throw support::RuleError(support::InputError(js.placement.location, path + ".placement",
                                                     fmt::format("GPUs no other job lists (GPU {} is also jobs[{}] '{}')", g, it->second,
                                                                 jobs[it->second].name),
                                                     "an overlap"));
      }
    }
    js.start = job.quantity("start", support::Quantity::Time, false, 0.0);
    js.model = load_workload_model(job.map("workload"), js.workload.model, scenario_path);
    jobs.push_back(std::move(js));
    ++i;
  }
  return jobs;
}

}  // namespace ccsim::models
