#include "cli/commands/calibrate_command.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cli/commands/collective_command.hpp"
#include "cli/options.hpp"
#include "cli/commands/compare_command.hpp"
#include "support/atomic_file.hpp"
#include "support/digest.hpp"
#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "support/provenance.hpp"
#include "support/progress.hpp"
#include "planner/tuning/cost_model.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/calibrate/compute_calibration.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

namespace ccsim::cli {

using support::InputError;

CLI::App* add_calibrate_command(CLI::App& app, CalibrateCliOptions& o) {
  CLI::App* c = app.add_subcommand(
      "calibrate", "Fit the cost model to your own nccl-tests / rccl-tests logs (or the compute model to measured step times)");
  c->add_option("logs", o.logs, "nccl-tests / rccl-tests stdout logs measured on the scenario's cluster");
  c->add_option("--scenario", o.scenario, "scenario describing the measured system")->required();
  c->add_option_function<std::string>("--out", [&o](const std::string& v) { o.out = v; o.out_given = true; }, "write the fitted table here (the format of scenarios/calibration/nccl.yaml, with provenance)");
  c->add_option("--holdout", o.holdout,
                "rows predicted but not fitted: alternate (every other size, the default), none, a list of sizes such as 1M,64M, "
                "or, to cross-predict, collective:NAME[,NAME] or ranks:N[,N]");
  c->add_option("--calibration", o.calibration, "table the fit starts from (default: the scenario's, or nccl.yaml / rccl.yaml)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  c->add_option("--op", o.op, "the collective the logs measured, for logs that do not name it");
  c->add_option("--algo", o.algo, "the algorithm the logs ran with (NCCL_ALGO, or ccsim replay --algo): rows are simulated with it "
                                  "instead of NCCL's choice (default auto)");
  c->add_option("--protocol", o.protocol, "likewise the protocol (NCCL_PROTO): auto, LL, LL128, Simple");
  c->add_option("--ranks", o.ranks, "rank count when a log does not say")->check(CLI::Range(1, 1 << 20));
  c->add_option("--format", o.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  c->add_option("--loss", o.loss, "cauchy (robust to warm-up rows, the default) or squares (plain least squares)")
      ->check(CLI::IsMember({"cauchy", "squares"}));
  c->add_option("--separability", o.separability,
                "how distinct a parameter's effect on the fitted rows must be from those fitted before it to be fitted "
                "(sine of the angle, default 0.2)")
      ->check(CLI::Range(1e-6, 1.0));
  c->add_flag("--free-unused", o.free_unused,
              "let the fit keep figures no fitted row uses at the end (moved only to change NCCL's choice): a closer fit of "
              "the logs, but they change layouts the logs did not measure (default: returned to the table's value)");
  c->add_option("--step-times", o.step_times, "CSV of scenario overrides -> measured step time: fit the compute model");
  c->add_option("--compute-calibration", o.compute_calibration, "compute table the --step-times fit starts from (default: the scenario's, or compute.yaml)");
  c->add_option("--gemm", o.gemm, "CSV of GEMM timings (m,n,k,dtype,seconds): fit the compute model's GEMM constants");
  return c;
}

namespace {

constexpr const char* kHoldoutForms =
    "alternate, none, a comma-separated list of sizes such as 1M,64M, collective:NAME[,NAME] or ranks:N[,N]";

validate::Holdout parse_holdout_option(const std::string& text) {
  validate::Holdout h;
  if (text == "alternate") return h;
  // Cross-prediction: collective:allgather,sendrecv or ranks:8,16.
  for (const char* prefix : {"collective:", "ranks:"}) {
    if (text.rfind(prefix, 0) != 0) continue;
    const bool by_collective = prefix[0] == 'c';
    h.mode = by_collective ? validate::Holdout::Mode::Collectives : validate::Holdout::Mode::Ranks;
    std::stringstream in(text.substr(std::string(prefix).size()));
    std::string item;
    while (std::getline(in, item, ',')) {
      if (by_collective) {
        const auto c = models::parse_collective(item);
        if (!c) {
          throw InputError({"<command line>", 0, 0}, "--holdout",
                           "collective: and allreduce, reducescatter, allgather, broadcast, reduce, alltoall or sendrecv", "'" + item + "'");
        }
        h.collectives.push_back(*c);
      } else {
        char* end = nullptr;
        const long n = item.empty() ? 0 : std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n < 1 || n > (1 << 20)) {
          throw InputError({"<command line>", 0, 0}, "--holdout", "ranks: and rank counts such as 8,16", "'" + item + "'");
        }
        h.ranks.push_back(static_cast<int>(n));
      }
    }
    if ((h.collectives.empty() && h.ranks.empty()) || text.back() == ',') {
      throw InputError({"<command line>", 0, 0}, "--holdout", kHoldoutForms, "'" + text + "'");
    }
    return h;
  }
  if (text == "none") {
    h.mode = validate::Holdout::Mode::None;
    return h;
  }
  h.mode = validate::Holdout::Mode::Sizes;
  std::stringstream in(text);
  std::string item;
  bool empty_item = false;
  while (std::getline(in, item, ',')) {
    if (item.empty()) {
      empty_item = true;
      break;
    }
    h.sizes.push_back(parse_size(item, "--holdout"));
  }
  if (empty_item || h.sizes.empty() || text.back() == ',') {
    throw InputError({"<command line>", 0, 0}, "--holdout", kHoldoutForms, "'" + text + "'");
  }
  return h;
}

std::string show_value(double v, const std::string& path, bool offset) {
  if (offset) return format_time_us(v * 1e6) + " us";
  if (path.rfind("bandwidth_caps", 0) == 0) return fmt::format("{:.4g} GB/s", v / 1e9);
  return fmt::format("{:.4g}", v);
}

std::string group_change(const validate::CalibrationParameter& p) {
  if (p.offset) return fmt::format("{:+.2f} us", p.value * 1e6);
  return fmt::format("x{:.4g}", p.value);
}

/// A YAML tree as JSON: maps and lists as such, scalars as numbers where they read as one.
nlohmann::json to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : node) j[kv.first.Scalar()] = to_json(kv.second);
    return j;
  }
  if (node.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& item : node) j.push_back(to_json(item));
    return j;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v)) return v;
  return s;
}

