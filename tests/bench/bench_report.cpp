// The scaling benchmark's report (tests/bench/scaling.sh writes the CSV; scripts/bench runs both):
// one markdown table per benchmark table (rows: the size, e.g. ranks; columns: the series; cells:
// wall time and peak memory), then the growth exponent of every series, fitted by least squares.
//
// Usage: ccsim_bench_report RESULTS.csv
// CSV header (one row per configuration):
//   table,xname,x,n,column,status,runs,wall_s,rss_kib,run_s,transfers,timeout_s,note
//   table      the table the row belongs to (tables print in order of first appearance)
//   xname      the header of the table's first column (e.g. "ranks", "scenario (GPUs)")
//   x, n       the row's label and its size (ranks or GPUs, the fit's abscissa); x equal to n
//              prints as n with thousands separators, else "x (n)"; n empty: a row without a
//              size (a single case), left out of fits; a table of such rows prints no fit
//   column     the series (e.g. "ring · analytic")
//   status     ok, timeout (ran past timeout_s), skipped (not run: a smaller size of the same
//              series timed out), refused (the tool refused the input, exit 2), failed, na
//   runs       runs measured (wall_s is their median, rss_kib the largest peak)
//   wall_s     seconds, wall time of the whole process (start-up included)
//   rss_kib    KiB, peak resident set of the process and its children (/usr/bin/time %M)
//   run_s      seconds, schedule generation + engine run measured inside the process (empty
//              when the tool does not report it)
//   transfers  transfers the engine simulated (empty when not reported)
//   note       free text without commas (the reason for na, the message of a failure)
// Growth exponent: b in log(t) = a + b·log(n), least squares over the points with status ok,
// for t = wall_s; also for t = run_s against n and against transfers where those are reported.
// A series needs two distinct abscissae for a fit, else it prints "–".
// Exit status: 0, or 2 when the file cannot be read or a row is malformed (named on stderr).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Row {
  std::string table, xname, x;
  std::optional<double> n;  ///< empty: no size (not fitted)
  std::string column, status;
  int runs = 0;
  std::optional<double> wall, rss_kib, run, transfers, timeout;
  std::string note;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::string with_commas(double v) {
  std::string s = std::to_string(static_cast<long long>(std::llround(v)));
  for (int i = static_cast<int>(s.size()) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string seconds(double t) {
  char buf[32];
  if (t < 0.01) std::snprintf(buf, sizeof buf, "%.2g s", t);
  else if (t < 10) std::snprintf(buf, sizeof buf, "%.3f s", t);
  else if (t < 100) std::snprintf(buf, sizeof buf, "%.1f s", t);
  else std::snprintf(buf, sizeof buf, "%.0f s", t);
  return buf;
}

std::string cell(const Row& r) {
  const std::string limit = r.timeout ? "> " + with_commas(*r.timeout) + " s" : "> limit";
  if (r.status == "ok") {
    std::string s = seconds(*r.wall);
    if (r.rss_kib) s += ", " + with_commas(*r.rss_kib / 1024.0) + " MiB";
    if (r.runs == 1) s += " †";
    return s;
  }
  if (r.status == "timeout") return limit;
  if (r.status == "skipped") return limit + " (not run ‡)";
  if (r.status == "refused") return "refused";
  if (r.status == "na") return r.note.empty() ? "–" : r.note;
  return "failed" + (r.note.empty() ? std::string() : " (" + r.note + ")");
}

struct Fit {
  double b = 0;
  int points = 0;
  double lo = 0, hi = 0;
};

/// Least squares of log(y) on log(x); nullopt below two distinct x.
std::optional<Fit> fit(const std::vector<std::pair<double, double>>& xy) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& [x, y] : xy) {
    if (x > 0 && y > 0) pts.emplace_back(std::log(x), std::log(y));
  }
  if (pts.size() < 2) return std::nullopt;
  double mx = 0, my = 0;
  for (const auto& [x, y] : pts) mx += x, my += y;
  mx /= static_cast<double>(pts.size());
  my /= static_cast<double>(pts.size());
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : pts) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
  if (sxx <= 1e-12) return std::nullopt;
  Fit f;
  f.b = sxy / sxx;
  f.points = static_cast<int>(pts.size());
  f.lo = std::exp(std::min_element(pts.begin(), pts.end())->first);
  f.hi = std::exp(std::max_element(pts.begin(), pts.end())->first);
  return f;
}

