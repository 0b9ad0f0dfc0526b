#include "planner/collective/pruned_choice.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ccsim::planner {

using models::Granularity;

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}  // namespace

/// The best candidate so far and the ones skipped as too large, for one size.
struct PrunedChoice::Tally {
  CollectiveResult best;
  std::size_t best_index = 0;
  /// Candidates too large to simulate, noted in candidate order; the first of them in that
  /// order is thrown when no candidate fits.
  std::vector<std::pair<std::size_t, std::string>> notes;
  std::optional<ScheduleTooLarge> refused;
  std::size_t refused_index = 0;

  void reset(std::uint64_t bytes, std::size_t candidates) {
    best = CollectiveResult{};
    best.bytes = bytes;
    best.time = kInfinity;
    best_index = candidates;
    notes.clear();
    refused.reset();
    refused_index = candidates;
  }
  void too_large(std::size_t index, Algorithm a, Protocol p, const ScheduleTooLarge& e) {
    notes.emplace_back(index, fmt::format("{}/{} skipped: {}", to_string(a), to_string(p), e.found()));
    if (index < refused_index) {
      refused = e;
      refused_index = index;
    }
  }
  /// A simulated candidate: the best so far when faster, or as fast and earlier in candidate order.
  void offer(std::size_t index, Algorithm a, Protocol p, Granularity g, sim::Timeline& tl) {
    ++best.simulated;
    if (tl.makespan < best.time || (tl.makespan == best.time && index < best_index)) {
      best.time = tl.makespan;
      best.algorithm = a;
      best.protocol = p;
      best.granularity = g;
      best.transfers = tl.transfers;
      best.links = std::move(tl.links);
      best_index = index;
    }
  }
};

/// A candidate of the pruned run, with its bound.
struct PrunedChoice::Prepared {
  std::size_t index = 0;
  Algorithm a = Algorithm::Ring;
  Protocol p = Protocol::Simple;
  Granularity g{};
  AlgorithmRequest req;
  std::optional<models::Schedule> schedule;  ///< kept when small, else generated again
  double bound = -kInfinity;
  bool exact = false;   ///< bound computed on this size's schedule (else kept from a smaller size)
  bool likely = false;  ///< the likely winner: simulated first, so never bounded
};

CollectiveResult PrunedChoice::choose(std::uint64_t bytes, const std::vector<CollectiveCandidate>& cands, CandidateSource& source) {
  Tally tally;
  tally.reset(bytes, cands.size());
  if (!options_.prune || cands.size() <= 1 || !run_pruned(bytes, cands, source, tally)) run_all(bytes, cands, source, tally);
  std::stable_sort(tally.notes.begin(), tally.notes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  CollectiveResult best = std::move(tally.best);
  for (auto& [index, note] : tally.notes) best.notes.push_back(std::move(note));
  if (best.time == kInfinity && tally.refused) throw *tally.refused;
  if (best.time == kInfinity) {
    throw std::invalid_argument(fmt::format("no algorithm implements {} at {} bytes", models::to_string(options_.collective), bytes));
  }
  last_choice_ = std::make_pair(best.algorithm, best.protocol);
  return best;
}

namespace {
/// Whether candidate i may run at `bytes`: the only candidate always (its simulation reports
/// why it cannot), the others when their step request is supported.
bool eligible(const std::vector<CollectiveCandidate>& cands, std::size_t i, std::uint64_t bytes, const CandidateSource& source) {
  return cands.size() == 1 ||
         unsupported_reason(cands[i].first, source.request(cands[i].first, cands[i].second, bytes, Granularity::Step)).empty();
}

sim::Timeline simulate_at(CandidateSource& source, Algorithm a, Protocol p, std::uint64_t bytes, Granularity& g) {
  g = source.granularity(a, p, bytes);
  const models::Schedule schedule = source.schedule(a, p, bytes, g);
  return source.simulate(schedule, a, p);
}
}  // namespace

// Every eligible candidate simulated, in candidate order: the reference (prune off), and the
// fallback when a candidate's bound cannot be computed (its simulation reports why).
void PrunedChoice::run_all(std::uint64_t bytes, const std::vector<CollectiveCandidate>& cands, CandidateSource& source, Tally& tally) {
  tally.reset(bytes, cands.size());
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (!eligible(cands, i, bytes, source)) continue;
    const auto [a, p] = cands[i];
    Granularity g{};
    sim::Timeline tl;
    try {
      tl = simulate_at(source, a, p, bytes, g);
    } catch (const ScheduleTooLarge& e) {
      tally.too_large(i, a, p, e);
      continue;
    }
    tally.offer(i, a, p, g, tl);
  }
}

bool PrunedChoice::bound_exactly(std::uint64_t bytes, Prepared& c, bool& skipped, CandidateSource& source, Tally& tally) {
  // Schedules up to this many ops are kept between bounding and simulating.
  constexpr std::size_t kKeepOps = std::size_t{1} << 20;
  skipped = false;
  models::Schedule one;
  try {
    c.g = source.granularity(c.a, c.p, bytes);
    one = source.schedule(c.a, c.p, bytes, c.g);
  } catch (const ScheduleTooLarge& e) {
    tally.too_large(c.index, c.a, c.p, e);
    skipped = true;
    return true;
  }
  try {
    c.bound = schedule_bound(one, c.a, c.p, source);
  } catch (const std::exception&) {
    return false;
  }
  c.exact = true;
  remember_bound(c.a, c.p, c.req, c.bound);
  if (one.op_count() <= kKeepOps) c.schedule = std::move(one);
  return true;
}

