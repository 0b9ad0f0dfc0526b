// Synthesized schedules in `ccsim run` (planner/workload/lowering.hpp, strategy.algorithms values
// "synthesized" and synth:FILE, a dimension's own keys): their parsing and errors, their times
// against closed forms and against the ring, concurrent groups, and the files' checks.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <string>

#include "models/scenario/scenario.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/lowering.hpp"
#include "planner/workload/workload_runner.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"
#include "tests/planner/planner_test_support.hpp"

using namespace ccsim;
using models::ParallelDim;

namespace {

models::ScenarioChecks checks() {
  models::ScenarioChecks c;
  c.algorithm_names = planner::algorithm_names();
  return c;
}

/// `base` (a scenario file of the repository) with `strategy.algorithms` set to `algorithms`
/// (YAML flow map text), written in `dir`.
models::Scenario with_algorithms(test::TempDir& dir, const std::string& base, const std::string& algorithms) {
  const std::string file = dir.write("s.yaml", "include: " + test::source_path(base) + "\nstrategy: {algorithms: " + algorithms + "}\n");
  return models::load_scenario(file, test::shipped_catalog(), checks());
}

models::ProgramOp collective(models::Collective c, ParallelDim dim, double bytes) {
  models::ProgramOp op;
  op.kind = models::ProgramOpKind::Collective;
  op.collective = c;
  op.dim = dim;
  op.bytes = bytes;
  return op;
}

/// The cost of `op` (stage 0, rank 0's group) lowered on `scenario` with the analytic engine.
planner::CommCost lowered(const models::Scenario& scenario, const models::ProgramOp& op) {
  const models::Cluster cluster = models::build_cluster(scenario.cluster);
  planner::CommLowering lower(scenario, cluster, test::shipped_costs(cluster), models::EngineKind::Analytic);
  return lower.costs()[static_cast<std::size_t>(lower.cost_index(op, 0, 0))];
}

/// The InputError `load` throws.
support::InputError load_error(test::TempDir& dir, const std::string& algorithms) {
  try {
    (void)with_algorithms(dir, "tests/data/synthesis/h100-2x8-one-nic-dp16.yaml", algorithms);
  } catch (const support::InputError& e) {
    return e;
  }
  FAIL("no error for strategy.algorithms: " << algorithms);
  throw;
}

constexpr const char* kOneNic = "tests/data/synthesis/h100-2x8-one-nic-dp16.yaml";

}  // namespace

TEST_CASE("strategy.algorithms: a dimension's own keys, synthesized and synth:FILE", "[synthesis][workload]") {
  test::TempDir dir;
  const models::Scenario s =
      with_algorithms(dir, kOneNic, "{allreduce: ring, dp: {allreduce: synthesized}, tp: {allgather: 'synth:sub/x.msccl.xml'}}");
  const auto& a = s.strategy->algorithms;
  CHECK(a.at("allreduce") == "ring");
  CHECK(a.at("dp.allreduce") == "synthesized");
  // A relative file is the scenario file's neighbour.
  CHECK(a.at("tp.allgather") == "synth:" + std::filesystem::absolute(dir.path / "sub/x.msccl.xml").lexically_normal().string());
  CHECK(s.strategy->algorithm_locations.at("dp.allreduce").line == 2);

  // The rules, each with its key.
  const auto key_of = [&](const std::string& algorithms) { return load_error(dir, algorithms).key(); };
  CHECK(key_of("{alltoall: synthesized}") == "strategy.algorithms.alltoall");  // the synthesizer builds AR, AG, RS only
  CHECK(key_of("{sendrecv: 'synth:a.xml'}") == "strategy.algorithms.sendrecv");
  CHECK(key_of("{allgather: 'synth:'}") == "strategy.algorithms.allgather");
  CHECK(key_of("{pp: {allreduce: ring}}") == "strategy.algorithms.pp");  // PP has no collectives
  CHECK(key_of("{dp: {broadcat: ring}}") == "strategy.algorithms.dp.broadcat");
  CHECK(key_of("{dp: ring}") == "strategy.algorithms.dp");                  // a dimension takes a map
  const support::InputError typo = load_error(dir, "{dp: {allreduce: rnig}}");
  CHECK(typo.key() == "strategy.algorithms.dp.allreduce");
  CHECK(typo.hint() == "did you mean 'ring'?");
  CHECK(typo.expected().find("synthesized") != std::string::npos);
}

