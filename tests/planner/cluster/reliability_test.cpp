// The failure Monte-Carlo (planner/cluster/reliability.hpp) against closed forms: exponential
// failures with checkpoint/restart (the expected time of a checkpoint segment), Young's and Daly's
// optimal interval, the accounting identity (every second of wall time is useful, a save or lost
// to a class), determinism by seed, and shrink-and-continue's step times from the engine callback.
#include <catch2/catch.hpp>

#include <cmath>

#include "planner/cluster/reliability.hpp"

using namespace ccsim::planner;
using Catch::Matchers::WithinRel;

namespace {

/// One class at `rate` per second; one token per step of 1 s (full rate 1 token/s).
ReliabilityJob constant_rate_job(double rate, bool removes_node = false) {
  ReliabilityJob job;
  job.classes = {{"gpu", rate, removes_node}};
  job.nodes = 4;
  job.dp = 4;
  job.tokens_per_step = 1;
  job.node_replicas = {{0}, {1}, {2}, {3}};
  job.replica_class = {0, 0, 0, 0};
  job.step_time = [](const std::vector<int>&) { return 1.0; };
  return job;
}

double accounted(const ReliabilityResult& r) {
  double sum = r.useful + r.saves;
  for (const auto& c : r.classes) sum += c.lost();
  return sum;
}

}  // namespace

TEST_CASE("checkpoint/restart under exponential failures matches the segment closed form") {
  // λ = 1/3600 s⁻¹, interval τ = 600 s, save C = 60 s, restart + load R = 240 + 60 s, budget
  // W = 100·τ tokens at 1 token/s. A segment of length a (compute then save) that a failure
  // interrupts restarts from its beginning after R, so E[T(a)] = (e^{λa} − 1)(1/λ + R); the run
  // is 99 segments of τ + C and a last one of τ (no save after the budget is reached):
  //   E[wall] = 99·(e^{λ(τ+C)} − 1)(1/λ + R) + (e^{λτ} − 1)(1/λ + R) ≈ 78,402 s.
  const double lambda = 1.0 / 3600, tau = 600, C = 60, R = 300;
  const ReliabilityJob job = constant_rate_job(lambda);
  RecoverySettings s;
  s.interval = tau;
  s.save = C;
  s.restart = 240;
  s.load = 60;
  s.tokens = 100 * tau;
  s.samples = 4000;
  s.seed = 7;
  const ReliabilityResult r = simulate_run(job, s);
  const double expected = 99 * (std::exp(lambda * (tau + C)) - 1) * (1 / lambda + R) + (std::exp(lambda * tau) - 1) * (1 / lambda + R);
  INFO("mean " << r.wall.mean << " ± " << r.wall.half_width << ", closed form " << expected);
  CHECK(r.wall.half_width < 0.01 * expected);
  CHECK(std::fabs(r.wall.mean - expected) < 1.5 * r.wall.half_width);
  CHECK(r.finished == 1.0);
  CHECK_THAT(r.ettr.mean * r.wall.mean, WithinRel(s.tokens, 0.02));
  // Events: the expected number of failures is (e^{λa} − 1) per segment.
  const double events = 99 * (std::exp(lambda * (tau + C)) - 1) + (std::exp(lambda * tau) - 1);
  CHECK_THAT(r.classes[0].events, WithinRel(events, 0.03));
  CHECK_THAT(accounted(r), WithinRel(r.wall.mean, 1e-9));
}

TEST_CASE("the interval search lands on Young's and Daly's optimum") {
  // MTBF M = 3600 s, save C = 60 s: Young √(2CM) = 657 s, Daly √(2CM) − C = 597 s. The exact
  // optimum of (e^{λ(τ+C)} − 1)/τ is 620 s; the search's grid steps by 2^(1/4), so the chosen
  // interval is within a step of it.
  const ReliabilityJob job = constant_rate_job(1.0 / 3600);
  RecoverySettings s;
  s.save = 60;
  s.restart = 300;
  s.duration = 30 * 86400.0;
  s.samples = 400;
  std::vector<std::pair<double, double>> curve;
  const ReliabilityResult r = best_interval(job, s, &curve);
  CHECK_THAT(young_interval(60, 3600), WithinRel(657.3, 1e-3));
  CHECK_THAT(daly_interval(60, 3600), WithinRel(597.3, 1e-3));
  CHECK(curve.size() == 17);
  CHECK(r.interval > 620 / std::pow(2.0, 0.5));
  CHECK(r.interval < 620 * std::pow(2.0, 0.5));
  // The curve is unimodal at its ends: a far shorter or longer interval is worse.
  CHECK(curve.front().second < r.ettr.mean);
  CHECK(curve.back().second < r.ettr.mean);
}

TEST_CASE("same seed, same result; another seed, another sample") {
  const ReliabilityJob job = constant_rate_job(1.0 / 7200, true);
  RecoverySettings s;
  s.interval = 900;
  s.save = 30;
  s.restart = 600;
  s.repair = 86400;
  s.spare_nodes = 1;
  s.duration = 10 * 86400.0;
  s.samples = 50;
  s.seed = 3;
  const ReliabilityResult a = simulate_run(job, s), b = simulate_run(job, s);
  CHECK(a.ettr.mean == b.ettr.mean);
  CHECK(a.tokens.p95 == b.tokens.p95);
  CHECK(a.classes[0].downtime == b.classes[0].downtime);
  s.seed = 4;
  CHECK(simulate_run(job, s).ettr.mean != a.ettr.mean);
}