std::string exponent(const std::optional<Fit>& f) {
  if (!f) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", f->b);
  return buf;
}

/// The rows of the results CSV at `path`; nullopt (the error printed on stderr) when it cannot
/// be read or a row is malformed.
std::optional<std::vector<Row>> read_rows(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: error: expected a results CSV, found no readable file\n", path);
    return std::nullopt;
  }
  const std::vector<std::string> header = {"table", "xname", "x", "n", "column", "status", "runs",
                                           "wall_s", "rss_kib", "run_s", "transfers", "timeout_s", "note"};
  std::string line;
  std::vector<Row> rows;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto f = split(line);
    if (line_no == 1) {
      if (f != header) {
        std::fprintf(stderr, "%s:1: error: expected the header %s, found '%s'\n", path, "table,xname,x,n,column,...", line.c_str());
        return std::nullopt;
      }
      continue;
    }
    if (f.size() != header.size()) {
      std::fprintf(stderr, "%s:%d: error: expected %zu fields, found %zu\n", path, line_no, header.size(), f.size());
      return std::nullopt;
    }
    Row r;
    r.table = f[0], r.xname = f[1], r.x = f[2], r.column = f[4], r.status = f[5], r.note = f[12];
    const auto n = number(f[3]);
    const auto runs = number(f[6]);
    r.wall = number(f[7]), r.rss_kib = number(f[8]), r.run = number(f[9]), r.transfers = number(f[10]), r.timeout = number(f[11]);
    static const std::vector<std::string> statuses = {"ok", "timeout", "skipped", "refused", "failed", "na"};
    if ((!n && !f[3].empty()) || std::find(statuses.begin(), statuses.end(), r.status) == statuses.end() || (r.status == "ok" && (!r.wall || !runs))) {
      std::fprintf(stderr, "%s:%d: error: expected n a number, status one of ok, timeout, skipped, refused, failed, na, "
                   "and wall_s and runs for ok, found '%s'\n", path, line_no, line.c_str());
      return std::nullopt;
    }
    r.n = n;
    r.runs = runs ? static_cast<int>(*runs) : 0;
    rows.push_back(std::move(r));
  }
  return rows;
}