struct LogInfo {
  std::string path;
  std::string sha256;
  std::vector<validate::LogTest> tests;
};

}  // namespace

namespace {

/// `--out` must name a new table, not one of the inputs (it would be overwritten).
void check_out(const CalibrateCliOptions& o) {
  if (o.out.empty()) return;
  std::vector<std::string> inputs = o.logs;
  for (const std::string* p : {&o.scenario, &o.calibration, &o.step_times, &o.gemm, &o.compute_calibration}) {
    if (!p->empty()) inputs.push_back(*p);
  }
  std::error_code ec;
  for (const std::string& in : inputs) {
    if (std::filesystem::exists(o.out, ec) && std::filesystem::equivalent(o.out, in, ec)) {
      throw InputError({"<command line>", 0, 0}, "--out", "a file other than the command's inputs", "'" + o.out + "', which is an input");
    }
  }
}

}  // namespace

namespace {

/// `ccsim calibrate --step-times FILE [--gemm FILE]`: the compute model's fit
/// (validate/calibrate/compute_calibration.hpp); one kind of fit per run, as the two write tables
/// of different formats.
int run_compute_fit(const CalibrateCliOptions& o) {
  if (!o.logs.empty()) {
    throw InputError({"<command line>", 0, 0}, "logs", "either nccl-tests logs or --step-times / --gemm (one table per run)",
                     o.logs.front());
  }
  if (!o.calibration.empty()) {
    throw InputError({"<command line>", 0, 0}, "--calibration",
                     "no --calibration with --step-times (the step times are simulated with the scenario's simulation.calibration, "
                     "as ccsim run does; name the collective table there)",
                     o.calibration);
  }
  if (o.step_times.empty()) {
    throw InputError({"<command line>", 0, 0}, "--gemm", "--step-times FILE with it (the GEMM table fits the GEMM constants, the step times the rest)",
                     "--gemm alone");
  }
  validate::ComputeCalibrationRequest request;
  request.scenario = o.scenario;
  request.step_times = o.step_times;
  request.gemm = o.gemm;
  request.holdout = o.holdout;
  request.out = o.out;
  // --compute-calibration, else the scenario's simulation.compute_calibration, else compute.yaml.
  request.compute_table = compute_table(o.compute_calibration, load_scenario_file(o.scenario, o.catalog)).path;
  std::ostringstream report;
  validate::calibrate_compute(request, report);
  std::cout << report.str();
  return 0;
}

/// The parameter groups of a fit by what the report says of them.
struct ParameterSets {
  std::vector<const validate::CalibrationParameter*> fitted, separable, unconstrained;
};

ParameterSets sort_parameters(const validate::CalibrationResult& fit) {
  ParameterSets sets;
  for (const auto& p : fit.parameters) {
    if (p.status == validate::CalibrationParameter::Status::Fitted) sets.fitted.push_back(&p);
    else if (p.status == validate::CalibrationParameter::Status::NotSeparable || !p.rows.empty() ||
             p.note != "no fitted row depends on it")
      sets.separable.push_back(&p);
    else sets.unconstrained.push_back(&p);
  }
  return sets;
}

/// Everything one collective fit read and produced, for its provenance and report.
struct CollectiveFit {
  std::vector<LogInfo> logs;
  std::vector<validate::CalibrationRow> rows;
  std::string base_path;   ///< the table the fit started from
  std::string base_shown;  ///< as the report names it (the shipped default by its file name)
  std::string base_sha256;
  std::string cluster;     ///< the scenario's cluster name
  validate::CalibrationResult fit;
  ParameterSets sets;
};

/// Reads and checks every log, and marks the rows held out: nothing is written when one is bad.
void read_logs(const CalibrateCliOptions& o, const validate::Holdout& holdout, CollectiveFit& f) {
  for (const std::string& path : o.logs) {
    LogInfo info;
    info.path = path;
    const std::string text = support::read_input_file(path, {"an nccl-tests log file"});
    info.sha256 = support::sha256_hex(text);
    std::istringstream in(text);
    info.tests = validate::parse_nccl_tests_log(in, path);
    name_collective(info.tests, o.op);
    const auto log_rows = validate::calibration_rows(path, info.tests, o.ranks > 0 ? std::optional<int>(o.ranks) : std::nullopt);
    for (validate::CalibrationRow row : log_rows) {
      row.algorithm = algorithm_option(o.algo);
      row.protocol = protocol_option(o.protocol);
      f.rows.push_back(std::move(row));
    }
    f.logs.push_back(std::move(info));
  }
  if (f.rows.empty()) throw InputError({o.logs.front(), 0, 0}, "", "logs with at least one measured size", "no table rows");
  for (std::uint64_t size : holdout.sizes) {
    if (std::none_of(f.rows.begin(), f.rows.end(), [&](const validate::CalibrationRow& r) { return r.size == size; })) {
      throw InputError({"<command line>", 0, 0}, "--holdout", "sizes the logs measured", fmt::format("{} bytes", size));
    }
  }
  for (models::Collective c : holdout.collectives) {
    if (std::none_of(f.rows.begin(), f.rows.end(), [&](const validate::CalibrationRow& r) { return r.collective == c; })) {
      throw InputError({"<command line>", 0, 0}, "--holdout", "collectives the logs measured", std::string(models::to_string(c)));
    }
  }
  for (int n : holdout.ranks) {
    if (std::none_of(f.rows.begin(), f.rows.end(), [&](const validate::CalibrationRow& r) { return r.nranks == n; })) {
      throw InputError({"<command line>", 0, 0}, "--holdout", "rank counts the logs measured", fmt::format("{} ranks", n));
    }
  }
  validate::assign_holdout(f.rows, holdout);
}

/// The fit of the scenario's collective table to the rows (the scenario, its table and the
/// rows' rank counts checked first). Throws InputError when the rows cannot support a fit.
void fit_table(const CalibrateCliOptions& o, CollectiveFit& f) {
  const models::Scenario scenario = load_scenario_file(o.scenario, o.catalog);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const TableChoice table = collective_table(o.calibration, scenario, cluster);
  f.base_path = table.path;
  f.cluster = cluster.spec.name;
  // The shipped default by its name (its absolute path depends on where ccsim is installed).
  f.base_shown = table.origin == TableOrigin::Default ? std::filesystem::path(f.base_path).filename().string() + " (default)" : f.base_path;
  f.base_sha256 = support::sha256_hex(
      support::read_input_file(f.base_path, {"a collective calibration table (like scenarios/calibration/nccl.yaml)"}));
  const support::YamlSource base = support::load_yaml_map_file(f.base_path, {"a collective calibration table (like scenarios/calibration/nccl.yaml)"});
  for (const validate::CalibrationRow& r : f.rows) {
    if (static_cast<std::size_t>(r.nranks) > cluster.topology.gpus().size()) {
      throw InputError({r.log, r.line, 0}, "", fmt::format("a log of at most the scenario's {} GPUs", cluster.topology.gpus().size()),
                       fmt::format("{} ranks", r.nranks));
    }
  }
  try {
    validate::CalibrateOptions options;
    if (o.loss == "squares") options.robust_scale = 0;
    options.separability = o.separability;
    options.free_unused = o.free_unused;
    support::Progress progress("ccsim calibrate");
    options.progress = [&](const std::string& what, std::size_t done, std::size_t total) { progress.update(what, done, total); };
    f.fit = validate::calibrate(cluster, base, f.rows, options);
  } catch (const validate::CalibrationError& e) {
    throw InputError({o.logs.front(), 0, 0}, "", "logs that can support a fit", "too few rows", e.what());
  } catch (const validate::RowError& e) {
    throw InputError({e.log, e.line, 0}, "", "a row ccsim can simulate on this scenario", "'" + e.test + "'", e.what());
  }
  f.sets = sort_parameters(f.fit);
}

/// The sizes of the fitted rows a group moves.
std::set<std::uint64_t> row_sizes(const validate::CalibrationParameter& p, const std::vector<validate::CalibrationRow>& rows) {
  std::set<std::uint64_t> s;
  for (std::size_t i : p.rows) s.insert(rows[i].size);
  return s;
}

/// A MAPE for the provenance ("1.23"), "n/a" when no row was in the set.
std::string pct(double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.2f}", v); }
/// A MAPE for the report ("1.23 %").
std::string pct_text(double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.2f} %", v); }

/// The inputs of the fit for its provenance: `logs`, each with its sha256 and tests.
void add_logs(YAML::Node provenance, const CalibrateCliOptions& o, const CollectiveFit& f) {
  for (const LogInfo& info : f.logs) {
    YAML::Node l;
    l["path"] = info.path;
    l["sha256"] = info.sha256;
    for (const validate::LogTest& t : info.tests) {
      YAML::Node tn;
      tn["test"] = t.name;
      tn["collective"] = std::string(models::to_string(*t.collective));
      tn["ranks"] = o.ranks > 0 ? o.ranks : t.nranks.value_or(0);
      tn["rows"] = t.rows.size();
      l["tests"].push_back(tn);
    }
    provenance["logs"].push_back(l);
  }
}

/// The fitted table's `calibration:` block: tool, date, inputs with sha256, the groups fitted
/// and not, MAPE per log, and every row's residual.
YAML::Node provenance_of(const CalibrateCliOptions& o, const CollectiveFit& f) {
  YAML::Node provenance;
  provenance["tool"] = "ccsim calibrate";
  provenance["date"] = support::iso8601_utc_now();
  provenance["scenario"] = o.scenario;
  provenance["base_table"] = f.base_shown;
  provenance["base_table_sha256"] = f.base_sha256;
  provenance["engine"] = "analytic";
  provenance["holdout"] = o.holdout;
  add_logs(provenance, o, f);
  for (const auto* p : f.sets.fitted) {
    YAML::Node g;
    g["parameter"] = p->name;
    g["change"] = group_change(*p);
    for (const auto& m : p->members) {
      YAML::Node mn;
      mn["path"] = m.path;
      mn["table"] = show_value(m.before, m.path, p->offset);
      mn["fitted"] = show_value(m.after, m.path, p->offset);
      g["figures"].push_back(mn);
    }
    const auto sizes = row_sizes(*p, f.rows);
    g["fitted_rows"] = p->rows.size();
    if (!p->note.empty()) g["note"] = p->note;
    if (!sizes.empty()) g["sizes"] = fmt::format("{} .. {} B", *sizes.begin(), *sizes.rbegin());
    provenance["fitted"].push_back(g);
  }
  for (const auto* p : f.sets.separable) {
    YAML::Node g;
    g["parameter"] = p->name;
    g["reason"] = p->note;
    provenance["not_fitted"].push_back(g);
  }
  for (const auto* p : f.sets.unconstrained) provenance["unconstrained"].push_back(p->name);
  provenance["iterations"] = f.fit.iterations;
  for (const LogInfo& info : f.logs) {
    YAML::Node m;
    m["log"] = info.path;
    m["mape_fitted_before_pct"] = pct(validate::calibration_mape(f.rows, f.fit.before, true, info.path));
    m["mape_fitted_after_pct"] = pct(validate::calibration_mape(f.rows, f.fit.after, true, info.path));
    m["mape_held_out_before_pct"] = pct(validate::calibration_mape(f.rows, f.fit.before, false, info.path));
    m["mape_held_out_after_pct"] = pct(validate::calibration_mape(f.rows, f.fit.after, false, info.path));
    provenance["mape"].push_back(m);
  }
  const auto& rows = f.rows;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    YAML::Node rn;
    rn["log"] = rows[i].log;
    rn["line"] = rows[i].line;
    rn["size_B"] = rows[i].size;
    rn["set"] = rows[i].fit ? "fit" : "held-out";
    rn["measured_us"] = fmt::format("{:.4g}", rows[i].measured * 1e6);
    rn["before_us"] = fmt::format("{:.4g}", f.fit.before[i] * 1e6);
    rn["after_us"] = fmt::format("{:.4g}", f.fit.after[i] * 1e6);
    rn["error_pct"] = fmt::format("{:+.2f}", (f.fit.after[i] - rows[i].measured) / rows[i].measured * 100);
    rn["choice"] = f.fit.choice_after[i];
    provenance["residuals"].push_back(rn);
  }
  return provenance;
}

