// `ccsim calibrate` on the logs users have (issue 30): short logs fitted rather than refused,
// figures no fitted row uses kept at the table's value, the cached row timing agreeing with
// the reference simulation, and cross-prediction by collective and rank count.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "planner/tuning/cost_model.hpp"
#include "support/units.hpp"
#include "support/yaml_fields.hpp"
#include "test_support.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/calibrate/calibration_groups.hpp"
#include "validate/calibrate/row_timing.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

using namespace ccsim;
using validate::CalibrationParameter;
using validate::CalibrationRow;

namespace {

support::YamlSource nccl_table() {
  return support::load_yaml_map_file(test::source_path("scenarios/calibration/nccl.yaml"), {"a table"});
}

std::vector<CalibrationRow> log_rows(const std::string& log) {
  std::ifstream in(test::source_path("tests/data/nccl-tests/" + log));
  return validate::calibration_rows(log, validate::parse_nccl_tests_log(in, log), std::nullopt);
}

/// Every `stride`-th row of `rows`, `count` of them: a shorter sweep of the same log (nccl-tests
/// run with a larger -f).
std::vector<CalibrationRow> every(const std::vector<CalibrationRow>& rows, std::size_t stride, std::size_t count) {
  std::vector<CalibrationRow> out;
  for (std::size_t i = 0; i < rows.size() && out.size() < count; i += stride) out.push_back(rows[i]);
  return out;
}

const CalibrationParameter* group(const validate::CalibrationResult& r, const std::string& prefix) {
  for (const auto& p : r.parameters)
    if (p.name.rfind(prefix, 0) == 0) return &p;
  return nullptr;
}

int fitted_groups(const validate::CalibrationResult& r) {
  int n = 0;
  for (const auto& p : r.parameters) n += p.status == CalibrationParameter::Status::Fitted ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("the cached row timing gives the reference simulation's times and choices at any table", "[calibrate]") {
  // The Schedules are lowered once with the shipped table and timed again with another table;
  // simulate_rows() plans every row from scratch (CollectiveRunner::run). Both must agree to the
  // last bit, at the shipped table and at tables that move latencies, an efficiency and NVLS
  // efficiency far enough that NCCL's choice changes on some rows.
  const models::Cluster cluster = test::shipped_cluster("h100-2x8-200g.yaml");
  const support::YamlSource base = nccl_table();
  std::vector<CalibrationRow> rows = log_rows("h100-2x8-ethernet-gpudirect-all_reduce.log");
  // A one-node copy of every fourth row: the NVLS rows of the same cluster.
  for (std::size_t i = 0, n = rows.size(); i < n; i += 4) {
    CalibrationRow r = rows[i];
    r.nranks = 8;
    rows.push_back(r);
  }
  const std::vector<validate::calibration::Group> groups = validate::calibration::make_groups(base.node, cluster, "sm90");
  validate::calibration::RowTimer timer(cluster, rows, base.node);
  const std::vector<char> all(rows.size(), 1);
  std::vector<double> theta = validate::calibration::neutral(groups);
  int changed_choice = 0;
  std::vector<std::string> first_choices;
  for (int variant = 0; variant < 4; ++variant) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::string& name = groups[g].name;
      if (variant >= 1 && name.rfind("step_overhead network LL (all", 0) == 0) theta[g] = 40e-6;
      if (variant >= 2 && name.rfind("NVLS efficiency", 0) == 0) theta[g] = 0.05;
      if (variant >= 3 && name.rfind("link_efficiency", 0) == 0) theta[g] = 0.6;
    }
    const YAML::Node table = validate::calibration::apply(base.node, groups, theta);
    std::vector<std::string> choices;
    const std::vector<double> reference = validate::simulate_rows(cluster, {table, nullptr}, rows, &choices);
    const validate::calibration::Simulated cached = timer.time(table, all);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      INFO("variant " << variant << ", row " << i << " (" << rows[i].nranks << " ranks, " << rows[i].size << " B)");
      CHECK(cached.time[i] == reference[i]);
      CHECK(cached.label[i] == choices[i]);
    }
    if (variant == 0) first_choices = choices;
    for (std::size_t i = 0; i < rows.size(); ++i) changed_choice += choices[i] != first_choices[i] ? 1 : 0;
  }
  CHECK(changed_choice > 0);  // the variants do move NCCL's choice: the cached choice is tested
  // A Jacobian column's timing (RowTimer::Nudge: untouched candidates reused, touched ones that
  // cannot win not timed again) gives the full timing's times, for a step of every group up and
  // down from the shipped table.
  const std::vector<double> start = validate::calibration::neutral(groups);
  const validate::calibration::Simulated at = timer.time(validate::calibration::apply(base.node, groups, start), all);
  // (One group of each kind: a per-hop and a base latency, a link efficiency, a protocol factor, NVLS.)
  const std::vector<std::string> kinds{"step_overhead network LL (all", "step_overhead scale-up LL128 (all", "base_latency Simple (all",
                                       "link_efficiency", "bandwidth_factor LL (all", "NVLS efficiency"};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (std::none_of(kinds.begin(), kinds.end(), [&](const std::string& k) { return groups[g].name.rfind(k, 0) == 0; })) continue;
    for (const double sign : {1.0, -1.0}) {
      std::vector<double> t = start;
      t[g] += sign * (groups[g].offset ? 0.5e-6 : 0.01);
      if (t[g] < groups[g].lo || t[g] > groups[g].hi) continue;
      validate::calibration::Nudge nudge;
      nudge.touched = groups[g].used_by;
      nudge.shrink = groups[g].offset ? (sign > 0 ? 1.0 : 0.0) : (sign > 0 ? start[g] / t[g] : 1.0);
      const YAML::Node table = validate::calibration::apply(base.node, groups, t);
      const validate::calibration::Simulated full = timer.time(table, all);
      const validate::calibration::Simulated near = timer.time(table, all, at, nudge);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        INFO(groups[g].name << " " << sign << ", row " << i);
        CHECK(near.time[i] == full.time[i]);
      }
    }
  }
  // One schedule per (row shape, size, candidate): lowered once, not per table.
  const std::size_t lowered = timer.schedules();
  (void)timer.time(validate::calibration::apply(base.node, groups, validate::calibration::neutral(groups)), all);
  CHECK(timer.schedules() == lowered);
}

