#include "validate/calibrate/calibrate.hpp"

#include <algorithm>
#include <optional>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "support/input_error.hpp"
#include "support/parallel_for.hpp"
#include "support/units.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/tuning/protocol_rules.hpp"
#include "validate/calibrate/calibration_groups.hpp"
#include "validate/calibrate/row_timing.hpp"

namespace ccsim::validate {

namespace {

using planner::Protocol;
using namespace calibration;

// ---------------------------------------------------------------------------------------------
// Simulation of the rows.

Simulated simulate(const models::Cluster& cluster, const YAML::Node& table, const std::vector<CalibrationRow>& rows,
                   const std::vector<char>& want) {
  planner::CostModel costs = planner::CostModel::from_yaml({table, nullptr});
  costs.set_warning_sink([](const std::string&) {});
  Simulated out;
  out.time.assign(rows.size(), std::numeric_limits<double>::quiet_NaN());
  out.choice.resize(rows.size());
  out.label.resize(rows.size());
  using RunnerKey = std::tuple<models::Collective, int, std::uint32_t, int, int>;  // ..., algorithm, protocol (-1: NCCL's choice)
  std::map<RunnerKey, std::unique_ptr<planner::CollectiveRunner>> runners;
  std::map<std::tuple<models::Collective, int, std::uint32_t, std::uint64_t, int, int>, std::size_t> done;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!want[i]) continue;
    const CalibrationRow& r = rows[i];
    const auto key = std::make_tuple(r.collective, r.nranks, r.element, r.size, r.algorithm ? static_cast<int>(*r.algorithm) : -1,
                                     r.protocol ? static_cast<int>(*r.protocol) : -1);
    if (const auto it = done.find(key); it != done.end()) {
      out.time[i] = out.time[it->second];
      out.choice[i] = out.choice[it->second];
      out.label[i] = out.label[it->second];
      continue;
    }
    auto& runner = runners[RunnerKey{r.collective, r.nranks, r.element, r.algorithm ? static_cast<int>(*r.algorithm) : -1,
                                     r.protocol ? static_cast<int>(*r.protocol) : -1}];
    if (!runner) {
      const planner::CollectiveOptions opts = calibration::row_options(cluster, r);
      try {
        runner = std::make_unique<planner::CollectiveRunner>(cluster, costs, opts);
      } catch (const std::invalid_argument& e) {
        throw RowError(e.what(), r.log, r.line, r.test);
      }
    }
    planner::CollectiveResult result;
    try {
      result = runner->run(r.size);
    } catch (const std::invalid_argument& e) {
      throw RowError(e.what(), r.log, r.line, r.test);
    }
    out.time[i] = result.time;
    out.choice[i] = {std::string(planner::CostModel::table_name(result.algorithm)), result.protocol};
    out.label[i] = fmt::format("{}/{}", planner::to_string(result.algorithm), planner::to_string(result.protocol));
    done.emplace(key, i);
  }
  return out;
}

}  // namespace

std::vector<CalibrationRow> calibration_rows(const std::string& log, const std::vector<LogTest>& tests, std::optional<int> ranks) {
  std::vector<CalibrationRow> rows;
  int index = -1;
  for (const LogTest& test : tests) {
    ++index;
    const int line = test.rows.empty() ? 0 : test.rows.front().line;
    if (!test.collective) {
      throw support::InputError({log, line, 0}, "", "a log of a collective ccsim simulates", "'" + test.name + "'",
                                test.name.empty() ? "the log does not say which collective it measured; name it with --op"
                                                 : "ccsim simulates AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, "
                                                   "AlltoAll and SendRecv; --op names the collective of a log saved without one");
    }
    const std::optional<int> n = ranks ? ranks : test.nranks;
    if (!n) throw support::InputError({log, line, 0}, "", "a log that gives its rank count", "none", "pass --ranks");
    for (const LogRow& row : test.rows) {
      const auto element = type_size(row.type);
      if (!element) throw support::InputError({log, row.line, 0}, "type", "an nccl-tests data type (float, half, ...)", "'" + row.type + "'");
      if (!(row.time_us > 0) || !std::isfinite(row.time_us)) {
        throw support::InputError({log, row.line, 0}, "time", "a measured time above 0 us", fmt::format("{}", row.time_us));
      }
      CalibrationRow r;
      r.log = log;
      r.line = row.line;
      r.test = test.name;
      r.test_index = index;
      r.collective = *test.collective;
      r.nranks = *n;
      r.element = *element;
      r.size = row.size;
      r.measured = row.time_us * 1e-6;
      rows.push_back(r);
    }
  }
  return rows;
}

