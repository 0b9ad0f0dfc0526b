#include "validate/calibrate/calibration_inputs.hpp"

#include "support/digest.hpp"


#include <algorithm>
#include <cctype>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "support/numbers.hpp"
#include "support/units.hpp"

namespace ccsim::validate {

using support::InputError;

namespace {

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

struct CsvLine {
  int line = 0;
  std::vector<std::string> fields;
};

/// Splits `text` into records (RFC 4180 quoting within one line), skipping blank and `#` lines.
std::vector<CsvLine> csv_lines(const std::string& text, const std::string& file) {
  std::vector<CsvLine> out;
  int line = 0;
  // A UTF-8 byte order mark (spreadsheet exports) is not part of the header.
  std::size_t pos = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view raw(text.data() + pos, end - pos);
    pos = end + 1;
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string stripped = trim(raw);
    if (stripped.empty() || stripped.front() == '#') continue;
    CsvLine rec{line, {}};
    std::string field;
    bool quoted = false, was_quoted = false;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (quoted) {
        if (c == '"' && i + 1 < raw.size() && raw[i + 1] == '"') {
          field += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          field += c;
        }
      } else if (c == '"' && trim(field).empty()) {
        quoted = was_quoted = true;
        field.clear();
      } else if (c == ',') {
        rec.fields.push_back(was_quoted ? field : trim(field));
        field.clear();
        was_quoted = false;
      } else {
        field += c;
      }
    }
    if (quoted) throw InputError({file, line, 0}, "CSV", "a closing double quote", "a quoted field that runs to the end of the line");
    rec.fields.push_back(was_quoted ? field : trim(field));
    out.push_back(std::move(rec));
  }
  return out;
}

/// The data rows after checking the header against `columns`.
std::vector<CsvLine> read_csv(const std::string& path, const std::vector<std::string>& columns, const std::string& what) {
  const std::string expected_header = fmt::format("{}", fmt::join(columns, ","));
  const std::string text = support::read_input_file(path, {what + " (CSV with the header " + expected_header + ")"});
  std::vector<CsvLine> lines = csv_lines(text, path);
  if (lines.empty()) throw InputError({path, 0, 0}, "header", "the header line " + expected_header, "an empty file");
  std::vector<std::string> header = lines.front().fields;
  for (auto& h : header) std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
  if (header != columns) {
    throw InputError({path, lines.front().line, 0}, "header", "the columns " + expected_header,
                     support::quote_token(fmt::format("{}", fmt::join(lines.front().fields, ","))));
  }
  lines.erase(lines.begin());
  if (lines.empty()) throw InputError({path, 0, 0}, "rows", "at least one data row after the header", "none");
  for (const auto& l : lines) {
    if (l.fields.size() != columns.size()) {
      throw InputError({path, l.line, 0}, "row", fmt::format("{} fields ({})", columns.size(), expected_header),
                       fmt::format("{} field{}", l.fields.size(), l.fields.size() == 1 ? "" : "s"));
    }
  }
  return lines;
}

bool dotted_key(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos) return false;
  return std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; });
}

}  // namespace

double parse_measured_time(const std::string& text, const std::string& file, int line, const std::string& column) {
  // 1 ns .. 1e6 s: no GPU kernel or step is shorter than a nanosecond, none a fortnight long;
  // outside, a unit was lost (a time that would make the fit's relative residuals overflow).
  const std::string expected = "a positive time in seconds (0.0123) or with a unit (12.3ms, 850us), from 1ns to 1e6 s";
  double seconds = -1;
  if (const support::Parsed<double> plain = support::parse_decimal(text); plain) {
    seconds = plain.value;
  } else {
    try {
      seconds = support::parse_quantity(text, support::Quantity::Time);
    } catch (const support::UnitError&) {
      throw InputError({file, line, 0}, column, expected, support::quote_token(text));
    }
  }
  if (!(seconds >= 1e-9 && seconds <= 1e6)) throw InputError({file, line, 0}, column, expected, support::quote_token(text));
  return seconds;
}

