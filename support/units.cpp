#include "support/units.hpp"

#include "support/numbers.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace ccsim::support {
namespace {

struct Unit {
  std::string_view name;
  double factor;  // multiply the number by this to get SI
};

// Bytes. Decimal and binary prefixes; unit names are case-sensitive except where listed twice.
constexpr std::array<Unit, 12> kByteUnits{{
    {"B", 1.0},
    {"KB", 1e3}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"PB", 1e15}, {"PiB", 1125899906842624.0},
}};

// Bandwidth: bytes per second (`GB/s`, `GBps`) or bits per second (`Gbps`, `Gb/s`).
constexpr std::array<Unit, 25> kBandwidthUnits{{
    {"B/s", 1.0}, {"Bps", 1.0},
    {"KB/s", 1e3}, {"kB/s", 1e3}, {"KBps", 1e3},
    {"MB/s", 1e6}, {"MBps", 1e6},
    {"GB/s", 1e9}, {"GBps", 1e9},
    {"TB/s", 1e12}, {"TBps", 1e12},
    {"GiB/s", 1073741824.0}, {"MiB/s", 1048576.0},
    {"bps", 1.0 / 8}, {"b/s", 1.0 / 8},
    {"Kbps", 1e3 / 8}, {"kbps", 1e3 / 8}, {"Kb/s", 1e3 / 8},
    {"Mbps", 1e6 / 8}, {"Mb/s", 1e6 / 8},
    {"Gbps", 1e9 / 8}, {"Gb/s", 1e9 / 8},
    {"Tbps", 1e12 / 8}, {"Tb/s", 1e12 / 8},
    {"GiBps", 1073741824.0},
}};

constexpr std::array<Unit, 8> kTimeUnits{{
    {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"\xCE\xBCs", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12},
    {"min", 60.0},
}};

// Long forms as people write them ("30days", "720hours"), singular and plural.
constexpr std::array<Unit, 19> kDurationUnits{{
    {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}, {"w", 604800.0}, {"y", 31536000.0},
    {"sec", 1.0}, {"secs", 1.0}, {"mins", 60.0}, {"hour", 3600.0}, {"hours", 3600.0}, {"day", 86400.0}, {"days", 86400.0},
    {"week", 604800.0}, {"weeks", 604800.0}, {"year", 31536000.0}, {"years", 31536000.0}, {"hr", 3600.0},
}};

constexpr std::array<Unit, 10> kFlopUnits{{
    {"FLOPS", 1.0}, {"FLOP/s", 1.0},
    {"GFLOPS", 1e9}, {"GFLOP/s", 1e9},
    {"TFLOPS", 1e12}, {"TFLOP/s", 1e12},
    {"PFLOPS", 1e15}, {"PFLOP/s", 1e15},
    {"EFLOPS", 1e18}, {"EFLOP/s", 1e18},
}};

template <std::size_t N>
const Unit* find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const Unit& u : units)
    if (u.name == name) return &u;
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

const Unit* lookup(Quantity q, std::string_view name) {
  switch (q) {
    case Quantity::Bytes: return find_unit(kByteUnits, name);
    case Quantity::Bandwidth: return find_unit(kBandwidthUnits, name);
    case Quantity::Time: return find_unit(kTimeUnits, name);
    case Quantity::FlopRate: return find_unit(kFlopUnits, name);
    case Quantity::Duration: return find_unit(kDurationUnits, name);
  }
  return nullptr;
}

std::string format_scaled(double value, const char* const* prefixes, int count, const char* unit) {
  int i = 0;
  double v = value;
  while (i + 1 < count && std::fabs(v) >= 1000.0) {
    v /= 1000.0;
    ++i;
  }
  return fmt::format("{:.4g} {}{}", v, prefixes[i], unit);
}

}  // namespace

