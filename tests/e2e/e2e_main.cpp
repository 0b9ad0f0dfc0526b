// ccsim_e2e: checks `ccsim run` against the published end-to-end results of
// tests/data/e2e/results.csv.
//
//   ccsim_e2e check  RESULTS.csv OUTDIR ID              one row: |simulated/published - 1| <= budget
//   ccsim_e2e family RESULTS.csv FAMILIES.csv OUTDIR F  Spearman's rho over family F >= its floor
//   ccsim_e2e table  RESULTS.csv FAMILIES.csv OUTDIR    the markdown table of docs/accuracy.md
//
// OUTDIR/ID/report.json is what `ccsim run SCENARIO --out OUTDIR/ID --report-only` wrote
// (tests/CMakeLists.txt runs it as the fixture of each row; scripts/e2e-table for the table).
// Exit codes: 0 pass, 1 a check failed, 2 bad arguments or unreadable files.

#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e/e2e_table.hpp"

namespace {

using ccsim::e2e::Family;
using ccsim::e2e::Row;

struct Simulated {
  double value = 0;  ///< the row's metric from report.json
  std::string layout;
  bool feasible = true;
};

std::optional<Simulated> read_report(const std::string& outdir, const Row& r) {
  std::ifstream in(outdir + "/" + r.id + "/report.json");
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in);
  Simulated s;
  s.value = j.at(r.metric).get<double>();
  s.feasible = j.at("feasible").get<bool>();
  const auto& l = j.at("layout");
  s.layout = fmt::format("{} GPUs: TP{} PP{} DP{}", j.at("gpus").get<int>(), l.at("tp").get<int>(), l.at("pp").get<int>(),
                         l.at("dp").get<int>());
  if (l.at("cp").get<int>() > 1) s.layout += fmt::format(" CP{}", l.at("cp").get<int>());
  if (l.at("pipeline_schedule").get<std::string>() == "interleaved") s.layout += fmt::format(" v{}", l.at("virtual_stages").get<int>());
  if (l.at("sequence_parallel").get<bool>()) s.layout += " SP";
  if (l.at("zero_stage").get<int>() > 0) s.layout += fmt::format(" ZeRO-{}", l.at("zero_stage").get<int>());
  return s;
}

std::string show(const Row& r, double v) {
  return r.metric == "step_time_s" ? fmt::format("{:.3f} s", v) : fmt::format("{:.1f} %", 100 * v);
}

int check(const std::vector<Row>& rows, const std::string& outdir, const std::string& id) {
  for (const Row& r : rows) {
    if (r.id != id) continue;
    const auto s = read_report(outdir, r);
    if (!s) {
      std::cout << fmt::format("{}: no report.json in {}/{} (the run fixture failed?)\n", id, outdir, id);
      return 1;
    }
    const double err = ccsim::e2e::relative_error(s->value, r.published);
    const bool ok = s->feasible && std::abs(err) <= r.budget;
    std::cout << fmt::format("{} ({}): {} published {}, simulated {}, error {:+.1f} % (budget {:.0f} %){} -> {}\n", id, s->layout,
                             r.metric, show(r, r.published), show(r, s->value), 100 * err, 100 * r.budget,
                             s->feasible ? "" : ", INFEASIBLE", ok ? "pass" : "FAIL");
    return ok ? 0 : 1;
  }
  std::cerr << "ccsim_e2e: no row '" << id << "'\n";
  return 2;
}

/// Spearman's rho of the family's published and simulated throughputs; nullopt if a report is missing.
std::optional<double> family_rho(const std::vector<Row>& rows, const std::string& outdir, const std::string& family, std::ostream& log) {
  std::vector<double> published, simulated;
  for (const Row& r : rows) {
    if (r.family != family) continue;
    const auto s = read_report(outdir, r);
    if (!s) {
      log << fmt::format("{}: no report.json for row {}\n", family, r.id);
      return std::nullopt;
    }
    published.push_back(r.throughput);
    simulated.push_back(ccsim::e2e::simulated_throughput(r, s->value));
  }
  return ccsim::e2e::spearman(published, simulated);
}

int family(const std::vector<Row>& rows, const std::vector<Family>& families, const std::string& outdir, const std::string& name) {
  for (const Family& f : families) {
    if (f.name != name) continue;
    const auto rho = family_rho(rows, outdir, name, std::cout);
    if (!rho) return 1;
    const bool ok = *rho >= f.floor;
    std::cout << fmt::format("{} ({}): Spearman rank correlation of per-GPU throughput {:.3f}, floor {:.2f} -> {}\n", name, f.title, *rho,
                             f.floor, ok ? "pass" : "FAIL");
    return ok ? 0 : 1;
  }
  std::cerr << "ccsim_e2e: no family '" << name << "'\n";
  return 2;
}

int table(const std::vector<Row>& rows, const std::vector<Family>& families, const std::string& outdir) {
  int missing = 0;
  for (const Family& f : families) {
    std::cout << fmt::format("\n**{}**\n\n", f.title);
    std::cout << "| row | layout | published | simulated | error | per-GPU throughput, published -> simulated | source |\n";
    std::cout << "|---|---|---:|---:|---:|---:|---|\n";
    for (const Row& r : rows) {
      if (r.family != f.name) continue;
      const auto s = read_report(outdir, r);
      if (!s) {
        ++missing;
        std::cout << fmt::format("| {} | (no report) | {} | | | | {} |\n", r.id, show(r, r.published), r.source);
        continue;
      }
      const double err = ccsim::e2e::relative_error(s->value, r.published);
      const double thr = ccsim::e2e::simulated_throughput(r, s->value);
      const auto unit = [&](double v) { return r.unit == "MFU" ? fmt::format("{:.1f} % MFU", 100 * v) : fmt::format("{:.0f} {}", v, r.unit); };
      std::cout << fmt::format("| {} | {} | {} | {} | {:+.1f} % | {} -> {} | {} |\n", r.id, s->layout + (s->feasible ? "" : " (INFEASIBLE)"),
                               show(r, r.published), show(r, s->value), 100 * err, unit(r.throughput), unit(thr), r.source);
    }
    std::ostringstream log;
    const auto rho = family_rho(rows, outdir, f.name, log);
    if (rho) std::cout << fmt::format("\nSpearman rank correlation of per-GPU throughput, published vs simulated: **{:.2f}** (floor {:.2f})\n", *rho, f.floor);
  }
  return missing == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 4 && a[0] == "check") return check(ccsim::e2e::read_rows(a[1]), a[2], a[3]);
    if (a.size() == 5 && a[0] == "family") return family(ccsim::e2e::read_rows(a[1]), ccsim::e2e::read_families(a[2]), a[3], a[4]);
    if (a.size() == 4 && a[0] == "table") return table(ccsim::e2e::read_rows(a[1]), ccsim::e2e::read_families(a[2]), a[3]);
  } catch (const std::exception& e) {
    std::cerr << "ccsim_e2e: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "usage: ccsim_e2e check RESULTS.csv OUTDIR ID | family RESULTS.csv FAMILIES.csv OUTDIR FAMILY | table RESULTS.csv FAMILIES.csv OUTDIR\n";
  return 2;
}
