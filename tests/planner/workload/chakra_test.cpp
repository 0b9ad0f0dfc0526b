// Chakra execution traces: the shipped ASTRA-sim microbenchmarks read and run, a written trace
// read back to the same Program, a training step written and run again for the same step
// time, and the reader's errors (models/workload/chakra, planner/workload/chakra_run).

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <google/protobuf/util/delimited_message_util.h>

#include "models/workload/chakra/chakra_et.pb.h"
#include "models/workload/chakra/chakra_trace.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/workload/chakra_run.hpp"
#include "planner/workload/workload_runner.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

namespace ccsim {
namespace {

using models::Program;
using models::ProgramOp;
using models::ProgramOpKind;
namespace chakra = models::chakra;

struct Fixture {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::CostModel costs;
  explicit Fixture(const std::string& path)
      : scenario(models::load_scenario(test::source_path(path), test::shipped_catalog())),
        cluster(models::build_scenario_cluster(scenario)),
        costs(planner::CostModel::load(test::source_path("scenarios/calibration/nccl.yaml"))) {}
  planner::ChakraRunOptions options() const {
    planner::ChakraRunOptions o;
    o.compute = planner::ComputeCalibration::load_for_cluster(test::source_path("scenarios/calibration/compute.yaml"), cluster);
    return o;
  }
};

/// A fresh empty directory under the system's temporary directory.
std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ccsim-chakra-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string write_files(const std::vector<std::pair<std::string, std::string>>& files, const std::string& name) {
  const std::string dir = temp_dir(name);
  for (const auto& [file, bytes] : files) std::ofstream(dir + "/" + file, std::ios::binary) << bytes;
  return dir;
}

/// The same Program as far as a Chakra trace carries it: per rank the same ops in order, with
/// the same kind, name, stream, sizes, fixed time, collective, group and peer, and the same
/// predecessors (dependencies and stream predecessor together).
void require_same(const Program& a, const Program& b) {
  REQUIRE(a.ranks.size() == b.ranks.size());
  REQUIRE(a.ops.size() == b.ops.size());
  const auto pa = models::stream_predecessors(a), pb = models::stream_predecessors(b);
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    const auto& ra = a.ranks[r].ops;
    const auto& rb = b.ranks[r].ops;
    REQUIRE(ra.size() == rb.size());
    std::map<std::uint32_t, std::uint32_t> to_b;
    for (std::size_t i = 0; i < ra.size(); ++i) to_b[ra[i]] = rb[i];
    for (std::size_t i = 0; i < ra.size(); ++i) {
      const ProgramOp& x = a.ops[ra[i]];
      const ProgramOp& y = b.ops[rb[i]];
      INFO("rank " << r << " op " << i << " " << x.name);
      CHECK(x.kind == y.kind);
      CHECK(x.name == y.name);
      CHECK(x.stream == y.stream);
      CHECK(x.flops == y.flops);
      CHECK(x.bytes == y.bytes);
      CHECK(x.fixed_time == y.fixed_time);
      CHECK(x.group == y.group);
      if (x.kind == ProgramOpKind::Collective) CHECK(x.collective == y.collective);
      if (x.kind == ProgramOpKind::SendRecv) CHECK(x.peer == y.peer);
      // Predecessors on this rank (other ranks' are the collectives' synchronisation, rebuilt by the reader).
      std::set<std::uint32_t> px, py;
      for (std::uint32_t d : x.deps)
        if (a.op_rank[d] == static_cast<int>(r)) px.insert(to_b.at(d));
      if (pa[ra[i]] != ~0U) px.insert(to_b.at(pa[ra[i]]));
      for (std::uint32_t d : y.deps)
        if (b.op_rank[d] == static_cast<int>(r)) py.insert(d);
      if (pb[rb[i]] != ~0U) py.insert(pb[rb[i]]);
      CHECK(px == py);
    }
  }
}

}  // namespace

