#pragma once
// The flow engine as a plugin. SimGrid (and what it links: ns-3, GSL, gfortran) costs ~35,000
// symbol relocations and ns-3's static constructors at every start of a program linked with it
// (~40 ms of a ccsim run that takes a few ms otherwise), so FlowEngine (sim/flow/flow_engine.cpp) is
// built into a separate module, libccsim_flow.so, that make_engine("flow") loads with dlopen()
// on first use. Programs that never run the flow engine never load SimGrid.
//
// Where the plugin is looked for (flow_plugin_candidates()):
//   1. $CCSIM_FLOW_PLUGIN, when set and non-empty: that file only;
//   2. libccsim_flow.so in the directory of the running executable (the build puts it next to
//      build/cli/ccsim; copy the two together);
//   3. the path the build tree gave it (flow_plugin_build_path()), for other programs of the
//      build tree (tests, benchmarks).
// The plugin's undefined symbols (the execution graph, the router: code it shares with the
// analytic engine) are resolved against the program that loads it, which exports its ccsim
// symbols for that (sim/CMakeLists.txt).
//
// Interface: two C functions. ccsim_flow_plugin_abi() returns the interface version and the
// sizes of the types that cross the boundary, compared with this build's before anything else
// is called, so a plugin from another build is refused instead of misread.

#include <cstddef>
#include <string>
#include <vector>

#include "sim/execution/engine.hpp"

namespace ccsim::sim {

/// File name of the flow engine plugin.
inline constexpr const char* kFlowPluginFile = "libccsim_flow.so";

/// What a plugin and the program loading it must agree on.
struct FlowPluginAbi {
  int version = 0;               ///< kFlowPluginAbiVersion of the plugin's build
  std::size_t engine_size = 0;   ///< sizeof(Engine)
  std::size_t plan_size = 0;     ///< sizeof(Plan)
  std::size_t cost_size = 0;     ///< sizeof(CostParams)
  std::size_t timeline_size = 0; ///< sizeof(Timeline)
  std::size_t cluster_size = 0;  ///< sizeof(models::Cluster)
  bool operator==(const FlowPluginAbi&) const = default;
};
/// Raised whenever the functions below or the types of sim/execution/engine.hpp change meaning.
inline constexpr int kFlowPluginAbiVersion = 1;

/// This build's view of the interface.
inline FlowPluginAbi flow_plugin_abi() {
  return {kFlowPluginAbiVersion, sizeof(Engine), sizeof(Plan), sizeof(CostParams), sizeof(Timeline), sizeof(models::Cluster)};
}

/// The exported entry points (C linkage, looked up by these names).
inline constexpr const char* kFlowPluginAbiSymbol = "ccsim_flow_plugin_abi";
inline constexpr const char* kFlowPluginCreateSymbol = "ccsim_flow_engine_create";
/// Fills *out with the plugin's FlowPluginAbi.
using FlowPluginAbiFn = void (*)(FlowPluginAbi* out);
/// Returns a new FlowEngine on `cluster` (which must outlive it); the caller owns it.
using FlowPluginCreateFn = Engine* (*)(const models::Cluster& cluster);

/// The build tree's plugin (an absolute path fixed at configure time; sim/flow/flow_plugin_location.cpp).
std::string flow_plugin_build_path();

/// The files make_engine("flow") tries, in order (see above). Never empty.
std::vector<std::string> flow_plugin_candidates();

/// dlopen()s the plugin at `path` and checks its interface; returns its engine factory. Loading
/// the same file again returns the same factory (the library stays loaded for the process).
/// Throws support::InputError naming `path` when it cannot be loaded (dlopen's message), lacks
/// the entry points, or is from another build (interface version or type sizes differ).
FlowPluginCreateFn open_flow_plugin(const std::string& path);

/// Loads the plugin (once per process; later calls return at once) and returns the file it
/// was loaded from. Throws support::InputError (the CLI's exit code 2) naming every file tried
/// when none exists, and naming the file when it cannot be loaded (dlopen's message) or is
/// from another build (interface version or type sizes differ).
std::string load_flow_plugin();

}  // namespace ccsim::sim
