#include "validate/measurements/nccl_tests_log.hpp"

#include <cctype>
#include <cmath>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "support/input_error.hpp"
#include "support/numbers.hpp"

namespace ccsim::validate {

std::optional<std::uint32_t> type_size(const std::string& t) {
  if (t == "float" || t == "float32" || t == "int32" || t == "uint32" || t == "int") return 4;
  if (t == "half" || t == "float16" || t == "bfloat16" || t == "bf16") return 2;
  if (t == "double" || t == "float64" || t == "int64" || t == "uint64") return 8;
  if (t == "int8" || t == "uint8" || t == "char" || t == "fp8_e4m3" || t == "fp8_e5m2" || t == "f8e4m3" || t == "f8e5m2") return 1;
  return std::nullopt;
}

namespace {

std::optional<models::Collective> collective_from_name(const std::string& name) {
  // "all_reduce_perf" -> "all_reduce"
  const std::string stem = name.substr(0, name.find("_perf"));
  return models::parse_collective(stem);
}

// Header lines are scanned with plain string searches, linear in the line's length: a log is
// user input and may hold a line of any length (std::regex recurses per character).

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_'; }

/// The first word of [a-z0-9_]+ ending in "_perf" ("all_reduce_perf"), or empty.
std::string perf_name(std::string_view line) {
  for (std::size_t at = line.find("_perf"); at != std::string_view::npos; at = line.find("_perf", at + 1)) {
    std::size_t begin = at;
    while (begin > 0 && is_name_char(line[begin - 1])) --begin;
    if (begin < at) return std::string(line.substr(begin, at + 5 - begin));
  }
  return {};
}

/// The digits immediately before position `at` (after optional blanks), or empty:
/// "  16 ranks" with `at` at "ranks" gives "16".
std::string_view digits_before(std::string_view line, std::size_t at, bool need_space) {
  std::size_t end = at;
  while (end > 0 && is_space(line[end - 1])) --end;
  if (need_space && end == at) return {};
  std::size_t begin = end;
  while (begin > 0 && is_digit(line[begin - 1])) --begin;
  return line.substr(begin, end - begin);
}

/// The digits immediately after position `at` (after blanks), or empty.
std::string_view digits_after(std::string_view line, std::size_t at, bool need_space) {
  std::size_t begin = at;
  while (begin < line.size() && is_space(line[begin])) ++begin;
  if (need_space && begin == at) return {};
  std::size_t end = begin;
  while (end < line.size() && is_digit(line[end])) ++end;
  return line.substr(begin, end - begin);
}

/// "N ranks" / "N GPUs" (nccl-tests' "# Using devices" banner or a launcher line): N, or empty.
std::string_view ranks_count(std::string_view line) {
  for (const char* word : {"ranks", "GPUs"}) {
    for (std::size_t at = line.find(word); at != std::string_view::npos; at = line.find(word, at + 1)) {
      const std::string_view d = digits_before(line, at, true);
      if (!d.empty()) return d;
    }
  }
  return {};
}

/// "-g N" on a command line: N, or empty.
std::string_view gpus_flag(std::string_view line) {
  for (std::size_t at = line.find("-g"); at != std::string_view::npos; at = line.find("-g", at + 1)) {
    const std::string_view d = digits_after(line, at + 2, true);
    if (!d.empty()) return d;
  }
  return {};
}

/// The text after "# Avg bus bandwidth :" (trimmed to its first token), or nullopt when the
/// line is not that footer.
std::optional<std::string_view> avg_busbw_text(std::string_view line) {
  std::size_t i = line.find('#');
  if (i == std::string_view::npos) return std::nullopt;
  ++i;
  while (i < line.size() && is_space(line[i])) ++i;
  constexpr std::string_view kLabel = "Avg bus bandwidth";
  if (line.substr(i, kLabel.size()) != kLabel) return std::nullopt;
  i += kLabel.size();
  while (i < line.size() && is_space(line[i])) ++i;
  if (i >= line.size() || line[i] != ':') return std::nullopt;
  ++i;
  while (i < line.size() && is_space(line[i])) ++i;
  std::size_t end = i;
  while (end < line.size() && !is_space(line[end])) ++end;
  return line.substr(i, end - i);
}

/// True for nccl-tests' per-rank device lines, "#  Rank  0 Group  0 Pid ...".
bool is_rank_line(std::string_view line) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '#') return false;
  ++i;
  while (i < line.size() && is_space(line[i])) ++i;
  if (line.substr(i, 4) != "Rank") return false;
  return !digits_after(line, i + 4, true).empty();
}

