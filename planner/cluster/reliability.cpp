#include "planner/cluster/reliability.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>

namespace ccsim::planner {
namespace {

/// A uniform double in (0, 1] from 53 random bits: the same on every standard library (the
/// library's distributions are not specified bit for bit).
double uniform(std::mt19937_64& g) { return (static_cast<double>(g() >> 11) + 1.0) * 0x1.0p-53; }

/// Exponential waiting time of rate `rate`, s.
double exponential(std::mt19937_64& g, double rate) { return -std::log(uniform(g)) / rate; }

/// One sample's totals.
struct SampleTotals {
  double wall = 0, tokens = 0, saves = 0;
  bool finished = false;
  std::vector<ClassCost> classes;
};

/// The step-time cache shared by every sample (and every interval of a search): keyed on the
/// dropped replicas per replica class, the explicit equivalence of replicas.
class StepTimes {
 public:
  explicit StepTimes(const ReliabilityJob& job) : job_(job) {}
  double operator()(const std::vector<int>& dead) {
    auto it = cache_.find(dead);
    if (it != cache_.end()) return it->second;
    double t = job_.step_time(dead);
    if (t == 0) t = std::numeric_limits<double>::infinity();  // the job does not run at this size
    if (!(t > 0) || std::isnan(t)) throw std::invalid_argument("reliability: the engine gave a negative step time");
    if (std::isinf(t) && std::all_of(dead.begin(), dead.end(), [](int d) { return d == 0; })) {
      throw std::invalid_argument("reliability: the full job does not run (step time 0)");
    }
    return cache_.emplace(dead, t).first->second;
  }
  std::size_t size() const { return cache_.size(); }

 private:
  const ReliabilityJob& job_;
  std::map<std::vector<int>, double> cache_;
};

class Sampler {
 public:
  Sampler(const ReliabilityJob& job, const RecoverySettings& s, StepTimes& steps)
      : job_(job), s_(s), steps_(steps), classes_(job.replica_class.empty() ? 1 : 1 + *std::max_element(job.replica_class.begin(), job.replica_class.end())) {
    for (const auto& c : job.classes) total_rate_ += c.rate;
    full_step_ = steps_(std::vector<int>(static_cast<std::size_t>(classes_), 0));
    full_rate_ = job.tokens_per_step / full_step_;
  }
  double full_rate() const { return full_rate_; }
  double job_rate() const { return total_rate_; }

  SampleTotals run(std::uint64_t stream) {
    g_.seed(stream);
    reset();
    // Without a duration a run that cannot reach its budget (failures faster than checkpoints)
    // stops at 20 times its failure-free length, unfinished (an ETTR under 5 %).
    horizon_ = s_.duration > 0 ? s_.duration : std::min(20.0 * s_.tokens / full_rate_, 3.1536e9);  // at most 100 years
    const double horizon = horizon_;
    const double budget = s_.tokens > 0 ? s_.tokens : std::numeric_limits<double>::infinity();
    while (t_ < horizon && done_ < budget) {
      refresh_rate();
      double gap = exponential(g_, total_rate_ * live_fraction());
      bool failed = false;
      while (!failed && t_ < horizon && done_ < budget) {
        // Whole failure-free checkpoint cycles at once (none when a shrunk job may grow back at a checkpoint).
        if (cs_ == 0 && growth_blocked_until() > t_) {
          const double cycle = s_.interval + s_.save;
          double k = std::floor(gap / cycle);
          k = std::min(k, std::floor((growth_blocked_until() - t_) / cycle) - 1);
          k = std::min(k, std::floor((budget - done_) / (rate_ * s_.interval)) - 1);
          k = std::min(k, std::floor((horizon - t_) / cycle) - 1);
          if (k >= 1) {
            advance_compute(k * s_.interval);
            t_ += k * s_.save;
            out_.saves += k * s_.save;
            gap -= k * cycle;
            ckpt_ = done_;
            cs_ = 0;
          }
        }
        // Compute up to the next checkpoint, the budget or the horizon.
        const double len = std::min(s_.interval - cs_, (budget - done_) / rate_);
        if (gap < len && t_ + gap < horizon) {
          advance_compute(gap);
          failure();
          failed = true;
          break;
        }
        if (t_ + len >= horizon) {
          advance_compute(horizon - t_);
          break;
        }
        advance_compute(len);
        gap -= len;
        if (done_ >= budget * (1 - 1e-12)) {
          done_ = std::max(done_, budget);
          break;
        }
        // The save.
        if (gap < s_.save) {
          t_ += gap;
          out_.saves += gap;
          failure();
          failed = true;
          break;
        }
        if (t_ + s_.save >= horizon) {
          out_.saves += horizon - t_;
          t_ = horizon;
          break;
        }
        t_ += s_.save;
        out_.saves += s_.save;
        gap -= s_.save;
        ckpt_ = done_;
        cs_ = 0;
        if (s_.shrink && growth_blocked_until() <= t_ && grow()) break;  // the restart ends this failure-free stretch: a fresh draw
      }
    }
    out_.wall = std::min(t_, horizon);
    out_.tokens = std::min(done_, budget);
    out_.finished = done_ >= budget * (1 - 1e-12) || s_.tokens <= 0;
    return out_;
  }