/// One test's table of the text report: every row measured, before and after the fit.
void report_test(const CollectiveFit& f, const LogInfo& info, std::size_t ti, std::ostream& text) {
  const validate::LogTest& t = info.tests[ti];
  const auto& rows = f.rows;
  const auto& fit = f.fit;
  text << fmt::format("#\n# log {}: {} ({})\n", info.path, t.name, models::to_string(*t.collective));
  text << fmt::format("#{:>11}  {:>10}  {:>10}  {:>10}  {:>7}  {:<8}  {:<14}  {:<14}\n", "size", "measured", "before", "after", "error",
                      "set", "before", "after");
  text << fmt::format("#{:>11}  {:>10}  {:>10}  {:>10}  {:>7}  {:<8}  {:<14}  {:<14}\n", "(B)", "(us)", "(us)", "(us)", "(%)", "",
                      "(algo/proto)", "(algo/proto)");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].log != info.path || rows[i].test_index != static_cast<int>(ti)) continue;
    text << fmt::format("{:>12}  {:>10}  {:>10}  {:>10}  {:>+7.1f}  {:<8}  {:<14}  {:<14}\n", rows[i].size,
                        format_time_us(rows[i].measured * 1e6), format_time_us(fit.before[i] * 1e6),
                        format_time_us(fit.after[i] * 1e6), (fit.after[i] - rows[i].measured) / rows[i].measured * 100,
                        rows[i].fit ? "fit" : "held-out", fit.choice_before[i], fit.choice_after[i]);
  }
}

