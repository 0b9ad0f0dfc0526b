#pragma once
// Max-min fair sharing kept up to date as flows start and stop, re-solving only the flows a
// change can affect (as SimGrid's lmm solver keeps its bookkeeping apart from its network
// models). The allocation after every resolve() is the one solve_max_min() gives the flowing
// flows (sim/sharing/maxmin.hpp), up to the solver's tie tolerance.
//
// Why only some flows are re-solved (each rule keeps the others' rates exactly):
//
// 1. Components. Max-min sharing on resources (links, and per-connection rate caps) splits
//    into independent problems, one per connected component of the flow–resource graph. When
//    flows start or finish, only the components that hold them (or held them) can change; the
//    walk goes through those components from the changed flows' resources (breadth first over
//    each resource's flowing flows) and re-solves them alone, at full capacity (every flow on a
//    visited resource is in the walk). A ring, a tree or a pipeline across a fabric has small
//    components — the flows that share a link with each other — so an event costs the size of
//    its component, not the number of flows in flight.
//
// 2. Slower flows keep their rates when flows only finish. Progressive filling raises all
//    unfrozen rates together and freezes the flows of a resource when its fair share (remaining
//    capacity ÷ unfrozen flows) is the lowest; a resource's fair share only grows as it runs.
//    Let L be the lowest old rate of the finished flows F. Every resource a flow f of F crosses
//    saturated at a level ≥ rate(f) ≥ L, so its fair share stayed above every level v < L;
//    without F it is larger still, so it still does not saturate below L. Resources that F
//    does not cross see the same flows and the same frozen rates. By induction over the levels
//    below L, the same resources saturate at the same levels and freeze the same flows at the
//    same rates. What is left at L — the other flows, and each resource's capacity less the
//    kept flows' rates — is solved afresh, which is exactly how progressive filling would
//    continue. A started flow may lower any level of its component, so it re-solves the
//    component whole.
//
// 3. Nothing to do when every flow left is slower. When flows only finish and no flow still
//    in flight has a rate at or above L, rule 2 keeps every rate: the walk of rule 2 would find
//    nothing, so it is skipped (the highest rate in flight comes from a max-heap of rates). In
//    terms of bottlenecks (an allocation is max-min fair iff every flow crosses a saturated
//    resource on which no flow is faster): a flow g left has rate < L ≤ rate(f) for every
//    finished f, so no finished flow crossed g's bottleneck (g would not be the fastest there);
//    that resource keeps its flows and rates, stays saturated, and g stays its fastest. Every
//    flow keeps a bottleneck, so the old rates are the (unique) max-min allocation.
//
// Both rules apply together when flows only finish: the flows below L are constants, so what
// is left at L splits into components joined only by flows at or above L; the walk from the
// finished flows' resources passes through those flows alone, and re-solves them. When a
// component is large (a direct AlltoAll whose million flows all cross one spine), walking it at
// every completion would cost as much as re-solving it, so when the walk costs more than rule 2
// alone would, it stops and rule 2 alone picks the flows (from all flows in flight, kept sorted
// by rate); after such a failed walk the next 1, 2, 4 … 64 walks are not tried (direct AlltoAll
// under hashed ECMP, where the flows at or above L are all one component: a complete walk found
// 1,431,440 flows to re-solve over a 256-rank run, rule 2 alone 1,431,900).

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/sharing/maxmin.hpp"

namespace ccsim::sim {

/// The max-min rates of the flows of one system as they start and stop. Flows are the system's
/// flow indices (0 .. flows() − 1), resources its capacity indices; rates in bytes per second.
/// Used by the analytic engine's default loop (sim/analytic/incremental_loop.cpp), one flow per
/// transfer.
class IncrementalSharing {
 public:
  /// `system`: every flow that may ever flow, each over its resources (capacities in bytes per
  /// second, ≥ 0; a resource may appear in no flow). All flows start idle.
  explicit IncrementalSharing(MaxMinProblem system);

  /// Flow f starts flowing, at rate 0 until the next resolve(). Each flow flows once: throws
  /// std::logic_error when f has started before.
  void add(std::uint32_t f);
  /// Flow f stops flowing. Returns the resources that no flowing flow uses any more (each once,
  /// valid until the next call). Throws std::logic_error when f is not flowing.
  std::span<const std::uint32_t> remove(std::uint32_t f);

  /// True when flows started or stopped since the last resolve().
  bool dirty() const { return started_ || stopped_; }

  /// Told of each rate resolve() changes, as it changes it, in the order the re-solve takes the
  /// flows: the flow, its rate before (bytes per second; rate() already gives the new one), and
  /// whether every flowing flow is being re-solved.
  class RateListener {
   public:
    virtual void rate_changed(std::uint32_t f, double old_rate, bool all) = 0;

