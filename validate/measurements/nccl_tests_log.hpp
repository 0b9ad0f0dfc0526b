#pragma once
// Parser for the stdout of nccl-tests and rccl-tests (all_reduce_perf, sendrecv_perf, ...):
// header comments, the table with out-of-place and optional in-place columns (`N/A` where a
// field is not published), the "# Avg bus bandwidth" footer, several tests in one log.
// Columns per nccl-tests' src/common.cu: size (B), count (elements), type, redop, root, then
// time (us), algbw (GB/s), busbw (GB/s), #wrong for out-of-place and again for in-place.

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"

namespace ccsim::validate {

struct LogRow {
  int line = 0;
  std::uint64_t size = 0;      ///< bytes (nccl-tests size S)
  std::uint64_t count = 0;     ///< elements
  std::string type;            ///< "float", "half", ...
  std::string redop;           ///< "sum", "none", ...
  int root = -1;
  double time_us = 0;          ///< out-of-place time, microseconds
  double algbw = 0;            ///< GB/s
  double busbw = 0;            ///< GB/s
  std::optional<double> in_place_time_us;
};

struct LogTest {
  std::string name;                          ///< "all_reduce_perf"
  std::optional<models::Collective> collective;
  std::optional<int> nranks;                 ///< from "#  Rank" lines or "N ranks" in the header
  std::vector<std::string> header;           ///< comment lines before the table
  std::vector<LogRow> rows;
  std::optional<double> avg_busbw;           ///< footer, GB/s
};

/// Parses a log. Throws support::InputError (file, line, what was expected) on a malformed
/// table row or a log with no table at all.
std::vector<LogTest> parse_nccl_tests_log(std::istream& in, const std::string& file);

/// Bytes per element of an nccl-tests type name ("float" 4, "half" 2, "bfloat16" 2,
/// "double" 8, "int8" 1, ...); nullopt when unknown.
std::optional<std::uint32_t> type_size(const std::string& type);

}  // namespace ccsim::validate
