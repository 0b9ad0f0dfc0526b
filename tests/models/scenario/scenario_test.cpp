#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "models/scenario/scenario.hpp"
#include "models/scenario/effective_yaml.hpp"
#include "models/workload/program_builder.hpp"
#include "test_support.hpp"

using namespace ccsim::models;
using ccsim::test::shipped_catalog;
using Catch::Matchers::Contains;

using ccsim::test::TempDir;

TEST_CASE("inline overrides refine a catalog node and its GPU", "[scenario]") {
  TempDir dir;
  const std::string file = dir.write("s.yaml", R"(
cluster:
  nodes:
    - node:
        base: dgx-h100
        gpu: {hbm_capacity: 96GB}
        nics: {link: ib-ndr, count: 4}
      count: 2
  fabric: {kind: single-switch}
)");
  const Scenario s = load_scenario(file, shipped_catalog());
  const NodeSpec& n = s.cluster.groups.at(0).node;
  CHECK(n.name == "dgx-h100");
  CHECK(n.gpu.name == "H100-SXM5");
  CHECK(n.gpu.hbm_capacity == 96e9);      // the override
  CHECK(n.gpu.bf16_flops == 989e12);      // from the catalog GPU
  CHECK(n.nics == 4);                     // the override
  CHECK(n.pcie_switches == 8);            // from the catalog node
  CHECK(s.cluster.total_gpus() == 16);
  CHECK(s.name == "s");
}

TEST_CASE("includes merge maps, the including file winning", "[scenario]") {
  TempDir dir;
  dir.write("base.yaml", R"(
cluster:
  name: from-base
  nodes:
    - node: dgx-a100
      count: 4
  fabric: {kind: fat-tree, oversubscription: 2}
simulation: {engine: flow}
)");
  const std::string top = dir.write("top.yaml", R"(
include: base.yaml
cluster:
  fabric: {oversubscription: 1}
strategy: {tp: 8, pp: 2}
)");
  const Scenario s = load_scenario(top, shipped_catalog());
  CHECK(s.cluster.name == "from-base");
  CHECK(s.cluster.fabric.kind == FabricKind::FatTree);
  CHECK(s.cluster.fabric.oversubscription == 1.0);
  CHECK(s.simulation.engine == EngineKind::Flow);
  REQUIRE(s.strategy);
  // 32 GPUs / (tp 8 · pp 2 · cp 1) = dp 2.
  CHECK(s.strategy->dp == 2);
}

TEST_CASE("strategy and workload sections are typed", "[scenario]") {
  TempDir dir;
  const std::string file = dir.write("s.yaml", R"(
cluster:
  nodes: [{node: dgx-h100, count: 8}]
  fabric: {kind: fat-tree, wiring: rail-optimized}
workload:
  model: llama-3-70b
  sequence_length: 8192
  micro_batch_size: 1
  global_batch_size: 64
strategy:
  tp: 8
  pp: 2
  dp: 4
  sequence_parallel: true
  zero_stage: 1
  pipeline_schedule: interleaved
  virtual_stages: 4
  algorithms: {allreduce: ring, alltoall: auto}
)");
  const Scenario s = load_scenario(file, shipped_catalog());
  REQUIRE(s.workload);
  CHECK(s.workload->model == "llama-3-70b");
  CHECK(s.workload->sequence_length == 8192);
  CHECK(s.workload->phase == WorkloadPhase::TrainingStep);
  REQUIRE(s.strategy);
  CHECK(s.strategy->tp * s.strategy->pp * s.strategy->dp == 64);
  CHECK(s.strategy->virtual_stages == 4);
  CHECK(s.strategy->algorithms.at("allreduce") == "ring");
  CHECK(s.strategy->order == "tp-cp-ep-pp-dp");
}