TEST_CASE("run: a DP AllGather on synthesized trees reaches ForestColl's optimum where the ring cannot", "[synthesis][workload]") {
  test::TempDir dir;
  // 2 x 8 H100, one 400G NIC per node, the DP group of 16 ranks: ForestColl's optimum is
  // x* = 6.25 GB/s per root (50 GB/s into a node's 8 ranks over its one NIC, for the other
  // node's 8 roots), so AllGather of S bytes needs (S/16)/x* in the fluid limit:
  // S = 1 GiB: 2^26 / 6.25e9 = 10.737 ms. A ring crosses each NIC once per direction with
  // every block: (15/16)·S / 50e9 ≥ 20.13 ms.
  const double S = 1073741824.0;
  const double optimum = S / 16 / 6.25e9;
  const models::ProgramOp ag = collective(models::Collective::AllGather, ParallelDim::DP, S);
  const planner::CommCost synth = lowered(with_algorithms(dir, kOneNic, "{dp: {allgather: synthesized}}"), ag);
  const planner::CommCost ring = lowered(with_algorithms(dir, kOneNic, "{allgather: auto}"), ag);
  CHECK(synth.algorithm == "synthesized (forest)");
  CHECK(synth.protocol == "Simple");
  CHECK(synth.group_size == 16);
  CHECK(synth.concurrent_groups == 0);
  CHECK(synth.time >= optimum);
  CHECK(synth.time <= optimum * 1.08);  // pipeline fill of the trees' chunks and the latencies
  CHECK(ring.algorithm == "ring");
  CHECK(ring.time >= 15.0 / 16.0 * S / 50e9);
  CHECK(ring.time / synth.time > 1.8);
  // The general key reaches the DP group too; the TP dimension's own key does not.
  CHECK(lowered(with_algorithms(dir, kOneNic, "{allgather: synthesized}"), ag).time == synth.time);
  CHECK(lowered(with_algorithms(dir, kOneNic, "{tp: {allgather: synthesized}}"), ag).algorithm == "ring");

  // The whole step: the ZeRO-1 gradient ReduceScatter and parameter AllGather both gain.
  const auto step = [&](const std::string& algorithms) {
    const models::Scenario sc = with_algorithms(dir, kOneNic, algorithms);
    const models::Cluster cluster = models::build_cluster(sc.cluster);
    planner::WorkloadRunner runner(sc, cluster, test::shipped_costs(cluster),
                                   planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5"),
                                   models::EngineKind::Analytic);
    return runner.run().step_time;
  };
  const double library = step("{allgather: auto}");
  const double synthesized = step("{dp: {allgather: synthesized, reducescatter: synthesized}}");
  CHECK(synthesized < library * 0.9);
}

TEST_CASE("run: concurrent DP groups each get their own trees; on a rail-optimized fabric they equal the ring", "[synthesis][workload]") {
  test::TempDir dir;
  // Llama-3-70B on 8 DGX H100, TP8 PP2 DP4: rank 0's DP group is one GPU of each of 4 nodes, on
  // one rail, beside the 7 other rails' groups. Each rail is a ring's optimum (every GPU sends
  // and receives its own NIC's bandwidth), so the synthesized schedules equal the ring's
  // bandwidth: within 1 % at 256 MiB.
  const std::string base = "scenarios/workloads/llama3-70b-train-64xh100.yaml";
  const models::ProgramOp ag = collective(models::Collective::AllGather, ParallelDim::DP, 268435456.0);
  const planner::CommCost synth = lowered(with_algorithms(dir, base, "{dp: {allgather: synthesized}}"), ag);
  const planner::CommCost ring = lowered(with_algorithms(dir, base, "{}"), ag);
  CHECK(synth.concurrent_groups == 7);
  CHECK(ring.concurrent_groups == 7);
  CHECK(synth.algorithm.rfind("synthesized", 0) == 0);
  CHECK(synth.time == Approx(ring.time).epsilon(0.01));
}