void assign_holdout(std::vector<CalibrationRow>& rows, const Holdout& holdout) {
  if (holdout.mode == Holdout::Mode::None) {
    for (CalibrationRow& r : rows) r.fit = true;
    return;
  }
  if (holdout.mode == Holdout::Mode::Sizes) {
    for (CalibrationRow& r : rows) r.fit = std::find(holdout.sizes.begin(), holdout.sizes.end(), r.size) == holdout.sizes.end();
    return;
  }
  if (holdout.mode == Holdout::Mode::Collectives) {
    for (CalibrationRow& r : rows)
      r.fit = std::find(holdout.collectives.begin(), holdout.collectives.end(), r.collective) == holdout.collectives.end();
    return;
  }
  if (holdout.mode == Holdout::Mode::Ranks) {
    for (CalibrationRow& r : rows) r.fit = std::find(holdout.ranks.begin(), holdout.ranks.end(), r.nranks) == holdout.ranks.end();
    return;
  }
  std::map<std::pair<std::string, std::string>, std::set<std::uint64_t>> sizes;  // (log, test) -> sizes
  for (const CalibrationRow& r : rows) sizes[{r.log, r.test}].insert(r.size);
  for (CalibrationRow& r : rows) {
    const auto& s = sizes[{r.log, r.test}];
    r.fit = std::distance(s.begin(), s.find(r.size)) % 2 == 0;
  }
}

std::vector<double> simulate_rows(const models::Cluster& cluster, const support::YamlSource& table,
                                  const std::vector<CalibrationRow>& rows, std::vector<std::string>* choices) {
  Simulated s = simulate(cluster, table.node, rows, std::vector<char>(rows.size(), 1));
  if (choices) *choices = std::move(s.label);
  return s.time;
}

double calibration_mape(const std::vector<CalibrationRow>& rows, const std::vector<double>& simulated, bool fitted,
                        const std::string& log) {
  double sum = 0;
  int n = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].fit != fitted || (!log.empty() && rows[i].log != log)) continue;
    sum += std::fabs(simulated[i] - rows[i].measured) / rows[i].measured * 100.0;
    ++n;
  }
  return n == 0 ? -1.0 : sum / n;
}

namespace {

/// The note of a group no fitted row uses once NCCL's choice is fitted.
constexpr const char* kUnusedAtFit = "no fitted row uses these figures once NCCL's choice is fitted: kept at the table's value";

/// One fit: the groups' values `theta`, the rows simulated at them, and the steps of the search.
/// Every step below is a member, so that the state they share is named in one place.
class Fit {
 public:
  Fit(const models::Cluster& cluster, const support::YamlSource& base, const std::vector<CalibrationRow>& rows,
      const CalibrateOptions& options, std::vector<std::size_t> fit_rows, std::vector<Group> groups)
      : cluster_(cluster),
        base_(base),
        rows_(rows),
        options_(options),
        fit_rows_(std::move(fit_rows)),
        groups_(std::move(groups)),
        G_(groups_.size()),
        R_(fit_rows_.size()),
        want_fit_(rows.size(), 0),
        threads_(support::worker_threads(options.threads)),
        status_(G_, CalibrationParameter::Status::Unconstrained),
        notes_(G_),
        moved_(G_),
        frozen_(G_, 0),
        held_(G_),
        kept_moved_(G_),
        timer_(cluster, rows, base.node) {
    for (std::size_t i : fit_rows_) want_fit_[i] = 1;
    // A candidate's time depends on the groups whose figures it reads: those used by its
    // (cost-table name, protocol), and those used by every candidate (link efficiencies).
    timer_.set_signature([this](const std::vector<double>& t, const std::string& table, Protocol p) {
      std::vector<double> sig;
      for (std::size_t g = 0; g < G_; ++g) {
        const auto& u = groups_[g].used_by;
        if (u.empty() || std::find(u.begin(), u.end(), std::make_pair(table, p)) != u.end()) sig.push_back(t[g]);
      }
      return sig;
    });
    theta_ = neutral(groups_);
    start_ = neutral(groups_);
    // The first point by the reference path (CollectiveRunner::run), so that a row that cannot
    // be simulated is reported as `ccsim compare` would; every later point by the timer.
    (void)simulate(cluster_, base_.node, rows_, want_fit_);
    current_ = simulate_at(theta_);
    r_ = residuals(current_);
    // Robust loss: Cauchy's ρ(r) = c²/2 · ln(1 + (r/c)²) of the relative residual, minimised by
    // iteratively reweighted least squares (weights 1 / (1 + (r/c)²) each iteration), so a
    // warm-up row tens of percent off does not pull the fit; plain squares with c = +inf.
    c2_ = options.robust_scale > 0 ? options.robust_scale * options.robust_scale : 0.0;
    cost_ = loss(r_);
  }