TEST_CASE("a file included twice is loaded once, with the same result (diamonds stay linear)", "[scenario]") {
  TempDir dir;
  // Diamond: top includes b and c, both include d. Layers by precedence: top, b, d, c (d's
  // second copy, after c, could not win anything, as its first copy already precedes c).
  dir.write("d.yaml", "cluster: {name: from-d, nodes: [{node: dgx-a100, count: 2}], fabric: {kind: fat-tree, oversubscription: 4}}\n");
  dir.write("b.yaml", "include: d.yaml\ncluster: {fabric: {oversubscription: 2}}\n");
  dir.write("c.yaml", "include: d.yaml\ncluster: {name: from-c}\n");
  const Scenario s = load_scenario(dir.write("top.yaml", "include: [b.yaml, c.yaml]\n"), shipped_catalog());
  CHECK(s.cluster.name == "from-d");                  // d (first reached through b) precedes c
  CHECK(s.cluster.fabric.oversubscription == 2.0);    // b precedes d
  // 40 levels of `include: [next, next]` would be 2^40 loads if repeats were reloaded (26 levels
  // would take minutes and GBs); loaded once each, this is 41 files.
  for (int i = 0; i < 40; ++i) {
    dir.write("f" + std::to_string(i) + ".yaml", fmt::format("include: [f{0}.yaml, f{0}.yaml]\n", i + 1));
  }
  dir.write("f40.yaml", "cluster: {name: deep, nodes: [{node: dgx-h100, count: 1}]}\n");
  CHECK(load_scenario((dir.path / "f0.yaml").string(), shipped_catalog()).cluster.name == "deep");
}

TEST_CASE("an include cycle names the files", "[scenario]") {
  TempDir dir;
  dir.write("a.yaml", "include: b.yaml\ncluster: {nodes: [{node: dgx-h100}]}\n");
  dir.write("b.yaml", "include: a.yaml\n");
  CHECK_THROWS_WITH(load_scenario((dir.path / "a.yaml").string(), shipped_catalog()),
                    Contains("the cycle a.yaml -> b.yaml -> a.yaml"));
}

TEST_CASE("ccsim::support::InputError carries the location and the parts of the message", "[scenario]") {
  TempDir dir;
  const std::string file = dir.write("s.yaml", "cluster:\n  nodes:\n    - node: dgx-h100\n      count: zero\n");
  try {
    load_scenario(file, shipped_catalog());
    FAIL("no error");
  } catch (const ccsim::support::InputError& e) {
    CHECK(e.where().file == file);
    CHECK(e.where().line == 4);
    CHECK(e.where().column == 14);
    CHECK(e.key() == "cluster.nodes[0].count");
    CHECK(e.expected() == "an integer from 1 to 1048576");
    CHECK(e.found() == "'zero'");
  }
}

// effective.yaml of an inference scenario must not write global_batch_size: 0, which
// the loader rejects. Every shipped scenario's effective.yaml must load again and give the same
// effective scenario (a fixed point: every setting is written out, so equal text means equal
// settings). tests/cli/effective_yaml.cmake checks that the reloaded runs are identical.
TEST_CASE("effective.yaml of every shipped scenario loads and is a fixed point", "[scenario]") {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const char* sub : {"scenarios", "scenarios/workloads"}) {
    for (const auto& e : fs::directory_iterator(ccsim::test::source_path(sub))) {
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 19);
  int inference = 0;
  for (const auto& file : files) {
    INFO(file.string());
    const Scenario first = load_scenario(file.string(), shipped_catalog());
    if (first.workload && first.workload->phase != WorkloadPhase::TrainingStep) ++inference;
    const std::string text = effective_yaml(first);
    TempDir dir;  // elsewhere than the original: nothing may depend on its directory
    const std::string copy = dir.write("effective.yaml", text);
    Scenario second;
    REQUIRE_NOTHROW(second = load_scenario(copy, shipped_catalog()));
    CHECK(effective_yaml(second) == text);
    CHECK(second.name == first.name);
    CHECK(second.cluster.total_gpus() == first.cluster.total_gpus());
    REQUIRE(second.workload.has_value() == first.workload.has_value());
    if (first.workload) {
      CHECK(second.workload->phase == first.workload->phase);
      CHECK(micro_batches(*second.workload, *second.strategy) == micro_batches(*first.workload, *first.strategy));
    }
  }
  // the decode and prefill scenarios, the serving one, and the three
  // Llama-3.1-8B TP8 decode scenarios of the Ethernet-calibrated demonstration
  CHECK(inference == 9);
}

TEST_CASE("effective.yaml writes a training step's effective global batch when the file leaves it out", "[scenario]") {
  // No global_batch_size: one micro-batch per DP rank, i.e. micro_batch_size·dp = 2·8 = 16.
  TempDir dir;
  const std::string file = dir.write("s.yaml", R"(
cluster: {nodes: [{node: dgx-h100}]}
workload: {model: llama-3-8b, sequence_length: 1024, micro_batch_size: 2}
)");
  const Scenario first = load_scenario(file, shipped_catalog());
  REQUIRE(first.workload->global_batch_size == 0);
  REQUIRE(first.strategy->dp == 8);
  const std::string text = effective_yaml(first);
  CHECK_THAT(text, Contains("global_batch_size: 16\n"));
  const Scenario second = load_scenario(dir.write("effective.yaml", text), shipped_catalog());
  CHECK(second.workload->global_batch_size == 16);
  CHECK(micro_batches(*second.workload, *second.strategy) == micro_batches(*first.workload, *first.strategy));
  CHECK(micro_batches(*second.workload, *second.strategy) == 1);
}