TEST_CASE("chakra: ASTRA-sim's 4-rank 1 MB microbenchmarks read as one collective over every rank", "[chakra]") {
  const struct {
    const char* dir;
    models::Collective collective;
  } cases[] = {{"all_reduce-4npus-1MB", models::Collective::AllReduce},
               {"all_gather-4npus-1MB", models::Collective::AllGather},
               {"all_to_all-4npus-1MB", models::Collective::AlltoAll}};
  for (const auto& c : cases) {
    INFO(c.dir);
    const chakra::ChakraTrace t = chakra::read_chakra_dir(test::source_path(std::string("tests/data/chakra/") + c.dir));
    CHECK(t.version == "0.0.4");
    CHECK(!t.comm_groups);
    REQUIRE(t.program.ranks.size() == 4);
    REQUIRE(t.program.ops.size() == 4);
    for (const auto& op : t.program.ops) {
      CHECK(op.kind == ProgramOpKind::Collective);
      CHECK(op.collective == c.collective);
      CHECK(op.bytes == 1048576.0);
      CHECK(op.group == std::vector<int>{0, 1, 2, 3});
    }
  }
}

TEST_CASE("chakra: a 1 MB AllReduce trace on 4 H100s takes what ccsim collective gives for 1 MB on those GPUs", "[chakra]") {
  Fixture f("tests/data/chakra/dgx-h100-4gpu.yaml");
  for (const auto& [dir, collective] : {std::pair{"all_reduce-4npus-1MB", models::Collective::AllReduce},
                                        std::pair{"all_gather-4npus-1MB", models::Collective::AllGather},
                                        std::pair{"all_to_all-4npus-1MB", models::Collective::AlltoAll}}) {
    INFO(dir);
    const chakra::ChakraTrace t = chakra::read_chakra_dir(test::source_path(std::string("tests/data/chakra/") + dir));
    const planner::ChakraRunResult r = planner::run_chakra(t.program, f.cluster, f.costs, f.options());
    // The expectation: `ccsim collective` of the same size on the same 4 GPUs (NCCL's choice,
    // analytic engine), run without the trace.
    planner::CollectiveOptions o;
    o.collective = collective;
    const auto gpus = f.cluster.topology.gpus();
    o.gpus.assign(gpus.begin(), gpus.end());
    o.element_size = 1;
    planner::CollectiveRunner runner(f.cluster, f.costs, o);
    const double expected = runner.run(1048576).time;
    CHECK(expected > 0);
    CHECK(r.step_time == Approx(expected).epsilon(1e-12));
    // One lowered op, timing every rank's node; all four start at 0 and end together.
    REQUIRE(r.comm_costs.size() == 1);
    for (const auto& t2 : r.timing) {
      CHECK(t2.start == 0.0);
      CHECK(t2.end == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("chakra: the traces on a cluster of another size are refused", "[chakra]") {
  Fixture f("scenarios/dgx-h100-1node.yaml");
  const chakra::ChakraTrace t = chakra::read_chakra_dir(test::source_path("tests/data/chakra/all_reduce-4npus-1MB"));
  CHECK_THROWS_WITH(planner::run_chakra(t.program, f.cluster, f.costs, f.options()),
                    Catch::Contains("one trace per GPU of the scenario's cluster (8 GPUs)") && Catch::Contains("found 4 ranks"));
}

TEST_CASE("chakra: a written Program reads back the same, compute, subgroups, sends and dependencies", "[chakra]") {
  // Rank 0: a GEMM of fixed time, then an AllReduce over {0, 1}, then a send to rank 2.
  // Rank 1: a FLOP-timed GEMM, the AllReduce. Rank 2: a receive from 0, then memory traffic.
  Program p;
  p.ranks.resize(3);
  for (int r = 0; r < 3; ++r) p.ranks[static_cast<std::size_t>(r)].stage = r;
  ProgramOp g0;
  g0.name = "gemm0";
  g0.flops = 1e12;
  g0.fixed_time = 1.25e-3;
  const auto a = p.add(0, g0);
  ProgramOp ar;
  ar.kind = ProgramOpKind::Collective;
  ar.stream = models::Stream::TpComm;
  ar.dim = models::ParallelDim::TP;
  ar.name = "tp-allreduce";
  ar.bytes = 4096;
  ar.group = {0, 1};
  ar.deps = {a};
  const auto ar0 = p.add(0, ar);
  ProgramOp send;
  send.kind = ProgramOpKind::SendRecv;
  send.collective = models::Collective::SendRecv;
  send.stream = models::Stream::PpComm;
  send.dim = models::ParallelDim::PP;
  send.name = "pp-send";
  send.bytes = 1 << 20;
  send.group = {0, 2};
  send.peer = 2;
  send.deps = {ar0};
  p.add(0, send);
  ProgramOp g1 = g0;
  g1.name = "gemm1";
  g1.fixed_time = -1;
  g1.bytes = 3e6;
  const auto b = p.add(1, g1);
  ar.deps = {b};
  p.add(1, ar);
  ProgramOp recv = send;
  recv.name = "pp-recv";
  recv.peer = 0;
  recv.deps = {};
  const auto rc = p.add(2, recv);
  ProgramOp mem;
  mem.kind = ProgramOpKind::Memory;
  mem.name = "norm";
  mem.bytes = 5e8;
  mem.deps = {rc};
  p.add(2, mem);

  const auto files = chakra::chakra_files(p, "toy");
  REQUIRE(files.size() == 4);  // three ranks and the {0, 1} group
  CHECK(files[3].first == "comm_group.json");
  CHECK(files[3].second == "{\n  \"1\": [\n    0,\n    1\n  ]\n}\n");
  const chakra::ChakraTrace t = chakra::read_chakra_dir(write_files(files, "toy"));
  CHECK(t.prefix == "toy");
  CHECK(t.comm_groups);
  require_same(p, t.program);
  // The reader synchronises the copies: rank 1's AllReduce also waits for rank 0's GEMM, and
  // the receive waits for its send.
  const auto& q = t.program;
  const auto ar1 = q.ranks[1].ops[1];
  CHECK(std::find(q.ops[ar1].deps.begin(), q.ops[ar1].deps.end(), q.ranks[0].ops[0]) != q.ops[ar1].deps.end());
  const auto rc2 = q.ranks[2].ops[0];
  CHECK(q.ops[rc2].deps == std::vector<std::uint32_t>{q.ranks[0].ops[2]});

  // Written again, the read Program gives the same files byte for byte.
  CHECK(chakra::chakra_files(q, "toy") == files);
}

TEST_CASE("chakra: a training step written as traces runs again in the same step time", "[chakra]") {
  Fixture f("tests/data/chakra/llama3-8b-tp4-dp2.yaml");
  const planner::ComputeCalibration compute = f.options().compute;
  planner::WorkloadRunner runner(f.scenario, f.cluster, f.costs, compute, models::EngineKind::Analytic);
  const planner::WorkloadResult result = runner.run();
  REQUIRE(result.feasible);
  const Program world = planner::world_program(result, f.scenario);
  REQUIRE(world.ranks.size() == 8);
  const chakra::ChakraTrace t = chakra::read_chakra_dir(write_files(chakra::chakra_files(world, "step"), "step"));
  require_same(world, t.program);
  const planner::ChakraRunResult r = planner::run_chakra(t.program, f.cluster, f.costs, f.options());
  // Every GPU runs its stage's ops; the TP groups {0..3}, {4..7} and the DP groups {i, i+4}
  // are lowered with the same concurrent groups as ccsim's own run, so the step is the same.
  CHECK(r.step_time == Approx(result.step_time).epsilon(1e-9));
}

TEST_CASE("chakra: a pipeline step written as traces runs again in the same step time", "[chakra]") {
  Fixture f("tests/data/chakra/llama3-8b-tp2-pp2-dp2.yaml");
  planner::WorkloadRunner runner(f.scenario, f.cluster, f.costs, f.options().compute, models::EngineKind::Analytic);
  const planner::WorkloadResult result = runner.run();
  REQUIRE(result.feasible);
  const Program world = planner::world_program(result, f.scenario);
  std::size_t recvs = 0;
  for (std::size_t i = 0; i < world.ops.size(); ++i) {
    const ProgramOp& op = world.ops[i];
    recvs += op.kind == ProgramOpKind::SendRecv && op.group[1] == world.op_rank[i];
  }
  // 8 / dp = 4 micro-batches per replica, each sent forward to stage 1 and its gradient back:
  // 8 receives per pipeline (a TP and DP coordinate), 2 x 2 pipelines.
  CHECK(recvs == 32);
  const chakra::ChakraTrace t = chakra::read_chakra_dir(write_files(chakra::chakra_files(world, "pp"), "pp"));
  require_same(world, t.program);
  const planner::ChakraRunResult r = planner::run_chakra(t.program, f.cluster, f.costs, f.options());
  // Sends one-way as in ccsim's run, each receive before the op that waited for the send.
  CHECK(r.step_time == Approx(result.step_time).epsilon(1e-9));
}

TEST_CASE("chakra: bad traces are refused with the file, the node and the field", "[chakra]") {
  const std::string good = test::source_path("tests/data/chakra/all_reduce-4npus-1MB/all_reduce.0.et");
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() == 81);

  SECTION("a node cut short") {
    // The metadata is 8 bytes: its size prefix (1) and version "0.0.4" (tag, length, 5 bytes).
    CHECK_THROWS_WITH(chakra::parse_chakra_file(bytes.substr(0, 60), "x.0.et"),
                      Catch::Contains("x.0.et: error: node 0: expected a length-delimited Node message, found a truncated or malformed message at byte 8 of 60"));
  }
  SECTION("an empty file") {
    CHECK_THROWS_WITH(chakra::parse_chakra_file("", "x.0.et"), Catch::Contains("GlobalMetadata") && Catch::Contains("found an empty file"));
  }
  SECTION("a size prefix beyond the file") {
    CHECK_THROWS_WITH(chakra::parse_chakra_file(std::string("\x05\x0a\x03", 3), "x.0.et"), Catch::Contains("truncated or malformed message at byte 0"));
  }

  // Traces built node by node with the schema's own classes.
  const auto trace = [](const std::string& name, const std::vector<std::string>& per_rank) {
    std::vector<std::pair<std::string, std::string>> files;
    for (std::size_t r = 0; r < per_rank.size(); ++r) files.emplace_back("t." + std::to_string(r) + ".et", per_rank[r]);
    return write_files(files, name);
  };
  const auto rank_file = [](const std::vector<ChakraProtoMsg::Node>& nodes) {
    std::ostringstream s;
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    google::protobuf::util::SerializeDelimitedToOstream(meta, &s);
    for (const auto& n : nodes) google::protobuf::util::SerializeDelimitedToOstream(n, &s);
    return s.str();
  };
  const auto comp = [](std::uint64_t id, std::vector<std::uint64_t> deps) {
    ChakraProtoMsg::Node n;
    n.set_id(id);
    n.set_name("c" + std::to_string(id));
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_duration_micros(5);
    for (auto d : deps) n.add_data_deps(d);
    return n;
  };
  SECTION("a dependency on a node the rank does not have") {
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("missing", {rank_file({comp(0, {}), comp(1, {7})})})),
                      Catch::Contains("t.0.et: error: node 1 (id 1).data_deps: expected ids of nodes of the same rank, found id 7, which the rank does not have"));
  }
  SECTION("a node depending on itself, a cycle, a duplicate id") {
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("self", {rank_file({comp(0, {}), comp(1, {1})})})),
                      Catch::Contains("node 1 (id 1).data_deps: expected ids of other nodes, found the node itself"));
    ChakraProtoMsg::Node c2 = comp(2, {1});
    c2.add_ctrl_deps(0);
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("cycle", {rank_file({comp(0, {2}), comp(1, {0}), c2})})),
                      Catch::Contains("t.0.et: error: node 0 (id 0).data_deps: expected dependencies without a cycle, found a cycle through this node"));
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("dup", {rank_file({comp(4, {}), comp(4, {})})})),
                      Catch::Contains("node 1 (id 4).id: expected ids that differ within a rank, found id 4 twice"));
  }
  SECTION("an unsupported node type, a collective ccsim does not model, a send without its receive") {
    ChakraProtoMsg::Node n = comp(0, {});
    n.set_type(ChakraProtoMsg::STORAGE_NODE);
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("storage", {rank_file({n})})),
                      Catch::Contains("node 0 (id 0).type: expected COMP_NODE") && Catch::Contains("found STORAGE_NODE"));
    ChakraProtoMsg::Node g;
    g.set_type(ChakraProtoMsg::COMM_COLL_NODE);
    auto* a = g.add_attr();
    a->set_name("comm_type");
    a->set_int64_val(ChakraProtoMsg::BARRIER);
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("barrier", {rank_file({g})})), Catch::Contains("node 0 (id 0).attr.comm_type: expected ALL_REDUCE") &&
                                                                                        Catch::Contains("found BARRIER"));
    ChakraProtoMsg::Node send;
    send.set_type(ChakraProtoMsg::COMM_SEND_NODE);
    auto* dst = send.add_attr();
    dst->set_name("comm_dst");
    dst->set_int32_val(1);
    auto* size = send.add_attr();
    size->set_name("comm_size");
    size->set_int64_val(64);
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("unmatched", {rank_file({send}), rank_file({comp(0, {})})})),
                      Catch::Contains("t.0.et: error: node 0 (id 0).comm_dst: expected a matching COMM_RECV_NODE on rank 1 (same source, destination and tag 0), found none"));
  }
  SECTION("collectives that differ between ranks") {
    const std::string dir = test::source_path("tests/data/chakra/all_reduce-4npus-1MB");
    const std::string other = test::source_path("tests/data/chakra/all_gather-4npus-1MB");
    std::vector<std::string> ranks;
    for (int r = 0; r < 4; ++r) {
      std::ifstream f((r == 3 ? other + "/all_gather." : dir + "/all_reduce.") + std::to_string(r) + ".et", std::ios::binary);
      ranks.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    }
    CHECK_THROWS_WITH(chakra::read_chakra_dir(trace("mixed", ranks)),
                      Catch::Contains("t.3.et") && Catch::Contains("AllReduce of 1048576 bytes, found AllGather of 1048576 bytes"));
  }
  SECTION("a missing rank") {
    const std::string dir = temp_dir("gap");
    std::filesystem::copy_file(good, dir + "/a.0.et");
    std::filesystem::copy_file(good, dir + "/a.2.et");
    // Ranks 0 and 2 found: the range runs to the highest, 2.
    CHECK_THROWS_WITH(chakra::read_chakra_dir(dir), Catch::Contains("a.R.et for every rank R from 0 to 2, found no a.1.et"));
  }
  SECTION("two files of one rank") {
    const std::string dir = temp_dir("twice");
    std::filesystem::copy_file(good, dir + "/a.0.et");
    std::filesystem::copy_file(good, dir + "/a.000.et");
    CHECK_THROWS_WITH(chakra::read_chakra_dir(dir), Catch::Contains("expected one file per rank (a.0.et for rank 0), found two: a.0.et and a.000.et"));
  }
  SECTION("a regular file for the directory") {
    CHECK_THROWS_WITH(chakra::read_chakra_dir(good), Catch::Contains("--chakra: expected a directory of Chakra traces PREFIX.R.et, found a regular file"));
  }
}

}  // namespace ccsim