  /// The fit's rounds: least squares, then the robust loss, then the moves that do not pay
  /// returned; unless options.free_unused, again without the groups no fitted row uses.
  void run();
  /// Sets each group's status and note from the rows it moves at the fitted values. Throws
  /// CalibrationError when more groups are fitted than there are fitted rows.
  void classify();
  /// The fitted table and the report.
  CalibrationResult result() &&;

 private:
  void note_simulation() const {
    const std::size_t n = simulations_++;
    if (options_.progress) {
      options_.progress(fmt::format("fitting {} rows, round {}, iteration {} (at most {} a pass), simulations", R_, round_ + 1, iterations_,
                                    options_.max_iterations),
                        n, 0);
    }
  }
  Simulated simulate_at(const std::vector<double>& t) const {
    note_simulation();
    return timer_.time(apply(base_.node, groups_, t), want_fit_, &t);
  }
  /// simulate_at(t) where `t` differs from `from` (simulated as `at`) in group `g` only: the
  /// candidates that group's figures do not touch keep their times, and a touched one that
  /// cannot win after the change is not timed again (RowTimer's Nudge).
  Simulated simulate_near(const std::vector<double>& t, const std::vector<double>& from, const Simulated& at, std::size_t g) const {
    note_simulation();
    Nudge nudge;
    nudge.touched = groups_[g].used_by;
    if (groups_[g].offset) {
      nudge.shrink = t[g] >= from[g] ? 1.0 : 0.0;  // a latency raised only slows
    } else {
      nudge.shrink = t[g] <= from[g] ? 1.0 : from[g] / t[g];  // rates (efficiencies, factors, caps) raised by t / from at most
    }
    return timer_.time(apply(base_.node, groups_, t), want_fit_, at, nudge, &t);
  }
  Eigen::VectorXd residuals(const Simulated& s) const;
  double loss(const Eigen::VectorXd& res) const;
  /// Takes `t` (simulated as `s`, residuals `rt`, loss `ct`) as the current point.
  void accept(std::vector<double>&& t, Simulated&& s, const Eigen::VectorXd& rt, double ct) {
    theta_ = std::move(t);
    current_ = std::move(s);
    r_ = rt;
    cost_ = ct;
  }
  Eigen::MatrixXd jacobian(const std::vector<double>& at, const Simulated& sim, std::vector<std::size_t>& active, bool refinements) const;
  std::vector<std::size_t> separable(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active, bool record);
  std::vector<std::size_t> within_budget(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active,
                                         const std::vector<std::size_t>& keep);
  double typical_move(std::size_t g) const { return groups_[g].offset ? 1e-6 : 0.1 * std::max(theta_[g], 1e-3); }
  std::vector<char> pinned_at_bound(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active) const;
  void levenberg_marquardt();
  bool damped_steps(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active, const std::vector<std::size_t>& free_cols,
                    bool& converged);
  bool compass_search(const std::vector<std::size_t>& active, const std::vector<std::size_t>& free_cols);
  void return_unpaid_moves();
  bool freeze_unused();
  std::vector<std::set<std::size_t>> rows_moved(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active) const;

  const models::Cluster& cluster_;
  const support::YamlSource& base_;
  const std::vector<CalibrationRow>& rows_;
  const CalibrateOptions& options_;
  const std::vector<std::size_t> fit_rows_;
  const std::vector<Group> groups_;
  const std::size_t G_;  ///< groups
  const std::size_t R_;  ///< fitted rows
  std::vector<char> want_fit_;
  const int threads_;

