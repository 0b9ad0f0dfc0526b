#include "planner/cluster/jobs.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <memory>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/engine.hpp"
#include "sim/execution/plan_merge.hpp"
#include "support/input_error.hpp"
#include "support/parallel_for.hpp"
#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

namespace {

using models::DeviceId;
using models::PlacementPolicy;

constexpr int kMaxPasses = 16;
constexpr double kStepTolerance = 1e-4;  // relative change of every step time in a pass
constexpr std::size_t kMaxSteps = 4096;
constexpr double kOffsetQuantum = 1e-3;  // of an instance's time alone

std::string job_key(std::size_t j, const char* key) { return fmt::format("jobs[{}].{}", j, key); }

double percentile50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct JobState {
  std::unique_ptr<models::Scenario> scenario;
  std::unique_ptr<models::Cluster> cluster;
  WorkloadResult alone;
  std::vector<double> alone_duration;            ///< per op
  double overhead = 0;                           ///< engine overhead per step (inference)
  int cost_base = 0;                             ///< first global cost index
  std::vector<std::vector<double>> duration;     ///< per step, per op
  std::vector<std::vector<OpTiming>> timing;     ///< per step
  std::vector<double> step_start, step_time;
};

/// An op instance of one job's step: times from the step's start.
struct Instance {
  int cost = 0;  ///< global cost index
  int dim = 0;
  double start = 0, end = 0;
  std::vector<std::uint32_t> ops;
};

/// A step's instances, by start.
struct StepInstances {
  std::vector<Instance> in;
  std::vector<double> starts;  ///< in[i].start
  double max_length = 0;       ///< the longest instance
};

/// An instance of the co-run: job, step, index in the step's list.
struct Ref {
  std::size_t job = 0, step = 0, index = 0;
  bool operator<(const Ref& o) const { return std::tie(job, step, index) < std::tie(o.job, o.step, o.index); }
};

class CoRun {
 public:
  CoRun(std::vector<JobState>& jobs, const models::Cluster& cluster, models::EngineKind kind, bool own_dimensions, int steps)
      : jobs_(jobs), kind_(kind), cluster_(cluster), own_dims_(own_dimensions), steps_(steps), inst_(jobs.size()) {
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      jobs[j].cost_base = static_cast<int>(costs_.size());
      for (const auto& c : jobs[j].alone.comm_costs) {
        costs_.push_back(&c);
        std::vector<std::uint32_t> links;
        for (const auto& l : c.links)
          if (l.bytes > 0) links.push_back(l.link);
        std::sort(links.begin(), links.end());
        links_.push_back(std::move(links));
        std::vector<std::uint32_t> gpus;
        if (c.plan) gpus.assign(c.plan->rank_gpu.begin(), c.plan->rank_gpu.end());
        std::sort(gpus.begin(), gpus.end());
        gpus_.push_back(std::move(gpus));
      }
      alone_inst_.push_back(build(j, jobs[j].alone.timing));
    }
    // A job none of whose ops shares a link with another job's (or, with own dimensions, with
    // its own other dimensions') runs every step alone: its instances need no search.
    may_share_.assign(jobs.size(), false);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const int b = jobs[j].cost_base, e = b + static_cast<int>(jobs[j].alone.comm_costs.size());
      for (int c = b; c < e && !may_share_[j]; ++c) {
        if (links_[static_cast<std::size_t>(c)].empty()) continue;
        for (std::size_t o = 0; o < jobs.size() && !may_share_[j]; ++o) {
          if (o == j && !own_dimensions) continue;
          const int ob = jobs[o].cost_base, oe = ob + static_cast<int>(jobs[o].alone.comm_costs.size());
          for (int d = ob; d < oe && !may_share_[j]; ++d) may_share_[j] = d != c && shares(link_memo_, links_, c, d);
        }
      }
    }
  }

  /// Lays every job's steps out from its start, adding steps (alone) until the window is covered
  /// and dropping those past it; `changed` says whether a job's step count changed.
  double layout(bool& changed) {
    changed = false;
    double window = 0;
    for (auto& js : jobs_) {
      double end = js.step_start.front();
      for (std::size_t k = 0; k < static_cast<std::size_t>(steps_); ++k) end += k < js.step_time.size() ? js.step_time[k] : alone_step(js);
      window = std::max(window, end);
    }
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      JobState& js = jobs_[j];
      double t = js.step_start.front();
      std::size_t k = 0;
      // A step is in the window when its middle is (its time alone for the steps not run yet).
      const auto time_of = [&](std::size_t step) { return step < js.step_time.size() ? js.step_time[step] : alone_step(js); };
      for (; t + 0.5 * time_of(k) < window && k < kMaxSteps; ++k) {
        if (k == js.duration.size()) {
          js.duration.push_back(js.alone_duration);
          js.timing.push_back(js.alone.timing);
          js.step_time.push_back(alone_step(js));
          inst_[j].push_back(alone_inst_[j]);
        }
        if (k < js.step_start.size()) {
          js.step_start[k] = t;
        } else {
          js.step_start.push_back(t);
        }
        t += js.step_time[k];
      }
      changed = changed || k != js.duration.size();
      js.duration.resize(k);
      js.timing.resize(k);
      js.step_time.resize(k);
      js.step_start.resize(k);
      inst_[j].resize(k);
    }
    return window;
  }

  static double alone_step(const JobState& js) { return js.alone.step_time; }

  /// One pass: every step's instances costed beside the others and the step re-executed, steps
  /// in the order they start (Gauss-Seidel: a step sees the steps before it as just re-timed,
  /// and moves its job's later steps at once). Returns whether no duration moved by more than
  /// 1e-9 relative.
  bool pass(double damping = 0) {
    bool same = true;
    // Per job and dimension: what its instances lost, and to which jobs.
    loss_.assign(jobs_.size(), std::vector<DimensionContention>(kContentionDims));
    std::vector<std::pair<double, std::pair<std::size_t, std::size_t>>> order;
    for (std::size_t j = 0; j < jobs_.size(); ++j)
      for (std::size_t k = 0; k < jobs_[j].step_start.size(); ++k) order.push_back({jobs_[j].step_start[k], {j, k}});
    std::sort(order.begin(), order.end());
    std::vector<int> partners;
    for (const auto& [when, step] : order) {
      const auto [j, s] = step;
      JobState& js = jobs_[j];
      std::vector<double> next = js.alone_duration;
      const StepInstances& mine = inst_[j][s];
      // The step's instances are independent given the others' times: their keys first, the
      // runs not memoized yet on worker threads (in key order: the same runs whatever the
      // threads), then the durations.
      std::vector<Key> keys(mine.in.size());
      std::vector<std::vector<int>> partner_jobs(mine.in.size());
      std::vector<std::pair<Key, double>> missing;  // (key, the instance's time alone)
      std::set<Key> asked;
      for (std::size_t k = 0; k < mine.in.size() && may_share_[j]; ++k) {
        const double a = js.alone_duration[mine.in[k].ops.front()];
        keys[k] = key_of({j, s, k}, a, partner_jobs[k]);
        if (!keys[k].empty() && memo_.count(keys[k]) == 0 && asked.insert(keys[k]).second) missing.emplace_back(keys[k], a);
      }
      std::vector<double> ran(missing.size());
      support::parallel_for(missing.size(), {}, [&](std::size_t i) {
        sim::Engine* e = acquire_engine();
        try {
          ran[i] = run_key(missing[i].first, missing[i].second, *e);
        } catch (...) {
          release_engine(e);
          throw;
        }
        release_engine(e);
      });
      for (std::size_t i = 0; i < missing.size(); ++i) memo_.emplace(std::move(missing[i].first), ran[i]);
      runs_ += missing.size();
      for (std::size_t k = 0; k < mine.in.size(); ++k) {
        const Instance& me = mine.in[k];
        const double a = js.alone_duration[me.ops.front()];
        partners = partner_jobs[k];
        const double d = keys[k].empty() ? a : std::max(a, memo_.at(keys[k]));
        for (std::uint32_t op : me.ops) next[op] = d;
        DimensionContention& dc = loss_[j][static_cast<std::size_t>(me.dim)];
        dc.ops += 1;
        dc.alone += a;
        dc.contended += d;
        if (d > a * (1 + 1e-9) && !partners.empty()) {
          dc.slowed += 1;
          if (dc.lost_to.empty()) dc.lost_to.assign(jobs_.size(), 0.0);
          for (int o : partners) dc.lost_to[static_cast<std::size_t>(o)] += (d - a) / static_cast<double>(partners.size());
        }
      }
      for (std::size_t i = 0; i < next.size(); ++i) {
        const double old = js.duration[s][i];
        // Damped (an oscillating co-run): part of the way from the old duration to the new one;
        // the fixed point is the same.
        if (damping > 0) next[i] = std::max(js.alone_duration[i], damping * old + (1 - damping) * next[i]);
        if (std::abs(next[i] - old) > 1e-9 * std::max(std::abs(old), 1e-30)) same = false;
      }
      js.duration[s] = std::move(next);
      js.timing[s] = execute_step(js.alone.program, js.duration[s]);
      inst_[j][s] = build(j, js.timing[s]);
      double end = 0;
      for (const auto& t : js.timing[s]) end = std::max(end, t.end);
      js.step_time[s] = end + js.overhead;
      // The job's later steps follow.
      for (std::size_t k = s + 1; k < js.step_start.size(); ++k) js.step_start[k] = js.step_start[k - 1] + js.step_time[k - 1];
    }
    return same;
  }

  std::size_t runs() const { return runs_; }
  /// Runs each op with its partners' own partners too (chained overlaps; see run_jobs).
  void set_chained(bool on) { chosen_hops_ = on; }

  /// Per job, its dimensions with communication ops as the last pass found them (over every
  /// step of the window), `to` naming the jobs the time was lost to.
  std::vector<std::vector<DimensionContention>> losses(const std::vector<std::string>& names) const {
    std::vector<std::vector<DimensionContention>> out(loss_.size());
    for (std::size_t j = 0; j < loss_.size(); ++j) {
      for (int d = 0; d < kContentionDims; ++d) {
        DimensionContention x = loss_[j][static_cast<std::size_t>(d)];
        if (x.ops == 0) continue;
        x.dim = contention_dimension_name(d);
        for (std::size_t o = 0; o < x.lost_to.size(); ++o)
          if (x.lost_to[o] > 0) x.to.emplace_back(names[o], x.lost_to[o]);
        x.lost_to.clear();
        out[j].push_back(std::move(x));
      }
    }
    return out;
  }

 private:
  /// Job j's instances in a step timed by `timing`: its communication ops with a kept plan and a
  /// duration, grouped by (cost, start) (the copies of one op across replica classes).
  StepInstances build(std::size_t j, const std::vector<OpTiming>& timing) const {
    const JobState& js = jobs_[j];
    const models::Program& p = js.alone.program;
    StepInstances out;
    std::map<std::pair<int, double>, std::size_t> index;
    for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
      const int c = js.alone.op_comm[i];
      if (c < 0 || !js.alone.comm_costs[static_cast<std::size_t>(c)].plan || js.alone_duration[i] <= 0) continue;
      const auto [it, fresh] = index.try_emplace({c, timing[i].start}, out.in.size());
      if (fresh) out.in.push_back({js.cost_base + c, contention_dimension(p.ops[i]), timing[i].start, timing[i].end, {}});
      out.in[it->second].ops.push_back(i);
    }
    std::stable_sort(out.in.begin(), out.in.end(), [](const Instance& a, const Instance& b) {
      return a.start != b.start ? a.start < b.start : a.cost < b.cost;
    });
    for (const Instance& x : out.in) {
      out.starts.push_back(x.start);
      out.max_length = std::max(out.max_length, x.end - x.start);
    }
    return out;
  }

  const Instance& at(const Ref& r) const { return inst_[r.job][r.step].in[r.index]; }
  double offset(const Ref& r) const { return jobs_[r.job].step_start[r.step]; }

  /// Instances that overlap instance `of` in time and share a link with it: other jobs', and
  /// with own dimensions its own job's other dimensions (never its own dimension).
  void neighbours(const Ref& of, std::vector<std::pair<double, Ref>>& cand) const {
    const Instance& me = at(of);
    const double me_start = offset(of) + me.start, me_end = offset(of) + me.end;
    const double eps = 1e-12 * std::max(1.0, me_end);
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      if (j == of.job && !own_dims_) continue;
      // The job's steps that overlap it: consecutive, found by their starts.
      const std::vector<double>& ss = jobs_[j].step_start;
      const auto past = static_cast<std::size_t>(std::upper_bound(ss.begin(), ss.end(), me_end) - ss.begin());
      std::size_t from = past;
      while (from > 0 && ss[from - 1] + jobs_[j].step_time[from - 1] >= me_start) --from;
      for (std::size_t s = from; s < past; ++s) {
        const StepInstances& list = inst_[j][s];
        const double off = ss[s];
        const auto first = std::lower_bound(list.starts.begin(), list.starts.end(), me_start - off - list.max_length);
        for (auto it = first; it != list.starts.end() && *it + off < me_end - eps; ++it) {
          const Ref r{j, s, static_cast<std::size_t>(it - list.starts.begin())};
          const Instance& x = list.in[r.index];
          if (x.end + off <= me_start + eps) continue;
          if (j == of.job && (x.dim == me.dim || (s == of.step && r.index == of.index))) continue;
          if (!shares(link_memo_, links_, me.cost, x.cost)) continue;
          cand.emplace_back(std::min(me_end, x.end + off) - std::max(me_start, x.start + off), r);
        }
      }
    }
  }

  /// Whether `r` is one physical op with one of `set` seen from another replica class: the same
  /// job and dimension, GPUs in common, at overlapping times.
  bool twin_of_any(const Ref& r, const std::vector<Ref>& set) const {
    const Instance& x = at(r);
    const double xs = offset(r) + x.start, xe = offset(r) + x.end;
    for (const Ref& c : set) {
      const Instance& y = at(c);
      if (c.job != r.job || y.dim != x.dim) continue;
      const double ys = offset(c) + y.start, ye = offset(c) + y.end;
      if (std::min(xe, ye) <= std::max(xs, ys)) continue;  // one after the other: not twins
      if (y.cost == x.cost || shares(gpu_memo_, gpus_, y.cost, x.cost)) return true;
    }
    return false;
  }

  using Key = std::vector<std::pair<int, long long>>;

  /// The key of instance `me`'s run beside the overlapping instances that share its links (its
  /// cost, then each partner's cost and offset in units of 1e-3 of `alone`), or empty when none
  /// overlaps; `partners` gets the jobs of the first-hop partners (each once, ascending).
  Key key_of(const Ref& me_ref, double alone, std::vector<int>& partners) const {
    partners.clear();
    const Instance& me = at(me_ref);
    const double me_start = offset(me_ref) + me.start;
    std::vector<std::pair<double, Ref>> cand;  // (overlap, instance)
    neighbours(me_ref, cand);
    if (cand.empty()) return {};
    std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::vector<Ref> chosen;
    for (const auto& [overlap, r] : cand)
      if (!twin_of_any(r, chosen)) chosen.push_back(r);
    for (const Ref& r : chosen) partners.push_back(static_cast<int>(r.job));
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
    // Second hop: what slows my partners (another job's op before or after me, my own job's
    // previous op) runs too, so that a partner slowed by it overlaps me as long as it does.
    const std::size_t first_hop = chosen_hops_ ? chosen.size() : 0;
    for (std::size_t i = 0; i < first_hop; ++i) {
      cand.clear();
      neighbours(chosen[i], cand);
      std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
      for (const auto& entry : cand) {
        const Ref& r = entry.second;  // (not a structured binding: a lambda captures it)
        if ((r.job == me_ref.job && r.step == me_ref.step && r.index == me_ref.index) || std::find_if(chosen.begin(), chosen.end(), [&](const Ref& c) {
              return c.job == r.job && c.step == r.step && c.index == r.index;
            }) != chosen.end()) {
          continue;
        }
        std::vector<Ref> with_me = chosen;
        with_me.push_back(me_ref);
        if (!twin_of_any(r, with_me)) chosen.push_back(r);
      }
    }
    const double q = kOffsetQuantum * alone;
    Key key{{me.cost, 0}};
    for (const Ref& r : chosen) key.emplace_back(at(r).cost, std::llround((offset(r) + at(r).start - me_start) / q));
    std::sort(key.begin() + 1, key.end());
    return key;
  }

  /// The run a key stands for on `engine`: the first part's end from its own start, seconds.
  double run_key(const Key& key, double alone, sim::Engine& engine) const {
    const double q = kOffsetQuantum * alone;
    std::vector<const sim::PlanPart*> parts;
    std::vector<double> offsets;
    for (const auto& [c, off] : key) {
      parts.push_back(costs_[static_cast<std::size_t>(c)]->plan.get());
      offsets.push_back(static_cast<double>(off) * q);
    }
    const double shift = -*std::min_element(offsets.begin(), offsets.end());
    for (double& o : offsets) o += shift;
    const auto merged = sim::merge_plans(parts, offsets);
    const sim::Timeline tl = engine.run(merged->plan);
    return sim::part_ends(merged->plan, tl).front() - shift;
  }

  /// An engine for one worker thread (created on first use, returned by release_engine).
  sim::Engine* acquire_engine() {
    std::lock_guard<std::mutex> lock(engine_mutex_);
    if (free_engines_.empty()) {
      engines_.push_back(sim::make_engine(kind_, cluster_));
      return engines_.back().get();
    }
    sim::Engine* e = free_engines_.back();
    free_engines_.pop_back();
    return e;
  }
  void release_engine(sim::Engine* e) {
    std::lock_guard<std::mutex> lock(engine_mutex_);
    free_engines_.push_back(e);
  }

  static bool shares(std::map<std::pair<int, int>, bool>& memo, const std::vector<std::vector<std::uint32_t>>& sets, int a, int b) {
    const auto k = std::minmax(a, b);
    const auto [it, fresh] = memo.try_emplace(k, false);
    if (fresh) it->second = sorted_intersect(sets[static_cast<std::size_t>(a)], sets[static_cast<std::size_t>(b)]);
    return it->second;
  }

  std::vector<JobState>& jobs_;
  models::EngineKind kind_;
  const models::Cluster& cluster_;
  std::mutex engine_mutex_;
  std::vector<std::unique_ptr<sim::Engine>> engines_;  ///< one per worker thread that ran
  std::vector<sim::Engine*> free_engines_;
  bool own_dims_;
  int steps_;
  std::vector<const CommCost*> costs_;
  std::vector<std::vector<std::uint32_t>> links_, gpus_;
  std::vector<std::vector<StepInstances>> inst_;  ///< [job][step]
  std::vector<StepInstances> alone_inst_;         ///< per job: a step timed alone
  mutable std::map<std::pair<int, int>, bool> link_memo_, gpu_memo_;
  std::map<std::vector<std::pair<int, long long>>, double> memo_;
  std::size_t runs_ = 0;
  std::vector<std::vector<DimensionContention>> loss_;
  std::vector<bool> may_share_;  ///< per job: some op of it shares a link with another's
  bool chosen_hops_ = false;     ///< chained: partners' partners run too
};

