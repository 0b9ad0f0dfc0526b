// Stand-ins for a broken flow engine plugin (tests/sim/flow/plugin_test.cpp), built as two modules:
// ccsim_fake_flow_abi exports the entry points but reports interface version 0 (a plugin from
// another build); ccsim_fake_flow_empty (FAKE_NO_ENTRY) exports neither.

#include "sim/flow/flow_plugin.hpp"

extern "C" {
#ifndef FAKE_NO_ENTRY
__attribute__((visibility("default"))) void ccsim_flow_plugin_abi(ccsim::sim::FlowPluginAbi* out) {
  *out = ccsim::sim::flow_plugin_abi();
  out->version = 0;
}
__attribute__((visibility("default"))) ccsim::sim::Engine* ccsim_flow_engine_create(const ccsim::models::Cluster&) { return nullptr; }
#else
__attribute__((visibility("default"))) int ccsim_fake_flow_marker() { return 1; }
#endif
}
