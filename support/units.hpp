#pragma once
// Physical quantities written as strings at the scenario boundary.
//
// ccsim works in SI internally: bytes, seconds, bytes per second, FLOP per second
// (DESIGN.md, decision 7). Strings with units are parsed here and nowhere else.
// Decimal prefixes are powers of 10 (GB = 1e9 bytes, as nccl-tests reports); binary
// prefixes are powers of 2 (GiB = 2^30 bytes). Bit rates (`bps`) are divided by 8.

#include <stdexcept>
#include <string>
#include <string_view>

namespace ccsim::support {

/// The dimension a unit string must have.
enum class Quantity {
  Bytes,      ///< `80GiB`, `512MB`, `4096B` → bytes
  Bandwidth,  ///< `400Gbps`, `50GB/s`, `25GBps` → bytes per second
  Time,       ///< `1.5us`, `700ns`, `2ms`, `1s` → seconds
  FlopRate,   ///< `989TFLOPS`, `1.2PFLOP/s` → FLOP per second
  Duration,   ///< `30s`, `10min`, `3h`, `54d`, `1y` (365 days) → seconds: spans of a training run
};

/// Thrown by parse_quantity; the scenario loader adds file, line and key.
class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The physical range of a nonzero quantity of dimension `q`, SI units. Far wider than any
/// real hardware (the widest real values: HBM3e 8 TB/s, 288 GB per GPU, 20 PFLOP/s FP4 per
/// GPU, link latencies in ns to ms), so only typos and corrupt files fall outside:
///   Bytes 1 B .. 1 PiB; Bandwidth 1 kB/s .. 1 PB/s; Time 1 ps .. 1 day; FlopRate 1 MFLOP/s .. 1 EFLOP/s;
///   Duration 1 ms .. 100 years (a training run, its checkpoint interval and restart times).
struct QuantityRange {
  double min = 0.0;  ///< smallest nonzero value
  double max = 0.0;  ///< largest value
};
QuantityRange physical_range(Quantity q);

/// Parses `text` (a number followed by a unit of dimension `q`; spaces between are allowed)
/// and returns the value in SI units (bytes, bytes/second, seconds, FLOP/second).
/// A bare number is accepted only for Bytes (taken as bytes).
/// Throws UnitError when the number or the unit is malformed or of another dimension, or when
/// the value is neither zero nor within physical_range(q) (the message gives the range).
double parse_quantity(std::string_view text, Quantity q);

/// A phrase describing what parse_quantity accepts for `q`, for error messages
/// (for example "a bandwidth such as 400Gbps, 50GB/s or 25GBps").
std::string describe_quantity(Quantity q);

/// Human-readable formats used by reports; all use decimal prefixes as nccl-tests does.
std::string format_bandwidth(double bytes_per_second);  ///< "450 GB/s"
std::string format_bytes(double bytes);                 ///< "80 GB"
std::string format_time(double seconds);                ///< "1.5 us"
std::string format_flops(double flop_per_second);       ///< "989 TFLOP/s"
std::string format_duration(double seconds);            ///< "45 s", "12.5 min", "3.1 h", "54 d"

}  // namespace ccsim::support