/// "allreduce 16 ranks" for each (collective, rank count) of the rows with fit == `fitted`.
std::string row_kinds(const std::vector<validate::CalibrationRow>& rows, bool fitted) {
  std::set<std::pair<std::string, int>> kinds;
  for (const auto& r : rows)
    if (r.fit == fitted) kinds.emplace(std::string(models::to_string(r.collective)), r.nranks);
  std::string out;
  for (const auto& [c, n] : kinds) out += fmt::format("{}{} {} ranks", out.empty() ? "" : ", ", c, n);
  return out;
}

/// The cross-prediction line, when the held-out rows are other collectives or rank counts than
/// the fitted ones (--holdout collective:... / ranks:...): their MAPE with the base table and
/// with the fitted one, over every log.
std::optional<std::string> cross_prediction(const CollectiveFit& f) {
  const std::string fitted = row_kinds(f.rows, true), held = row_kinds(f.rows, false);
  if (held.empty() || f.fit.before.empty()) return std::nullopt;
  std::set<std::pair<models::Collective, int>> fit_kinds;
  for (const auto& r : f.rows)
    if (r.fit) fit_kinds.emplace(r.collective, r.nranks);
  for (const auto& r : f.rows)
    if (!r.fit && fit_kinds.count({r.collective, r.nranks}) != 0) return std::nullopt;  // sizes held out, not a kind
  return fmt::format("# cross-prediction: fitted on {}; predicted {}: MAPE {} -> {}\n", fitted, held,
                     pct_text(validate::calibration_mape(f.rows, f.fit.before, false)),
                     pct_text(validate::calibration_mape(f.rows, f.fit.after, false)));
}

