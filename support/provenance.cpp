#include "support/provenance.hpp"

#include <ctime>

namespace ccsim::support {

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string iso8601_utc_now() { return iso8601_utc(std::chrono::system_clock::now()); }

}  // namespace ccsim::support
