// Where each job of a `jobs:` list runs: listed GPUs and nodes, then the policies (packed, leaf,
// spread) over the GPUs left (declared in jobs.hpp).
#include "planner/cluster/jobs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <numeric>

#include "support/input_error.hpp"

namespace ccsim::planner {

namespace {

using models::DeviceId;
using models::PlacementPolicy;

std::string job_key(std::size_t j, const char* key) { return fmt::format("jobs[{}].{}", j, key); }

/// The tier-1 switch above `node` (through its first GPU's NIC), or -1.
long long leaf_of(const models::Topology& t, DeviceId first_gpu) {
  const DeviceId nic = t.device(first_gpu).nic;
  if (nic == models::kNoDevice) return -1;
  for (models::LinkId l : t.out_links(nic)) {
    const DeviceId d = t.link_target(l);
    if (t.device(d).kind == models::DeviceKind::NetworkSwitch) return d;
  }
  return -1;
}

/// The ordered nodes a whole-node policy takes, from the free whole nodes grouped by leaf
/// (leaves in first-appearance order, nodes ascending).
std::vector<int> order_nodes(PlacementPolicy policy, const std::vector<std::vector<int>>& leaves, const std::vector<int>& node_size,
                             int need) {
  std::vector<int> out;
  if (policy == PlacementPolicy::Spread) {
    for (std::size_t round = 0;; ++round) {
      bool any = false;
      for (const auto& l : leaves) {
        if (round >= l.size()) continue;
        any = true;
        out.push_back(l[round]);
      }
      if (!any) return out;
    }
  }
  std::vector<int> free(leaves.size(), 0);
  for (std::size_t i = 0; i < leaves.size(); ++i)
    for (int n : leaves[i]) free[i] += node_size[static_cast<std::size_t>(n)];
  // One leaf holds the job: the one it fills most (least free that fits), the lowest first.
  std::size_t fit = leaves.size();
  for (std::size_t i = 0; i < leaves.size(); ++i)
    if (free[i] >= need && (fit == leaves.size() || free[i] < free[fit])) fit = i;
  if (fit != leaves.size()) return leaves[fit];
  std::vector<std::size_t> order(leaves.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return free[a] > free[b]; });
  for (std::size_t i : order) out.insert(out.end(), leaves[i].begin(), leaves[i].end());
  return out;
}

}  // namespace

void check_jobs_scenario(const models::Scenario& scenario, bool horizon) {
  if (scenario.jobs.empty()) return;
  const support::Fields root(scenario.layers, "");
  if (scenario.reliability.enabled) {
    throw support::InputError(!horizon ? root.location("reliability") : support::SourceLocation{"<command line>", 0, 0},
                              !horizon ? "reliability" : "--horizon", "a one-job scenario (failures over a run are modelled for one job)",
                              "a scenario with a jobs: list");
  }
  for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
    if (scenario.jobs[j].workload.phase == models::WorkloadPhase::Serving) {
      throw support::InputError(scenario.jobs[j].location, job_key(j, "workload.phase"),
                                "training_step, prefill or decode (a job's step; serving's request batches are one job's)", "serving");
    }
  }
  for (const auto& rule : scenario.what_if.links) {
    if (rule.timed()) {
      throw support::InputError(rule.where, rule.key, "a static rule beside jobs: (timed link events are timed from one job's step)",
                                "a timed rule (at:)");
    }
  }
}

std::string format_index_ranges(const std::vector<int>& indices) {
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t k = i;
    while (k + 1 < indices.size() && indices[k + 1] == indices[k] + 1) ++k;
    if (!out.empty()) out += ",";
    out += k == i ? std::to_string(indices[i]) : fmt::format("{}-{}", indices[i], indices[k]);
    i = k + 1;
  }
  return out;
}

