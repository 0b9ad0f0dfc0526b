#pragma once
// The date stamp of a written result's provenance (the `date` of the tables `ccsim calibrate`
// fits): ISO 8601, UTC, to the second.

#include <chrono>
#include <string>

namespace ccsim::support {

/// `t` as ISO 8601 in UTC to the second, "2023-11-14T22:13:20Z" (gmtime_r, then strftime with
/// "%Y-%m-%dT%H:%M:%SZ"; a fraction of a second is dropped).
std::string iso8601_utc(std::chrono::system_clock::time_point t);

/// iso8601_utc of the system clock's now.
std::string iso8601_utc_now();

}  // namespace ccsim::support