/// Table `t` of `rows` as markdown, with each series' growth exponents when its rows are sized.
void print_table(const std::string& t, const std::vector<Row>& rows) {
  std::vector<std::string> columns;
  std::vector<std::pair<std::string, std::optional<double>>> xs;  // label, n: order of first appearance
  std::map<std::pair<std::string, std::string>, const Row*> at;
  std::string xname;
  for (const auto& r : rows) {
    if (r.table != t) continue;
    xname = r.xname;
    if (std::find(columns.begin(), columns.end(), r.column) == columns.end()) columns.push_back(r.column);
    if (std::none_of(xs.begin(), xs.end(), [&](const auto& p) { return p.first == r.x; })) xs.emplace_back(r.x, r.n);
    at[{r.x, r.column}] = &r;
  }
  const bool labelled = std::any_of(xs.begin(), xs.end(), [](const auto& p) {
    const auto v = number(p.first);
    return !v || !p.second || *v != *p.second;
  });
  const bool sized = std::any_of(xs.begin(), xs.end(), [](const auto& p) { return p.second.has_value(); });
  const std::string first = !sized ? xname : labelled ? "scenario (" + xname + ")" : xname;
  std::printf("### %s\n\n| %s |", t.c_str(), first.c_str());
  for (const auto& c : columns) std::printf(" %s |", c.c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < columns.size(); ++i) std::printf("---|");
  std::printf("\n");
  bool single = false, skipped = false;
  int most_runs = 1;
  for (const auto& [x, n] : xs) {
    const auto xv = number(x);
    const std::string label = !n ? x : xv && *xv == *n ? with_commas(*n) : x + " (" + with_commas(*n) + ")";
    std::printf("| %s |", label.c_str());
    for (const auto& c : columns) {
      const auto it = at.find({x, c});
      if (it == at.end()) {
        std::printf(" |");
        continue;
      }
      single = single || (it->second->status == "ok" && it->second->runs == 1);
      most_runs = std::max(most_runs, it->second->runs);
      skipped = skipped || it->second->status == "skipped";
      std::printf(" %s |", cell(*it->second).c_str());
    }
    std::printf("\n");
  }
  const auto legend = [&] {
    std::printf("Cells: wall time of the process (start-up included) and its peak RSS (children included)%s%s.%s\n\n",
                most_runs > 1 ? ("; median of " + std::to_string(most_runs) + " runs, peak the largest").c_str() : "",
                single && most_runs > 1 ? "; † one run (a slow configuration)" : single ? "; † one run" : "",
                skipped ? " ‡ not run: a smaller size of the same series ran past the timeout." : "");
  };
  if (!sized) {
    std::printf("\n");
    legend();
    return;
  }
  // Growth exponents, one per series.
  std::vector<std::string> details;
  std::string wall_row = "| growth b (wall) |", run_row = "| growth b (run, in-process) |";
  bool any_run = false;
  for (const auto& c : columns) {
    std::vector<std::pair<double, double>> wall, run, run_tr;
    std::string points;
    for (const auto& [x, n] : xs) {
      const auto it = at.find({x, c});
      if (it == at.end() || it->second->status != "ok" || !it->second->n) continue;
      const Row& r = *it->second;
      wall.emplace_back(*r.n, *r.wall);
      if (r.run) run.emplace_back(*r.n, *r.run);
      if (r.run && r.transfers) run_tr.emplace_back(*r.transfers, *r.run);
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s: %s", points.empty() ? "" : "; ", with_commas(*r.n).c_str(), seconds(*r.wall).c_str());
      points += buf;
      if (r.transfers) points += ", " + with_commas(*r.transfers) + " transfers";
      if (r.run) points += ", run " + seconds(*r.run);
    }
    const auto fw = fit(wall);
    const auto fr = fit(run);
    wall_row += " " + exponent(fw) + " |";
    run_row += " " + exponent(fr) + " |";
    any_run = any_run || !run.empty();
    std::string d = "- " + c + ": ";
    d += fw ? "wall ∝ " + xname + "^" + exponent(fw) + " (" + std::to_string(fw->points) + " points)"
            : "no fit (fewer than two sizes ran)";
    if (fr) d += "; run ∝ " + xname + "^" + exponent(fr);
    if (const auto ft = fit(run_tr)) d += "; run ∝ transfers^" + exponent(ft);
    d += points.empty() ? " — no point ran" : " — points: " + points;
    details.push_back(d);
  }
  std::printf("%s\n", wall_row.c_str());
  if (any_run) std::printf("%s\n", run_row.c_str());
  std::printf("\n");
  legend();
  std::printf("Growth exponents (log t = a + b·log %s, least squares over the points that ran; run = schedule + "
              "engine inside the process):\n\n",
              xname.c_str());
  for (const auto& d : details) std::printf("%s\n", d.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RESULTS.csv\n", argv[0]);
    return 2;
  }
  const std::optional<std::vector<Row>> rows = read_rows(argv[1]);
  if (!rows) return 2;
  std::vector<std::string> tables;
  for (const auto& r : *rows) {
    if (std::find(tables.begin(), tables.end(), r.table) == tables.end()) tables.push_back(r.table);
  }
  for (const auto& t : tables) print_table(t, *rows);
  return 0;
}