  std::vector<double> theta_;  ///< each group's value (offset seconds or multiplier)
  std::vector<double> start_;  ///< the table's values (neutral)
  Simulated current_;          ///< the rows at theta_
  Eigen::VectorXd r_;          ///< relative residuals of the fitted rows at theta_
  double c2_ = 0;              ///< c² of the Cauchy loss (0: plain squares)
  double cost_ = 0;            ///< the loss at theta_
  double lambda_ = 1e-3;       ///< Levenberg-Marquardt damping
  int iterations_ = 0;
  int round_ = 0;                                     ///< run()'s round (progress only)
  mutable std::atomic<std::size_t> simulations_{0};  ///< simulate_at() calls (progress only)
  std::vector<CalibrationParameter::Status> status_;
  std::vector<std::string> notes_;
  std::vector<std::set<std::size_t>> moved_;  ///< fitted rows each group moves at the fitted values
  std::vector<char> frozen_;                  ///< held at the table's value (see freeze_unused)
  std::vector<std::string> held_;
  /// Why a group moved only to change NCCL's choice was kept moved (run(); empty: not so).
  std::vector<std::string> kept_moved_;             ///< why a group was left out by within_budget (empty: never)
  RowTimer timer_;                            ///< the rows' Schedules, lowered once, timed at each table
  /// Second pass of run(): groups pinned at a bound leave the separability test, so that a
  /// group they shadow is fitted (from the first pass's solution, so it can only lower the loss).
  bool release_pinned_ = false;
};

Eigen::VectorXd Fit::residuals(const Simulated& s) const {
  Eigen::VectorXd r(static_cast<Eigen::Index>(R_));
  for (std::size_t j = 0; j < R_; ++j) r[static_cast<Eigen::Index>(j)] = (s.time[fit_rows_[j]] - rows_[fit_rows_[j]].measured) / rows_[fit_rows_[j]].measured;
  return r;
}

double Fit::loss(const Eigen::VectorXd& res) const {
  if (c2_ == 0.0) return 0.5 * res.squaredNorm();
  double sum = 0;
  for (Eigen::Index j = 0; j < res.size(); ++j) sum += 0.5 * c2_ * std::log1p(res[j] * res[j] / c2_);
  return sum;
}

/// Columns of the Jacobian for the groups a fitted row uses at `at` (forward differences). The
/// simulated times are piecewise linear in the latencies (an α-β model: each op costs latency +
/// bytes / rate, combined by max and +), so a forward step of an offset is its exact slope
/// within the piece; and a group's step re-times only the candidates whose cost-table entries
/// it touches (simulate_near), the others keep their times.
Eigen::MatrixXd Fit::jacobian(const std::vector<double>& at, const Simulated& sim, std::vector<std::size_t>& active, bool refinements) const {
  std::set<std::pair<std::string, Protocol>> chosen;
  std::map<Protocol, std::set<std::string>> algorithms_of;
  for (std::size_t i : fit_rows_) {
    chosen.insert(sim.choice[i]);
    algorithms_of[sim.choice[i].second].insert(sim.choice[i].first);
  }
  active.clear();
  for (std::size_t g = 0; g < G_; ++g) {
    if (frozen_[g]) continue;
    bool used = groups_[g].used_by.empty();
    for (const auto& u : groups_[g].used_by) {
      const bool separable = !groups_[g].refinement || refinements || algorithms_of[u.second].size() > 1;
      used = used || (chosen.count(u) != 0 && separable);
    }
    if (used) active.push_back(g);
  }
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(R_), static_cast<Eigen::Index>(active.size()));
  support::ParallelOptions parallel;
  parallel.threads = threads_;
  support::parallel_for(active.size(), parallel, [&](std::size_t c) {
    const std::size_t g = active[c];
    const Group& grp = groups_[g];
    double h = grp.offset ? 0.5e-6 : 0.01 * at[g];
    if (at[g] + h > grp.hi) h = -h;  // at the upper bound: step back
    std::vector<double> t = at;
    t[g] += h;
    const Simulated s = simulate_near(t, at, sim, g);
    for (std::size_t j = 0; j < R_; ++j) {
      const std::size_t i = fit_rows_[j];
      // Below a part in 1e9 of the row's time is rounding of the written figures, not an effect.
      if (std::fabs(s.time[i] - sim.time[i]) > 1e-9 * sim.time[i]) {
        J(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(c)) = (s.time[i] - sim.time[i]) / rows_[i].measured / h;
      }
    }
  });
  return J;
}

/// Columns of `J` whose group sits at a bound of its range with the loss's descent pointing out
/// of it (an active bound constraint, as in projected Gauss-Newton): such a group cannot move,
/// so it must not take the place of a group the rows cannot tell from it (a step overhead
/// clamped at 0 us would otherwise leave the base latency it shadows unfitted).
std::vector<char> Fit::pinned_at_bound(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active) const {
  std::vector<char> pinned(active.size(), 0);
  Eigen::VectorXd wr(static_cast<Eigen::Index>(R_));  // IRLS-weighted residuals: the loss's gradient is Jᵀ·wr
  for (Eigen::Index j = 0; j < wr.size(); ++j) wr[j] = c2_ == 0.0 ? r_[j] : r_[j] / (1.0 + r_[j] * r_[j] / c2_);
  for (std::size_t c = 0; c < active.size(); ++c) {
    const std::size_t g = active[c];
    const double grad = J.col(static_cast<Eigen::Index>(c)).dot(wr);
    pinned[c] = (theta_[g] <= groups_[g].lo && grad > 0) || (theta_[g] >= groups_[g].hi && grad < 0) ? 1 : 0;
  }
  return pinned;
}