/// Job j's step alone on `gpus`.
JobState run_alone(const models::Scenario& scenario, const models::Cluster& cluster, std::size_t j, const std::vector<int>& gpus,
                   const CoRunOptions& o) {
  JobState js;
  js.scenario = std::make_unique<models::Scenario>(models::job_scenario(scenario, j));
  const auto& all = cluster.topology.gpus();
  std::vector<DeviceId> devices;
  devices.reserve(gpus.size());
  for (int g : gpus) devices.push_back(all[static_cast<std::size_t>(g)]);
  js.cluster = std::make_unique<models::Cluster>(models::job_view(cluster, devices));
  WorkloadRunner runner(*js.scenario, *js.cluster, *o.costs, o.compute, o.engine);
  if (js.scenario->workload->phase != models::WorkloadPhase::TrainingStep) runner.set_serving(o.serving);
  runner.set_keep_plans(true);
  const std::string what = fmt::format("job {} alone", scenario.jobs[j].name);
  js.alone = runner.run([&](std::size_t done, std::size_t total) {
    if (o.progress) o.progress(what, done, total);
  });
  js.overhead = js.alone.engine_overhead;
  js.alone_duration.resize(js.alone.timing.size());
  for (std::size_t i = 0; i < js.alone.timing.size(); ++i) js.alone_duration[i] = js.alone.timing[i].end - js.alone.timing[i].start;
  return js;
}