// Physical ranges of the values a log holds. A log outside them is not a measurement.
constexpr std::uint64_t kMaxSize = models::kMaxCollectiveBytes;
constexpr double kMinTimeUs = 1e-3;       // nccl-tests prints two decimals: 0.01 us is its smallest
constexpr double kMaxTimeUs = 1e10;       // about 3 hours for one collective
constexpr double kMaxBandwidthGBs = 1e6;  // 1 PB/s
constexpr std::int64_t kMaxRanks = 1 << 20;

/// A table row's whitespace-separated fields (at most 14 are read), each with its 1-based column.
struct Fields {
  std::vector<std::string_view> tok;
  std::vector<int> col;
};

Fields split_fields(std::string_view v) {
  Fields f;
  std::size_t i = 0;
  while (i < v.size() && f.tok.size() <= 13) {
    while (i < v.size() && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
    if (i >= v.size()) break;
    std::size_t e = i;
    while (e < v.size() && !std::isspace(static_cast<unsigned char>(v[e]))) ++e;
    f.tok.push_back(v.substr(i, e - i));
    f.col.push_back(static_cast<int>(i) + 1);
    i = e;
  }
  return f;
}

/// The parser's state across lines: the tests read so far and the one being read.
class LogReader {
 public:
  explicit LogReader(const std::string& file) : file_(file) {}

  /// One line of the log.
  void read(std::string line) {
    ++lineno_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) return;
    if (line[first] == '#') {
      header_line(line);
    } else {
      table_row(line, static_cast<int>(first) + 1);
    }
  }

  /// The tests read. Throws support::InputError when the log held no table row.
  std::vector<LogTest> finish() {
    flush();
    if (tests_.empty()) throw support::InputError({file_, 1, 1}, "", "an nccl-tests log with a results table", "no table rows");
    return std::move(tests_);
  }

 private:
  void flush() {
    if (!current_.rows.empty()) {
      if (rank_lines_ > 0) current_.nranks = rank_lines_;
      tests_.push_back(std::move(current_));
    }
    current_ = LogTest{};
    in_table_ = false;
    rank_lines_ = 0;
    no_redop_column_ = false;
  }

  /// A decimal value of the log, finite and within [min, max]; InputError at file:line:column otherwise.
  double decimal(std::string_view text, int column, const std::string& what, double min, double max) const {
    const support::Parsed<double> v = support::parse_decimal(text);
    if (!v || v.value < min || v.value > max) {
      throw support::InputError({file_, lineno_, column}, "",
                                fmt::format("{} from {:g} to {:g}", what, min, max),
                                v ? support::quote_token(text) : support::describe_number_problem(text, v.problem));
    }
    return v.value;
  }

  /// A whole number of the log within [min, max]; InputError at file:line:column otherwise.
  int count(std::string_view text, int column, const std::string& what, std::int64_t min, std::int64_t max) const {
    const support::Parsed<std::int64_t> v = support::parse_integer(text);
    if (!v || v.value < min || v.value > max) {
      throw support::InputError({file_, lineno_, column}, "", fmt::format("{} from {} to {}", what, min, max),
                                v ? support::quote_token(text) : support::describe_number_problem(text, v.problem));
    }
    return static_cast<int>(v.value);
  }

  /// The column of `part`, a view into `line`.
  static int column_of(std::string_view part, const std::string& line) { return static_cast<int>(part.data() - line.data()) + 1; }

  /// A comment line: the footer, a test's banner, its rank count, its column header.
  void header_line(const std::string& line) {
    // A footer whose value is not a number at all is kept as a comment; a number out of range is an error.
    if (const auto avg = avg_busbw_text(line); avg && support::parse_decimal(*avg).problem != support::NumberProblem::Malformed) {
      current_.avg_busbw = decimal(*avg, column_of(*avg, line), "an average bus bandwidth in GB/s", 0.0, kMaxBandwidthGBs);
      return;
    }
    // A new test's banner after a table starts the next test.
    if (const std::string name = perf_name(line); !name.empty()) {
      if (in_table_) flush();
      if (current_.name.empty()) {
        current_.name = name;
        current_.collective = collective_from_name(current_.name);
      }
    }
    if (!current_.nranks) {
      if (const std::string_view n = ranks_count(line); !n.empty()) current_.nranks = count(n, column_of(n, line), "a rank count", 1, kMaxRanks);
    }
    if (!current_.nranks && line.find("_perf") != std::string::npos) {
      if (const std::string_view n = gpus_flag(line); !n.empty()) {  // single process driving -g GPUs
        current_.nranks = count(n, column_of(n, line), "a GPU count (-g)", 1, kMaxRanks);
      }
    }
    if (is_rank_line(line)) ++rank_lines_;
    if (line.find("size") != std::string::npos && line.find("count") != std::string::npos && line.find("type") != std::string::npos &&
        line.find("time") != std::string::npos) {
      no_redop_column_ = line.find("redop") == std::string::npos;
    }
    if (!in_table_) current_.header.push_back(line);
  }

  /// A table row: whitespace-separated fields, each with its column for errors.
  void table_row(const std::string& line, int column_of_line) {
    const Fields f = split_fields(line);
    const auto& tok = f.tok;
    const auto& col = f.col;
    // With root: 5 + 4 (+ 4) fields; without root (older nccl-tests): 4 + 4 (+ 4).
    // Under a header without redop (older all_gather_perf): 3 + 4 (+ 4).
    const bool has_root = tok.size() == 9 || tok.size() == 13;
    const bool no_root = tok.size() == 8 || tok.size() == 12;
    const bool no_redop = no_redop_column_ && (tok.size() == 7 || tok.size() == 11);
    if (!has_root && !no_root && !no_redop) {
      throw support::InputError({file_, lineno_, column_of_line}, "",
                                "an nccl-tests table row (size count type redop [root] time algbw busbw #wrong ...)",
                                tok.size() > 13 ? std::string("more than 13 fields") : std::to_string(tok.size()) + " fields");
    }
    const std::size_t base = has_root ? 5 : no_redop ? 3 : 4;
    const auto bandwidth = [&](std::size_t i, const char* what) {
      return tok[i] == "N/A" ? 0.0 : decimal(tok[i], col[i], what, 0.0, kMaxBandwidthGBs);
    };
    LogRow row;
    row.line = lineno_;
    const double size = decimal(tok[0], col[0], "a size in bytes", 0.0, static_cast<double>(kMaxSize));
    const double elements = decimal(tok[1], col[1], "an element count", 0.0, static_cast<double>(kMaxSize));
    if (size != std::floor(size) || elements != std::floor(elements)) {
      throw support::InputError({file_, lineno_, col[0]}, "", "whole, non-negative size and count",
                                support::quote_token(tok[0]) + " and " + support::quote_token(tok[1]));
    }
    row.size = static_cast<std::uint64_t>(size);
    row.count = static_cast<std::uint64_t>(elements);
    row.type = std::string(tok[2].substr(0, 64));
    row.redop = no_redop ? std::string("none") : std::string(tok[3].substr(0, 64));
    row.root = has_root ? count(tok[4], col[4], "a root rank (-1 for none)", -1, kMaxRanks - 1) : -1;
    row.time_us = decimal(tok[base], col[base], "a time in us", kMinTimeUs, kMaxTimeUs);
    row.algbw = bandwidth(base + 1, "an algorithm bandwidth in GB/s");
    row.busbw = bandwidth(base + 2, "a bus bandwidth in GB/s");
    if (tok.size() > base + 4 && tok[base + 4] != "N/A") {
      row.in_place_time_us = decimal(tok[base + 4], col[base + 4], "an in-place time in us", kMinTimeUs, kMaxTimeUs);
    }
    current_.rows.push_back(row);
    in_table_ = true;
  }

  const std::string& file_;
  int lineno_ = 0;
  std::vector<LogTest> tests_;
  LogTest current_;
  bool in_table_ = false;
  int rank_lines_ = 0;
  // The test's column header had no redop column (nccl-tests before 2020: all_gather_perf
  // printed size count type time algbw busbw error, without redop and root).
  bool no_redop_column_ = false;
};

}  // namespace

std::vector<LogTest> parse_nccl_tests_log(std::istream& in, const std::string& file) {
  LogReader reader(file);
  std::string line;
  while (std::getline(in, line)) reader.read(std::move(line));
  return reader.finish();
}

}  // namespace ccsim::validate