// A scenario names its calibration tables. Paths are relative to the file that writes
// the key (as include paths are), an absolute path stays as written, the including file's key
// wins, and effective.yaml writes them absolute. The tables' contents are not read here.
TEST_CASE("simulation.calibration and compute_calibration resolve against the file that writes them", "[scenario]") {
  namespace fs = std::filesystem;
  TempDir dir;
  fs::create_directories(dir.path / "sub");
  fs::create_directories(dir.path / "tables");
  const std::string nccl = dir.write("tables/nccl.yaml", "not read by load_scenario\n");
  const std::string compute = dir.write("tables/compute.yaml", "not read by load_scenario\n");
  dir.write("sub/base.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation: {calibration: ../tables/nccl.yaml}\n");
  const std::string top = dir.write("top.yaml", "include: sub/base.yaml\nsimulation: {compute_calibration: tables/compute.yaml}\n");
  const Scenario s = load_scenario(top, shipped_catalog());
  // The included file's key, joined to the included file's directory: DIR/sub/../tables/nccl.yaml.
  CHECK(s.simulation.calibration == (dir.path / "sub" / "../tables/nccl.yaml").string());
  CHECK(fs::equivalent(s.simulation.calibration, nccl));
  // The top file's key, joined to the top file's directory: DIR/tables/compute.yaml.
  CHECK(s.simulation.compute_calibration == (dir.path / "tables/compute.yaml").string());
  CHECK(s.simulation.engine == EngineKind::Analytic);

  SECTION("the including file's key wins, relative to the including file") {
    const std::string other = dir.write("mine.yaml", "not read\n");
    const std::string over = dir.write("over.yaml", "include: sub/base.yaml\nsimulation: {calibration: mine.yaml}\n");
    CHECK(load_scenario(over, shipped_catalog()).simulation.calibration == other);
  }
  SECTION("an absolute path stays as written") {
    const std::string abs = dir.write("abs.yaml", fmt::format("include: sub/base.yaml\nsimulation: {{calibration: {}}}\n", nccl));
    CHECK(load_scenario(abs, shipped_catalog()).simulation.calibration == nccl);
  }
  SECTION("no key: empty (the command line or the default applies)") {
    const Scenario plain = load_scenario(dir.write("plain.yaml", "cluster: {nodes: [{node: dgx-h100}]}\n"), shipped_catalog());
    CHECK(plain.simulation.calibration.empty());
    CHECK(plain.simulation.compute_calibration.empty());
    CHECK_THAT(effective_yaml(plain), !Contains("calibration"));
  }
  SECTION("effective.yaml writes them absolute and is a fixed point elsewhere") {
    const std::string text = effective_yaml(s);
    CHECK_THAT(text, Contains("calibration: " + fs::absolute(nccl).lexically_normal().string() + "\n"));
    CHECK_THAT(text, Contains("compute_calibration: " + fs::absolute(compute).lexically_normal().string() + "\n"));
    TempDir elsewhere;
    const Scenario again = load_scenario(elsewhere.write("effective.yaml", text), shipped_catalog());
    CHECK(fs::equivalent(again.simulation.calibration, nccl));
    CHECK(fs::equivalent(again.simulation.compute_calibration, compute));
    CHECK(effective_yaml(again) == text);
  }
}