TEST_CASE("run: synth:FILE runs an MSCCL file on every group of its collective and rank count", "[synthesis][workload]") {
  test::TempDir dir;
  // One DGX H100, TP4 DP2: two TP groups of 4 on one NVSwitch; the file is a 4-rank AllGather.
  const std::string file = test::source_path("tests/data/synthesis/dgx-h100-4ranks-allgather.msccl.xml");
  const std::string scenario = dir.write("tp4.yaml",
                                         "cluster: {nodes: [{node: dgx-h100, count: 1}]}\n"
                                         "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1}\n"
                                         "strategy:\n  tp: 4\n  algorithms: {tp: {allgather: 'synth:" + file +
                                             "', reducescatter: 'synth:" + file + "'}}\n");
  const models::Scenario s = models::load_scenario(scenario, test::shipped_catalog(), checks());
  // S = 64 MiB: every rank receives 3/4·S through its NVLink ports (at most 450 GB/s per
  // direction, DGX H100's 18 NVLink4 links): at least 0.75·S / 450e9 = 112 us.
  const double S = 67108864.0;
  const planner::CommCost ag = lowered(s, collective(models::Collective::AllGather, ParallelDim::TP, S));
  CHECK(ag.algorithm == "synthesized (dgx-h100-4ranks-allgather.msccl.xml)");  // the file's name
  CHECK(ag.concurrent_groups == 1);
  CHECK(ag.time >= 0.75 * S / 450e9);
  // The same file for ReduceScatter: refused at the key's line, naming the file's collective.
  try {
    (void)lowered(s, collective(models::Collective::ReduceScatter, ParallelDim::TP, S));
    FAIL("a ReduceScatter ran an AllGather file");
  } catch (const support::InputError& e) {
    CHECK(e.key() == "strategy.algorithms.tp.reducescatter");
    CHECK(e.where().file == scenario);
    CHECK(e.where().line == 5);
    CHECK(e.found().find("AllGather on 4 ranks") != std::string::npos);
  }
  // A missing file: refused at the key, naming the path.
  const models::Scenario missing = models::load_scenario(
      dir.write("missing.yaml", "include: tp4.yaml\nstrategy: {algorithms: {tp: {allgather: 'synth:nowhere.xml'}}}\n"), test::shipped_catalog(),
      checks());
  try {
    (void)lowered(missing, collective(models::Collective::AllGather, ParallelDim::TP, S));
    FAIL("a missing file ran");
  } catch (const support::InputError& e) {
    CHECK(e.key() == "strategy.algorithms.tp.allgather");
    CHECK(e.found().find("nowhere.xml") != std::string::npos);
  }
}

