#include "planner/synthesis/greedy.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace ccsim::planner::synthesis {

PairRoutes pair_routes(models::Router& router, const std::vector<models::DeviceId>& gpus, const std::array<double, 4>& step_latency) {
  PairRoutes p;
  p.ranks = static_cast<int>(gpus.size());
  const std::size_t n2 = gpus.size() * gpus.size();
  p.links.resize(n2);
  p.bandwidth.assign(n2, 0);
  p.latency.assign(n2, 0);
  for (int a = 0; a < p.ranks; ++a) {
    for (int b = 0; b < p.ranks; ++b) {
      if (a == b) continue;
      if (gpus[static_cast<std::size_t>(a)] == gpus[static_cast<std::size_t>(b)]) {
        throw std::invalid_argument(fmt::format("ranks {} and {} are on the same GPU", a, b));
      }
      const models::Path& path = router.route(gpus[static_cast<std::size_t>(a)], gpus[static_cast<std::size_t>(b)]);
      if (path.links.empty() || path.bandwidth <= 0) throw std::invalid_argument(fmt::format("rank {} cannot reach rank {}", a, b));
      const std::size_t i = p.index(a, b);
      p.links[i] = path.links;
      p.bandwidth[i] = path.bandwidth;
      models::LinkClass worst = models::LinkClass::ScaleUp;
      for (models::LinkId l : path.links) worst = std::max(worst, router.topology().link(l).link_class);
      p.latency[i] = path.latency + step_latency[static_cast<std::size_t>(worst)];
    }
  }
  return p;
}

PairRoutes reversed(const PairRoutes& routes) {
  PairRoutes r = routes;
  for (int a = 0; a < routes.ranks; ++a) {
    for (int b = 0; b < routes.ranks; ++b) {
      r.links[r.index(a, b)] = routes.links[routes.index(b, a)];
      r.bandwidth[r.index(a, b)] = routes.bandwidth[routes.index(b, a)];
      r.latency[r.index(a, b)] = routes.latency[routes.index(b, a)];
    }
  }
  return r;
}

