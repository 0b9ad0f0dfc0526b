#include "planner/collective/ring_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <tuple>

namespace ccsim::planner {
namespace {

// Search effort, scaled down for large nodes so that a 64-GPU mesh stays well under a second:
// shuffled neighbour orders tried, and DFS expansions per channel once one channel is found.
constexpr int kRestarts = 24;
constexpr long kExpansionsPerChannel = 4000;
constexpr long kGiveUp = 100000;             // expansions after which a channel search fails
int restarts_for(int n) { return n <= 8 ? kRestarts : std::max(2, kRestarts * 8 / (n * n / 8)); }
long budget_for(int n) { return n <= 8 ? kExpansionsPerChannel : std::max(200L, kExpansionsPerChannel * 8 / n); }
constexpr double kTie = 1e-9;                // relative tolerance when comparing rates

/// Greedy channel-by-channel search with one neighbour order.
class Searcher {
 public:
  Searcher(const LinkGraph& g, bool closed, int count, std::uint32_t seed)
      : g_(g), scale_(*std::max_element(g.capacity.begin(), g.capacity.end())), closed_(closed), count_(count), rng_(seed), load_(static_cast<std::size_t>(g.n * g.n), 0),
        first_(static_cast<std::size_t>(g.n), 0), last_(static_cast<std::size_t>(g.n), 0) {
    ends_cap_ = (count + g.n - 1) / g.n;
    neighbours_.resize(static_cast<std::size_t>(g.n));
    for (int u = 0; u < g.n; ++u) {
      for (int v = 0; v < g.n; ++v)
        if (v != u && g.at(u, v) > 0) neighbours_[static_cast<std::size_t>(u)].push_back(v);
      if (seed != 0) std::shuffle(neighbours_[static_cast<std::size_t>(u)].begin(), neighbours_[static_cast<std::size_t>(u)].end(), rng_);
    }
    scratch_.resize(static_cast<std::size_t>(g.n) + 1);
    starts_.resize(static_cast<std::size_t>(g.n));
    std::iota(starts_.begin(), starts_.end(), 0);
    if (seed != 0) std::shuffle(starts_.begin(), starts_.end(), rng_);
  }

  /// Up to `count` channels, each found with the loads the earlier ones left.
  std::vector<std::vector<int>> run() {
    std::vector<std::vector<int>> out;
    for (int k = 0; k < count_; ++k) {
      std::vector<int> order = one_channel();
      if (order.empty()) break;
      for (std::size_t i = 0; i + 1 < order.size(); ++i) ++load_[edge(order[i], order[i + 1])];
      if (closed_) ++load_[edge(order.back(), order.front())];
      ++first_[static_cast<std::size_t>(order.front())];
      ++last_[static_cast<std::size_t>(order.back())];
      out.push_back(std::move(order));
    }
    return out;
  }

 private:
  std::size_t edge(int u, int v) const { return static_cast<std::size_t>(u * g_.n + v); }
  /// Channels per unit of bandwidth on u -> v once one more channel uses it, in units of the
  /// fastest link (whole numbers on uniform meshes, so ties are exact).
  double pressure(int u, int v) const { return (load_[edge(u, v)] + 1) * (scale_ / g_.at(u, v)); }

  std::vector<int> one_channel() {
    best_.clear();
    best_max_ = std::numeric_limits<double>::infinity();
    best_sum_ = std::numeric_limits<double>::infinity();
    budget_ = budget_for(g_.n);
    used_.assign(static_cast<std::size_t>(g_.n), 0);
    for (int s : starts_) {
      if (closed_ && s != 0) continue;  // cycles are listed from GPU 0
      if (!closed_ && first_[static_cast<std::size_t>(s)] >= ends_cap_) continue;
      path_.assign(1, s);
      used_[static_cast<std::size_t>(s)] = 1;
      dfs(s, 0.0, 0.0);
      used_[static_cast<std::size_t>(s)] = 0;
    }
    return best_;
  }