 private:
  void reset() {
    t_ = done_ = ckpt_ = cs_ = 0;
    out_ = {};
    for (const auto& c : job_.classes) out_.classes.push_back({c.name});
    free_spares_ = s_.spare_nodes;
    returns_ = {};
    node_failed_.assign(static_cast<std::size_t>(job_.nodes), 0);
    failed_nodes_.clear();
    replica_failed_nodes_.assign(static_cast<std::size_t>(job_.dp), 0);
    replica_cause_.assign(static_cast<std::size_t>(job_.dp), -1);
    dead_.assign(static_cast<std::size_t>(classes_), 0);
    dead_total_ = 0;
    rate_ = full_rate_;
  }

  double live_fraction() const { return s_.shrink ? static_cast<double>(job_.dp - dead_total_) / job_.dp : 1.0; }

  void refresh_rate() {
    if (dead_total_ == 0) {
      rate_ = full_rate_;
      return;
    }
    // A shrunk job that outruns the full one (the slow replica dropped from a mixed cluster) is
    // counted at the full job's rate: ETTR measures against the full job and stays ≤ 1.
    rate_ = std::min(full_rate_, job_.tokens_per_step * (job_.dp - dead_total_) / job_.dp / steps_(dead_));
  }

  /// `dt` seconds of compute at the current rate: the tokens, and the throughput lost at reduced
  /// DP charged to the classes that dropped replicas, in proportion.
  void advance_compute(double dt) {
    t_ += dt;
    cs_ += dt;
    done_ += rate_ * dt;
    if (dead_total_ > 0) {
      const double lost = dt * (1.0 - rate_ / full_rate_);
      for (int cause : replica_cause_)
        if (cause >= 0) out_.classes[static_cast<std::size_t>(cause)].reduced += lost / dead_total_;
    }
  }

  /// Repaired nodes whose time has come join the spares.
  void collect_returns() {
    while (!returns_.empty() && returns_.top() <= t_) {
      returns_.pop();
      if (free_spares_ >= 0) ++free_spares_;
    }
  }

  /// A replacement node for the job now: a free spare, else wait for the first repair. Returns
  /// the seconds waited.
  double take_node(bool wait) {
    if (free_spares_ < 0) return 0;
    collect_returns();
    if (free_spares_ > 0) {
      --free_spares_;
      return 0;
    }
    if (!wait || returns_.empty()) return -1;
    const double at = returns_.top();
    returns_.pop();
    return at - t_;
  }

  /// Until when no checkpoint can grow the job back: forever when no replica is dropped, the
  /// first repair's return when the spares are used up, now otherwise.
  double growth_blocked_until() {
    if (dead_total_ == 0) return std::numeric_limits<double>::infinity();
    if (free_spares_ != 0) return t_;
    collect_returns();
    if (free_spares_ != 0) return t_;
    return returns_.empty() ? std::numeric_limits<double>::infinity() : returns_.top();
  }