CoRunResult co_run(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunOptions& o,
                   const std::vector<std::vector<int>>& gpus, std::map<std::pair<std::size_t, std::vector<int>>, std::shared_ptr<JobState>>* cache) {
  if (o.costs == nullptr) throw std::invalid_argument("run_jobs: no cost model");
  if (o.steps < 1) throw std::invalid_argument("run_jobs: steps < 1");
  std::vector<JobState> jobs;
  CoRunResult r;
  r.steps = o.steps;
  r.engine = o.engine;
  for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
    std::shared_ptr<JobState> alone;
    const auto key = std::make_pair(j, gpus[j]);
    if (cache != nullptr) {
      if (const auto it = cache->find(key); it != cache->end()) alone = it->second;
    }
    if (!alone) {
      alone = std::make_shared<JobState>(run_alone(scenario, cluster, j, gpus[j], o));
      if (cache != nullptr) cache->emplace(key, alone);
    }
    JobState js;
    js.scenario = std::make_unique<models::Scenario>(*alone->scenario);
    js.cluster = std::make_unique<models::Cluster>(*alone->cluster);
    js.alone = alone->alone;
    js.alone_duration = alone->alone_duration;
    js.overhead = alone->overhead;
    js.step_start = {scenario.jobs[j].start};
    jobs.push_back(std::move(js));
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    JobOutcome out;
    const auto& job = scenario.jobs[j];
    out.name = job.name;
    out.placement = std::string(models::to_string(job.placement.policy));
    out.gpus = gpus[j];
    out.start = job.start;
    out.alone = jobs[j].alone.step_time;
    out.mfu_alone = jobs[j].alone.mfu;
    out.tokens = jobs[j].alone.program.tokens;
    r.jobs.push_back(std::move(out));
  }
  const bool feasible = std::all_of(jobs.begin(), jobs.end(), [](const JobState& js) { return js.alone.feasible; });
  if (feasible) {
    CoRun run(jobs, cluster, o.engine, scenario.simulation.contention, o.steps);
    bool changed = false;
    r.window = run.layout(changed);
    // Shared links' utilisation in the co-run (Σ_j bytes per step / mean step over bandwidth),
    // from each job's link loads alone.
    std::map<models::LinkId, std::vector<std::pair<std::size_t, double>>> load;
    for (std::size_t j = 0; j < jobs.size(); ++j)
      for (const auto& l : jobs[j].alone.links)
        if (l.bytes > 0) load[l.link].emplace_back(j, l.bytes);
    const auto max_utilisation = [&]() {
      double worst = 0;
      for (const auto& [link, per] : load) {
        if (per.size() < 2) continue;
        double rate = 0;
        for (const auto& [j, bytes] : per) {
          const auto& st = jobs[j].step_time;
          rate += bytes * static_cast<double>(st.size()) / std::accumulate(st.begin(), st.end(), 0.0);
        }
        worst = std::max(worst, rate / cluster.topology.link(link).bandwidth);
      }
      return worst;
    };
    // Passes to a fixed point; `limit` passes at most.
    const auto iterate = [&](int limit) {
      double damping = 0, previous_change = std::numeric_limits<double>::infinity();
      for (int p = 0; p < limit; ++p) {
        if (o.progress) o.progress("co-run passes", static_cast<std::size_t>(r.passes), static_cast<std::size_t>(2 * kMaxPasses));
        ++r.passes;
        std::vector<double> before;
        for (const auto& js : jobs) before.insert(before.end(), js.step_time.begin(), js.step_time.end());
        // Undamped while the passes settle; once a pass moves the steps more than the one before
        // (the co-run oscillates between overlap patterns), damped: half the change.
        if (p >= 2 && r.last_change > previous_change) damping = 0.5;
        previous_change = r.last_change;
        const bool same = run.pass(damping);
        std::vector<double> after;
        for (const auto& js : jobs) after.insert(after.end(), js.step_time.begin(), js.step_time.end());
        r.last_change = 0;
        for (std::size_t i = 0; i < std::min(before.size(), after.size()); ++i)
          r.last_change = std::max(r.last_change, std::abs(after[i] - before[i]) / before[i]);
        r.window = run.layout(changed);
        // Converged: no duration moved (or no step time by more than kStepTolerance) and the
        // window holds the same steps (a step added to cover it starts alone and needs a pass).
        if ((same || r.last_change <= kStepTolerance) && !changed) return true;
      }
      return false;
    };
    r.converged = iterate(kMaxPasses);
    // Pairwise runs under-count overlaps that chain (A's op beside B's, which was itself slowed
    // by A's previous op): where that leaves a shared link above its bandwidth, the passes go
    // on with each op's partners' partners in its run, from the pairwise fixed point.
    if (max_utilisation() > 1 + 1e-6) {
      run.set_chained(true);
      r.chained = true;
      r.converged = iterate(kMaxPasses);
    }
    r.runs = run.runs();
    std::vector<std::string> names;
    for (const auto& job : scenario.jobs) names.push_back(job.name);
    const auto losses = run.losses(names);
    for (std::size_t j = 0; j < jobs.size(); ++j) r.jobs[j].comm = losses[j];
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    JobOutcome& out = r.jobs[j];
    JobState& js = jobs[j];
    out.result = std::move(js.alone);
    if (!out.result.feasible) continue;
    out.step_start = js.step_start;
    out.step_time = js.step_time;
    out.truncated = js.step_time.size() == kMaxSteps;
    if (out.step_time.empty()) continue;
    out.mean = std::accumulate(out.step_time.begin(), out.step_time.end(), 0.0) / static_cast<double>(out.step_time.size());
    out.min = *std::min_element(out.step_time.begin(), out.step_time.end());
    out.max = *std::max_element(out.step_time.begin(), out.step_time.end());
    out.p50 = percentile50(out.step_time);
    out.slowdown = out.mean / out.alone;
  }
  if (!feasible) return r;
  // Links carrying two or more jobs' traffic.
  std::map<models::LinkId, std::vector<double>> by_link;
  std::map<models::LinkId, bool> fabric;
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    for (const auto& l : r.jobs[j].result.links) {
      if (l.bytes <= 0) continue;
      auto& b = by_link[l.link];
      b.resize(r.jobs.size(), 0.0);
      b[j] += l.bytes;
      fabric[l.link] = true;
    }
  }
  r.fabric_links = fabric.size();
  const models::Topology& t = cluster.topology;
  for (auto& [link, bytes] : by_link) {
    if (std::count_if(bytes.begin(), bytes.end(), [](double b) { return b > 0; }) < 2) continue;
    SharedLink s;
    s.link = link;
    s.name = t.name(t.link_source(link)) + " -> " + t.name(t.link_target(link));
    s.capacity = t.link(link).bandwidth;
    s.bytes = bytes;
    double rate = 0;
    for (std::size_t j = 0; j < bytes.size(); ++j) rate += bytes[j] / r.jobs[j].mean;
    s.utilisation = rate / s.capacity;
    r.shared.push_back(std::move(s));
  }
  std::stable_sort(r.shared.begin(), r.shared.end(), [](const SharedLink& a, const SharedLink& b) { return a.utilisation > b.utilisation; });
  for (const SharedLink& l : r.shared) {
    r.max_utilisation = std::max(r.max_utilisation, l.utilisation);
    if (l.utilisation > 1 + 1e-6) ++r.over_capacity;
  }
  return r;
}

}  // namespace

