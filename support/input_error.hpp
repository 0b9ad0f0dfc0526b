#pragma once
// Typed errors for bad user input (scenario files, catalog files, command-line values).
//
// Every error names where the bad value is (file, 1-based line and column), the key path
// (for example `cluster.nodes[0].count`), what was expected and what was found. The CLI
// prints what() and exits with code 2; library code only throws.

#include <stdexcept>
#include <string>
#include <utility>

namespace ccsim::support {

/// A position in an input file. line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

/// Bad user input. what() reads
/// `FILE:LINE:COL: error: KEY: expected EXPECTED, found FOUND[; HINT]`.
class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, std::string key, std::string expected, std::string found,
             std::string hint = {});

  const SourceLocation& where() const noexcept { return where_; }
  const std::string& key() const noexcept { return key_; }
  const std::string& expected() const noexcept { return expected_; }
  const std::string& found() const noexcept { return found_; }
  const std::string& hint() const noexcept { return hint_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string expected_;
  std::string found_;
  std::string hint_;
};

/// Well-formed input that breaks a rule tying several settings together: a layout that does not
/// divide the GPUs or the model (tp·pp·cp·dp against the cluster, heads, layers, experts), a
/// global batch that is no multiple of micro_batch_size·dp, a cluster too large or without a
/// fabric for its nodes. `ccsim run` treats it as any InputError (exit 2); `ccsim sweep` reports
/// the point as infeasible (a row with the message) rather than as bad input.
class RuleError : public InputError {
 public:
  using InputError::InputError;
  explicit RuleError(const InputError& e) : InputError(e) {}
};

/// Edit distance (Levenshtein) between two ASCII strings, case-insensitive; used for
/// "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// How well `candidate` fits `word` as a "did you mean" suggestion: {tier, tie-break}, lower is
/// better, or tier -1 when it is not a plausible suggestion. Compared case-insensitively with
/// '-' and '_' ignored (`H200`, `h200_sxm` and `H200-SXM` compare as `h200`, `h200sxm`), in
/// tiers tried before edit distance, as a user who knows the name in another spelling types it:
///   0 equal; 1 one is a prefix of the other (`H200` -> `H200-SXM`, `prefil` -> `prefill`);
///   2 one contains the other (`SXM5` -> `H100-SXM5`); 3 shared words, split at '_', '-', '.'
///   (`tensor_parallel_size` -> `tensor_model_parallel_size`), at least half the word's;
///   4 edit distance at most max(2, |word|/3) (`cuont` -> `count`).
/// Tiers 1 and 2 need the shorter name to have at least 3 (prefix) or 4 (contained) characters.
/// The tie-break within a tier is fewer words left unshared (tier 3), then the edit distance.
std::pair<int, std::size_t> suggestion_rank(const std::string& word, const std::string& candidate);

/// The candidate that best fits `word` by suggestion_rank (the first listed on a tie); empty
/// when none is plausible.
template <typename Range>
std::string closest_match(const std::string& word, const Range& candidates) {
  // No name is this long; a huge word (a wrong file's content) gets no quadratic-time search.
  if (word.size() > 256) return {};
  std::string best;
  std::pair<int, std::size_t> best_rank{-1, 0};
  for (const auto& candidate : candidates) {
    const std::string c(candidate);
    const auto rank = suggestion_rank(word, c);
    if (rank.first < 0) continue;
    if (best_rank.first < 0 || rank < best_rank) {
      best_rank = rank;
      best = c;
    }
  }
  return best;
}

}  // namespace ccsim::support