  void fail_node(int node) {
    if (node_failed_[static_cast<std::size_t>(node)]) return;
    node_failed_[static_cast<std::size_t>(node)] = 1;
    failed_nodes_.push_back(node);
    for (int r : job_.node_replicas[static_cast<std::size_t>(node)]) ++replica_failed_nodes_[static_cast<std::size_t>(r)];
  }

  void heal_node(std::size_t index) {
    const int node = failed_nodes_[index];
    node_failed_[static_cast<std::size_t>(node)] = 0;
    for (int r : job_.node_replicas[static_cast<std::size_t>(node)]) --replica_failed_nodes_[static_cast<std::size_t>(r)];
    failed_nodes_[index] = failed_nodes_.back();
    failed_nodes_.pop_back();
  }

  /// At a checkpoint (or a restart), failed nodes take spares and whole replicas rejoin; a growth
  /// costs restart + load, charged to the classes that dropped the replicas. True when it grew.
  bool grow(int charge_to = -1, bool restarting = false) {
    if (dead_total_ == 0) return false;
    for (std::size_t i = failed_nodes_.size(); i-- > 0;) {
      if (take_node(false) < 0) break;
      heal_node(i);
    }
    std::vector<int> causes;
    for (std::size_t r = 0; r < replica_cause_.size(); ++r) {
      if (replica_cause_[r] < 0 || replica_failed_nodes_[r] > 0) continue;
      causes.push_back(replica_cause_[r]);
      replica_cause_[r] = -1;
      --dead_[static_cast<std::size_t>(job_.replica_class.empty() ? 0 : job_.replica_class[r])];
      --dead_total_;
    }
    if (causes.empty()) return false;
    refresh_rate();
    if (restarting) return true;  // the restart under way pays for it
    const double cost = down(s_.restart + s_.load);
    for (int c : causes) out_.classes[static_cast<std::size_t>(charge_to >= 0 ? charge_to : c)].downtime += cost / causes.size();
    return true;
  }

  /// `dt` seconds down: the part before the horizon, which the clock advances by.
  double down(double dt) {
    const double spent = std::max(0.0, std::min(dt, horizon_ - t_));
    t_ += dt;
    return spent;
  }

  int draw_class() {
    double x = uniform(g_) * total_rate_;
    for (std::size_t c = 0; c < job_.classes.size(); ++c) {
      x -= job_.classes[c].rate;
      if (x <= 0) return static_cast<int>(c);
    }
    return static_cast<int>(job_.classes.size()) - 1;
  }