/// The groups the rows can separate, in priority (group) order: a column is kept when the part
/// of it the kept columns cannot produce has norm ≥ options.separability (normalised); a group
/// pinned at a bound (pinned_at_bound) is passed over in the fit's second pass (release_pinned_). With `record` (the report
/// after the fit), no group is passed over and the groups left out get status NotSeparable and
/// the group they overlap most (a group the fit moved is reported fitted all the same).
std::vector<std::size_t> Fit::separable(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active, bool record) {
  std::vector<std::size_t> keep;
  Eigen::MatrixXd basis(static_cast<Eigen::Index>(R_), 0);
  const std::vector<char> pinned = record || !release_pinned_ ? std::vector<char>(active.size(), 0) : pinned_at_bound(J, active);
  for (std::size_t c = 0; c < active.size(); ++c) {
    const std::size_t g = active[c];
    if (pinned[c]) continue;
    Eigen::VectorXd col = J.col(static_cast<Eigen::Index>(c));
    const double norm = col.norm();
    // Material only: a typical move (1 us of latency, 10 % of a bandwidth figure) must change
    // some fitted row by at least 0.1 % — an efficiency that tiny messages barely feel is not
    // constrained by them, however distinct its (minute) effect.
    const double typical = groups_[g].offset ? 1e-6 : 0.1 * std::max(theta_[g], 1e-3);
    if (norm == 0.0 || col.cwiseAbs().maxCoeff() * typical < options_.materiality) continue;
    col /= norm;
    Eigen::VectorXd rest = col;
    if (basis.cols() > 0) rest = col - basis * (basis.transpose() * col);
    if (rest.norm() < options_.separability) {
      if (record) {
        double best = -1;
        std::size_t with = 0;
        for (std::size_t k : keep) {
          const double overlap = std::fabs(J.col(static_cast<Eigen::Index>(k)).normalized().dot(col));
          if (overlap > best) best = overlap, with = active[k];
        }
        status_[g] = CalibrationParameter::Status::NotSeparable;
        notes_[g] = "the rows cannot separate it from '" + groups_[with].name + "'";
      }
      continue;
    }
    rest.normalize();
    basis.conservativeResize(Eigen::NoChange, basis.cols() + 1);
    basis.col(basis.cols() - 1) = rest;
    keep.push_back(c);
  }
  return keep;
}

