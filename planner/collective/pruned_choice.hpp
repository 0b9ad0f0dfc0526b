#pragma once
// The collective planner's choice among its candidates for one size, as NCCL's tuner picks the
// (algorithm, protocol) of least predicted time: every eligible candidate's Schedule simulated
// on the analytic engine, the fastest kept (a tie goes to the earlier candidate), candidates
// over the schedule size limit skipped with a note while another one fits.
//
// Exact pruning: candidates are simulated in increasing order of a lower bound on their engine
// time, the last size's choice first (in a sweep it usually wins again, and then its time
// prunes the rest at once); a candidate whose bound is at least the best time so far is not
// simulated. The bound is the candidate's ScheduleBound at this size (candidate_bound.hpp), or,
// without generating its schedule, the one computed at a smaller size of the same shape
// (shape_independent_of_size): every op then carries at least the bytes it carried there, so
// every contention-free time of the bound is no earlier (each is a max / + of latencies and
// bytes / rate) and every link carries at least the volume it carried there, after starts no
// earlier — that bound's two relaxations hold for the engine at this size as well. The
// schedule of such a candidate is generated only when its kept bound does not prune it. The
// choice is the one simulating every candidate would make.

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "models/collective/schedule.hpp"
#include "models/hardware/router.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/protocol.hpp"
#include "planner/collective/candidate_bound.hpp"
#include "planner/collective/collective_options.hpp"
#include "sim/engine.hpp"

namespace ccsim::planner {

/// A candidate: an (algorithm, protocol) pair.
using CollectiveCandidate = std::pair<Algorithm, Protocol>;

/// What the choice asks of the collective planner about one candidate (CollectiveRunner).
class CandidateSource {
 public:
  /// The granularity candidate (a, p) is generated at for `bytes`.
  virtual models::Granularity granularity(Algorithm a, Protocol p, std::uint64_t bytes) const = 0;
  /// The request of (a, p) at `bytes` and granularity `g`.
  virtual AlgorithmRequest request(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity g) const = 0;
  /// One group's Schedule of (a, p) at `bytes` and `g`. Throws ScheduleTooLarge over the size
  /// limit, std::invalid_argument when (a, p) cannot run here.
  virtual models::Schedule schedule(Algorithm a, Protocol p, std::uint64_t bytes, models::Granularity g) const = 0;
  /// The plan a lower bound of one group's schedule `one` is computed on (that group's GPUs,
  /// the candidate's costs; `one` is referenced, not copied).
  virtual sim::Plan bound_plan(Algorithm a, Protocol p, const models::Schedule& one) const = 0;
  /// The routes lower bounds are computed on (those of the analytic engine's simulations).
  virtual models::Router& bound_router() = 0;
  /// Simulates one group's schedule `one` of (a, p), with the concurrent groups, on the
  /// analytic engine.
  virtual sim::Timeline simulate(const models::Schedule& one, Algorithm a, Protocol p) = 0;

 protected:
  ~CandidateSource() = default;
};

struct ChoiceOptions {
  models::Collective collective = models::Collective::AllReduce;  ///< the collective chosen for (its name in messages)
  bool prune = true;  ///< CollectiveOptions::prune
  /// Before any size was chosen, simulate NVLS (Simple) first where it is a candidate (one
  /// NVSwitch domain: it wins from a few KiB up). Not when concurrent groups run: a wrong guess
  /// then costs a simulation of every group, and a bound costs one group's schedule.
  bool guess_nvls = false;
};

class PrunedChoice {
 public:
  explicit PrunedChoice(ChoiceOptions options) : options_(options) {}

  /// The fastest of `candidates` (NCCL's candidate order) at size `bytes`: algorithm,
  /// protocol, granularity, time (seconds), transfers and links of its analytic run, the
  /// candidates simulated and the skipped ones' notes; bound and granularity_note unset. A
  /// candidate other than the only one is eligible when its step request is supported. Throws
  /// the first ScheduleTooLarge in candidate order when no candidate fits, and
  /// std::invalid_argument when none is eligible.
  CollectiveResult choose(std::uint64_t bytes, const std::vector<CollectiveCandidate>& candidates, CandidateSource& source);

  /// Lower bound, in seconds, on the analytic engine's time for candidate (a, p) at `bytes`, on
  /// the schedule choose() would simulate. Throws what source.schedule() throws.
  double bound(Algorithm a, Protocol p, std::uint64_t bytes, CandidateSource& source);

  /// The last size's choice (simulated first at the next size).
  const std::optional<CollectiveCandidate>& last_choice() const { return last_choice_; }

 private:
  struct Tally;
  struct Prepared;
  void run_all(std::uint64_t bytes, const std::vector<CollectiveCandidate>& candidates, CandidateSource& source, Tally& tally);
  bool run_pruned(std::uint64_t bytes, const std::vector<CollectiveCandidate>& candidates, CandidateSource& source, Tally& tally);
  /// The eligible candidates, each with its bound (the likely winner unbounded); nullopt when a
  /// bound cannot be computed.
  std::optional<std::vector<Prepared>> prepare(std::uint64_t bytes, const std::vector<CollectiveCandidate>& candidates,
                                               CandidateSource& source, Tally& tally);
  /// Generates c's schedule and bounds it; false when its bound cannot be computed.
  bool bound_exactly(std::uint64_t bytes, Prepared& c, bool& skipped, CandidateSource& source, Tally& tally);
  double schedule_bound(const models::Schedule& one, Algorithm a, Protocol p, CandidateSource& source);
  /// A lower bound on (a, p)'s engine time for request `req` without generating its schedule:
  /// the bound computed at a smaller or equal size of the same shape, or null.
  const double* kept_bound(Algorithm a, Protocol p, const AlgorithmRequest& req) const;
  void remember_bound(Algorithm a, Protocol p, const AlgorithmRequest& req, double bound);

  ChoiceOptions options_;
  /// CollectiveCandidate bounds built so far, reused for the same schedule at other sizes (a sweep).
  struct CachedBound {
    Algorithm a;
    Protocol p;
    std::unique_ptr<ScheduleBound> bound;
  };
  std::vector<CachedBound> bound_cache_;
  std::size_t bound_cache_ops_ = 0;  ///< ops of the schedules the cache holds
  /// The latest bound computed on each candidate's own schedule, with the request it was generated from.
  struct KnownBound {
    Algorithm a;
    Protocol p;
    AlgorithmRequest request;
    double bound;  ///< seconds
  };
  std::vector<KnownBound> known_bounds_;
  std::optional<CollectiveCandidate> last_choice_;
};

}  // namespace ccsim::planner