  void dfs(int u, double worst, double sum) {
    if (static_cast<int>(path_.size()) == g_.n) {
      if (closed_) {
        const int s = path_.front();
        if (g_.at(u, s) <= 0) return;
        const double p = pressure(u, s);
        offer(std::max(worst, p), sum + p);
      } else if (last_[static_cast<std::size_t>(u)] < ends_cap_) {
        offer(worst, sum);
      }
      return;
    }
    if (--budget_ < 0 && (!best_.empty() || budget_ < -kGiveUp)) return;
    // Least loaded links first: the first complete channel is already a good bound.
    std::vector<std::pair<double, int>>& next = scratch_[path_.size()];
    next.clear();
    for (int v : neighbours_[static_cast<std::size_t>(u)])
      if (!used_[static_cast<std::size_t>(v)]) next.emplace_back(pressure(u, v), v);
    std::stable_sort(next.begin(), next.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [p, v] : next) {
      const double w = std::max(worst, p);
      if (w > best_max_ * (1 + kTie) || (w >= best_max_ * (1 - kTie) && sum + p >= best_sum_)) continue;
      used_[static_cast<std::size_t>(v)] = 1;
      path_.push_back(v);
      dfs(v, w, sum + p);
      path_.pop_back();
      used_[static_cast<std::size_t>(v)] = 0;
      if (budget_ < 0 && (!best_.empty() || budget_ < -kGiveUp)) return;
    }
  }

  void offer(double worst, double sum) {
    if (worst < best_max_ * (1 - kTie) || (worst <= best_max_ * (1 + kTie) && sum < best_sum_)) {
      best_max_ = worst;
      best_sum_ = sum;
      best_ = path_;
    }
  }

  const LinkGraph& g_;
  double scale_;
  bool closed_;
  int count_;
  std::mt19937 rng_;
  std::vector<int> load_;
  std::vector<int> first_, last_;  // channels starting / ending at each GPU (paths)
  int ends_cap_ = 1;
  std::vector<std::vector<int>> neighbours_;
  std::vector<int> starts_;
  std::vector<int> path_;
  std::vector<std::vector<std::pair<double, int>>> scratch_;  // candidates per DFS depth
  std::vector<char> used_;
  std::vector<int> best_;
  double best_max_ = 0, best_sum_ = 0;
  long budget_ = 0;
};

/// Upper bound on the aggregate rate: a cycle leaves every GPU once, a path crosses n − 1 links.
double upper_bound(const LinkGraph& g, bool closed) {
  double total = 0, least_out = std::numeric_limits<double>::infinity();
  for (int u = 0; u < g.n; ++u) {
    double out = 0;
    for (int v = 0; v < g.n; ++v) out += g.at(u, v);
    total += out;
    least_out = std::min(least_out, out);
  }
  return closed ? least_out : total / (g.n - 1);
}

std::vector<std::vector<int>> search(const LinkGraph& g, int count, bool closed) {
  static std::mutex mutex;
  static std::map<std::tuple<int, std::vector<double>, int, bool>, std::vector<std::vector<int>>> cache;
  const auto key = std::make_tuple(g.n, g.capacity, count, closed);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // Stop early once the aggregate reaches the upper bound with the fewest channels that can:
  // one channel runs at most at the fastest link's rate.
  const double bound = upper_bound(g, closed);
  const double fastest = *std::max_element(g.capacity.begin(), g.capacity.end());
  const std::size_t fewest = closed ? static_cast<std::size_t>(std::ceil(bound / fastest * (1 - kTie))) : static_cast<std::size_t>(count);
  std::vector<std::vector<int>> best;
  double best_rate = 0;
  for (int attempt = 0; attempt < restarts_for(g.n) && !(best_rate >= bound * (1 - kTie) && best.size() <= fewest); ++attempt) {
    const std::vector<std::vector<int>> found = Searcher(g, closed, count, static_cast<std::uint32_t>(attempt)).run();
    if (closed) {
      // Every prefix is a candidate channel count; fewer channels win ties.
      for (std::size_t k = 1; k <= found.size(); ++k) {
        const std::vector<std::vector<int>> prefix(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(k));
        const double rate = aggregate_rate(g, prefix, true);
        if (rate > best_rate * (1 + kTie) || (rate >= best_rate * (1 - kTie) && k < best.size())) {
          best_rate = rate;
          best = prefix;
        }
      }
    } else if (static_cast<int>(found.size()) == count) {
      const double rate = aggregate_rate(g, found, false);
      if (rate > best_rate * (1 + kTie)) {
        best_rate = rate;
        best = found;
      }
    }
  }
  // The natural orders (0, 1, ..., n−1 and back) are candidates too when every hop is a direct
  // link: on large sparse meshes the bounded search can miss what they give.
  if (closed) {
    std::vector<int> forward(static_cast<std::size_t>(g.n));
    std::iota(forward.begin(), forward.end(), 0);
    std::vector<int> backward(forward.rbegin(), forward.rend());
    std::rotate(backward.begin(), backward.end() - 1, backward.end());  // listed from GPU 0
    bool linked = true;
    for (int i = 0; i < g.n && linked; ++i) linked = g.at(i, (i + 1) % g.n) > 0 && g.at((i + 1) % g.n, i) > 0;
    if (linked) {
      const std::vector<std::vector<int>> natural{forward, backward};
      const double rate = aggregate_rate(g, natural, true);
      if (rate > best_rate * (1 + kTie)) {
        best_rate = rate;
        best = natural;
      }
    }
  }
  const std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, best);
  return best;
}

}  // namespace