/// The fitted rows determine at most R_ parameters: of the separable columns `keep`, the groups
/// already moved stay free, and further ones are taken while fewer than R_ groups have moved, in
/// the order of a column-pivoted QR (Businger and Golub, "Linear least squares solutions by
/// Householder transformations", 1965; Eigen's ColPivHouseholderQR) of their columns scaled by
/// a typical move (1 us, 10 %) with the moved groups' span projected out: first the group whose
/// typical move changes the rows most (materiality) in a direction the others cannot produce
/// (separability). The others keep their value this iteration and are noted (held_).
std::vector<std::size_t> Fit::within_budget(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active,
                                            const std::vector<std::size_t>& keep) {
  std::size_t moved = 0;
  for (std::size_t g = 0; g < G_; ++g) moved += theta_[g] != start_[g] ? 1 : 0;
  std::vector<std::size_t> out, fresh;
  for (std::size_t c : keep) (theta_[active[c]] != start_[active[c]] ? out : fresh).push_back(c);
  if (moved + fresh.size() <= R_) return keep;
  const auto scaled = [&](std::size_t c) -> Eigen::VectorXd { return J.col(static_cast<Eigen::Index>(c)) * typical_move(active[c]); };
  // Orthonormal basis of the moved groups' scaled columns.
  Eigen::MatrixXd basis(static_cast<Eigen::Index>(R_), 0);
  for (std::size_t c : out) {
    Eigen::VectorXd v = scaled(c);
    if (basis.cols() > 0) v -= basis * (basis.transpose() * v);
    if (v.norm() == 0.0) continue;
    basis.conservativeResize(Eigen::NoChange, basis.cols() + 1);
    basis.col(basis.cols() - 1) = v.normalized();
  }
  const std::size_t room = R_ > moved ? R_ - moved : 0;
  Eigen::MatrixXd P(static_cast<Eigen::Index>(R_), static_cast<Eigen::Index>(fresh.size()));
  for (std::size_t k = 0; k < fresh.size(); ++k) {
    Eigen::VectorXd v = scaled(fresh[k]);
    if (basis.cols() > 0) v -= basis * (basis.transpose() * v);
    P.col(static_cast<Eigen::Index>(k)) = v;
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(P);
  const auto& order = qr.colsPermutation().indices();
  for (Eigen::Index k = 0; k < order.size(); ++k) {
    const std::size_t c = fresh[static_cast<std::size_t>(order[k])];
    if (static_cast<std::size_t>(k) < room) {
      out.push_back(c);
      continue;
    }
    held_[active[c]] = fmt::format(
        "held at the table's value: {} fitted rows determine at most {} parameters, and it ranks {} of {} by materiality and "
        "separability (pivoted QR of the Jacobian, columns scaled by a typical move)",
        R_, R_, moved + static_cast<std::size_t>(k) + 1, moved + fresh.size());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Fit::levenberg_marquardt() {
  for (int it = 0; it < options_.max_iterations; ++it) {
    ++iterations_;
    std::vector<std::size_t> active;
    const Eigen::MatrixXd J = jacobian(theta_, current_, active, false);
    const std::vector<std::size_t> free_cols = within_budget(J, active, separable(J, active, false));
    if (free_cols.empty()) break;
    bool converged = false;
    const bool improved = damped_steps(J, active, free_cols, converged);
    if (converged) break;
    if (!improved) {
      if (!compass_search(active, free_cols)) break;
      lambda_ = 1e-3;
    }
  }
}

/// Up to 12 damped Gauss-Newton steps on the free columns (the damping grows until one lowers
/// the loss). Returns whether one did; `converged` when its progress was under 0.1 % of the loss
/// or the rows are within 0.01 % (RMS).
bool Fit::damped_steps(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active, const std::vector<std::size_t>& free_cols,
                       bool& converged) {
  Eigen::VectorXd w(static_cast<Eigen::Index>(R_));  // IRLS weights, square-rooted
  for (Eigen::Index j = 0; j < w.size(); ++j) w[j] = c2_ == 0.0 ? 1.0 : 1.0 / std::sqrt(1.0 + r_[j] * r_[j] / c2_);
  Eigen::MatrixXd Js(static_cast<Eigen::Index>(R_), static_cast<Eigen::Index>(free_cols.size()));
  for (std::size_t k = 0; k < free_cols.size(); ++k) {
    Js.col(static_cast<Eigen::Index>(k)) = w.cwiseProduct(J.col(static_cast<Eigen::Index>(free_cols[k])));
  }
  const Eigen::MatrixXd A = Js.transpose() * Js;
  const Eigen::VectorXd grad = Js.transpose() * w.cwiseProduct(r_);
  bool improved = false;
  for (int trial = 0; trial < 12 && !improved; ++trial) {
    Eigen::MatrixXd M = A;
    M.diagonal() += lambda_ * A.diagonal();
    const Eigen::VectorXd delta = M.ldlt().solve(-grad);
    std::vector<double> t = theta_;
    for (std::size_t k = 0; k < free_cols.size(); ++k) {
      const std::size_t g = active[free_cols[k]];
      t[g] = std::clamp(theta_[g] + delta[static_cast<Eigen::Index>(k)], groups_[g].lo, groups_[g].hi);
    }
    if (t == theta_) break;
    Simulated s = simulate_at(t);
    const Eigen::VectorXd rt = residuals(s);
    const double ct = loss(rt);
    if (ct < cost_) {
      improved = true;
      const double gain = (cost_ - ct) / std::max(cost_, 1e-30);
      accept(std::move(t), std::move(s), rt, ct);
      lambda_ = std::max(lambda_ / 3.0, 1e-9);
      // Converged: progress under 0.1 % of the loss per step, or rows within 0.01 % (RMS).
      if (gain < 1e-3 || cost_ < 0.5 * static_cast<double>(R_) * 1e-8) converged = true;
    } else {
      lambda_ *= 4.0;
    }
  }
  return improved;
}

/// The Jacobian of a piecewise-linear simulation is a poor guide at a kink (NCCL's choice or a
/// pipeline's critical path switching): a compass search on the free groups (Kolda, Lewis,
/// Torczon, "Optimization by direct search", SIAM Review 2003), steps halving from the
/// difference step. Returns whether it moved (Levenberg-Marquardt then resumes).
bool Fit::compass_search(const std::vector<std::size_t>& active, const std::vector<std::size_t>& free_cols) {
  bool moved_any = false;
  for (double scale = 1.0; scale > 1.0 / 512 && !moved_any; scale /= 2) {
    for (std::size_t c : free_cols) {
      const std::size_t g = active[c];
      const double step = scale * (groups_[g].offset ? 0.5e-6 : 0.01 * theta_[g]);
      for (const double sign : {1.0, -1.0}) {
        std::vector<double> t = theta_;
        t[g] = std::clamp(theta_[g] + sign * step, groups_[g].lo, groups_[g].hi);
        if (t[g] == theta_[g]) continue;
        Simulated s = simulate_at(t);
        const Eigen::VectorXd rt = residuals(s);
        const double ct = loss(rt);
        if (ct < cost_) {
          accept(std::move(t), std::move(s), rt, ct);
          moved_any = true;
          break;
        }
      }
    }
  }
  return moved_any;
}

/// Moves that do not pay: a group returned to its table value when that costs under 0.1 % of
/// the loss (last groups first) — an offset of a few nanoseconds.
void Fit::return_unpaid_moves() {
  for (std::size_t g = G_; g-- > 0;) {
    if (theta_[g] == start_[g]) continue;
    std::vector<double> t = theta_;
    t[g] = start_[g];
    Simulated s = simulate_at(t);
    const Eigen::VectorXd rt = residuals(s);
    const double ct = loss(rt);
    if (ct <= cost_ + 1e-3 * cost_ + 1e-12) accept(std::move(t), std::move(s), rt, std::min(cost_, ct));
  }
}

/// Fitted rows each active group moves in `J` (indices into the rows).
std::vector<std::set<std::size_t>> Fit::rows_moved(const Eigen::MatrixXd& J, const std::vector<std::size_t>& active) const {
  std::vector<std::set<std::size_t>> out(G_);
  for (std::size_t c = 0; c < active.size(); ++c) {
    for (std::size_t j = 0; j < R_; ++j)
      if (J(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(c)) != 0.0) out[active[c]].insert(fit_rows_[j]);
  }
  return out;
}

/// Unless options.free_unused, every figure the fit writes is one some fitted row rests
/// on. A group moved only so that NCCL's choice lands elsewhere (no fitted row uses it at the
/// fitted values — an NVLS efficiency pushed to 1 %, a Simple step raised until LL wins) changes
/// other layouts the table is used for: it is returned to the table's value and frozen.
/// Returns whether one was (the fit then resumes, explaining those rows with the figures of the
/// choice they then take, usually a worse fit of the measured log).
bool Fit::freeze_unused() {
  std::vector<std::size_t> active;
  const Eigen::MatrixXd J = jacobian(theta_, current_, active, true);
  const std::vector<std::set<std::size_t>> uses = rows_moved(J, active);
  bool reverted = false;
  for (std::size_t g = 0; g < G_; ++g) {
    if (theta_[g] == start_[g] || !uses[g].empty()) continue;
    theta_[g] = start_[g];
    frozen_[g] = 1;
    notes_[g] = kUnusedAtFit;
    reverted = true;
  }
  return reverted;
}

void Fit::run() {
  // The free fit's state, kept in case the rows cannot be explained with the figures it moved
  // only to change NCCL's choice put back (see below).
  struct State {
    std::vector<double> theta;
    Simulated current;
    Eigen::VectorXd r;
    double cost = 0;
    std::vector<char> frozen;
    std::vector<std::string> notes;
  };
  std::optional<State> free_fit;
  for (int round = 0; round < 4; ++round) {
    round_ = round;
    // Least squares first, then the robust loss from its solution (the usual start of iteratively
    // reweighted least squares: from the table's values the reweighting alone can settle in a
    // worse local minimum where NCCL's choice switches).
    const double robust_c2 = c2_;
    c2_ = 0.0;
    cost_ = loss(r_);
    levenberg_marquardt();
    c2_ = robust_c2;
    cost_ = loss(r_);
    if (c2_ > 0) levenberg_marquardt();
    release_pinned_ = true;
    levenberg_marquardt();
    release_pinned_ = false;
    return_unpaid_moves();
    if (options_.free_unused) break;
    if (!free_fit) free_fit = State{theta_, current_, r_, cost_, frozen_, notes_};
    if (!freeze_unused()) break;
    current_ = simulate_at(theta_);
    r_ = residuals(current_);
    cost_ = loss(r_);
    lambda_ = 1e-3;
  }
  // Putting those figures back is the better explanation only where the rows are still
  // explained: a short log of one collective whose every protocol is slower than the table's
  // (all three raised; LL then loses to LL128) has no other figure to carry the time once LL's
  // are back. The frozen fit is kept when its RMS relative error on the fitted rows is at most
  // twice the free fit's or 10 %; otherwise the free fit is the result,
  // and its notes say why the figures stayed moved.
  if (free_fit) {
    const auto rms = [](const Eigen::VectorXd& r) { return r.size() == 0 ? 0.0 : std::sqrt(r.squaredNorm() / static_cast<double>(r.size())); };
    const double frozen_rms = rms(r_), free_rms = rms(free_fit->r);
    if (frozen_rms > std::max(2.0 * free_rms, 0.10)) {
      std::vector<std::size_t> kept;
      for (std::size_t g = 0; g < G_; ++g)
        if (frozen_[g] && !free_fit->frozen[g] && free_fit->theta[g] != start_[g]) kept.push_back(g);
      theta_ = std::move(free_fit->theta);
      current_ = std::move(free_fit->current);
      r_ = free_fit->r;
      cost_ = free_fit->cost;
      frozen_ = std::move(free_fit->frozen);
      notes_ = std::move(free_fit->notes);
      for (std::size_t g : kept) {
        kept_moved_[g] = fmt::format(
            "moved so that NCCL's choice is another one, and kept: with it at the table's value the fitted rows are {:.1f} % off "
            "(RMS) against {:.1f} %",
            100.0 * frozen_rms, 100.0 * free_rms);
      }
    }
  }
}

void Fit::classify() {
  // What the fitted table's rows depend on, and what the rows could not separate.
  std::vector<std::size_t> active;
  const Eigen::MatrixXd J = jacobian(theta_, current_, active, true);
  (void)separable(J, active, true);
  const std::vector<std::set<std::size_t>> moved = rows_moved(J, active);
  for (std::size_t g = 0; g < G_; ++g) moved_[g].insert(moved[g].begin(), moved[g].end());
  for (std::size_t g = 0; g < G_; ++g) {
    if (!held_[g].empty() && status_[g] != CalibrationParameter::Status::NotSeparable) {
      status_[g] = CalibrationParameter::Status::Held;
      notes_[g] = held_[g];
    }
    if (frozen_[g] && status_[g] != CalibrationParameter::Status::NotSeparable) {
      status_[g] = CalibrationParameter::Status::Unconstrained;
      notes_[g] = kUnusedAtFit;
    }
    if (theta_[g] == start_[g]) continue;
    status_[g] = CalibrationParameter::Status::Fitted;
    if (moved_[g].empty()) {
      notes_[g] = !kept_moved_[g].empty() ? kept_moved_[g]
                                          : "no fitted row uses these figures at the fitted values: they were moved so that NCCL's choice is another one";
    } else {
      notes_[g].clear();
    }
  }
  int fitted_groups = 0;
  for (std::size_t g = 0; g < G_; ++g) fitted_groups += status_[g] == CalibrationParameter::Status::Fitted ? 1 : 0;
  // within_budget() lets no more groups move than there are fitted rows.
  if (static_cast<std::size_t>(fitted_groups) > R_) {
    throw std::logic_error(fmt::format("calibrate: {} groups fitted to {} rows", fitted_groups, R_));
  }
}

CalibrationResult Fit::result() && {
  CalibrationResult result;
  result.iterations = iterations_;
  result.table = apply(base_.node, groups_, theta_);
  for (std::size_t g = 0; g < G_; ++g) {
    CalibrationParameter p;
    p.name = groups_[g].name;
    p.offset = groups_[g].offset;
    const double neutral_value = groups_[g].offset ? 0.0 : 1.0;
    p.status = status_[g];
    p.value = status_[g] == CalibrationParameter::Status::Fitted ? theta_[g] : neutral_value;
    p.note = notes_[g];
    if (p.status == CalibrationParameter::Status::Unconstrained) {
      p.note = moved_[g].empty() ? "no fitted row depends on it" : "the fit kept the table's value";
    }
    for (const Member& m : groups_[g].members) {
      // The figure the table holds (several groups may move one figure: shared and per-algorithm offsets).
      YAML::Node v = find_node(result.table, m.address.keys);
      if (m.address.index >= 0) v.reset(v[static_cast<std::size_t>(m.address.index)]);
      p.members.push_back({m.address.text(), rounded(m.base, groups_[g].unit), parse_value(v, groups_[g].unit)});
    }
    p.rows.assign(moved_[g].begin(), moved_[g].end());
    if (p.status == CalibrationParameter::Status::Fitted) ++result.fitted;
    result.parameters.push_back(std::move(p));
  }
  result.before = simulate_rows(cluster_, base_, rows_, &result.choice_before);
  result.after = simulate_rows(cluster_, {result.table, nullptr}, rows_, &result.choice_after);
  return result;
}

/// The architecture the table's per-family rows are read for: NCCL tunes by the lowest compute
/// capability of the ranks (the first row's).
std::string fit_architecture(const models::Cluster& cluster, const std::vector<CalibrationRow>& rows) {
  const auto& gpus = cluster.topology.gpus();
  const int n = std::min<int>(rows.front().nranks, static_cast<int>(gpus.size()));
  std::vector<models::DeviceId> ranks(gpus.begin(), gpus.begin() + std::max(1, n));
  const planner::ProtocolContext context = planner::protocol_context(cluster, ranks, nullptr);
  return context.archs.empty() ? std::string() : planner::tuning_architecture(context.archs);
}

}  // namespace

CalibrationResult calibrate(const models::Cluster& cluster, const support::YamlSource& base, const std::vector<CalibrationRow>& rows,
                            const CalibrateOptions& options) {
  (void)planner::CostModel::from_yaml(base);  // a bad base table is an InputError before any work
  std::vector<std::size_t> fit_rows;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].fit) fit_rows.push_back(i);
  if (fit_rows.empty()) throw CalibrationError("no rows are left to fit (every row is held out)");
  for (const CalibrationRow& r : rows) {
    if (!(r.measured > 0) || !std::isfinite(r.measured)) {
      throw CalibrationError(fmt::format("{}:{}: a measured time must be above 0", r.log, r.line));
    }
  }
  Fit fit(cluster, base, rows, options, std::move(fit_rows), make_groups(base.node, cluster, fit_architecture(cluster, rows)));
  fit.run();
  fit.classify();
  return std::move(fit).result();
}

}  // namespace ccsim::validate
