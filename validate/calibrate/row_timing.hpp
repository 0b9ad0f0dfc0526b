#pragma once
// Timing calibration rows at many cost tables (validate/calibrate/calibrate.cpp's unit of work).
//
// A row's simulated time is NCCL's choice: the least analytic-engine time over the (algorithm,
// protocol) candidates the collective planner offers (planner/collective/pruned_choice.hpp; a tie
// goes to the earlier candidate). The Schedules a candidate runs do not depend on the figures
// `ccsim calibrate` moves (latencies, link efficiencies, bandwidth factors, caps and NVLS
// efficiency enter only the engine's cost parameters, sim::CostParams), so RowTimer lowers each
// (row, candidate) Schedule once, at the base table, and times it again at every table the fit
// tries, with that table's cost parameters (CollectiveRunner::run_schedule, whose runner reads a
// swappable CostModel). The candidate list and each candidate's eligibility are asked again at
// every table, so a table figure that changes which protocols are offered is followed.
//
// simulate_rows() (calibrate.hpp) is the reference: it plans every row from scratch with
// CollectiveRunner::run(); tests/validate/calibrate/row_timing_test.cpp checks both agree.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/collective/schedule.hpp"
#include "models/hardware/cluster.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "validate/calibrate/calibrate.hpp"

namespace ccsim::validate::calibration {

/// The rows simulated at one table.
struct Simulated {
  std::vector<double> time;                                       ///< seconds per row (NaN when not asked)
  std::vector<std::pair<std::string, planner::Protocol>> choice;  ///< cost-table name and protocol per row
  std::vector<std::string> label;                                 ///< "ring/LL128"
  /// Each timed row's eligible candidates with their times (seconds; +inf: cannot run), in
  /// candidate order (RowTimer only).
  std::vector<std::vector<std::pair<planner::CollectiveCandidate, double>>> candidates;
  std::vector<int> plan;  ///< each timed row's channel plan (RowTimer's index; -1: not timed)
};

/// A small change of the table (one Jacobian column): the candidates whose figures it touches,
/// and how much faster they can get.
struct Nudge {
  /// (cost-table name, protocol) pairs whose entries changed; empty: every candidate.
  std::vector<std::pair<std::string, planner::Protocol>> touched;
  /// A touched candidate's new time is at least its old time × this: 1 for a change that only
  /// slows (a latency raised: the engine's times are max / + of latency + bytes / rate terms,
  /// monotone in every latency), 1/f for rates raised by a factor f (every term shrinks by at
  /// most f), 0 when nothing is known (every touched candidate timed again).
  double shrink = 0;
};

/// The CollectiveOptions row `r` is timed with: its collective, element size, forced algorithm
/// and protocol, and the first r.nranks GPUs of `cluster`. Throws std::invalid_argument
/// ("LOG:LINE: the log has N ranks but the scenario's cluster has M GPUs") for a rank count
/// below 1 or above the cluster's GPUs.
planner::CollectiveOptions row_options(const models::Cluster& cluster, const CalibrationRow& r);

class RowTimer {
 public:
  /// `rows` and `cluster` must outlive the timer. `base` is the table the Schedules are lowered
  /// with (its chunk sizes shape them). Throws support::InputError when `base` is not a table.
  RowTimer(const models::Cluster& cluster, const std::vector<CalibrationRow>& rows, const YAML::Node& base);
  ~RowTimer();
  RowTimer(const RowTimer&) = delete;
  RowTimer& operator=(const RowTimer&) = delete;

  /// The rows with want[i] != 0 timed with `table` (a parsed cost table). Thread-safe: each
  /// calling thread takes its own lane (cost table, engine, runners). Throws RowError for a row
  /// no candidate can run, std::invalid_argument for a row with more ranks than the cluster.
  /// `theta`: the fitted parameters `table` was made from, for the signature (null: no memo).
  Simulated time(const YAML::Node& table, const std::vector<char>& want, const std::vector<double>* theta = nullptr) const;
  /// The same where `table` differs from the table `at` was timed with by `nudge` (a Jacobian
  /// column): the untouched candidates keep their times from `at` (a candidate's time reads its
  /// own cost-table entry only: CollectiveRunner::cost_params), and a touched one is timed
  /// again only when its old time × nudge.shrink is below the best time so far (it could win).
  /// Exact where the engine's times are monotone as Nudge says (the α-β terms are); a touched
  /// candidate not timed again keeps its old time (a lower bound) in `candidates`.
  Simulated time(const YAML::Node& table, const std::vector<char>& want, const Simulated& at, const Nudge& nudge,
                 const std::vector<double>* theta = nullptr) const;

  /// What a candidate's time depends on, as the caller knows it: for (cost-table name,
  /// protocol), the values of the fitted parameters that touch its figures. With one set, a
  /// (row, candidate) already timed at the same values is not timed again (the engine is
  /// deterministic: same Schedule, GPUs and cost parameters, same time).
  using Signature = std::function<std::vector<double>(const std::vector<double>& theta, const std::string& table, planner::Protocol p)>;
  void set_signature(Signature s) { signature_ = std::move(s); }

  /// Schedules lowered so far (one per row shape and candidate; for tests and the report).
  std::size_t schedules() const;

 private:
  // collective, ranks, element, algorithm, protocol (-1: auto), channel plan (index into plans_)
  using RunnerKey = std::tuple<models::Collective, int, std::uint32_t, int, int, int>;
  struct Lane;
  struct Lowered {
    std::shared_ptr<const models::Schedule> schedule;  ///< null: too large, or cannot run
    std::string why;                                   ///< why not, when the candidate is the only one
  };
  const Lowered& lowered(const CalibrationRow& r, int plan, planner::Algorithm a, planner::Protocol p) const;
  /// The index of the channel plan `costs` gives row `r`'s ranks (NCCL's channel search on an
  /// NVSwitch node reads link efficiencies, a fitted figure: planner/collective/channel_plan.hpp).
  int plan_index(const CalibrationRow& r, const planner::CostModel& costs) const;
  Simulated time_rows(const YAML::Node& table, const std::vector<char>& want, const Simulated* at, const Nudge* nudge,
                      const std::vector<double>* theta) const;
  std::unique_ptr<Lane> take_lane() const;
  void give_lane(std::unique_ptr<Lane> lane) const;

  const models::Cluster& cluster_;
  const std::vector<CalibrationRow>& rows_;
  Signature signature_;
  /// Times by (row shape, size, algorithm, protocol, signature).
  mutable std::map<std::tuple<RunnerKey, std::uint64_t, int, int, std::vector<double>>, double> memo_;
  planner::CostModel base_costs_;
  mutable std::mutex mutex_;  ///< guards everything below
  mutable std::vector<std::unique_ptr<Lane>> lanes_;  ///< idle lanes
  mutable std::map<std::tuple<RunnerKey, std::uint64_t, int, int>, Lowered> lowered_;
  mutable std::map<std::tuple<RunnerKey, int, int>, std::unique_ptr<planner::CollectiveRunner>> lowering_runners_;
  /// The distinct channel plans met per rank count, each with a table that gives it (the
  /// lowering runners of that plan read it).
  mutable std::map<int, std::vector<std::pair<planner::ChannelPlan, std::unique_ptr<planner::CostModel>>>> plans_;
};

}  // namespace ccsim::validate::calibration
