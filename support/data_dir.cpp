#include "support/data_dir.hpp"

#include <cstdlib>

namespace ccsim::support {

// The build's data directory is defined for this file only, so no other object file depends
// on where the source tree lives (compiler caches can share them across checkouts).
std::filesystem::path data_dir() {
  const char* env = std::getenv("CCSIM_DATA_DIR");
  return env != nullptr && *env != '\0' ? std::filesystem::path(env) : std::filesystem::path(CCSIM_DEFAULT_DATA_DIR);
}

}  // namespace ccsim::support
