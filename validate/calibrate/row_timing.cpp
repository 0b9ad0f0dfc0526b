#include "validate/calibrate/row_timing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/registry.hpp"
#include "sim/engine.hpp"

namespace ccsim::validate::calibration {

using planner::Algorithm;
using planner::Protocol;

/// What one thread times with: a cost table it swaps, an analytic engine (its route cache kept
/// across tables), and the rows' runners, which read the swapped table.
struct RowTimer::Lane {
  planner::CostModel costs;
  std::unique_ptr<sim::Engine> engine;
  std::map<RunnerKey, std::unique_ptr<planner::CollectiveRunner>> runners;
};

namespace {
int algo_key(const CalibrationRow& r) { return r.algorithm ? static_cast<int>(*r.algorithm) : -1; }
int proto_key(const CalibrationRow& r) { return r.protocol ? static_cast<int>(*r.protocol) : -1; }
}  // namespace

RowTimer::RowTimer(const models::Cluster& cluster, const std::vector<CalibrationRow>& rows, const YAML::Node& base)
    : cluster_(cluster), rows_(rows), base_costs_(planner::CostModel::from_yaml({base, nullptr})) {
  base_costs_.set_warning_sink([](const std::string&) {});
}

RowTimer::~RowTimer() = default;

planner::CollectiveOptions row_options(const models::Cluster& cluster, const CalibrationRow& r) {
  const auto& gpus = cluster.topology.gpus();
  if (r.nranks < 1 || static_cast<std::size_t>(r.nranks) > gpus.size()) {
    throw std::invalid_argument(
        fmt::format("{}:{}: the log has {} ranks but the scenario's cluster has {} GPUs", r.log, r.line, r.nranks, gpus.size()));
  }
  planner::CollectiveOptions opts;
  opts.collective = r.collective;
  opts.element_size = r.element;
  opts.check_bound = false;
  opts.algorithm = r.algorithm;
  opts.protocol = r.protocol;
  opts.gpus.assign(gpus.begin(), gpus.begin() + r.nranks);
  return opts;
}

/// The Schedule candidate (a, p) of row `r` runs, lowered once with the base table by a runner
/// that offers that candidate only (its choice among one is the candidate at the granularity
/// the collective planner would pick).
int RowTimer::plan_index(const CalibrationRow& r, const planner::CostModel& costs) const {
  const planner::CollectiveOptions opts = row_options(cluster_, r);
  planner::ChannelPlan plan = planner::plan_channels(cluster_, opts.gpus, opts.channels, &costs);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& known = plans_[r.nranks];
  for (std::size_t k = 0; k < known.size(); ++k)
    if (known[k].first == plan) return static_cast<int>(k);
  auto table = std::make_unique<planner::CostModel>(costs);
  table->set_warning_sink([](const std::string&) {});
  known.emplace_back(std::move(plan), std::move(table));
  return static_cast<int>(known.size() - 1);
}

const RowTimer::Lowered& RowTimer::lowered(const CalibrationRow& r, int plan, Algorithm a, Protocol p) const {
  const RunnerKey rk{r.collective, r.nranks, r.element, algo_key(r), proto_key(r), plan};
  const auto key = std::make_tuple(rk, r.size, static_cast<int>(a), static_cast<int>(p));
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = lowered_.find(key); it != lowered_.end()) return it->second;
  Lowered out;
  try {
    auto& runner = lowering_runners_[std::make_tuple(rk, static_cast<int>(a), static_cast<int>(p))];
    if (!runner) {
      planner::CollectiveOptions opts = row_options(cluster_, r);
      opts.algorithm = a;
      opts.protocol = p;
      opts.keep_plan = true;
      runner = std::make_unique<planner::CollectiveRunner>(cluster_, *plans_.at(r.nranks).at(static_cast<std::size_t>(plan)).second, opts);
    }
    planner::CollectiveResult result = runner->run(r.size);
    out.schedule = result.plan->schedule;
  } catch (const planner::ScheduleTooLarge& e) {
    out.why = e.what();
  } catch (const std::invalid_argument& e) {
    out.why = e.what();
  }
  return lowered_.emplace(key, std::move(out)).first->second;
}