std::vector<std::vector<int>> resolve_placements(const models::Scenario& scenario, const models::Cluster& cluster,
                                                 const std::vector<PlacementPolicy>& override_policy) {
  const models::Topology& t = cluster.topology;
  const auto& all = t.gpus();
  const int n_gpus = static_cast<int>(all.size());
  const int n_nodes = t.num_nodes();
  std::vector<std::vector<int>> node_gpus(static_cast<std::size_t>(n_nodes));
  for (int g = 0; g < n_gpus; ++g) node_gpus[static_cast<std::size_t>(t.device(all[static_cast<std::size_t>(g)]).node)].push_back(g);
  std::vector<long long> leaf(static_cast<std::size_t>(n_nodes), -1);
  std::vector<int> node_size(static_cast<std::size_t>(n_nodes), 0);
  for (int n = 0; n < n_nodes; ++n) {
    const auto& ng = node_gpus[static_cast<std::size_t>(n)];
    node_size[static_cast<std::size_t>(n)] = static_cast<int>(ng.size());
    if (!ng.empty()) leaf[static_cast<std::size_t>(n)] = leaf_of(t, all[static_cast<std::size_t>(ng.front())]);
  }
  std::vector<char> used(static_cast<std::size_t>(n_gpus), 0);
  std::vector<std::vector<int>> out(scenario.jobs.size());
  // Listed placements first: they are fixed (parse_jobs checked them for overlaps).
  for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
    const auto& p = scenario.jobs[j].placement;
    if (p.policy == PlacementPolicy::Gpus) out[j] = p.indices;
    if (p.policy == PlacementPolicy::Nodes)
      for (int n : p.indices) out[j].insert(out[j].end(), node_gpus[static_cast<std::size_t>(n)].begin(), node_gpus[static_cast<std::size_t>(n)].end());
    for (int g : out[j]) used[static_cast<std::size_t>(g)] = 1;
  }
  for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
    const auto& job = scenario.jobs[j];
    PlacementPolicy policy = job.placement.policy;
    if (policy == PlacementPolicy::Gpus || policy == PlacementPolicy::Nodes) continue;
    if (policy == PlacementPolicy::Best) {
      policy = j < override_policy.size() && override_policy[j] != PlacementPolicy::Best ? override_policy[j] : PlacementPolicy::Packed;
    }
    const int need = static_cast<int>(job.gpus());  // at most the cluster's (parse_jobs)
    const int free = static_cast<int>(std::count(used.begin(), used.end(), 0));
    // Rules on the point's values (a sweep reports them as infeasible rows).
    if (free < need) {
      throw support::RuleError(job.placement.location, job_key(j, "placement"),
                                fmt::format("{} free GPUs for job '{}' (tp·pp·cp·dp)", need, job.name),
                                fmt::format("{} GPUs left by the jobs placed before it (listed placements first, then policies in list order)", free));
    }
    std::vector<int>& gpus = out[j];
    if (policy == PlacementPolicy::Packed) {
      for (int g = 0; g < n_gpus && static_cast<int>(gpus.size()) < need; ++g)
        if (used[static_cast<std::size_t>(g)] == 0) gpus.push_back(g);
    } else {
      // Whole free nodes, grouped by leaf in the order leaves first appear.
      std::vector<std::vector<int>> leaves;
      std::map<long long, std::size_t> leaf_index;
      int whole = 0;
      for (int n = 0; n < n_nodes; ++n) {
        const auto& ng = node_gpus[static_cast<std::size_t>(n)];
        if (ng.empty() || std::any_of(ng.begin(), ng.end(), [&](int g) { return used[static_cast<std::size_t>(g)] != 0; })) continue;
        const auto [it, fresh] = leaf_index.try_emplace(leaf[static_cast<std::size_t>(n)], leaves.size());
        if (fresh) leaves.emplace_back();
        leaves[it->second].push_back(n);
        whole += static_cast<int>(ng.size());
      }
      if (whole < need) {
        throw support::RuleError(job.placement.location, job_key(j, "placement"),
                                  fmt::format("{} GPUs on whole free nodes for job '{}' (policy {} takes whole nodes)", need, job.name,
                                              models::to_string(policy)),
                                  fmt::format("{} GPUs on whole free nodes ({} free GPUs in all; packed takes any)", whole, free));
      }
      for (int n : order_nodes(policy, leaves, node_size, need)) {
        for (int g : node_gpus[static_cast<std::size_t>(n)]) {
          if (static_cast<int>(gpus.size()) == need) break;
          gpus.push_back(g);
        }
      }
    }
    for (int g : gpus) used[static_cast<std::size_t>(g)] = 1;
  }
  return out;
}

}  // namespace ccsim::planner