/// The text report: the groups fitted and not, then every log's rows and MAPE.
std::string report_text(const CalibrateCliOptions& o, const CollectiveFit& f) {
  const auto& rows = f.rows;
  const auto& fit = f.fit;
  std::ostringstream text;
  const int fitted_rows = static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.fit; }));
  text << fmt::format("# ccsim calibrate: scenario {}, {} log{}, {} rows ({} fitted, {} held out: {}); table {} (analytic engine)\n",
                      f.cluster, f.logs.size(), f.logs.size() == 1 ? "" : "s", rows.size(), fitted_rows,
                      static_cast<int>(rows.size()) - fitted_rows, o.holdout, f.base_shown);
  text << fmt::format("# {} of {} parameter groups fitted in {} iterations (table value -> fitted value)\n", f.sets.fitted.size(),
                      fit.parameters.size(), fit.iterations);
  for (const auto* p : f.sets.fitted) {
    const auto sizes = row_sizes(*p, rows);
    text << fmt::format("{}: {}  ({} fitted rows{})\n", p->name, group_change(*p), p->rows.size(),
                        sizes.empty() ? std::string() : fmt::format(", {} .. {} B", *sizes.begin(), *sizes.rbegin()));
    if (!p->note.empty()) {
      // A move the fit kept because the rows go unexplained without it says so in its note.
      const bool kept = p->note.find("and kept:") != std::string::npos;
      text << "    (" << p->note << "; they change layouts the logs did not measure"
           << (kept ? "" : "; without --free-unused they keep the table's value") << ")\n";
    }
    for (const auto& m : p->members) {
      text << fmt::format("    {:<52} {:>12} -> {}\n", m.path, show_value(m.before, m.path, p->offset), show_value(m.after, m.path, p->offset));
    }
  }
  if (!f.sets.separable.empty()) {
    text << "# not fitted (kept at the table's value)\n";
    for (const auto* p : f.sets.separable) text << fmt::format("{}: {}\n", p->name, p->note);
  }
  text << fmt::format("# {} other groups: no fitted row depends on them (kept at the table's values)\n", f.sets.unconstrained.size());
  for (const LogInfo& info : f.logs) {
    for (std::size_t ti = 0; ti < info.tests.size(); ++ti) report_test(f, info, ti, text);
    text << fmt::format("# MAPE {}: fitted sizes {} -> {}; held-out sizes {} -> {}\n", info.path,
                        pct_text(validate::calibration_mape(rows, fit.before, true, info.path)),
                        pct_text(validate::calibration_mape(rows, fit.after, true, info.path)),
                        pct_text(validate::calibration_mape(rows, fit.before, false, info.path)),
                        pct_text(validate::calibration_mape(rows, fit.after, false, info.path)));
  }
  if (const auto cross = cross_prediction(f)) text << *cross;
  return text.str();
}

