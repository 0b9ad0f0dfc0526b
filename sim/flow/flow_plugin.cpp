// Entry points of libccsim_flow.so, the flow engine plugin (see sim/flow/flow_plugin.hpp). Built
// only into that module, with sim/flow/flow_engine.cpp; the program loading it provides the rest.

#include "sim/flow/flow_engine.hpp"
#include "sim/flow/flow_plugin.hpp"

extern "C" {

__attribute__((visibility("default"))) void ccsim_flow_plugin_abi(ccsim::sim::FlowPluginAbi* out) {
  *out = ccsim::sim::flow_plugin_abi();
}

__attribute__((visibility("default"))) ccsim::sim::Engine* ccsim_flow_engine_create(const ccsim::models::Cluster& cluster) {
  return new ccsim::sim::FlowEngine(cluster);
}

}  // extern "C"
