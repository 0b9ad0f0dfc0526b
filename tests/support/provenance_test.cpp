// The provenance date stamp: ISO 8601, UTC, to the second.

#include <catch2/catch.hpp>

#include <chrono>
#include <regex>

#include "support/provenance.hpp"

using namespace ccsim;
using std::chrono::system_clock;

TEST_CASE("iso8601_utc writes a time point as YYYY-MM-DDTHH:MM:SSZ in UTC") {
  // 0 s after the epoch is 1970-01-01 00:00:00 UTC; 1,700,000,000 s = 19,675 days (2023-11-14)
  // + 80,000 s (22:13:20); 951,782,400 s = 11,016 days: the leap day 2000-02-29 at 00:00:00.
  CHECK(support::iso8601_utc(system_clock::time_point{}) == "1970-01-01T00:00:00Z");
  CHECK(support::iso8601_utc(system_clock::from_time_t(1700000000)) == "2023-11-14T22:13:20Z");
  CHECK(support::iso8601_utc(system_clock::from_time_t(951782400)) == "2000-02-29T00:00:00Z");
  // A fraction of a second is dropped, not rounded.
  CHECK(support::iso8601_utc(system_clock::from_time_t(1700000000) + std::chrono::milliseconds(999)) == "2023-11-14T22:13:20Z");
}

TEST_CASE("iso8601_utc_now is today's stamp in the same format") {
  const std::string before = support::iso8601_utc(system_clock::now());
  const std::string now = support::iso8601_utc_now();
  CHECK(std::regex_match(now, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")));
  CHECK(now >= before);  // the format sorts as time does
}