TEST_CASE("a scenario's calibration table must be a path to a readable file", "[scenario]") {
  namespace fs = std::filesystem;
  TempDir dir;
  fs::create_directories(dir.path / "sub");
  fs::create_directories(dir.path / "adir");
  dir.write("sub/base.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation:\n  calibration: no-such.yaml\n");
  SECTION("missing, in an included file: the included file's line, column and key, the resolved path") {
    const std::string top = dir.write("top.yaml", "include: sub/base.yaml\n");
    try {
      load_scenario(top, shipped_catalog());
      FAIL("no error");
    } catch (const ccsim::support::InputError& e) {
      CHECK(e.where().file == (dir.path / "sub/base.yaml").string());
      CHECK(e.where().line == 3);
      CHECK(e.where().column == 16);
      CHECK(e.key() == "simulation.calibration");
      CHECK(e.expected() == "a collective calibration table (like scenarios/calibration/nccl.yaml)");
      CHECK(e.found() == "'" + (dir.path / "sub/no-such.yaml").string() + "' (no such file)");
    }
  }
  SECTION("a directory") {
    const std::string f = dir.write("d.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation: {compute_calibration: adir}\n");
    try {
      load_scenario(f, shipped_catalog());
      FAIL("no error");
    } catch (const ccsim::support::InputError& e) {
      CHECK(e.key() == "simulation.compute_calibration");
      CHECK(e.expected() == "a compute calibration table (like scenarios/calibration/compute.yaml)");
      CHECK(e.found() == "'" + (dir.path / "adir").string() + "' (a directory)");
    }
  }
  SECTION("not a string, or empty") {
    const std::string list = dir.write("l.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation: {calibration: [a, b]}\n");
    CHECK_THROWS_WITH(load_scenario(list, shipped_catalog()),
                      Contains("simulation.calibration: expected the path of a collective calibration table"));
    const std::string empty = dir.write("e.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation: {calibration: ''}\n");
    CHECK_THROWS_WITH(load_scenario(empty, shipped_catalog()),
                      Contains("simulation.calibration: expected the path of a collective calibration table"));
  }
  SECTION("a misspelt key") {
    const std::string f = dir.write("t.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation: {calibraton: x.yaml}\n");
    CHECK_THROWS_WITH(load_scenario(f, shipped_catalog()), Contains("did you mean 'calibration'?"));
  }
}

TEST_CASE("simulation.nccl is read, written to effective.yaml and read back", "[scenario][p2p]") {
  // version "2.20.5" is NCCL 2.20 (the patch level changes no modelled rule); written back as "2.20".
  TempDir dir;
  const std::string file = dir.write("s.yaml", R"(
cluster: {nodes: [{node: dgx-h100}]}
simulation: {nccl: {version: "2.20.5", nchannels_per_net_peer: 4}}
)");
  const Scenario first = load_scenario(file, shipped_catalog());
  REQUIRE(first.simulation.nccl.version.has_value());
  CHECK(*first.simulation.nccl.version == ccsim::models::NcclVersion{2, 20});
  CHECK(first.simulation.nccl.nchannels_per_net_peer == 4);
  const std::string text = effective_yaml(first);
  CHECK_THAT(text, Contains("nchannels_per_net_peer: 4"));
  const Scenario second = load_scenario(dir.write("effective.yaml", text), shipped_catalog());
  CHECK(second.simulation.nccl == first.simulation.nccl);
  // Without the key: NCCL's defaults, nothing written.
  const Scenario plain = load_scenario(dir.write("p.yaml", "cluster: {nodes: [{node: dgx-h100}]}\n"), shipped_catalog());
  CHECK(plain.simulation.nccl == ccsim::models::NcclSettings{});
  CHECK(plain.simulation.nccl.release() == ccsim::models::kDefaultNcclVersion);
  CHECK_THAT(effective_yaml(plain), !Contains("nccl:"));
  CHECK(plain.simulation.nccl.pxn());  // NCCL's default: PXN on
}

TEST_CASE("simulation.nccl.pxn_disable is read, written to effective.yaml and read back", "[scenario][p2p][pxn]") {
  TempDir dir;
  const Scenario first = load_scenario(dir.write("s.yaml", R"(
cluster: {nodes: [{node: dgx-h100}]}
simulation: {nccl: {pxn_disable: true}}
)"), shipped_catalog());
  CHECK(first.simulation.nccl.pxn_disable == true);
  CHECK_FALSE(first.simulation.nccl.pxn());
  const std::string text = effective_yaml(first);
  CHECK_THAT(text, Contains("pxn_disable: true"));
  const Scenario second = load_scenario(dir.write("effective.yaml", text), shipped_catalog());
  CHECK(second.simulation.nccl == first.simulation.nccl);
  // false is written too (it was stated), and leaves PXN on.
  const Scenario on = load_scenario(dir.write("f.yaml", "cluster: {nodes: [{node: dgx-h100}]}\nsimulation: {nccl: {pxn_disable: false}}\n"), shipped_catalog());
  CHECK(on.simulation.nccl.pxn());
  CHECK_THAT(effective_yaml(on), Contains("pxn_disable: false"));
}
