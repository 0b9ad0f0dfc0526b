#include "cli/commands/collective_table.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands/collective_command.hpp"
#include "planner/algorithms/algorithms.hpp"

namespace ccsim::cli {

namespace {

/// One size's figures under --skew, in microseconds: the per-rank wait is the rank's own time
/// (arrival to its last op's end) minus the same rank's time without skew.
struct SkewFigures {
  double from_first = 0, from_last = 0, mean_wait = 0, max_wait = 0;
  int max_rank = 0;
  std::vector<double> wait;
};

/// The algorithm column: NCCL's kernel where one was chosen by name (the symmetric-memory
/// kernel, CollectiveResult::kernel), else the algorithm.
std::string algorithm_label(const planner::CollectiveResult& r) {
  return r.kernel.empty() ? std::string(planner::to_string(r.algorithm)) : r.kernel;
}

SkewFigures skew_figures(const planner::CollectiveResult& r) {
  SkewFigures f;
  const planner::SkewResult& s = *r.skew;
  f.from_first = s.from_first * 1e6;
  f.from_last = s.from_last * 1e6;
  for (std::size_t k = 0; k < s.rank_time.size(); ++k) {
    double w = (s.rank_time[k] - s.rank_time_unskewed[k]) * 1e6;
    if (std::fabs(w) < 1e-6 * std::max(1.0, s.rank_time_unskewed[k] * 1e6)) w = 0.0;  // rounding, not a wait (no "-0.00")
    f.wait.push_back(w);
    f.mean_wait += w / static_cast<double>(s.rank_time.size());
    if (k == 0 || w > f.max_wait) f.max_wait = w, f.max_rank = static_cast<int>(k);
  }
  if (std::fabs(f.mean_wait) < 1e-9) f.mean_wait = 0.0;
  return f;
}

/// "rank 3 50.00 us late" for up to 4 late ranks, else how many and the latest.
std::string describe_skew(const std::vector<double>& ready) {
  std::vector<std::size_t> late;
  for (std::size_t r = 0; r < ready.size(); ++r)
    if (ready[r] > 0) late.push_back(r);
  if (late.empty()) return "every rank arrives together";
  if (late.size() <= 4) {
    std::string s;
    for (std::size_t r : late) s += fmt::format("{}rank {} {} us late", s.empty() ? "" : ", ", r, format_time_us(ready[r] * 1e6));
    return s;
  }
  const auto last = std::max_element(ready.begin(), ready.end());
  return fmt::format("{} of {} ranks late, the last (rank {}) {} us after the first", late.size(), ready.size(),
                     last - ready.begin(), format_time_us(*last * 1e6));
}

/// One printed row: a size of a type under a reduction operation.
struct Row {
  const std::string* type;
  const std::string* redop;
  std::uint64_t bytes, count;
  double us, algbw, busbw, bound_us, reached;
  const planner::CollectiveResult* r;
  bool first_redop;  ///< the row of the first reduction operation (ccsim's table prints one per type and size)
};

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

void print_json(const TableContext& c, const std::vector<Row>& table, double avg_busbw) {
  nlohmann::json j;
  j["collective"] = std::string(models::to_string(c.collective));
  j["ranks"] = c.ranks;
  j["cluster"] = c.cluster->spec.name;
  j["engine"] = c.engine;
  j["rows"] = nlohmann::json::array();
  for (const auto& t : table) {
    j["rows"].push_back({{"size_B", t.bytes}, {"count", t.count}, {"type", *t.type}, {"redop", *t.redop}, {"root", c.root},
                         {"time_us", t.us}, {"algbw_GBps", t.algbw}, {"busbw_GBps", t.busbw},
                         {"algorithm", algorithm_label(*t.r)},
                         {"protocol", std::string(planner::to_string(t.r->protocol))},
                         {"granularity", std::string(models::to_string(t.r->granularity))},
                         {"bound_us", t.bound_us}, {"bound_reached_pct", t.reached}});
  }
  if (!c.rank_ready.empty()) {
    nlohmann::json ready = nlohmann::json::array();
    for (double t : c.rank_ready) ready.push_back(t * 1e6);
    j["skew"] = {{"spec", c.skew_spec}, {"rank_ready_us", ready}};
    for (std::size_t i = 0; i < table.size(); ++i) {
      const SkewFigures f = skew_figures(*table[i].r);
      j["rows"][i]["skew"] = {{"from_first_us", f.from_first}, {"from_last_us", f.from_last}, {"mean_wait_us", f.mean_wait},
                              {"max_wait_us", f.max_wait}, {"max_wait_rank", f.max_rank}, {"rank_wait_us", f.wait}};
    }
  }
  j["avg_busbw_GBps"] = avg_busbw;
  if (!c.cluster->perturbations.empty()) j["perturbations"] = c.cluster->perturbations;
  std::cout << j.dump(2) << "\n";
}

void print_csv(const TableContext& c, const std::vector<Row>& table) {
  const bool skewed = !c.rank_ready.empty();
  std::cout << "size_B,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,granularity,bound_us,bound_reached_pct"
            << (skewed ? ",skew_from_first_us,skew_from_last_us,skew_mean_wait_us,skew_max_wait_us,skew_max_wait_rank" : "") << "\n";
  for (const auto& t : table) {
    std::cout << fmt::format("{},{},{},{},{},{:.6g},{:.6g},{:.6g},{},{},{},{:.6g},{:.4g}", t.bytes, t.count, *t.type, *t.redop, c.root,
                             t.us, t.algbw, t.busbw, algorithm_label(*t.r), planner::to_string(t.r->protocol),
                             models::to_string(t.r->granularity), t.bound_us, t.reached);
    if (skewed) {
      const SkewFigures f = skew_figures(*t.r);
      std::cout << fmt::format(",{:.6g},{:.6g},{:.6g},{:.6g},{}", f.from_first, f.from_last, f.mean_wait, f.max_wait, f.max_rank);
    }
    std::cout << "\n";
  }
}

void print_text(const TableContext& c, const std::vector<Row>& table, double avg_busbw) {
  for (const std::string& line : c.header) std::cout << rstrip("# " + line) << "\n";
  // nccl-tests 2.x src/common.cu: the column header, each row's out-of-place then in-place
  // figures ("N/A" for #wrong when not checking, -c 0), and the footer.
  std::cout << "#\n";
  std::cout << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place\n", "", "", "", "", "");
  std::cout << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} {:>6}\n", "size", "count",
                           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::cout << rstrip(fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  {:>6}  {:>5}", "(B)",
                                  "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
            << "\n";
  for (const auto& t : table) {
    // In-place equals out-of-place (collective.md: the copy of a rank's own block that an
    // out-of-place run adds is fused into its first send, NCCL's copySend).
    const std::string figures = fmt::format("  {:>7}  {:>6.2f}  {:>6.2f}  {:>5}", format_time_us(t.us), t.algbw, t.busbw, "N/A");
    std::cout << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", t.bytes, t.count, *t.type, *t.redop, c.root) << figures << figures << "\n";
  }
  std::cout << "# Out of bounds values : 0 OK\n";
  std::cout << fmt::format("# Avg bus bandwidth    : {:g}\n", avg_busbw);
  std::cout << "#\n";
  // ccsim's own figures, one line per type and size, as comments: nccl-tests' parsers skip them.
  std::cout << "# ccsim per size: the algorithm and protocol simulated, the lowering granularity, the lower bound\n"
               "# (latency, per-rank volume and the max-flow cut: planner/collective/bounds.hpp) and the fraction of it reached\n";
  std::cout << fmt::format("# {:>10}  {:>8}  {:<18}  {:<8}  {:<5}  {:>7}  {:>7}\n", "size", "type", "algorithm", "protocol", "gran", "bound", "reached");
  std::cout << rstrip(fmt::format("# {:>10}  {:>8}  {:<18}  {:<8}  {:<5}  {:>7}  {:>7}", "(B)", "", "", "", "", "(us)", "(%)")) << "\n";
  for (const auto& t : table) {
    if (!t.first_redop) continue;
    std::cout << fmt::format("# {:>10}  {:>8}  {:<18}  {:<8}  {:<5}  {:>7}  {:>7.1f}\n", t.bytes, *t.type, algorithm_label(*t.r),
                             planner::to_string(t.r->protocol), models::to_string(t.r->granularity), format_time_us(t.bound_us), t.reached);
  }
  if (c.rank_ready.empty()) return;
  // The same algorithm with the ranks arriving late: the time from the first and from the last
  // arrival, and each rank's wait (its own time, arrival to its last op's end, minus the time
  // same rank without skew; negative when others' progress shortened it).
  std::cout << "#\n# skew (--skew " << c.skew_spec << "): " << describe_skew(c.rank_ready)
            << "; the algorithm and protocol are the ones chosen without skew\n";
  std::cout << fmt::format("# {:>10}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n", "size", "no skew", "from first", "from last", "mean wait",
                           "max wait", "max rank");
  std::cout << rstrip(fmt::format("# {:>10}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}", "(B)", "(us)", "(us)", "(us)", "(us)", "(us)", "")) << "\n";
  for (const auto& t : table) {
    if (!t.first_redop) continue;
    const SkewFigures f = skew_figures(*t.r);
    std::cout << fmt::format("# {:>10}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n", t.bytes, format_time_us(t.us), format_time_us(f.from_first),
                             format_time_us(f.from_last), format_time_us(f.mean_wait), format_time_us(f.max_wait), f.max_rank);
  }
}

}  // namespace

void print_collective_table(const TableContext& c, const std::vector<TypeResults>& types) {
  const double factor = models::busbw_factor(c.collective, c.ranks);
  std::vector<Row> table;
  double busbw_sum = 0;
  // nccl-tests' loops: every type, every reduction operation, every size.
  for (const TypeResults& tr : types) {
    for (std::size_t k = 0; k < c.redops.size(); ++k) {
      for (const auto& r : tr.rows) {
        const double us = r.time * 1e6;
        const double algbw = static_cast<double>(r.bytes) / r.time / 1e9;
        table.push_back({&tr.type, &c.redops[k], r.bytes, r.bytes / tr.unit, us, algbw, algbw * factor, r.bound * 1e6, r.bound / r.time * 100.0, &r,
                         k == 0});
        busbw_sum += algbw * factor;
      }
    }
  }
  const double avg_busbw = table.empty() ? 0.0 : busbw_sum / static_cast<double>(table.size());
  if (c.format == "json") return print_json(c, table, avg_busbw);
  if (c.format == "csv") return print_csv(c, table);
  print_text(c, table, avg_busbw);
}

}  // namespace ccsim::cli