CoRunResult run_jobs(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunOptions& options,
                     const std::vector<std::vector<int>>& placements) {
  const std::vector<std::vector<int>> gpus = placements.empty() ? resolve_placements(scenario, cluster) : placements;
  return co_run(scenario, cluster, options, gpus, nullptr);
}

BestPlacement place_best(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunOptions& options) {
  BestPlacement b;
  bool found = false;
  for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
    if (scenario.jobs[j].placement.policy != PlacementPolicy::Best) continue;
    if (found) {
      throw support::InputError(scenario.jobs[j].placement.location, job_key(j, "placement"),
                                fmt::format("at most one job with placement best (jobs[{}] '{}' has it)", b.job, scenario.jobs[b.job].name),
                                "a second one");
    }
    found = true;
    b.job = j;
  }
  if (!found) throw std::invalid_argument("place_best: no job with placement best");
  std::map<std::pair<std::size_t, std::vector<int>>, std::shared_ptr<JobState>> cache;
  std::exception_ptr first_error;  // kept whole: a RuleError stays one
  std::vector<std::pair<PlacementTrial, CoRunResult>> tried;
  for (PlacementPolicy p : {PlacementPolicy::Packed, PlacementPolicy::Leaf, PlacementPolicy::Spread}) {
    std::vector<PlacementPolicy> over(scenario.jobs.size(), PlacementPolicy::Best);
    over[b.job] = p;
    std::vector<std::vector<int>> gpus;
    try {
      gpus = resolve_placements(scenario, cluster, over);
    } catch (const support::InputError&) {
      if (!first_error) first_error = std::current_exception();
      continue;
    }
    PlacementTrial trial;
    trial.policy = p;
    trial.gpus = gpus[b.job];
    for (const auto& [t, res] : tried) {
      if (t.gpus == trial.gpus && t.same_as.empty()) trial.same_as = std::string(models::to_string(t.policy));
    }
    CoRunResult res;
    if (!trial.same_as.empty()) {
      for (const auto& [t, r0] : tried) {
        if (std::string(models::to_string(t.policy)) == trial.same_as) {
          trial.worst_slowdown = t.worst_slowdown;
          trial.job_mean = t.job_mean;
          trial.others_mean_slowdown = t.others_mean_slowdown;
        }
      }
      b.ranking.push_back(trial);
      continue;
    }
    res = co_run(scenario, cluster, options, gpus, &cache);
    for (auto& jo : res.jobs) {
      if (jo.name == scenario.jobs[b.job].name) jo.placement = "best: " + std::string(models::to_string(p));
    }
    double others = 0;
    for (std::size_t j = 0; j < res.jobs.size(); ++j) {
      trial.worst_slowdown = std::max(trial.worst_slowdown, res.jobs[j].slowdown);
      if (j != b.job) others += res.jobs[j].slowdown;
    }
    trial.job_mean = res.jobs[b.job].mean;
    trial.others_mean_slowdown = res.jobs.size() > 1 ? others / static_cast<double>(res.jobs.size() - 1) : 1.0;
    const bool feasible = std::all_of(res.jobs.begin(), res.jobs.end(), [](const JobOutcome& o) { return o.result.feasible; });
    if (!feasible) {
      // Memory does not depend on the placement: every policy is as infeasible.
      b.ranking = {trial};
      b.best = std::move(res);
      return b;
    }
    b.ranking.push_back(trial);
    tried.emplace_back(trial, std::move(res));
  }
  if (tried.empty()) std::rethrow_exception(first_error);
  // Rank: worst slowdown, then the job's mean step (1e-9 relative ties keep the policy order).
  const auto better = [](const PlacementTrial& x, const PlacementTrial& y) {
    if (std::abs(x.worst_slowdown - y.worst_slowdown) > 1e-9 * y.worst_slowdown) return x.worst_slowdown < y.worst_slowdown;
    if (std::abs(x.job_mean - y.job_mean) > 1e-9 * y.job_mean) return x.job_mean < y.job_mean;
    return false;
  };
  std::stable_sort(b.ranking.begin(), b.ranking.end(), better);
  for (auto& [t, res] : tried) {
    if (t.policy == b.ranking.front().policy) b.best = std::move(res);
  }
  return b;
}

}  // namespace ccsim::planner
