#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <string>

namespace ccsim::test {
// Only this file carries the source directory, so the other test objects do not depend on
// where the checkout lives (compiler caches can share them).
std::string source_dir() { return CCSIM_SOURCE_DIR; }
}  // namespace ccsim::test