   protected:
    ~RateListener() = default;
  };
  /// What a resolve() did; `resources` stays valid until the next resolve().
  struct Resolution {
    bool all = false;                          ///< every flowing flow was re-solved
    std::span<const std::uint32_t> resources;  ///< the resources of the re-solved flows
  };
  /// Brings every flowing flow's rate to the max-min fair allocation of the flowing flows
  /// (a flow without resources: +infinity), re-solving only what the rules above require, and
  /// tells `listener` of every rate it changes.
  Resolution resolve(RateListener& listener);
  /// The same, telling no one.
  Resolution resolve();

  /// Rate of flow f in bytes per second (0 before it starts; a stopped flow keeps its last one).
  double rate(std::uint32_t f) const { return rate_[f]; }
  /// Bumped each time f's rate changes: callers keep it beside copies of derived values.
  std::uint32_t version(std::uint32_t f) const { return version_[f]; }
  bool flowing(std::uint32_t f) const { return flowing_[f] != 0; }
  /// The flowing flows, in no particular order (stable between add/remove calls).
  std::span<const std::uint32_t> active() const { return active_; }
  /// Flow f's resources, in the order the system gave them.
  std::span<const std::uint32_t> resources(std::uint32_t f) const {
    return {system_.resources.data() + system_.offsets[f], system_.offsets[f + 1] - system_.offsets[f]};
  }
  /// Flowing flows on resource r.
  std::uint32_t users(std::uint32_t r) const { return live_[r]; }
  /// Σ rates of the flowing flows on resource r (bytes per second; 0 when none flows).
  double load(std::uint32_t r) const { return load_[r]; }
  double capacity(std::uint32_t r) const { return system_.capacity[r]; }

  /// Work done so far, deterministic (tests bound it): max-min solves, flows re-solved over all
  /// of them, and entries of the resources' flow lists that the component walks looked at.
  struct Work {
    std::uint64_t solves = 0;
    std::uint64_t solved_flows = 0;
    std::uint64_t walked = 0;
  };
  const Work& work() const { return work_; }

 private:
  void choose();
  void next_epoch();
  void mark_solve_set();
  std::size_t walk_budget(double keep_below) const;
  bool walk(double keep_below, std::size_t budget);
  void pick_by_rate(double keep_below);
  void measure_kept();
  bool solve(RateListener& listener);
  void set_rate(std::uint32_t f, double r, bool bulk);
  /// The order of by_rate_: by rate, then by flow.
  bool slower(std::uint32_t a, std::uint32_t b) const { return rate_[a] != rate_[b] ? rate_[a] < rate_[b] : a < b; }
  double highest_rate();
  void rebuild_rate_heap();
  std::uint32_t count(std::uint32_t f) const { return system_.offsets[f + 1] - system_.offsets[f]; }

  MaxMinProblem system_;
  // Per resource: Σ rates of its flowing flows; its flows, the flowing ones and stopped ones
  // not yet swept out (a list is compacted when its stopped entries outnumber the flowing ones:
  // amortised O(1) per stop, with sequential rather than random memory access); how many flow.
  std::vector<double> load_;
  std::vector<std::vector<std::uint32_t>> users_;
  std::vector<std::uint32_t> live_;
  // Per flow.
  std::vector<double> rate_;
  std::vector<std::uint32_t> version_;
  std::vector<char> flowing_;
  // Flowing flows (unordered), and where each sits (kNotStarted before it starts, kStopped after).
  std::vector<std::uint32_t> active_, active_pos_;
  std::vector<std::uint32_t> by_rate_;  // flowing flows sorted by rate, when by_rate_valid_
  bool by_rate_valid_ = false;
  // Flowing flows' rates, highest on top (a max-heap; entries whose version is stale, or whose
  // flow stopped, are dropped when they reach the top). A flow enters when a solve gives it a
  // new rate; a started flow whose first solve leaves it at 0 has no entry, which only ever
  // matters below every positive rate.
  struct RateEntry {
    double rate;
    std::uint32_t flow;
    std::uint32_t version;
  };
  std::vector<RateEntry> top_rates_;
  static bool lower_rate(const RateEntry& a, const RateEntry& b) { return a.rate < b.rate; }
  // Since the last resolve().
  bool started_ = false;                 // a flow started
  bool stopped_ = false;                 // a flow stopped
  double lowest_stopped_ = std::numeric_limits<double>::infinity();  // lowest rate of the flows stopped
  std::vector<std::uint32_t> seeds_;     // resources of the flows started or stopped
  std::vector<std::uint32_t> unbound_;   // flows started without resources
  std::size_t active_incidences_ = 0;    // Σ resources over the flowing flows
  // Scratch for the walks and solves (epoch marks: no clearing between events).
  std::vector<std::uint32_t> res_mark_, flow_mark_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> walk_, solve_set_, touched_, local_index_;
  std::vector<double> kept_;             // per local resource: what the kept flows use of it
  std::vector<std::uint32_t> solved_on_; // per local resource: re-solved flows on it
  std::uint32_t walks_to_skip_ = 0, walk_backoff_ = 0;  // walks to skip after failed ones, and the current step
  MaxMinProblem problem_;
  std::vector<std::uint32_t> flow_res_;
  std::vector<std::uint32_t> idle_;
  Work work_;
};

}  // namespace ccsim::sim
