#pragma once
// `ccsim collective`'s result table in text (nccl-tests' own layout, then ccsim's columns as a
// comment table), CSV or JSON.
//
// The text is what nccl-tests' all_reduce_perf & co. print with -c 0 (the layout of nccl-tests
// 2.x src/common.cu: size, count, type, redop, root, then time, algbw, busbw, #wrong for
// out-of-place and again for in-place; "N/A" for #wrong when results are not checked; the
// "# Out of bounds values" and "# Avg bus bandwidth" footer), so that nccl-tests' parsers and
// `ccsim compare` / `ccsim calibrate` read it back. ccsim's own per-row figures (algorithm,
// protocol, granularity, lower bound, fraction of it reached) follow the footer as '#' lines.

#include <cstdint>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/hardware/cluster.hpp"
#include "planner/collective/collective_options.hpp"

namespace ccsim::cli {

/// The results of one element type: its sizes' results, in size order.
struct TypeResults {
  std::string type;                               ///< the nccl-tests type name printed ("float", "bfloat16", ...)
  std::uint64_t unit = 1;                         ///< bytes per count unit: the element size, times the ranks for per-rank sizes
  std::vector<planner::CollectiveResult> rows;
};

/// What the table prints besides the rows.
struct TableContext {
  models::Collective collective = models::Collective::AllReduce;
  int ranks = 0;
  const models::Cluster* cluster = nullptr;
  std::string engine;                  ///< "analytic" or "flow"
  std::string format;                  ///< "text", "csv" or "json"
  std::vector<std::string> redops;     ///< the reduction operations, in nccl-tests' order ("none" for a collective that does not reduce)
  int root = -1;                       ///< printed root: -1 for the collectives without one
  std::vector<std::string> header;     ///< text: the '#' lines before the column header (without "# ")
  std::vector<double> rank_ready;      ///< --skew (seconds per rank); empty: none
  std::string skew_spec;               ///< --skew's text
};

/// Prints the table of `types` (type-major, then reduction operation, then size, as nccl-tests
/// loops) in c.format on standard output.
void print_collective_table(const TableContext& c, const std::vector<TypeResults>& types);

}  // namespace ccsim::cli
