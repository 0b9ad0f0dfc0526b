#include "validate/calibrate/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "support/input_error.hpp"
#include "support/units.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/tuning/protocol_rules.hpp"
#include "validate/calibrate/calibration_groups.hpp"

namespace ccsim::validate {

namespace {

using planner::Protocol;
using namespace calibration;

// ---------------------------------------------------------------------------------------------
// Simulation of the rows.

struct Simulated {
  std::vector<double> time;                                  // seconds per row (NaN when not asked)
  std::vector<std::pair<std::string, Protocol>> choice;      // table name and protocol per row
  std::vector<std::string> label;                            // "ring/LL128"
};

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
  const auto& gpus = cluster.topology.gpus();
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
      if (r.nranks < 1 || static_cast<std::size_t>(r.nranks) > gpus.size()) {
        throw std::invalid_argument(fmt::format("{}:{}: the log has {} ranks but the scenario's cluster has {} GPUs", r.log, r.line,
                                                r.nranks, gpus.size()));
      }
      planner::CollectiveOptions opts;
      opts.collective = r.collective;
      opts.element_size = r.element;
      opts.check_bound = false;
      opts.algorithm = r.algorithm;
      opts.protocol = r.protocol;
      opts.gpus.assign(gpus.begin(), gpus.begin() + r.nranks);
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

/// Runs `jobs` functions on up to `threads` threads.
void parallel_for(std::size_t jobs, int threads, const std::function<void(std::size_t)>& body) {
  const std::size_t n = std::min<std::size_t>(jobs, static_cast<std::size_t>(std::max(1, threads)));
  if (n <= 1) {
    for (std::size_t j = 0; j < jobs; ++j) body(j);
    return;
  }
  std::vector<std::exception_ptr> errors(jobs);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < n; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t j = t; j < jobs; j += n) {
        try {
          body(j);
        } catch (...) {
          errors[j] = std::current_exception();
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
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

CalibrationResult calibrate(const models::Cluster& cluster, const support::YamlSource& base, const std::vector<CalibrationRow>& rows,
                            const CalibrateOptions& options) {
  (void)planner::CostModel::from_yaml(base);  // a bad base table is an InputError before any work
  std::vector<std::size_t> fit_rows;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].fit) fit_rows.push_back(i);
  if (fit_rows.empty()) throw CalibrationError("no rows are left to fit (every size is held out)");
  for (const CalibrationRow& r : rows) {
    if (!(r.measured > 0) || !std::isfinite(r.measured)) {
      throw CalibrationError(fmt::format("{}:{}: a measured time must be above 0", r.log, r.line));
    }
  }
  // The architecture the table's per-family rows are read for: NCCL tunes by the lowest
  // compute capability of the ranks (the first row's).
  std::string arch;
  {
    const auto& gpus = cluster.topology.gpus();
    const int n = std::min<int>(rows.front().nranks, static_cast<int>(gpus.size()));
    std::vector<models::DeviceId> ranks(gpus.begin(), gpus.begin() + std::max(1, n));
    const planner::ProtocolContext context = planner::protocol_context(cluster, ranks, nullptr);
    arch = context.archs.empty() ? std::string() : planner::tuning_architecture(context.archs);
  }
  const std::vector<Group> groups = make_groups(base.node, cluster, arch);
  const std::size_t G = groups.size();
  const std::size_t R = fit_rows.size();
  std::vector<char> want_fit(rows.size(), 0);
  for (std::size_t i : fit_rows) want_fit[i] = 1;
  const int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const auto residuals = [&](const Simulated& s) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(R));
    for (std::size_t j = 0; j < R; ++j) r[static_cast<Eigen::Index>(j)] = (s.time[fit_rows[j]] - rows[fit_rows[j]].measured) / rows[fit_rows[j]].measured;
    return r;
  };

