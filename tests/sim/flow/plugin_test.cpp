// The flow engine plugin (sim/flow/flow_plugin.hpp): where it is looked for, that the build's
// plugin loads and simulates, and that broken files are refused with the file named.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "support/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/flow/flow_plugin.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

/// Sets (or unsets, for nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The message of the InputError `f` throws (fails the test when it throws nothing).
template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const support::InputError& e) {
    return e.what();
  }
  FAIL("no InputError thrown");
  return {};
}

/// Rank 1 sends `bytes` to rank 0 (one SendRecv transfer).
models::Schedule one_send(std::uint64_t bytes) {
  models::Schedule s;
  s.collective = models::Collective::SendRecv;
  s.algorithm = "one-send";
  s.nranks = 2;
  s.bytes = bytes;
  s.ranks.resize(2);
  const models::Slice all{models::BufferKind::Input, 0, bytes};
  models::Op send;
  send.kind = models::OpKind::Send;
  send.peer = 0;
  send.src = all;
  s.ranks[1].add(send);
  models::Op recv;
  recv.kind = models::OpKind::Recv;
  recv.peer = 1;
  recv.dst = all;
  s.ranks[0].add(recv);
  return s;
}

}  // namespace

TEST_CASE("flow plugin: looked for in $CCSIM_FLOW_PLUGIN, else next to the program, then in the build tree", "[plugin]") {
  const std::string built = sim::flow_plugin_build_path();
  CHECK(std::filesystem::path(built).is_absolute());
  CHECK(std::filesystem::path(built).filename() == sim::kFlowPluginFile);
  {
    const ScopedEnv env("CCSIM_FLOW_PLUGIN", std::nullopt);
    const auto candidates = sim::flow_plugin_candidates();
    // This test program lives in build/tests, the plugin in build/cli: two places to look.
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    REQUIRE(candidates.size() == 2);
    CHECK(candidates[0] == (self.parent_path() / sim::kFlowPluginFile).string());
    CHECK(candidates[1] == built);
  }
  {
    const ScopedEnv env("CCSIM_FLOW_PLUGIN", std::string(""));  // empty: as if unset
    CHECK(sim::flow_plugin_candidates().back() == built);
  }
  {
    const ScopedEnv env("CCSIM_FLOW_PLUGIN", std::string("/opt/elsewhere/libccsim_flow.so"));
    CHECK(sim::flow_plugin_candidates() == std::vector<std::string>{"/opt/elsewhere/libccsim_flow.so"});
  }
}

TEST_CASE("flow plugin: the build's plugin loads, matches this build and simulates α + S/B", "[plugin]") {
  const ScopedEnv env("CCSIM_FLOW_PLUGIN", std::nullopt);
  const std::string loaded = sim::load_flow_plugin();
  CHECK(std::filesystem::exists(loaded));
  CHECK(sim::load_flow_plugin() == loaded);  // once per process
  const sim::FlowPluginCreateFn create = sim::open_flow_plugin(sim::flow_plugin_build_path());
  REQUIRE(create != nullptr);

  // One transfer of S = 450 MB from GPU 1 to GPU 0 of a DGX H100 over the NVSwitch (path
  // latency α = 0.6 µs, 450 GB/s per direction, nothing else on the links):
  // T = α + S / B = 0.6e-6 + 450e6 / 450e9 = 1.0006e-3 s.
  const models::Cluster cluster = test::shipped_cluster("dgx-h100-1node.yaml");
  const models::Schedule schedule = one_send(450000000);
  sim::Plan plan;
  plan.schedule = &schedule;
  plan.rank_gpu = {cluster.topology.gpus()[0], cluster.topology.gpus()[1]};
  const std::unique_ptr<sim::Engine> engine(create(cluster));
  CHECK(engine->name() == "flow");
  const sim::Timeline t = engine->run(plan);
  CHECK(t.makespan == Approx(0.6e-6 + 450e6 / 450e9).epsilon(1e-9));
  CHECK(t.transfers == 1);
  // make_engine("flow") goes through the same plugin and agrees with the analytic engine.
  CHECK(sim::make_engine("flow", cluster)->run(plan).makespan == Approx(t.makespan).epsilon(1e-12));
  CHECK(sim::make_engine("analytic", cluster)->run(plan).makespan == Approx(t.makespan).epsilon(1e-9));
}

TEST_CASE("flow plugin: files that are not this build's plugin are refused, naming the file", "[plugin]") {
  const test::TempDir dir;
  const std::string missing = (dir.path / "libccsim_flow.so").string();
  std::string msg = input_error_of([&] { sim::open_flow_plugin(missing); });
  CHECK(msg.rfind(missing + ": error: engine flow: expected the flow engine plugin libccsim_flow.so", 0) == 0);
  CHECK(msg.find("found a file that cannot be loaded") != std::string::npos);

  const std::string text = dir.write("not-a-library.so", "flow: engine\n");
  msg = input_error_of([&] { sim::open_flow_plugin(text); });
  CHECK(msg.rfind(text + ": error: engine flow:", 0) == 0);
  CHECK(msg.find("found a file that cannot be loaded") != std::string::npos);

  msg = input_error_of([&] { sim::open_flow_plugin(CCSIM_TEST_FAKE_FLOW_EMPTY); });
  CHECK(msg.rfind(std::string(CCSIM_TEST_FAKE_FLOW_EMPTY) + ": error: engine flow:", 0) == 0);
  CHECK(msg.find("found a library without the functions ccsim_flow_plugin_abi and ccsim_flow_engine_create") != std::string::npos);

  msg = input_error_of([&] { sim::open_flow_plugin(CCSIM_TEST_FAKE_FLOW_ABI); });
  CHECK(msg.rfind(std::string(CCSIM_TEST_FAKE_FLOW_ABI) + ": error: engine flow:", 0) == 0);
  CHECK(msg.find("found a plugin of interface version 0 ") != std::string::npos);
  CHECK(msg.find("; rebuild it with this ccsim") != std::string::npos);
}

TEST_CASE("flow plugin: a fifo or a directory is refused before loading; a relative path is made absolute", "[plugin]") {
  const test::TempDir dir;
  // dlopen() of a fifo would block until something writes to it: refused without opening.
  const std::string fifo = (dir.path / "fifo.so").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string msg = input_error_of([&] { sim::open_flow_plugin(fifo); });
  CHECK(msg.rfind(fifo + ": error: engine flow: expected the flow engine plugin libccsim_flow.so", 0) == 0);
  CHECK(msg.find("found not a regular file (a fifo, socket or device)") != std::string::npos);
  msg = input_error_of([&] { sim::open_flow_plugin(dir.path.string()); });
  CHECK(msg.find("found a directory") != std::string::npos);
  {
    // A bare name is the file in the current directory, as for any other input file (dlopen()
    // would search the library path instead).
    const ScopedEnv env("CCSIM_FLOW_PLUGIN", std::string("libccsim_flow.so"));
    CHECK(sim::flow_plugin_candidates() == std::vector<std::string>{(std::filesystem::current_path() / "libccsim_flow.so").string()});
  }
}
