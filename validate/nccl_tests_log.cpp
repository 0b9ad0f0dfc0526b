#include "validate/nccl_tests_log.hpp"

#include <cmath>
#include <regex>
#include <sstream>

#include "models/input_error.hpp"

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

/// A plain decimal number (digits, one point, an exponent); no nan, inf or hex.
bool is_number(const std::string& s) {
  static const std::regex number(R"([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)");
  return std::regex_match(s, number);
}

}  // namespace

std::vector<LogTest> parse_nccl_tests_log(std::istream& in, const std::string& file) {
  std::vector<LogTest> tests;
  LogTest current;
  bool in_table = false;
  int rank_lines = 0;
  const std::regex perf_re(R"(([a-z_0-9]+_perf))");
  const std::regex ranks_re(R"((\d+)\s+(ranks|GPUs))");
  const std::regex gpus_flag_re(R"(-g\s+(\d+))");
  const std::regex avg_re(R"(#\s*Avg bus bandwidth\s*:\s*([0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?))");
  const std::regex rank_line_re(R"(^#\s*Rank\s+[0-9]+)");
  const auto flush = [&]() {
    if (!current.rows.empty()) {
      if (rank_lines > 0) current.nranks = rank_lines;
      tests.push_back(std::move(current));
    }
    current = LogTest{};
    in_table = false;
    rank_lines = 0;
  };
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      std::smatch m;
      if (std::regex_search(line, m, avg_re)) {
        current.avg_busbw = std::stod(m[1].str());
        continue;
      }
      // A new test's banner after a table starts the next test.
      if (std::regex_search(line, m, perf_re)) {
        if (in_table) flush();
        if (current.name.empty()) {
          current.name = m[1].str();
          current.collective = collective_from_name(current.name);
        }
      }
      if (!current.nranks && std::regex_search(line, m, ranks_re)) current.nranks = std::stoi(m[1].str());
      if (!current.nranks && std::regex_search(line, m, gpus_flag_re) && line.find("_perf") != std::string::npos) {
        current.nranks = std::stoi(m[1].str());  // single process driving -g GPUs
      }
      if (std::regex_search(line, rank_line_re)) ++rank_lines;
      if (!in_table) current.header.push_back(line);
      continue;
    }
    // A table row.
    std::istringstream fields(line);
    std::vector<std::string> tok;
    for (std::string t; fields >> t;) tok.push_back(t);
    // With root: 5 + 4 (+ 4) fields; without root (older nccl-tests): 4 + 4 (+ 4).
    const bool has_root = tok.size() == 9 || tok.size() == 13;
    const bool no_root = tok.size() == 8 || tok.size() == 12;
    if (!has_root && !no_root) {
      throw models::InputError({file, lineno, static_cast<int>(first) + 1}, "",
                               "an nccl-tests table row (size count type redop [root] time algbw busbw #wrong ...)",
                               std::to_string(tok.size()) + " fields");
    }
    const std::size_t base = has_root ? 5 : 4;
    const auto number = [&](std::size_t i, const char* what) {
      if (!is_number(tok[i])) {
        throw models::InputError({file, lineno, 0}, "", std::string("a number for ") + what, "'" + tok[i] + "'");
      }
      return std::stod(tok[i]);
    };
    LogRow row;
    row.line = lineno;
    const double size = number(0, "size");
    const double count = number(1, "count");
    if (size < 0 || count < 0 || size != std::floor(size) || count != std::floor(count)) {
      throw models::InputError({file, lineno, 0}, "", "whole, non-negative size and count", "'" + tok[0] + "' and '" + tok[1] + "'");
    }
    row.size = static_cast<std::uint64_t>(size);
    row.count = static_cast<std::uint64_t>(count);
    row.type = tok[2];
    row.redop = tok[3];
    row.root = has_root ? static_cast<int>(number(4, "root")) : -1;
    row.time_us = number(base, "time");
    if (!(row.time_us > 0)) throw models::InputError({file, lineno, 0}, "", "a time above 0 us", "'" + tok[base] + "'");
    row.algbw = tok[base + 1] == "N/A" ? 0.0 : number(base + 1, "algbw");
    row.busbw = tok[base + 2] == "N/A" ? 0.0 : number(base + 2, "busbw");
    if (tok.size() > base + 4 && tok[base + 4] != "N/A") row.in_place_time_us = number(base + 4, "in-place time");
    current.rows.push_back(row);
    in_table = true;
  }
  flush();
  if (tests.empty()) throw models::InputError({file, 0, 0}, "", "an nccl-tests log with a results table", "no table rows");
  return tests;
}

}  // namespace ccsim::validate