  CalibrationResult result;
  std::vector<double> theta = neutral(groups);
  Simulated current = simulate(cluster, apply(base.node, groups, theta), rows, want_fit);
  Eigen::VectorXd r = residuals(current);
  // Robust loss: Cauchy's ρ(r) = c²/2 · ln(1 + (r/c)²) of the relative residual, minimised by
  // iteratively reweighted least squares (weights 1 / (1 + (r/c)²) each iteration), so a
  // warm-up row tens of percent off does not pull the fit; plain squares with c = +inf.
  double c2 = options.robust_scale > 0 ? options.robust_scale * options.robust_scale : 0.0;
  const auto loss = [&](const Eigen::VectorXd& res) {
    if (c2 == 0.0) return 0.5 * res.squaredNorm();
    double sum = 0;
    for (Eigen::Index j = 0; j < res.size(); ++j) sum += 0.5 * c2 * std::log1p(res[j] * res[j] / c2);
    return sum;
  };
  double cost = loss(r);
  std::vector<CalibrationParameter::Status> status(G, CalibrationParameter::Status::Unconstrained);
  std::vector<std::string> notes(G);
  std::vector<std::set<std::size_t>> moved(G);  // fitted rows each group moves at the fitted values
  std::vector<char> frozen(G, 0);                 // held at the table's value (see below)
  // Columns of the Jacobian for the groups a fitted row uses at `at` (forward differences).
  const auto jacobian = [&](const std::vector<double>& at, const Simulated& sim, std::vector<std::size_t>& active, bool refinements) {
    std::set<std::pair<std::string, Protocol>> chosen;
    std::map<Protocol, std::set<std::string>> algorithms_of;
    for (std::size_t i : fit_rows) {
      chosen.insert(sim.choice[i]);
      algorithms_of[sim.choice[i].second].insert(sim.choice[i].first);
    }
    active.clear();
    for (std::size_t g = 0; g < G; ++g) {
      if (frozen[g]) continue;
      bool used = groups[g].used_by.empty();
      for (const auto& u : groups[g].used_by) {
        const bool separable = !groups[g].refinement || refinements || algorithms_of[u.second].size() > 1;
        used = used || (chosen.count(u) != 0 && separable);
      }
      if (used) active.push_back(g);
    }
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(R), static_cast<Eigen::Index>(active.size()));
    parallel_for(active.size(), threads, [&](std::size_t c) {
      const std::size_t g = active[c];
      const Group& grp = groups[g];
      double h = grp.offset ? 0.5e-6 : 0.01 * at[g];
      if (at[g] + h > grp.hi) h = -h;  // at the upper bound: step back
      std::vector<double> t = at;
      t[g] += h;
      const Simulated s = simulate(cluster, apply(base.node, groups, t), rows, want_fit);
      for (std::size_t j = 0; j < R; ++j) {
        const std::size_t i = fit_rows[j];
        // Below a part in 1e9 of the row's time is rounding of the written figures, not an effect.
        if (std::fabs(s.time[i] - sim.time[i]) > 1e-9 * sim.time[i]) {
          J(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(c)) = (s.time[i] - sim.time[i]) / rows[i].measured / h;
        }
      }
    });
    return J;
  };
  // The groups the rows can separate, in priority (group) order: a column is kept when the
  // part of it the kept columns cannot produce has norm ≥ options.separability (normalised).
  const auto separable = [&](const Eigen::MatrixXd& J, const std::vector<std::size_t>& active, bool record) {
    std::vector<std::size_t> keep;
    Eigen::MatrixXd basis(static_cast<Eigen::Index>(R), 0);
    for (std::size_t c = 0; c < active.size(); ++c) {
      const std::size_t g = active[c];
      Eigen::VectorXd col = J.col(static_cast<Eigen::Index>(c));
      const double norm = col.norm();
      // Material only: a typical move (1 us of latency, 10 % of a bandwidth figure) must change
      // some fitted row by at least 0.1 % — an efficiency that tiny messages barely feel is not
      // constrained by them, however distinct its (minute) effect.
      const double typical = groups[g].offset ? 1e-6 : 0.1 * std::max(theta[g], 1e-3);
      if (norm == 0.0 || col.cwiseAbs().maxCoeff() * typical < options.materiality) continue;
      col /= norm;
      Eigen::VectorXd rest = col;
      if (basis.cols() > 0) rest = col - basis * (basis.transpose() * col);
      if (rest.norm() < options.separability) {
        if (record) {
          double best = -1;
          std::size_t with = 0;
          for (std::size_t k : keep) {
            const double overlap = std::fabs(J.col(static_cast<Eigen::Index>(k)).normalized().dot(col));
            if (overlap > best) best = overlap, with = active[k];
          }
          status[g] = CalibrationParameter::Status::NotSeparable;
          notes[g] = "the rows cannot separate it from '" + groups[with].name + "'";
        }
        continue;
      }
      rest.normalize();
      basis.conservativeResize(Eigen::NoChange, basis.cols() + 1);
      basis.col(basis.cols() - 1) = rest;
      keep.push_back(c);
    }
    return keep;
  };
  double lambda = 1e-3;
  const auto levenberg_marquardt = [&] {
  for (int it = 0; it < options.max_iterations; ++it) {
    ++result.iterations;
    std::vector<std::size_t> active;
    const Eigen::MatrixXd J = jacobian(theta, current, active, false);
    const std::vector<std::size_t> free_cols = separable(J, active, false);
    if (free_cols.empty()) break;
    Eigen::VectorXd w(static_cast<Eigen::Index>(R));  // IRLS weights, square-rooted
    for (Eigen::Index j = 0; j < w.size(); ++j) w[j] = c2 == 0.0 ? 1.0 : 1.0 / std::sqrt(1.0 + r[j] * r[j] / c2);
    Eigen::MatrixXd Js(static_cast<Eigen::Index>(R), static_cast<Eigen::Index>(free_cols.size()));
    for (std::size_t k = 0; k < free_cols.size(); ++k) {
      Js.col(static_cast<Eigen::Index>(k)) = w.cwiseProduct(J.col(static_cast<Eigen::Index>(free_cols[k])));
    }
    const Eigen::MatrixXd A = Js.transpose() * Js;
    const Eigen::VectorXd grad = Js.transpose() * w.cwiseProduct(r);
    bool improved = false;
    for (int trial = 0; trial < 12 && !improved; ++trial) {
      Eigen::MatrixXd M = A;
      M.diagonal() += lambda * A.diagonal();
      const Eigen::VectorXd delta = M.ldlt().solve(-grad);
      std::vector<double> t = theta;
      for (std::size_t k = 0; k < free_cols.size(); ++k) {
        const std::size_t g = active[free_cols[k]];
        t[g] = std::clamp(theta[g] + delta[static_cast<Eigen::Index>(k)], groups[g].lo, groups[g].hi);
      }
      if (t == theta) break;
      Simulated s = simulate(cluster, apply(base.node, groups, t), rows, want_fit);
      const Eigen::VectorXd rt = residuals(s);
      const double ct = loss(rt);
      if (ct < cost) {
        improved = true;
        const double gain = (cost - ct) / std::max(cost, 1e-30);
        theta = std::move(t);
        current = std::move(s);
        r = rt;
        cost = ct;
        lambda = std::max(lambda / 3.0, 1e-9);
        // Converged: progress under 0.1 % of the loss per step, or rows within 0.01 % (RMS).
        if (gain < 1e-3 || cost < 0.5 * static_cast<double>(R) * 1e-8) it = options.max_iterations;
      } else {
        lambda *= 4.0;
      }
    }
    if (!improved) {
      // The Jacobian of a piecewise-linear simulation is a poor guide at a kink (NCCL's choice
      // or a pipeline's critical path switching): fall back to a compass search on the free
      // groups (Kolda, Lewis, Torczon, "Optimization by direct search", SIAM Review 2003),
      // steps halving from the difference step, and return to Levenberg-Marquardt if it helps.
      bool moved_any = false;
      for (double scale = 1.0; scale > 1.0 / 512 && !moved_any; scale /= 2) {
        for (std::size_t c : free_cols) {
          const std::size_t g = active[c];
          const double step = scale * (groups[g].offset ? 0.5e-6 : 0.01 * theta[g]);
          for (const double sign : {1.0, -1.0}) {
            std::vector<double> t = theta;
            t[g] = std::clamp(theta[g] + sign * step, groups[g].lo, groups[g].hi);
            if (t[g] == theta[g]) continue;
            Simulated s = simulate(cluster, apply(base.node, groups, t), rows, want_fit);
            const Eigen::VectorXd rt = residuals(s);
            const double ct = loss(rt);
            if (ct < cost) {
              theta = std::move(t);
              current = std::move(s);
              r = rt;
              cost = ct;
              moved_any = true;
              break;
            }
          }
        }
      }
      if (!moved_any) break;
      lambda = 1e-3;
    }
  }
  };
  const std::vector<double> start = neutral(groups);
  // Which fitted rows each group moves at `theta` (all groups a chosen pair uses).
  const auto rows_moved = [&]() {
    std::vector<std::size_t> active;
    const Eigen::MatrixXd J = jacobian(theta, current, active, true);
    std::vector<std::set<std::size_t>> out(G);
    for (std::size_t c = 0; c < active.size(); ++c) {
      for (std::size_t j = 0; j < R; ++j)
        if (J(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(c)) != 0.0) out[active[c]].insert(fit_rows[j]);
    }
    return out;
  };
  const auto resimulate = [&]() {
    current = simulate(cluster, apply(base.node, groups, theta), rows, want_fit);
    r = residuals(current);
    cost = loss(r);
  };
  // With options.only_used_figures, every figure the fit writes is one some fitted row rests
  // on. A group moved only so that NCCL's choice lands elsewhere (no fitted row uses it at the
  // fitted values — an NVLS efficiency pushed to 1 %, a Simple step raised until LL wins)
  // changes other layouts the table is used for: it is returned to the table's value and
  // frozen, and the fit resumes, explaining those rows with the figures of the choice they
  // then take (usually a worse fit of the measured log).
  for (int round = 0; round < 4; ++round) {
    // Least squares first, then the robust loss from its solution (the usual start of iteratively
    // reweighted least squares: from the table's values the reweighting alone can settle in a
    // worse local minimum where NCCL's choice switches).
    const double robust_c2 = c2;
    c2 = 0.0;
    cost = loss(r);
    levenberg_marquardt();
    c2 = robust_c2;
    cost = loss(r);
    if (c2 > 0) levenberg_marquardt();
    // Moves that do not pay: a group returned to its table value when that costs under 0.1 % of
    // the loss (last groups first) — an offset of a few nanoseconds.
    for (std::size_t g = G; g-- > 0;) {
      if (theta[g] == start[g]) continue;
      std::vector<double> t = theta;
      t[g] = start[g];
      Simulated s = simulate(cluster, apply(base.node, groups, t), rows, want_fit);
      const Eigen::VectorXd rt = residuals(s);
      const double ct = loss(rt);
      if (ct <= cost + 1e-3 * cost + 1e-12) {
        theta = std::move(t);
        current = std::move(s);
        r = rt;
        cost = std::min(cost, ct);
      }
    }
    if (!options.only_used_figures) break;
    const std::vector<std::set<std::size_t>> uses = rows_moved();
    bool reverted = false;
    for (std::size_t g = 0; g < G; ++g) {
      if (theta[g] == start[g] || !uses[g].empty()) continue;
      theta[g] = start[g];
      frozen[g] = 1;
      notes[g] = "no fitted row uses these figures once NCCL's choice is fitted: kept at the table's value";
      reverted = true;
    }
    if (!reverted) break;
    resimulate();
    lambda = 1e-3;
  }

  // What the fitted table's rows depend on, and what the rows could not separate.
  {
    std::vector<std::size_t> active;
    const Eigen::MatrixXd J = jacobian(theta, current, active, true);
    (void)separable(J, active, true);
    for (std::size_t c = 0; c < active.size(); ++c) {
      for (std::size_t j = 0; j < R; ++j)
        if (J(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(c)) != 0.0) moved[active[c]].insert(fit_rows[j]);
    }
    for (std::size_t g = 0; g < G; ++g) {
      if (frozen[g] && status[g] != CalibrationParameter::Status::NotSeparable) {
        status[g] = CalibrationParameter::Status::Unconstrained;
        notes[g] = "no fitted row uses these figures once NCCL's choice is fitted: kept at the table's value";
      }
      if (theta[g] == start[g]) continue;
      status[g] = CalibrationParameter::Status::Fitted;
      if (moved[g].empty()) {
        notes[g] = "no fitted row uses these figures at the fitted values: they were moved so that NCCL's choice is another one";
      } else {
        notes[g].clear();
      }
    }
  }
  int fitted_groups = 0;
  for (std::size_t g = 0; g < G; ++g) fitted_groups += status[g] == CalibrationParameter::Status::Fitted ? 1 : 0;
  if (static_cast<std::size_t>(fitted_groups) > R) {
    throw CalibrationError(fmt::format("{} fitted rows cannot determine the {} parameters this fit needs; measure more sizes or hold out fewer",
                                       R, fitted_groups));
  }

  // The fitted table and the report.
  result.table = apply(base.node, groups, theta);
  for (std::size_t g = 0; g < G; ++g) {
    CalibrationParameter p;
    p.name = groups[g].name;
    p.offset = groups[g].offset;
    const double neutral_value = groups[g].offset ? 0.0 : 1.0;
    p.status = status[g];
    p.value = status[g] == CalibrationParameter::Status::Fitted ? theta[g] : neutral_value;
    p.note = notes[g];
    if (p.status == CalibrationParameter::Status::Unconstrained) {
      p.note = moved[g].empty() ? "no fitted row depends on it" : "the fit kept the table's value";
    }
    for (const Member& m : groups[g].members) {
      // The figure the table holds (several groups may move one figure: shared and per-algorithm offsets).
      YAML::Node v = find_node(result.table, m.address.keys);
      if (m.address.index >= 0) v.reset(v[static_cast<std::size_t>(m.address.index)]);
      p.members.push_back({m.address.text(), rounded(m.base, groups[g].unit), parse_value(v, groups[g].unit)});
    }
    p.rows.assign(moved[g].begin(), moved[g].end());
    if (p.status == CalibrationParameter::Status::Fitted) ++result.fitted;
    result.parameters.push_back(std::move(p));
  }
  result.before = simulate_rows(cluster, base, rows, &result.choice_before);
  result.after = simulate_rows(cluster, {result.table, nullptr}, rows, &result.choice_after);
  return result;
}

}  // namespace ccsim::validate