  void failure() {
    const int c = draw_class();
    ClassCost& cost = out_.classes[static_cast<std::size_t>(c)];
    cost.events += 1;
    int node = -1;
    if (s_.shrink && job_.classes[static_cast<std::size_t>(c)].removes_node) {
      // A node of a live replica fails: its replicas leave; the step in flight is lost.
      for (int tries = 0; tries < 64; ++tries) {
        node = std::min(static_cast<int>(uniform(g_) * job_.nodes), job_.nodes - 1);
        bool live = false;
        for (int r : job_.node_replicas[static_cast<std::size_t>(node)])
          if (replica_cause_[static_cast<std::size_t>(r)] < 0) live = true;
        if (live) break;
      }
      fail_node(node);
      if (free_spares_ >= 0) returns_.push(t_ + s_.repair);
      int leaving = 0;
      for (int r : job_.node_replicas[static_cast<std::size_t>(node)])
        if (replica_cause_[static_cast<std::size_t>(r)] < 0) ++leaving;
      std::vector<int> after = dead_;
      for (int r : job_.node_replicas[static_cast<std::size_t>(node)])
        if (replica_cause_[static_cast<std::size_t>(r)] < 0) ++after[static_cast<std::size_t>(job_.replica_class.empty() ? 0 : job_.replica_class[static_cast<std::size_t>(r)])];
      if (dead_total_ + leaving < job_.dp && std::isfinite(steps_(after))) {
        const double step = job_.tokens_per_step * (job_.dp - dead_total_) / job_.dp / rate_;
        const double partial = std::fmod(cs_, step);
        // The step in flight: its useful share becomes rework (its reduced-DP share stays so).
        done_ -= rate_ * partial;
        cost.rework += rate_ * partial / full_rate_;
        for (int r : job_.node_replicas[static_cast<std::size_t>(node)]) {
          auto& cause = replica_cause_[static_cast<std::size_t>(r)];
          if (cause >= 0) continue;
          cause = c;
          ++dead_[static_cast<std::size_t>(job_.replica_class.empty() ? 0 : job_.replica_class[static_cast<std::size_t>(r)])];
          ++dead_total_;
        }
        cost.downtime += down(s_.shrink_time);
        refresh_rate();
        return;
      }
      // Nothing left that runs (the last replica, or a DP size that does not fit): restart as below.
    }
    // Roll back to the last checkpoint.
    const double lost = done_ - ckpt_;
    done_ = ckpt_;
    cost.rework += lost / full_rate_;
    cs_ = 0;
    double outage = s_.restart + s_.load;
    if (job_.classes[static_cast<std::size_t>(c)].removes_node) {
      if (node < 0 && free_spares_ >= 0) returns_.push(t_ + s_.repair);
      // The replacement (a spare, else the first repaired node); under shrink the failed node
      // is the one replaced and the others rejoin as spares allow.
      const double waited = take_node(true);
      if (waited > 0) outage += waited;
      if (node >= 0 && waited >= 0) {
        for (std::size_t i = 0; i < failed_nodes_.size(); ++i)
          if (failed_nodes_[i] == node) {
            heal_node(i);
            break;
          }
      }
    }
    cost.downtime += down(outage);
    if (s_.shrink) grow(c, true);
  }