TEST_CASE("spares: without one the job waits for the repair") {
  // A failure every 10 h on average, repair 2 days: with no spare each node failure waits for
  // the repair (48 h), with unlimited spares never. Downtime per event is restart + load (+ the wait).
  // (At this rate a 60-day run's last outage rarely crosses the horizon with unlimited spares.)
  const ReliabilityJob job = constant_rate_job(1.0 / 36000, true);
  RecoverySettings s;
  s.interval = 1800;
  s.save = 30;
  s.restart = 600;
  s.load = 0;
  s.repair = 2 * 86400.0;
  s.duration = 60 * 86400.0;
  s.samples = 100;
  s.spare_nodes = -1;
  const ReliabilityResult unlimited = simulate_run(job, s);
  CHECK_THAT(unlimited.classes[0].downtime, WithinRel(600 * unlimited.classes[0].events, 1e-9));
  s.spare_nodes = 0;
  const ReliabilityResult none = simulate_run(job, s);
  // Each event waits restart + repair; the last one of a run may be cut by the horizon.
  const double outage = 600 + 2 * 86400.0;
  CHECK(none.classes[0].downtime <= outage * none.classes[0].events * (1 + 1e-9));
  CHECK(none.classes[0].downtime >= outage * (none.classes[0].events - 1));
  CHECK(none.ettr.mean < 0.5 * unlimited.ettr.mean);
  CHECK_THAT(accounted(none), WithinRel(none.wall.mean, 1e-9));
}

TEST_CASE("shrink: the job goes on at reduced DP at the engine's step time and rejoins at a checkpoint") {
  // 4 replicas, one per node; a node failure drops its replica. The callback is the engine: the
  // step at 3 replicas takes 1.1 s (more exposed DP communication per token is not modelled here).
  ReliabilityJob job = constant_rate_job(1.0 / 20000, true);
  std::vector<std::vector<int>> asked;
  job.step_time = [&](const std::vector<int>& dead) {
    asked.push_back(dead);
    return 1.0 + 0.1 * dead[0];
  };
  RecoverySettings s;
  s.shrink = true;
  s.interval = 3600;
  s.save = 60;
  s.restart = 900;
  s.load = 120;
  s.shrink_time = 30;
  s.repair = 6 * 3600.0;
  s.spare_nodes = 0;
  s.duration = 20 * 86400.0;
  s.samples = 200;
  const ReliabilityResult shrink = simulate_run(job, s);
  CHECK(shrink.classes[0].events > 50);
  CHECK(shrink.classes[0].reduced > 0);
  CHECK_THAT(accounted(shrink), WithinRel(shrink.wall.mean, 1e-9));
  // The step time was asked once per distinct DP size (the cache), the full job first.
  REQUIRE(!asked.empty());
  CHECK(asked.front() == std::vector<int>{0});
  for (std::size_t i = 0; i < asked.size(); ++i)
    for (std::size_t j = i + 1; j < asked.size(); ++j) CHECK(asked[i] != asked[j]);
  // Restart with no spare waits 6 h per failure; shrink loses a quarter of the throughput for
  // up to an interval past the repair instead: shrink is better here.
  s.shrink = false;
  const ReliabilityResult restart = simulate_run(job, s);
  CHECK(shrink.ettr.mean > restart.ettr.mean);
}

TEST_CASE("malformed jobs are refused") {
  ReliabilityJob job = constant_rate_job(1.0 / 3600);
  RecoverySettings s;
  s.interval = 0;
  s.duration = 1000;
  CHECK_THROWS_AS(simulate_run(job, s), std::invalid_argument);
  s.interval = 100;
  s.duration = 0;
  CHECK_THROWS_AS(simulate_run(job, s), std::invalid_argument);
  s.duration = 1000;
  job.classes[0].rate = 0;
  CHECK_THROWS_AS(simulate_run(job, s), std::invalid_argument);
}

TEST_CASE("shrink: a reduced job faster than the full one never counts above the full rate") {
  // Mixed hardware: dropping the slow replica speeds the step up. Full job: 1 token per 2 s
  // (0.5 token/s); 3 of 4 replicas at 0.5 s a step: 0.75 / 0.5 = 1.5 tokens/s, 3× the full job.
  // ETTR is measured against the full job, so the reduced job is counted at the full rate and
  // ETTR stays ≤ 1 in every sample.
  ReliabilityJob job = constant_rate_job(1.0 / 20000, true);
  job.step_time = [](const std::vector<int>& dead) { return dead[0] == 0 ? 2.0 : 0.5; };
  RecoverySettings s;
  s.shrink = true;
  s.interval = 3600;
  s.save = 60;
  s.restart = 900;
  s.shrink_time = 30;
  s.repair = 100 * 86400.0;
  s.spare_nodes = 0;
  s.duration = 20 * 86400.0;
  s.samples = 100;
  const ReliabilityResult r = simulate_run(job, s);
  CHECK(r.ettr.p95 <= 1.0);
  CHECK(r.ettr.mean <= 1.0);
  CHECK_THAT(accounted(r), WithinRel(r.wall.mean, 1e-9));
}
