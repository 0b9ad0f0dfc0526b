#include "sim/flow/flow_plugin.hpp"

namespace ccsim::sim {

// The build tree's plugin path is defined for this file only (sim/CMakeLists.txt), so no
// other object depends on where the build tree lives (compiler caches can share them).
std::string flow_plugin_build_path() { return CCSIM_FLOW_PLUGIN_BUILD_PATH; }

}  // namespace ccsim::sim