std::optional<std::vector<PrunedChoice::Prepared>> PrunedChoice::prepare(std::uint64_t bytes, const std::vector<CollectiveCandidate>& cands,
                                                                         CandidateSource& source, Tally& tally) {
  // The likely winner: the last size's choice (a sweep keeps its winner over long runs of
  // sizes), else NVLS where it runs (ChoiceOptions::guess_nvls). It is simulated first
  // whatever its bound, so its schedule is not bounded.
  std::optional<CollectiveCandidate> likely = last_choice_;
  if (!likely && options_.guess_nvls &&
      std::find(cands.begin(), cands.end(), std::make_pair(Algorithm::Nvls, Protocol::Simple)) != cands.end()) {
    likely = std::make_pair(Algorithm::Nvls, Protocol::Simple);
  }
  std::vector<Prepared> todo;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (!eligible(cands, i, bytes, source)) continue;
    Prepared c;
    c.index = i;
    c.a = cands[i].first;
    c.p = cands[i].second;
    c.g = source.granularity(c.a, c.p, bytes);
    c.req = source.request(c.a, c.p, bytes, c.g);
    if (likely && c.a == likely->first && c.p == likely->second) {
      c.likely = true;  // bound −∞: first after sorting
    } else if (const double* kept = kept_bound(c.a, c.p, c.req); kept != nullptr && unsupported_reason(c.a, c.req).empty()) {
      c.bound = *kept;
    } else {
      bool skipped = false;
      if (!bound_exactly(bytes, c, skipped, source, tally)) return std::nullopt;
      if (skipped) continue;
    }
    todo.push_back(std::move(c));
  }
  std::stable_sort(todo.begin(), todo.end(), [](const Prepared& x, const Prepared& y) { return x.bound < y.bound; });
  return todo;
}

// Candidates in increasing order of their bounds (exact pruning, pruned_choice.hpp). Returns
// false when a bound cannot be computed.
bool PrunedChoice::run_pruned(std::uint64_t bytes, const std::vector<CollectiveCandidate>& cands, CandidateSource& source, Tally& tally) {
  tally.reset(bytes, cands.size());
  std::optional<std::vector<Prepared>> todo = prepare(bytes, cands, source, tally);
  if (!todo) return false;
  // The engine's time is at least bound × (1 − kBoundSlack): a candidate whose bound is
  // above the best time cannot beat it, nor tie it when it comes later in `cands`.
  const auto cannot_win = [&](const Prepared& c) {
    const double floor = c.bound * (1.0 - kBoundSlack);
    return floor > tally.best.time || (floor >= tally.best.time && c.index > tally.best_index);
  };
  for (Prepared& c : *todo) {
    if (cannot_win(c)) continue;
    if (!c.exact && !c.likely) {
      bool skipped = false;
      if (!bound_exactly(bytes, c, skipped, source, tally)) return false;
      if (skipped || cannot_win(c)) continue;
    }
    Granularity g = c.g;
    sim::Timeline tl;
    try {
      if (c.schedule) {
        tl = source.simulate(*c.schedule, c.a, c.p);
        c.schedule.reset();
      } else {
        tl = simulate_at(source, c.a, c.p, bytes, g);
      }
    } catch (const ScheduleTooLarge& e) {
      // Too big a schedule: skipped when another candidate fits (noted), refused when none does.
      tally.too_large(c.index, c.a, c.p, e);
      continue;
    } catch (const std::exception&) {
      if (c.likely) return false;  // unbounded: report as simulating every candidate would, in candidate order
      throw;
    }
    tally.offer(c.index, c.a, c.p, g, tl);
  }
  return true;
}

double PrunedChoice::schedule_bound(const models::Schedule& one, Algorithm a, Protocol p, CandidateSource& source) {
  for (const CachedBound& c : bound_cache_)
    if (c.a == a && c.p == p && c.bound->matches(one)) return c.bound->evaluate(one);
  // One group: concurrent groups only add traffic (candidate_bound.hpp).
  const sim::Plan plan = source.bound_plan(a, p, one);
  auto bound = std::make_unique<ScheduleBound>(plan, source.bound_router());
  const double b = bound->evaluate(one);
  // Kept for the next sizes while the cache holds a few schedules' worth of ops.
  constexpr std::size_t kCacheOps = std::size_t{1} << 22;
  if (bound_cache_ops_ + bound->ops() <= kCacheOps) {
    bound_cache_ops_ += bound->ops();
    bound_cache_.push_back({a, p, std::move(bound)});
  }
  return b;
}

double PrunedChoice::bound(Algorithm a, Protocol p, std::uint64_t bytes, CandidateSource& source) {
  const Granularity g = source.granularity(a, p, bytes);
  const models::Schedule one = source.schedule(a, p, bytes, g);
  return schedule_bound(one, a, p, source);
}

const double* PrunedChoice::kept_bound(Algorithm a, Protocol p, const AlgorithmRequest& req) const {
  for (const KnownBound& k : known_bounds_)
    if (k.a == a && k.p == p && k.request.bytes <= req.bytes && shape_independent_of_size(a, k.request, req)) return &k.bound;
  return nullptr;
}

void PrunedChoice::remember_bound(Algorithm a, Protocol p, const AlgorithmRequest& req, double bound) {
  for (KnownBound& k : known_bounds_) {
    if (k.a == a && k.p == p) {
      k.request = req;
      k.bound = bound;
      return;
    }
  }
  known_bounds_.push_back({a, p, req, bound});
}

}  // namespace ccsim::planner
