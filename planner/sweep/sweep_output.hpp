#pragma once
// What `ccsim sweep` writes: the text table (stdout), sweep.csv and sweep.json (--out), and the
// row encoding ranks send to rank 0 under MPI. Every writer is a pure function of the
// SweepResult: same points, same bytes, whichever rank evaluated them.

#include <optional>
#include <string>
#include <vector>

#include "models/scenario/overrides.hpp"
#include "planner/sweep/sweep_point.hpp"

namespace ccsim::planner {

/// Swept points whose figures are identical although one key's value differs between them
/// (every other key alike): the plot marks them, and `note` says which limit makes them equal.
struct SweepTie {
  std::size_t axis = 0;              ///< index into SweepResult::axes of the key that differs
  std::vector<std::size_t> points;   ///< the tied points, in point order (at least two)
  std::string note;                  ///< why (planner::explain_tie), one sentence; empty when not explained
};

struct SweepResult {
  std::string scenario;                       ///< the scenario path as given
  std::vector<models::SweepAxis> axes;        ///< --set options, in order
  std::optional<double> price_per_gpu_hour;   ///< USD, when given
  std::vector<SweepRow> rows;                 ///< one per point, in point order (models/scenario/overrides.hpp grid_point)
  bool planned = false;                       ///< --plan: rows carry the best layout (a "layout" column)
  SweepMeta meta;                             ///< for sweep.json (and the plot's title and caption)
  std::vector<SweepTie> ties;                 ///< find_ties, with their notes (text and json)
};

/// Groups of feasible points that differ in exactly one key and have the same GPUs and step time
/// (relative difference at most 1e-9: the same figures computed along the same path), and the
/// same ETTR, run time and worst slowdown where they have them, one group
/// per (key, values of the other keys, step time); in axis order, then point order.
std::vector<SweepTie> find_ties(const SweepResult& r);

/// A header line, then one table row per point: point, each key's value, feasible, GPUs, step
/// time, tokens/s, MFU, memory (GiB), TTFT and TPOT (each when a point has it), USD per million
/// tokens (with a price), and the reason of an infeasible point; then, when points tie, an
/// "identical results" section with one line per tie and its note.
std::string sweep_text(const SweepResult& r);

/// The columns point, each key, feasible, reason, gpus, phase, step_time_s, tokens_per_s, mfu,
/// memory_per_gpu_gib, hbm_gib, ttft_s, tpot_s, cost_per_mtok_usd (empty cells where a figure does
/// not apply); numbers as %.9g, text quoted as RFC 4180 when it holds a comma or quote.
std::string sweep_csv(const SweepResult& r);

/// The same content as JSON (schema "ccsim.sweep/1"): scenario, keys, price, meta (SweepMeta),
/// points with their values (strings as given) and figures (null where a figure does not
/// apply), and ties (key, points, values, note).
std::string sweep_json(const SweepResult& r);

/// A row as one line of JSON, and back (exact: doubles round-trip). Throws std::runtime_error on
/// text this function did not write.
std::string encode_row(const SweepRow& row);
SweepRow decode_row(const std::string& text);

}  // namespace ccsim::planner