  const ReliabilityJob& job_;
  const RecoverySettings& s_;
  StepTimes& steps_;
  int classes_ = 1;
  double total_rate_ = 0, full_step_ = 0, full_rate_ = 0;
  std::mt19937_64 g_;
  // Sample state.
  double t_ = 0, done_ = 0, ckpt_ = 0, cs_ = 0, rate_ = 0, horizon_ = 0;
  int free_spares_ = -1;
  std::priority_queue<double, std::vector<double>, std::greater<>> returns_;
  std::vector<char> node_failed_;
  std::vector<int> failed_nodes_;          ///< the job's failed nodes not yet replaced
  std::vector<int> replica_failed_nodes_;  ///< per replica: its failed nodes
  std::vector<int> replica_cause_;  ///< per replica: the class that dropped it, -1 when live
  std::vector<int> dead_;
  int dead_total_ = 0;
  SampleTotals out_;
};

SampleStat stat(std::vector<double> v) {
  SampleStat s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  const double sd = v.size() > 1 ? std::sqrt(sq / (v.size() - 1)) : 0.0;
  s.half_width = 1.96 * sd / std::sqrt(static_cast<double>(v.size()));
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[static_cast<std::size_t>(std::min<double>(v.size() - 1, std::floor(q * (v.size() - 1) + 0.5)))]; };
  s.p5 = at(0.05);
  s.p95 = at(0.95);
  return s;
}

void check(const ReliabilityJob& job, const RecoverySettings& s) {
  if (job.classes.empty()) throw std::invalid_argument("reliability: no failure class");
  for (const auto& c : job.classes) {
    if (!(c.rate > 0) || !std::isfinite(c.rate)) throw std::invalid_argument("reliability: class " + c.name + " has a rate that is not a positive number");
  }
  if (!(s.interval > 0)) throw std::invalid_argument("reliability: the checkpoint interval must be positive");
  if (s.duration <= 0 && s.tokens <= 0) throw std::invalid_argument("reliability: neither a duration nor a token budget");
  if (job.dp < 1 || job.nodes < 1 || !(job.tokens_per_step > 0)) throw std::invalid_argument("reliability: an empty job");
  if (s.shrink && job.node_replicas.size() != static_cast<std::size_t>(job.nodes)) {
    throw std::invalid_argument("reliability: shrink needs the replicas of every node");
  }
}

ReliabilityResult simulate_with(const ReliabilityJob& job, const RecoverySettings& s, StepTimes& steps, long long done_before = 0,
                                long long total = 0) {
  if (total == 0) total = s.samples;
  check(job, s);
  Sampler sampler(job, s, steps);
  std::vector<double> ettr, wall, tokens;
  ReliabilityResult r;
  r.interval = s.interval;
  r.full_rate = sampler.full_rate();
  r.job_rate = sampler.job_rate();
  for (const auto& c : job.classes) r.classes.push_back({c.name});
  double finished = 0;
  for (int i = 0; i < s.samples; ++i) {
    if (s.progress && i % 64 == 0) s.progress(done_before + i, total);
    const SampleTotals t = sampler.run(s.seed * 1000003ULL + static_cast<std::uint64_t>(i));
    const double useful = t.tokens / r.full_rate;
    ettr.push_back(t.wall > 0 ? useful / t.wall : 1.0);
    wall.push_back(t.wall);
    tokens.push_back(t.tokens);
    r.saves += t.saves;
    r.useful += useful;
    finished += t.finished ? 1 : 0;
    for (std::size_t c = 0; c < t.classes.size(); ++c) {
      r.classes[c].events += t.classes[c].events;
      r.classes[c].rework += t.classes[c].rework;
      r.classes[c].downtime += t.classes[c].downtime;
      r.classes[c].reduced += t.classes[c].reduced;
    }
  }
  const double n = s.samples;
  r.saves /= n;
  r.useful /= n;
  r.finished = finished / n;
  for (auto& c : r.classes) {
    c.events /= n;
    c.rework /= n;
    c.downtime /= n;
    c.reduced /= n;
  }
  r.ettr = stat(std::move(ettr));
  r.wall = stat(std::move(wall));
  r.tokens = stat(std::move(tokens));
  r.step_time_runs = static_cast<double>(steps.size());
  return r;
}

}  // namespace

double young_interval(double save, double mtbf) { return std::sqrt(2.0 * save * mtbf); }

double daly_interval(double save, double mtbf) { return save < 2 * mtbf ? std::sqrt(2.0 * save * mtbf) - save : mtbf; }

ReliabilityResult simulate_run(const ReliabilityJob& job, const RecoverySettings& settings) {
  StepTimes steps(job);
  ReliabilityResult r = simulate_with(job, settings, steps);
  if (settings.progress) settings.progress(settings.samples, settings.samples);
  return r;
}

ReliabilityResult best_interval(const ReliabilityJob& job, const RecoverySettings& settings, std::vector<std::pair<double, double>>* curve) {
  double rate = 0;
  for (const auto& c : job.classes) rate += c.rate;
  if (!(rate > 0)) throw std::invalid_argument("reliability: no failure class with a positive rate");
  // A save of 0 s would make Young's interval 0: search around one step instead.
  StepTimes steps(job);
  const double base = std::max(young_interval(settings.save, 1.0 / rate), 1e-3);
  ReliabilityResult best;
  bool have = false;
  for (int k = -8; k <= 8; ++k) {
    RecoverySettings s = settings;
    s.interval = base * std::pow(2.0, k / 4.0);
    ReliabilityResult r = simulate_with(job, s, steps, static_cast<long long>(k + 8) * s.samples, 17LL * s.samples);
    if (curve != nullptr) curve->emplace_back(s.interval, r.ettr.mean);
    if (!have || r.ettr.mean > best.ettr.mean) {
      best = std::move(r);
      have = true;
    }
  }
  if (settings.progress) settings.progress(17LL * settings.samples, 17LL * settings.samples);
  return best;
}

}  // namespace ccsim::planner