double aggregate_rate(const LinkGraph& graph, const std::vector<std::vector<int>>& orders, bool closed) {
  if (orders.empty()) return 0;
  std::vector<int> load(static_cast<std::size_t>(graph.n * graph.n), 0);
  for (const auto& o : orders) {
    for (std::size_t i = 0; i + 1 < o.size(); ++i) ++load[static_cast<std::size_t>(o[i] * graph.n + o[i + 1])];
    if (closed && o.size() > 1) ++load[static_cast<std::size_t>(o.back() * graph.n + o.front())];
  }
  double per_channel = std::numeric_limits<double>::infinity();
  for (std::size_t e = 0; e < load.size(); ++e)
    if (load[e] > 0) per_channel = std::min(per_channel, graph.capacity[e] / load[e]);
  return per_channel == std::numeric_limits<double>::infinity() ? 0 : per_channel * static_cast<double>(orders.size());
}

NvswitchRingSearch nccl_nvswitch_ring_search(double gpu_nvlink_gbps, int compute_capability, int max_channels) {
  // NCCL 2.30 src/graph/search.cc: the intra-node speed arrays, GB/s per channel.
  static const std::vector<double> kSpeeds{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
  static const std::vector<double> kSpeedsSm90{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  static const std::vector<double> kSpeedsSm100{90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  const std::vector<double>& speeds = compute_capability >= 100 ? kSpeedsSm100 : compute_capability >= 90 ? kSpeedsSm90 : kSpeeds;
  const double total = gpu_nvlink_gbps;
  // followPath subtracts bandwidth rounded to 1e-3 GB/s (SUB_ROUND): count fits with that slack.
  const auto fits = [&](double speed) { return std::min(max_channels, static_cast<int>(std::floor(total / speed + 1e-6))); };
  std::size_t index = 0;
  while (index + 1 < speeds.size() && speeds[index] > total) ++index;
  NvswitchRingSearch best;
  // Pass 1: lower the speed until a graph reaches the bandwidth or the next speed falls to 0.49
  // of the best graph's.
  for (;;) {
    const double speed = speeds[index];
    const int n = fits(speed);
    if (n >= 1 && n * speed > best.channels * best.bw_per_channel) best = {n, speed};
    if (n == max_channels || best.channels * best.bw_per_channel >= total * (1 - 1e-9)) break;
    if (index + 1 >= speeds.size() || (best.channels > 0 && speeds[index + 1] / best.bw_per_channel <= 0.49)) break;
    ++index;
  }
  if (best.channels == 0) return best;  // below the slowest speed: NCCL falls back to one ring
  // ncclTopoDupChannels.
  const bool dup = best.bw_per_channel >= 25.0 && !(compute_capability > 80 && best.bw_per_channel < 50.0 && best.channels > 4);
  if (dup) {
    const int doubled = std::min(best.channels * 2, max_channels);
    best.bw_per_channel /= (doubled + best.channels - 1) / best.channels;
    best.channels = doubled;
  }
  // Pass 2: raise the speed while the channels still fit.
  for (double speed : speeds)
    if (speed > best.bw_per_channel && best.channels * speed <= total * (1 + 1e-9)) {
      best.bw_per_channel = speed;
      break;
    }
  return best;
}

std::vector<std::vector<int>> search_rings(const LinkGraph& graph, int max_rings) {
  if (graph.n < 3 || max_rings < 1) return {};
  return search(graph, max_rings, true);
}

std::vector<std::vector<int>> search_paths(const LinkGraph& graph, int count) {
  if (graph.n < 2 || count < 1) return {};
  return search(graph, count, false);
}

}  // namespace ccsim::planner