double parse_quantity(std::string_view text, Quantity q) {
  const std::string_view s = trim(text);
  // Split at the first character that cannot belong to a decimal number.
  std::size_t pos = 0;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) ++pos;
  while (pos < s.size()) {
    const char c = s[pos];
    const bool exponent_sign = (c == '+' || c == '-') && pos > 0 && (s[pos - 1] == 'e' || s[pos - 1] == 'E');
    // 'e'/'E' is part of the number only when followed by a digit or sign (so "1e9" parses, "2EFLOPS" does not).
    const bool exponent = (c == 'e' || c == 'E') && pos + 1 < s.size() &&
                          (std::isdigit(static_cast<unsigned char>(s[pos + 1])) || s[pos + 1] == '+' || s[pos + 1] == '-');
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || exponent || exponent_sign) {
      ++pos;
    } else {
      break;
    }
  }
  const std::string_view number = s.substr(0, pos);
  const std::string_view unit = trim(s.substr(pos));
  if (number.empty() || number == "+" || number == "-") {
    throw UnitError("no number before the unit");
  }
  // The one number parser (support/numbers.hpp): a denormal such as 1e-320 is out of range,
  // not silently zero.
  const Parsed<double> parsed = parse_decimal(number);
  if (parsed.problem == NumberProblem::OutOfRange) {
    throw UnitError("number " + quote_token(number) + " is out of the range of a double");
  }
  if (!parsed) throw UnitError("malformed number " + quote_token(number));
  const double value = parsed.value;
  if (unit.empty()) {
    if (q == Quantity::Bytes) return value;
    throw UnitError("missing unit");
  }
  const Unit* u = lookup(q, unit);
  if (u == nullptr) {
    for (Quantity other : {Quantity::Bytes, Quantity::Bandwidth, Quantity::Time, Quantity::FlopRate, Quantity::Duration}) {
      if (other != q && lookup(other, unit) != nullptr) {
        throw UnitError("unit '" + std::string(unit) + "' is not a unit of this kind of quantity");
      }
    }
    throw UnitError("unknown unit '" + std::string(unit) + "'");
  }
  const double si = value * u->factor;
  const QuantityRange range = physical_range(q);
  const double magnitude = std::fabs(si);
  if (!std::isfinite(si) || (magnitude != 0.0 && (magnitude < range.min || magnitude > range.max))) {
    // The value in plain SI (it may be far beyond any prefix); the range as reports print it.
    const char* si_unit = q == Quantity::Bytes       ? "B"
                          : q == Quantity::Bandwidth ? "B/s"
                          : q == Quantity::Time || q == Quantity::Duration ? "s"
                                                                          : "FLOP/s";
    const auto show = [&](double v) {
      switch (q) {
        case Quantity::Bytes: return format_bytes(v);
        case Quantity::Bandwidth: return format_bandwidth(v);
        case Quantity::Time: return v >= 86400.0 ? std::string("1 day") : format_time(v);
        case Quantity::FlopRate: return format_flops(v);
        case Quantity::Duration: return v >= 3.1536e9 ? std::string("100 y") : format_duration(v);
      }
      return fmt::format("{:g}", v);
    };
    const std::string value_text = std::isfinite(si) ? fmt::format("{:.3g} {}", si, si_unit) : std::string("the value (beyond a double)");
    throw UnitError(fmt::format("{} is outside the accepted range, {} to {}", value_text, show(range.min), show(range.max)));
  }
  return si;
}

QuantityRange physical_range(Quantity q) {
  switch (q) {
    case Quantity::Bytes: return {1.0, 1125899906842624.0};  // 1 B .. 2^50 B
    case Quantity::Bandwidth: return {1e3, 1e15};
    case Quantity::Time: return {1e-12, 86400.0};
    case Quantity::FlopRate: return {1e6, 1e18};
    case Quantity::Duration: return {1e-3, 3.1536e9};
  }
  return {0.0, 0.0};
}

std::string describe_quantity(Quantity q) {
  switch (q) {
    case Quantity::Bytes: return "a size such as 80GiB, 512MB or 4096 (bytes)";
    case Quantity::Bandwidth: return "a bandwidth such as 400Gbps, 50GB/s or 25GBps";
    case Quantity::Time: return "a time such as 1.5us, 700ns or 2ms";
    case Quantity::FlopRate: return "a compute rate such as 989TFLOPS";
    case Quantity::Duration: return "a duration such as 30s, 10min, 3h or 54d";
  }
  return "a quantity";
}

std::string format_bandwidth(double bytes_per_second) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P"};
  return format_scaled(bytes_per_second, prefixes, 6, "B/s");
}

std::string format_bytes(double bytes) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P"};
  return format_scaled(bytes, prefixes, 6, "B");
}

std::string format_time(double seconds) {
  if (seconds == 0.0) return "0 s";
  static const std::pair<double, const char*> scales[] = {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  for (const auto& [scale, name] : scales) {
    if (std::fabs(seconds) >= scale) return fmt::format("{:.4g} {}", seconds / scale, name);
  }
  return fmt::format("{:.4g} ps", seconds / 1e-12);
}

std::string format_duration(double seconds) {
  if (std::fabs(seconds) < 1e-9) return "0 s";  // below a nanosecond: rounding noise of a sum of days
  static const std::pair<double, const char*> scales[] = {{86400.0, "d"}, {3600.0, "h"}, {60.0, "min"}};
  for (const auto& [scale, name] : scales) {
    if (std::fabs(seconds) >= scale) return fmt::format("{:.3g} {}", seconds / scale, name);
  }
  return format_time(seconds);
}

std::string format_flops(double flop_per_second) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  return format_scaled(flop_per_second, prefixes, 7, "FLOP/s");
}

}  // namespace ccsim::support
