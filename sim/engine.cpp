#include "sim/engine.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

#include "support/input_error.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/flow/flow_plugin.hpp"

namespace ccsim::sim {
namespace {

const char* const kPluginKey = "engine flow";
const char* const kPluginExpected =
    "the flow engine plugin libccsim_flow.so (built with ccsim, next to the ccsim executable; "
    "the environment variable CCSIM_FLOW_PLUGIN names another file)";

struct LoadedPlugin {
  std::string path;
  FlowPluginCreateFn create = nullptr;
};

std::mutex plugin_mutex;
LoadedPlugin plugin;  // guarded by plugin_mutex; set once, never unloaded

std::string describe(const FlowPluginAbi& a) {
  return "interface version " + std::to_string(a.version) + " (type sizes " + std::to_string(a.engine_size) + ", " +
         std::to_string(a.plan_size) + ", " + std::to_string(a.cost_size) + ", " + std::to_string(a.timeline_size) + ", " +
         std::to_string(a.cluster_size) + ")";
}

}  // namespace

FlowPluginCreateFn open_flow_plugin(const std::string& path) {
  // RTLD_NOW: a symbol the program does not provide fails here, with its name, not mid-run.
  // The handle is never closed: SimGrid keeps process-wide state and exit handlers.
  // Only a regular file (after symlinks) is opened: dlopen() of a fifo blocks for a writer.
  std::error_code kind_error;
  const std::filesystem::file_status st = std::filesystem::status(path, kind_error);
  if (!kind_error && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    throw support::InputError({path, 0, 0}, kPluginKey, kPluginExpected,
                              std::filesystem::is_directory(st) ? "a directory" : "not a regular file (a fifo, socket or device)");
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw support::InputError({path, 0, 0}, kPluginKey, kPluginExpected,
                              std::string("a file that cannot be loaded: ") + (why != nullptr ? why : "unknown dlopen error"));
  }
  const auto abi = reinterpret_cast<FlowPluginAbiFn>(::dlsym(handle, kFlowPluginAbiSymbol));
  const auto create = reinterpret_cast<FlowPluginCreateFn>(::dlsym(handle, kFlowPluginCreateSymbol));
  if (abi == nullptr || create == nullptr) {
    ::dlclose(handle);
    throw support::InputError({path, 0, 0}, kPluginKey, kPluginExpected,
                              std::string("a library without the functions ") + kFlowPluginAbiSymbol + " and " + kFlowPluginCreateSymbol);
  }
  FlowPluginAbi theirs;
  abi(&theirs);
  const FlowPluginAbi ours = flow_plugin_abi();
  if (!(theirs == ours)) {
    // Not closed: its static constructors have run, and unloading SimGrid is not supported.
    throw support::InputError({path, 0, 0}, kPluginKey, kPluginExpected + std::string(" from this build, ") + describe(ours),
                              "a plugin of " + describe(theirs), "rebuild it with this ccsim");
  }
  return create;
}

std::vector<std::string> flow_plugin_candidates() {
  // Made absolute: dlopen() looks a bare name up on the library path, not in the current directory.
  if (const char* env = std::getenv("CCSIM_FLOW_PLUGIN"); env != nullptr && *env != '\0') {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(env, ec);
    return {ec ? std::string(env) : abs.string()};
  }
  std::vector<std::string> out;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.has_parent_path()) out.push_back((exe.parent_path() / kFlowPluginFile).string());
  const std::string built = flow_plugin_build_path();
  if (out.empty() || out.front() != built) out.push_back(built);
  return out;
}

std::string load_flow_plugin() {
  std::lock_guard<std::mutex> lock(plugin_mutex);
  if (plugin.create != nullptr) return plugin.path;
  const std::vector<std::string> candidates = flow_plugin_candidates();
  std::string tried;
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    plugin = {path, open_flow_plugin(path)};  // a file that is there but broken is an error, not skipped
    return plugin.path;
  }
  const bool from_env = std::getenv("CCSIM_FLOW_PLUGIN") != nullptr && *std::getenv("CCSIM_FLOW_PLUGIN") != '\0';
  throw support::InputError({candidates.front(), 0, 0}, kPluginKey, kPluginExpected, "no such file",
                            from_env ? "CCSIM_FLOW_PLUGIN names it" : "tried " + tried);
}

std::unique_ptr<Engine> make_engine(models::EngineKind kind, const models::Cluster& cluster) {
  if (kind == models::EngineKind::Analytic) return std::make_unique<AnalyticEngine>(cluster);
  load_flow_plugin();
  FlowPluginCreateFn create = nullptr;
  {
    std::lock_guard<std::mutex> lock(plugin_mutex);
    create = plugin.create;
  }
  std::unique_ptr<Engine> engine(create(cluster));
  if (!engine) {
    throw support::InputError({load_flow_plugin(), 0, 0}, kPluginKey, kPluginExpected, "a plugin that created no engine",
                              "rebuild it with this ccsim");
  }
  return engine;
}

std::unique_ptr<Engine> make_engine(std::string_view name, const models::Cluster& cluster) {
  if (const auto kind = models::parse_engine_kind(name)) return make_engine(*kind, cluster);
  throw std::invalid_argument("unknown engine '" + std::string(name) + "' (expected analytic or flow)");
}

}  // namespace ccsim::sim