TEST_CASE("a short log is fitted on the parameters its rows determine, the rest held and reported", "[calibrate]") {
  // Every other size of the 2 x 8 H100 log (5 rows, 8 B .. 128 KiB ... as a -f 4 sweep would
  // measure) with alternate sizes held out leaves 3 fitted rows; the fit used to move 7 groups
  // and refuse ("3 fitted rows cannot determine the 7 parameters"). Now at most 3 groups move,
  // and the material, separable ones left out are reported as held.
  const models::Cluster cluster = test::shipped_cluster("h100-2x8-200g.yaml");
  for (const std::size_t count : {std::size_t{4}, std::size_t{5}}) {
    std::vector<CalibrationRow> rows = every(log_rows("h100-2x8-ethernet-gpudirect-all_reduce.log"), 2, count);
    validate::assign_holdout(rows, {});
    std::size_t fit_rows = 0;
    for (const auto& r : rows) fit_rows += r.fit ? 1 : 0;
    INFO(count << " rows, " << fit_rows << " fitted");
    validate::CalibrationResult fit;
    REQUIRE_NOTHROW(fit = validate::calibrate(cluster, nccl_table(), rows));
    CHECK(fitted_groups(fit) >= 1);
    CHECK(static_cast<std::size_t>(fitted_groups(fit)) <= fit_rows);
    CHECK(validate::calibration_mape(rows, fit.after, true) < validate::calibration_mape(rows, fit.before, true));
    if (count == 5) {
      int held = 0;
      for (const auto& p : fit.parameters) {
        if (p.status != CalibrationParameter::Status::Held) continue;
        ++held;
        CHECK(p.note.find("fitted rows determine at most") != std::string::npos);
        CHECK(p.value == (p.offset ? 0.0 : 1.0));  // held at the table's value
      }
      CHECK(held >= 1);
    }
  }
}