namespace {

/// A transfer's two events: its route's links free (the chunk is on the wire), then the chunk
/// arrives at `child`, sent by `parent`.
struct Event {
  double time;
  std::int64_t seq;  ///< matching order, so equal times resolve deterministically
  bool arrival;      ///< false: the route's links free
  int child;
  int chunk;
  int parent;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

}  // namespace

GreedyResult greedy_allgather(const PairRoutes& routes, int chunks, double chunk_bytes) {
  const int n = routes.ranks;
  if (n < 2) throw std::invalid_argument("the greedy synthesizer needs at least two ranks");
  if (chunks < 1) throw std::invalid_argument("the greedy synthesizer needs at least one chunk per rank");
  if (!(chunk_bytes > 0)) throw std::invalid_argument("the greedy synthesizer needs a chunk of more than 0 bytes");
  const int total = n * chunks;                        // chunks in all
  const std::size_t words = (static_cast<std::size_t>(total) + 63) / 64;
  const auto un = static_cast<std::size_t>(n);

  // Local link ids, and per link the pairs whose route crosses it (to wake them when it frees).
  std::unordered_map<models::LinkId, std::uint32_t> local;
  std::vector<std::vector<std::uint32_t>> pair_links(un * un);
  std::vector<std::vector<std::uint32_t>> link_pairs;
  std::vector<double> cost(un * un, 0), wire(un * un, 0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const std::size_t i = routes.index(a, b);
      if (routes.links[i].empty()) continue;  // not a route the greedy may take
      if (!(routes.bandwidth[i] > 0)) throw std::invalid_argument(fmt::format("the route from rank {} to rank {} has no bandwidth", a, b));
      cost[i] = routes.latency[i] + chunk_bytes / routes.bandwidth[i];
      wire[i] = chunk_bytes / routes.bandwidth[i];
      for (models::LinkId l : routes.links[i]) {
        const auto [it, added] = local.try_emplace(l, static_cast<std::uint32_t>(link_pairs.size()));
        if (added) link_pairs.emplace_back();
        link_pairs[it->second].push_back(static_cast<std::uint32_t>(i));
        pair_links[i].push_back(it->second);
      }
    }
  }
  // Routes in order of cost for one chunk, cheapest first; ties by receiver, then sender.
  std::vector<std::uint32_t> order;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b && !routes.links[routes.index(a, b)].empty()) order.push_back(static_cast<std::uint32_t>(routes.index(a, b)));
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    return std::make_tuple(cost[x], x % un, x / un) < std::make_tuple(cost[y], y % un, y / un);
  });
  std::vector<std::uint32_t> rank_of(un * un, 0);
  for (std::size_t k = 0; k < order.size(); ++k) rank_of[order[k]] = static_cast<std::uint32_t>(k);

  std::vector<std::uint64_t> have(un * words, 0), awaited(un * words, 0);
  std::vector<int> holders(static_cast<std::size_t>(total), 1);
  const auto set = [&](std::vector<std::uint64_t>& bits, int rank, int c, bool on) {
    std::uint64_t& w = bits[static_cast<std::size_t>(rank) * words + static_cast<std::size_t>(c) / 64];
    const std::uint64_t m = std::uint64_t{1} << (static_cast<unsigned>(c) % 64);
    w = on ? (w | m) : (w & ~m);
  };
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < chunks; ++j) set(have, r, r * chunks + j, true);
  std::vector<double> busy_until(link_pairs.size(), 0);
  std::vector<char> dirty(un * un, 0);
  std::vector<std::uint32_t> woken;
  const auto wake = [&](std::uint32_t pair) {
    if (!dirty[pair]) {
      dirty[pair] = 1;
      woken.push_back(pair);
    }
  };
  for (std::uint32_t p : order) wake(p);

  GreedyResult result;
  Forest& f = result.forest;
  f.ranks = n;
  f.weight_per_root = chunks;
  f.rate_num = 0;
  f.trees.resize(static_cast<std::size_t>(total));
  for (int c = 0; c < total; ++c) {
    f.trees[static_cast<std::size_t>(c)].root = c / chunks;
    f.trees[static_cast<std::size_t>(c)].weight = 1;
  }
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::int64_t seq = 0;
  double now = 0;
  // A relative tolerance on times, so that links freed "at" now by rounding count as free.
  const auto free_at = [&](double until) { return until <= now * (1 + 1e-12) + 1e-18; };
  const std::int64_t needed = static_cast<std::int64_t>(n) * (n - 1) * chunks;
  for (;;) {
    // Match the woken routes, cheapest first.
    std::sort(woken.begin(), woken.end(), [&](std::uint32_t x, std::uint32_t y) { return rank_of[x] < rank_of[y]; });
    for (std::uint32_t pair : woken) {
      dirty[pair] = 0;
      const int u = static_cast<int>(pair / un), v = static_cast<int>(pair % un);
      bool is_free = true;
      for (std::uint32_t l : pair_links[pair]) is_free = is_free && free_at(busy_until[l]);
      if (!is_free) continue;  // woken again when its busy link frees
      // The rarest chunk u holds and v neither holds nor awaits; ties from v's rotation.
      int best = -1, best_holders = std::numeric_limits<int>::max(), best_turn = 0;
      const std::uint64_t* hu = &have[static_cast<std::size_t>(u) * words];
      const std::uint64_t* hv = &have[static_cast<std::size_t>(v) * words];
      const std::uint64_t* av = &awaited[static_cast<std::size_t>(v) * words];
      for (std::size_t w = 0; w < words; ++w) {
        std::uint64_t bits = hu[w] & ~hv[w] & ~av[w];
        while (bits != 0) {
          const int c = static_cast<int>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
          bits &= bits - 1;
          const int turn = ((c - v * chunks) % total + total) % total;
          const int h = holders[static_cast<std::size_t>(c)];
          if (h < best_holders || (h == best_holders && turn < best_turn)) {
            best = c;
            best_holders = h;
            best_turn = turn;
          }
        }
      }
      if (best < 0) continue;  // woken again when u gains a chunk
      const double freed = now + wire[pair];
      for (std::uint32_t l : pair_links[pair]) busy_until[l] = freed;
      set(awaited, v, best, true);
      ++holders[static_cast<std::size_t>(best)];
      events.push({freed, seq++, false, v, best, u});
      events.push({now + cost[pair], seq++, true, v, best, u});
      ++result.transfers;
    }
    woken.clear();
    if (events.empty()) break;
    now = events.top().time;
    ++result.events;
    while (!events.empty() && events.top().time <= now * (1 + 1e-12) + 1e-18) {
      const Event a = events.top();
      events.pop();
      if (!a.arrival) {  // the links of the route it took are free
        for (std::uint32_t l : pair_links[routes.index(a.parent, a.child)])
          for (std::uint32_t p : link_pairs[l]) wake(p);
        continue;
      }
      set(awaited, a.child, a.chunk, false);
      set(have, a.child, a.chunk, true);
      f.trees[static_cast<std::size_t>(a.chunk)].edges.push_back({.parent = a.parent, .child = a.child, .via = {},
                                                                    .links = routes.links[routes.index(a.parent, a.child)]});
      result.estimated_time = std::max(result.estimated_time, a.time);
      // The receiver may forward what it got.
      for (int w = 0; w < n; ++w)
        if (w != a.child && !routes.links[routes.index(a.child, w)].empty()) wake(static_cast<std::uint32_t>(routes.index(a.child, w)));
    }
  }
  if (result.transfers != needed) {
    // Every route into a rank that lacks a chunk is woken whenever it frees or its sender gains
    // one, so the greedy stops early only when the routes given do not connect the ranks.
    throw std::invalid_argument(fmt::format("the routes do not connect the ranks: the greedy stopped after {} of {} transfers",
                                            result.transfers, needed));
  }
  return result;
}

}  // namespace ccsim::planner::synthesis