std::vector<StepTimeRow> read_step_times(const std::string& path) {
  std::vector<StepTimeRow> rows;
  for (const CsvLine& l : read_csv(path, {"overrides", "step_time"}, "a step-times file")) {
    StepTimeRow row;
    row.line = l.line;
    row.text = l.fields[0];
    std::set<std::string> seen;
    std::size_t pos = 0;
    const std::string& o = l.fields[0];
    while (pos <= o.size()) {
      std::size_t semi = o.find(';', pos);
      if (semi == std::string::npos) semi = o.size();
      const std::string item = trim(std::string_view(o).substr(pos, semi - pos));
      pos = semi + 1;
      if (item.empty()) continue;
      const std::size_t eq = item.find('=');
      const std::string key = eq == std::string::npos ? item : trim(std::string_view(item).substr(0, eq));
      if (eq == std::string::npos || !dotted_key(key) || key.find('.') == std::string::npos) {
        throw InputError({path, l.line, 0}, "overrides",
                         "key=value items separated by ';' with a dotted scenario key (strategy.tp=8)", support::quote_token(item));
      }
      if (!seen.insert(key).second) throw InputError({path, l.line, 0}, key, "each key once per row", "it twice");
      row.overrides.emplace_back(key, trim(std::string_view(item).substr(eq + 1)));
    }
    row.seconds = parse_measured_time(l.fields[1], path, l.line, "step_time");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<GemmRow> read_gemm_table(const std::string& path) {
  std::vector<GemmRow> rows;
  for (const CsvLine& l : read_csv(path, {"m", "n", "k", "dtype", "seconds"}, "a GEMM benchmark table")) {
    GemmRow row;
    row.line = l.line;
    for (auto [slot, i, name] : {std::tuple{&row.m, 0, "m"}, std::tuple{&row.n, 1, "n"}, std::tuple{&row.k, 2, "k"}}) {
      const std::string& f = l.fields[static_cast<std::size_t>(i)];
      const support::Parsed<std::int64_t> v = support::parse_integer(f);
      if (!v || v.value <= 0 || v.value > (std::int64_t{1} << 31)) {
        throw InputError({path, l.line, 0}, name, "a positive integer number of elements (at most 2^31)", support::quote_token(f));
      }
      *slot = v.value;
    }
    row.dtype = l.fields[3];
    if (row.dtype != "bf16" && row.dtype != "fp16" && row.dtype != "fp8" && row.dtype != "fp32") {
      throw InputError({path, l.line, 0}, "dtype", "bf16, fp16, fp8 or fp32", support::quote_token(row.dtype));
    }
    row.seconds = parse_measured_time(l.fields[4], path, l.line, "seconds");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::pair<std::vector<int>, std::vector<int>> split_holdout(const std::string& spec, int rows) {
  std::vector<int> fit, held;
  if (spec == "alternate" || spec == "none") {
    for (int i = 0; i < rows; ++i) (spec == "alternate" && i % 2 == 1 ? held : fit).push_back(i);
    return {fit, held};
  }
  const std::string expected = fmt::format("alternate, none, or a comma-separated list of row numbers 0..{} to hold out", rows - 1);
  std::set<int> chosen;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    std::size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = trim(std::string_view(spec).substr(pos, comma - pos));
    pos = comma + 1;
    const support::Parsed<std::int64_t> v = support::parse_integer(item);
    if (!v || v.value < 0 || v.value >= rows || !chosen.insert(static_cast<int>(v.value)).second) {
      throw InputError({"<command line>", 0, 0}, "--holdout", expected, support::quote_token(spec));
    }
  }
  for (int i = 0; i < rows; ++i) (chosen.count(i) != 0 ? held : fit).push_back(i);
  if (fit.empty()) throw InputError({"<command line>", 0, 0}, "--holdout", "a holdout that leaves rows to fit", support::quote_token(spec));
  return {fit, held};
}

std::string sha256_file(const std::string& path) {
  return support::sha256_hex(support::read_input_file(path, {"an input file"}));
}

}  // namespace ccsim::validate
