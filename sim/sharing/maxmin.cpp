#include "sim/sharing/maxmin.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>

namespace ccsim::sim {

std::uint32_t MaxMinProblem::add_flow(std::span<const std::uint32_t> flow_resources) {
  resources.insert(resources.end(), flow_resources.begin(), flow_resources.end());
  offsets.push_back(static_cast<std::uint32_t>(resources.size()));
  return static_cast<std::uint32_t>(offsets.size() - 2);
}

std::vector<double> solve_max_min(const MaxMinProblem& p) {
  const std::size_t nflows = p.flows();
  const std::size_t nres = p.capacity.size();
  std::vector<double> rate(nflows, std::numeric_limits<double>::infinity());
  // Resource -> flows (CSR).
  std::vector<std::uint32_t> count(nres + 1, 0);
  for (std::uint32_t r : p.resources) ++count[r + 1];
  for (std::size_t r = 0; r < nres; ++r) count[r + 1] += count[r];
  std::vector<std::uint32_t> users(p.resources.size());
  {
    std::vector<std::uint32_t> fill(count.begin(), count.end() - 1);
    for (std::size_t f = 0; f < nflows; ++f)
      for (std::uint32_t i = p.offsets[f]; i < p.offsets[f + 1]; ++i) users[fill[p.resources[i]]++] = static_cast<std::uint32_t>(f);
  }
  std::vector<double> remaining(p.capacity);
  std::vector<std::uint32_t> unfrozen(nres);
  std::vector<std::uint32_t> version(nres, 0);
  for (std::size_t r = 0; r < nres; ++r) unfrozen[r] = count[r + 1] - count[r];
  std::vector<char> frozen(nflows, 0);

  // Level by level: find the smallest fair share over all resources, freeze every flow on
  // every resource at that share, repeat. Symmetric systems (collectives) have few levels, so
  // this is O(incidences × levels); after kMaxLevels levels the heap below takes over.
  constexpr int kMaxLevels = 32;
  std::size_t unfrozen_flows = nflows;
  for (std::size_t f = 0; f < nflows; ++f) {
    if (p.offsets[f] == p.offsets[f + 1]) {
      frozen[f] = 1;
      --unfrozen_flows;
    }
  }
  for (int level = 0; level < kMaxLevels && unfrozen_flows > 0; ++level) {
    double share = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < nres; ++r)
      if (unfrozen[r] > 0) share = std::min(share, remaining[r] / unfrozen[r]);
    const double tie = share * (1.0 + 1e-12);
    std::vector<std::uint32_t> saturated;
    for (std::size_t r = 0; r < nres; ++r)
      if (unfrozen[r] > 0 && remaining[r] / unfrozen[r] <= tie) saturated.push_back(static_cast<std::uint32_t>(r));
    for (std::uint32_t r : saturated) {
      for (std::uint32_t i = count[r]; i < count[r + 1]; ++i) {
        const std::uint32_t f = users[i];
        if (frozen[f]) continue;
        frozen[f] = 1;
        --unfrozen_flows;
        rate[f] = share;
        for (std::uint32_t j = p.offsets[f]; j < p.offsets[f + 1]; ++j) {
          const std::uint32_t q = p.resources[j];
          remaining[q] = std::max(0.0, remaining[q] - share);
          --unfrozen[q];
        }
      }
    }
  }
  if (unfrozen_flows == 0) return rate;

  using Entry = std::tuple<double, std::uint32_t, std::uint32_t>;  // share, resource, version
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (std::size_t r = 0; r < nres; ++r)
    if (unfrozen[r] > 0) heap.emplace(remaining[r] / unfrozen[r], static_cast<std::uint32_t>(r), 0);
  // Resources whose share changed while one saturated resource froze its flows: each gets one
  // fresh heap entry afterwards (not one per frozen flow), so the heap holds O(resources
  // touched) entries per level instead of O(incidences).
  std::vector<std::uint32_t> changed;
  std::vector<char> marked(nres, 0);
  while (!heap.empty()) {
    const auto [share, r, v] = heap.top();
    heap.pop();
    if (v != version[r] || unfrozen[r] == 0) continue;
    for (std::uint32_t i = count[r]; i < count[r + 1]; ++i) {
      const std::uint32_t f = users[i];
      if (frozen[f]) continue;
      frozen[f] = 1;
      rate[f] = share;
      for (std::uint32_t j = p.offsets[f]; j < p.offsets[f + 1]; ++j) {
        const std::uint32_t q = p.resources[j];
        remaining[q] = std::max(0.0, remaining[q] - share);
        --unfrozen[q];
        if (!marked[q]) {
          marked[q] = 1;
          changed.push_back(q);
        }
      }
    }
    for (std::uint32_t q : changed) {
      marked[q] = 0;
      ++version[q];
      if (unfrozen[q] > 0 && q != r) heap.emplace(remaining[q] / unfrozen[q], q, version[q]);
    }
    changed.clear();
  }
  return rate;
}

}  // namespace ccsim::sim