TEST_CASE("run: a synth:FILE is checked as every input file and executed before use", "[synthesis][workload]") {
  test::TempDir dir;
  const std::string good = test::source_path("tests/data/synthesis/dgx-h100-4ranks-allgather.msccl.xml");
  std::ifstream in(good);
  std::stringstream text;
  text << in.rdbuf();
  std::string wrong = text.str();
  // One receive written to the wrong output chunk: structurally valid, but rank 0's output
  // chunk 8 is never written.
  const std::string from = R"(dstbuf="o" dstoff="8" cnt="1")";
  REQUIRE(wrong.find(from) != std::string::npos);
  wrong.replace(wrong.find(from), from.size(), R"(dstbuf="o" dstoff="9" cnt="1")");
  dir.write("wrong.msccl.xml", wrong);
  REQUIRE(::mkfifo((dir.path / "fifo.msccl.xml").c_str(), 0600) == 0);
  const auto error_of = [&](const std::string& file) {
    const models::Scenario s = models::load_scenario(
        dir.write("f.yaml", "cluster: {nodes: [{node: dgx-h100, count: 1}]}\n"
                            "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1}\n"
                            "strategy: {tp: 4, algorithms: {tp: {allgather: 'synth:" + file + "'}}}\n"),
        test::shipped_catalog(), checks());
    try {
      (void)lowered(s, collective(models::Collective::AllGather, ParallelDim::TP, 67108864.0));
    } catch (const support::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("wrong.msccl.xml").find("never written") != std::string::npos);
  // A FIFO is refused at once (never opened: no reader would block the run).
  const std::string fifo = error_of("fifo.msccl.xml");
  CHECK(fifo.find("FIFO") != std::string::npos);
  CHECK(fifo.find("strategy.algorithms.tp.allgather") != std::string::npos);
}

TEST_CASE("run: synthesized groups above the rank limit are refused with the advice to use a file", "[synthesis][workload]") {
  test::TempDir dir;
  // 32 DGX H100 at TP1 make one DP group of 256 ranks (tree synthesis ~N^3).
  const models::Scenario s = models::load_scenario(
      dir.write("big.yaml", "cluster:\n  nodes: [{node: dgx-h100, count: 32}]\n"
                            "  fabric: {kind: fat-tree, wiring: rail-optimized}\n"
                            "workload: {model: llama-3-8b, sequence_length: 2048, micro_batch_size: 1}\n"
                            "strategy: {tp: 1, algorithms: {dp: {allgather: synthesized}}}\n"),
      test::shipped_catalog(), checks());
  try {
    (void)lowered(s, collective(models::Collective::AllGather, ParallelDim::DP, 1 << 28));
    FAIL("a 256-rank group was synthesized");
  } catch (const support::InputError& e) {
    CHECK(e.key() == "strategy.algorithms.dp.allgather");
    CHECK(e.found() == "256 ranks");
    CHECK(e.hint().find("synth:FILE") != std::string::npos);
  }
}

// synthesized-or-nccl: per op the faster of NCCL's choice and the groups' synthesized schedules.
// On the one-NIC DP16 case the synthesized DP AllGather of a large size crosses the single NIC at
// ForestColl's optimum, about twice the ring (the test above), so it wins there; at 64 KiB NCCL's
// LL (which synthesized schedules, on Simple, cannot use) wins and the op keeps NCCL's algorithm.
TEST_CASE("run: synthesized-or-nccl takes the faster of the synthesized schedule and NCCL's choice", "[synthesis][workload]") {
  test::TempDir dir;
  const models::Scenario lib = with_algorithms(dir, kOneNic, "{}");
  const models::Scenario syn = with_algorithms(dir, kOneNic, "{dp: {allgather: synthesized}}");
  const models::Scenario best = with_algorithms(dir, kOneNic, "{dp: {allgather: synthesized-or-nccl}}");
  CHECK(best.strategy->algorithms.at("dp.allgather") == "synthesized-or-nccl");
  for (double bytes : {65536.0, 1073741824.0}) {
    INFO(bytes << " bytes");
    const auto op = collective(models::Collective::AllGather, ParallelDim::DP, bytes);
    const planner::CommCost l = lowered(lib, op), s = lowered(syn, op), b = lowered(best, op);
    CHECK(b.time == std::min(l.time, s.time));
    CHECK(b.algorithm == (s.time < l.time ? s.algorithm : l.algorithm));
  }
  const auto small = collective(models::Collective::AllGather, ParallelDim::DP, 65536.0);
  const auto large = collective(models::Collective::AllGather, ParallelDim::DP, 1073741824.0);
  CHECK(lowered(best, small).algorithm.rfind("synthesized", 0) != 0);  // NCCL's LL wins at 64 KiB
  CHECK(lowered(best, large).algorithm.rfind("synthesized", 0) == 0);  // the trees win at 1 GiB
  // Only for the collectives ccsim synthesize builds.
  const support::InputError e = load_error(dir, "{alltoall: synthesized-or-nccl}");
  CHECK(std::string(e.what()).find("synthesized-or-nccl only for allreduce, allgather and reducescatter") != std::string::npos);
}

// In an inference phase NCCL's side of synthesized-or-nccl is what auto runs there: vLLM's custom
// all-reduce first (a decode step's TP AllReduce of a few KiB), so the choice is never slower
// than the scenario without it.
TEST_CASE("run: synthesized-or-nccl keeps vLLM's custom all-reduce where auto takes it", "[synthesis][workload]") {
  test::TempDir dir;
  const char* decode = "scenarios/workloads/llama31-8b-decode-tp8-1x8-eth.yaml";
  const models::Scenario lib = with_algorithms(dir, decode, "{}");
  const models::Scenario best = with_algorithms(dir, decode, "{tp: {allreduce: synthesized-or-nccl}}");
  const auto op = collective(models::Collective::AllReduce, ParallelDim::TP, 8192.0);
  const planner::CommCost l = lowered(lib, op), b = lowered(best, op);
  CHECK(l.algorithm.rfind("vllm", 0) == 0);
  CHECK(b.time <= l.time);
  CHECK(b.algorithm == l.algorithm);
}