/// --out: the base table's keys in order, with the provenance after `source`.
void write_table(const CalibrateCliOptions& o, const CollectiveFit& f, const YAML::Node& provenance) {
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : f.fit.table) {
    const std::string key = kv.first.Scalar();
    if (key == "calibration") continue;
    if (key == "source") {
      out["source"] = fmt::format("fitted by ccsim calibrate on {} to {} log(s); base table: {}", provenance["date"].as<std::string>(),
                                  f.logs.size(), kv.second.IsScalar() ? kv.second.Scalar() : f.base_path);
      out["calibration"] = provenance;
      continue;
    }
    out[key] = kv.second;
  }
  if (!out["calibration"]) out["calibration"] = provenance;
  YAML::Emitter emitter;
  emitter << out;
  support::write_file_atomic(o.out, std::string("# Collective cost table fitted by `ccsim calibrate` (see the calibration: block).\n") +
                                       emitter.c_str() + "\n");
}

}  // namespace

int run_calibrate(const CalibrateCliOptions& o) {
  if (o.out_given && o.out.empty()) throw InputError({"<command line>", 0, 0}, "--out", "a file name", "''");
  if (!std::isfinite(o.separability)) {
    throw InputError({"<command line>", 0, 0}, "--separability", "a number in [1e-6, 1]", fmt::format("{}", o.separability));
  }
  check_out(o);
  if (!o.step_times.empty() || !o.gemm.empty()) return run_compute_fit(o);
  if (o.logs.empty()) {
    throw InputError({"<command line>", 0, 0}, "logs", "one or more nccl-tests / rccl-tests logs (or --step-times FILE)", "none");
  }
  const validate::Holdout holdout = parse_holdout_option(o.holdout);
  CollectiveFit f;
  read_logs(o, holdout, f);
  fit_table(o, f);
  const YAML::Node provenance = provenance_of(o, f);
  std::string text = report_text(o, f);
  if (!o.out.empty()) {
    write_table(o, f, provenance);
    text += fmt::format("# wrote {}\n", o.out);
  }
  if (o.format == "json") {
    nlohmann::json json = to_json(provenance);
    json["table"] = to_json(f.fit.table);
    std::cout << json.dump(2) << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace ccsim::cli
