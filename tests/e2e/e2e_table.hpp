#pragma once
// The end-to-end validation table: published end-to-end results of LLM training runs,
// each a scenario under tests/data/e2e/, compared with what `ccsim run` simulates for it.
//
// tests/data/e2e/results.csv lists the rows; tests/data/e2e/families.csv the families (rows of
// one publication) with the floor of their Spearman rank correlation. Header-only, so that the
// unit tests (tests/e2e/e2e_test.cpp) and the driver (tests/e2e/e2e_main.cpp) share it.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ccsim::e2e {

/// One published result.
struct Row {
  std::string id;        ///< row id, also the name of its output directory
  std::string family;    ///< the publication's table the row belongs to (families.csv)
  std::string scenario;  ///< scenario file, relative to the directory of results.csv
  std::string metric;    ///< report.json key compared: "step_time_s" (seconds) or "mfu" (fraction of peak)
  double published = 0;  ///< the published figure converted to `metric` (seconds, or a fraction)
  double throughput = 0; ///< the published per-GPU throughput used for ranking (TFLOP/s per GPU or MFU)
  std::string unit;      ///< unit of `throughput`, for the table ("TFLOP/s", "MFU")
  double budget = 0;     ///< allowed |simulated / published - 1|
  std::string source;    ///< paper, table and row
};

/// A family of rows and the floor of its rank correlation.
struct Family {
  std::string name;
  double floor = -1;  ///< Spearman's rho over the family's rows must be at least this
  std::string title;
};

/// Splits one CSV line at commas (fields hold no commas and no quotes in these files).
inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

/// Lines of a CSV file without '#' comments, blank lines and the header line.
/// Throws std::runtime_error when the file cannot be read or a line has the wrong field count.
inline std::vector<std::vector<std::string>> read_csv(const std::string& path, std::size_t fields) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::vector<std::vector<std::string>> lines;
  bool header = true;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    auto f = split_csv(line);
    if (f.size() != fields) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": expected " + std::to_string(fields) + " fields, found " +
                               std::to_string(f.size()));
    }
    lines.push_back(std::move(f));
  }
  return lines;
}

/// Rows of results.csv (columns id,family,scenario,metric,published,throughput,unit,budget,source).
inline std::vector<Row> read_rows(const std::string& path) {
  std::vector<Row> rows;
  for (const auto& f : read_csv(path, 9)) {
    Row r{f[0], f[1], f[2], f[3], std::stod(f[4]), std::stod(f[5]), f[6], std::stod(f[7]), f[8]};
    if (r.metric != "step_time_s" && r.metric != "mfu") throw std::runtime_error(path + ": row " + r.id + ": metric must be step_time_s or mfu");
    if (!(r.published > 0) || !(r.throughput > 0) || !(r.budget > 0)) throw std::runtime_error(path + ": row " + r.id + ": published, throughput and budget must be positive");
    rows.push_back(std::move(r));
  }
  return rows;
}

/// Families of families.csv (columns family,floor,title).
inline std::vector<Family> read_families(const std::string& path) {
  std::vector<Family> out;
  for (const auto& f : read_csv(path, 3)) out.push_back({f[0], std::stod(f[1]), f[2]});
  return out;
}

/// simulated / published - 1 (signed; negative: the simulation gives less of the metric).
inline double relative_error(double simulated, double published) { return simulated / published - 1.0; }

/// The simulated per-GPU throughput in the row's published unit: the published throughput scaled
/// by how much faster (step time) or more efficient (MFU) the simulation is than the publication.
inline double simulated_throughput(const Row& r, double simulated) {
  return r.metric == "step_time_s" ? r.throughput * r.published / simulated : r.throughput * simulated / r.published;
}

/// Ranks 1..n in ascending order, ties sharing the mean of their ranks ("fractional ranking").
inline std::vector<double> fractional_ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = mean;
    i = j + 1;
  }
  return rank;
}

/// Spearman's rank correlation: Pearson's correlation of the fractional ranks (exact with ties).
/// Throws std::invalid_argument for fewer than 2 pairs, different lengths, or a constant input
/// (the correlation is undefined).
inline double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) throw std::invalid_argument("spearman: needs two series of equal length, at least 2");
  const auto rx = fractional_ranks(x);
  const auto ry = fractional_ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  if (sxx == 0 || syy == 0) throw std::invalid_argument("spearman: a constant series has no rank correlation");
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace ccsim::e2e