std::unique_ptr<RowTimer::Lane> RowTimer::take_lane() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!lanes_.empty()) {
      std::unique_ptr<Lane> lane = std::move(lanes_.back());
      lanes_.pop_back();
      return lane;
    }
  }
  auto lane = std::make_unique<Lane>(Lane{base_costs_, sim::make_engine(models::EngineKind::Analytic, cluster_), {}});
  return lane;
}

void RowTimer::give_lane(std::unique_ptr<Lane> lane) const {
  std::lock_guard<std::mutex> lock(mutex_);
  lanes_.push_back(std::move(lane));
}

std::size_t RowTimer::schedules() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const auto& [key, l] : lowered_) n += l.schedule ? 1 : 0;
  return n;
}

Simulated RowTimer::time(const YAML::Node& table, const std::vector<char>& want, const std::vector<double>* theta) const {
  return time_rows(table, want, nullptr, nullptr, theta);
}

Simulated RowTimer::time(const YAML::Node& table, const std::vector<char>& want, const Simulated& at, const Nudge& nudge,
                         const std::vector<double>* theta) const {
  return time_rows(table, want, &at, &nudge, theta);
}

Simulated RowTimer::time_rows(const YAML::Node& table, const std::vector<char>& want, const Simulated* at, const Nudge* nudge,
                              const std::vector<double>* theta) const {
  std::unique_ptr<Lane> lane = take_lane();
  struct Return {
    const RowTimer* timer;
    std::unique_ptr<Lane>& lane;
    ~Return() { timer->give_lane(std::move(lane)); }
  } give_back{this, lane};
  // The runners hold a reference to lane->costs: assigning the table swaps what they time with.
  lane->costs = planner::CostModel::from_yaml({table, nullptr});
  lane->costs.set_warning_sink([](const std::string&) {});

  Simulated out;
  out.time.assign(rows_.size(), std::numeric_limits<double>::quiet_NaN());
  out.choice.resize(rows_.size());
  out.label.resize(rows_.size());
  out.candidates.resize(rows_.size());
  out.plan.assign(rows_.size(), -1);
  std::map<std::tuple<RunnerKey, std::uint64_t>, std::size_t> done;
  std::map<int, int> plan_of_ranks;  // this table's channel plan per rank count
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    if (!want[i]) continue;
    const CalibrationRow& r = rows_[i];
    auto [plan_it, fresh_plan] = plan_of_ranks.try_emplace(r.nranks, 0);
    if (fresh_plan) plan_it->second = plan_index(r, lane->costs);
    const int plan = plan_it->second;
    const RunnerKey rk{r.collective, r.nranks, r.element, algo_key(r), proto_key(r), plan};
    out.plan[i] = plan;
    if (const auto it = done.find({rk, r.size}); it != done.end()) {
      out.time[i] = out.time[it->second];
      out.choice[i] = out.choice[it->second];
      out.label[i] = out.label[it->second];
      out.candidates[i] = out.candidates[it->second];
      continue;
    }
    auto& runner = lane->runners[rk];
    if (!runner) {
      planner::CollectiveOptions opts = row_options(cluster_, r);  // more ranks than GPUs: std::invalid_argument, as simulate_rows()
      try {
        runner = std::make_unique<planner::CollectiveRunner>(cluster_, lane->costs, std::move(opts), lane->engine.get());
      } catch (const std::invalid_argument& e) {
        throw RowError(e.what(), r.log, r.line, r.test);
      }
    }
    // NCCL's choice as PrunedChoice makes it: every eligible candidate timed, the least time
    // kept, a tie to the earlier candidate.
    const std::vector<planner::CollectiveCandidate> cands = runner->candidates();
    // The point `at` timed the same candidates (else nothing is reused).
    const auto* known = at != nullptr && at->candidates.size() == rows_.size() && at->plan[i] == plan &&
                                at->candidates[i].size() <= cands.size()
                            ? &at->candidates[i]
                            : nullptr;
    std::vector<double> old(cands.size(), std::numeric_limits<double>::quiet_NaN());  // NaN: not known
    if (known != nullptr) {
      std::size_t k = 0;
      for (std::size_t c = 0; c < cands.size() && k < known->size(); ++c)
        if ((*known)[k].first == cands[c]) old[c] = (*known)[k++].second;
    }
    const auto touched = [&](Algorithm a, Protocol p) {
      return nudge->touched.empty() || std::find(nudge->touched.begin(), nudge->touched.end(),
                                                 std::make_pair(std::string(planner::CostModel::table_name(a)), p)) != nudge->touched.end();
    };
    std::vector<double> time(cands.size(), std::numeric_limits<double>::infinity());
    std::vector<char> eligible(cands.size(), 0), pending(cands.size(), 0);
    std::string why;
    for (std::size_t c = 0; c < cands.size(); ++c) {
      const auto [a, p] = cands[c];
      eligible[c] = cands.size() == 1 || planner::unsupported_reason(a, runner->request(a, p, r.size, models::Granularity::Step)).empty();
      if (!eligible[c]) continue;
      if (!std::isnan(old[c]) && !touched(a, p)) {
        time[c] = old[c];
      } else {
        pending[c] = 1;
      }
    }
    // Timed in increasing order of their old times (unknown first): a touched candidate whose
    // old time × shrink is not below the best so far cannot win and keeps its old time.
    std::vector<std::size_t> order;
    for (std::size_t c = 0; c < cands.size(); ++c)
      if (pending[c]) order.push_back(c);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      const double ox = std::isnan(old[x]) ? -1.0 : old[x], oy = std::isnan(old[y]) ? -1.0 : old[y];
      return ox < oy;
    });
    for (std::size_t c : order) {
      const auto [a, p] = cands[c];
      if (!std::isnan(old[c]) && nudge != nullptr) {
        double best_so_far = std::numeric_limits<double>::infinity();
        for (std::size_t o = 0; o < cands.size(); ++o)
          if (!pending[o]) best_so_far = std::min(best_so_far, time[o]);
        if (old[c] * nudge->shrink >= best_so_far) {
          time[c] = old[c];
          pending[c] = 0;
          continue;
        }
      }
      pending[c] = 0;
      std::optional<std::tuple<RunnerKey, std::uint64_t, int, int, std::vector<double>>> key;
      if (signature_ && theta != nullptr) {
        key.emplace(rk, r.size, static_cast<int>(a), static_cast<int>(p),
                    signature_(*theta, std::string(planner::CostModel::table_name(a)), p));
        std::lock_guard<std::mutex> lock(mutex_);
        if (const auto it = memo_.find(*key); it != memo_.end()) {
          time[c] = it->second;
          continue;
        }
      }
      const Lowered& l = lowered(r, plan, a, p);
      if (!l.schedule) {
        if (why.empty()) why = l.why;
        continue;
      }
      time[c] = runner->run_schedule(*l.schedule, a, p, *lane->engine).makespan;
      if (key) {
        std::lock_guard<std::mutex> lock(mutex_);
        memo_.emplace(std::move(*key), time[c]);
      }
    }
    double best = std::numeric_limits<double>::infinity();
    std::size_t best_index = cands.size();
    for (std::size_t c = 0; c < cands.size(); ++c) {
      if (!eligible[c]) continue;
      out.candidates[i].emplace_back(cands[c], time[c]);
      if (time[c] < best) best = time[c], best_index = c;
    }
    if (best_index == cands.size()) {
      throw RowError(why.empty() ? fmt::format("no algorithm implements {} at {} bytes", models::to_string(r.collective), r.size) : why,
                     r.log, r.line, r.test);
    }
    const auto [a, p] = cands[best_index];
    out.time[i] = best;
    out.choice[i] = {std::string(planner::CostModel::table_name(a)), p};
    out.label[i] = fmt::format("{}/{}", planner::to_string(a), planner::to_string(p));
    done.emplace(std::make_tuple(rk, r.size), i);
  }
  return out;
}

}  // namespace ccsim::validate::calibration
