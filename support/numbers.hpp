#pragma once
// Number parsing for every input format ccsim reads (YAML scalars, config.json values already
// parsed by nlohmann-json, nccl-tests logs, command-line values): one place, no exceptions, no
// locale, no regex. Every caller then checks the value against the quantity's physical range
// and reports the file position itself.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccsim::support {

/// Why a text is not a number.
enum class NumberProblem {
  None,        ///< parsed
  Malformed,   ///< not a plain decimal number (empty, letters, hex, inf, nan, trailing text)
  OutOfRange,  ///< a number, but beyond the type: overflows a double or int64, or underflows to a denormal
};

/// A parsed number: `value` is meaningful when `problem` is None.
template <typename T>
struct Parsed {
  T value{};
  NumberProblem problem = NumberProblem::Malformed;
  explicit operator bool() const { return problem == NumberProblem::None; }
};

/// Parses all of `text` as a plain decimal number: an optional sign, digits with an optional
/// point, an optional exponent (`12`, `-0.5`, `1.5e9`, `.25`). Rejects `inf`, `nan`, hex and
/// trailing characters (Malformed); results that are not finite or are denormal (below
/// 2.2e-308 in magnitude, except exactly zero) are OutOfRange. Never throws.
Parsed<double> parse_decimal(std::string_view text);

/// Parses all of `text` as a base-10 integer (optional sign, digits only). OutOfRange beyond
/// int64. Never throws.
Parsed<std::int64_t> parse_integer(std::string_view text);

/// "'TEXT'" for an error message, cut to 40 characters with the total length when longer, so
/// that an error never echoes a huge or binary token.
std::string quote_token(std::string_view text);

/// A short phrase for why `text` failed: "'x' (not a number)" or "'1e999' (out of range)".
std::string describe_number_problem(std::string_view text, NumberProblem problem);

}  // namespace ccsim::support