TEST_CASE("figures moved only to change NCCL's choice go back unless the rows then go unexplained", "[calibrate][heavy]") {
  // Fitted to the 2 x 8 H100 Ethernet log, a free fit pushes NVLS efficiency to 0.01 and NVLink
  // Simple steps up by ~58 us so that NVLS and Simple lose; one 8-GPU node of the same cluster
  // (NVLS at 16 MiB with the shipped table) then times a 16 MiB AllReduce several times slower.
  // By default the fit puts such groups back at the table's value and fits again; on this log
  // the rows are then 27.7 % off (RMS) against 3.6 % with them moved (measured), above the rule
  // (at most twice the free fit's error or 10 %), so the free fit is the result and its notes
  // say why the figures stayed moved. ccsim's choice puts NVLS on these two-node rows where
  // the measured times say NCCL did not run it (docs/limitations.md).
  const models::Cluster cluster = test::shipped_cluster("h100-2x8-200g.yaml");
  std::vector<CalibrationRow> rows = log_rows("h100-2x8-ethernet-gpudirect-all_reduce.log");
  validate::assign_holdout(rows, {});
  CalibrationRow one_node = rows.front();
  one_node.nranks = 8;
  one_node.size = 16u << 20;
  const support::YamlSource base = nccl_table();
  const double shipped = validate::simulate_rows(cluster, base, {one_node}).front();

  const validate::CalibrationResult fit = validate::calibrate(cluster, base, rows);
  const CalibrationParameter* nvls = group(fit, "NVLS efficiency");
  REQUIRE(nvls != nullptr);
  CHECK(nvls->status == CalibrationParameter::Status::Fitted);
  CHECK(nvls->note.find("and kept: with it at the table's value the fitted rows are") != std::string::npos);

  validate::CalibrateOptions free;
  free.free_unused = true;
  const validate::CalibrationResult loose = validate::calibrate(cluster, base, rows, free);
  // Same figures as the free fit.
  REQUIRE(loose.parameters.size() == fit.parameters.size());
  for (std::size_t p = 0; p < fit.parameters.size(); ++p)
    for (std::size_t m = 0; m < fit.parameters[p].members.size(); ++m)
      CHECK(fit.parameters[p].members[m].after == loose.parameters[p].members[m].after);
  const double moved = validate::simulate_rows(cluster, {loose.table, nullptr}, {one_node}).front();
  INFO("shipped " << shipped * 1e6 << " us, free fit " << moved * 1e6 << " us");
  CHECK(moved > 3.0 * shipped);
}

TEST_CASE("calibrate holds out collectives or rank counts for cross-prediction", "[calibrate]") {
  std::vector<CalibrationRow> rows;
  for (const auto& [c, n] : {std::pair{models::Collective::AllReduce, 8}, std::pair{models::Collective::AllReduce, 16},
                             std::pair{models::Collective::AllGather, 16}}) {
    for (std::uint64_t s : {8u, 1024u}) {
      CalibrationRow r;
      r.log = "a.log";
      r.collective = c;
      r.nranks = n;
      r.size = s;
      rows.push_back(r);
    }
  }
  validate::Holdout by_collective;
  by_collective.mode = validate::Holdout::Mode::Collectives;
  by_collective.collectives = {models::Collective::AllGather};
  validate::assign_holdout(rows, by_collective);
  for (const auto& r : rows) CHECK(r.fit == (r.collective != models::Collective::AllGather));
  validate::Holdout by_ranks;
  by_ranks.mode = validate::Holdout::Mode::Ranks;
  by_ranks.ranks = {16};
  validate::assign_holdout(rows, by_ranks);
  for (const auto& r : rows) CHECK(r.fit == (r.nranks == 8));
}
