#pragma once
// Typed errors for bad user input (scenario files, catalog files, command-line values).
//
// Every error names where the bad value is (file, 1-based line and column), the key path
// (for example `cluster.nodes[0].count`), what was expected and what was found. The CLI
// prints what() and exits with code 2; library code only throws.

#include <stdexcept>
#include <string>

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

/// The candidate closest to `word` when it is close enough to be a plausible typo
/// (distance at most max(2, |word|/3)); empty when none is.
template <typename Range>
std::string closest_match(const std::string& word, const Range& candidates) {
  // No name is this long; a huge word (a wrong file's content) gets no quadratic-time search.
  if (word.size() > 256) return {};
  std::string best;
  std::size_t best_distance = static_cast<std::size_t>(-1);
  for (const auto& candidate : candidates) {
    const std::string c(candidate);
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string{};
}

}  // namespace ccsim::support
