// What `ccsim replay` writes (validate/replay/replay_report.hpp): the nccl-tests log read back by
// the log parser `ccsim compare` uses, the per-op medians and comparison, ops.csv and the Chrome
// trace. Schedules and timings are built by hand; every expected figure is computed here from
// nccl-tests' definitions (algbw = S / t, busbw = algbw × models::busbw_factor).

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collective/collective.hpp"
#include "validate/measurements/nccl_tests_log.hpp"
#include "validate/replay/replay_report.hpp"

using namespace ccsim;
using models::BufferKind;
using models::Collective;
using models::OpKind;
namespace replay = validate::replay;

namespace {

models::Op make_op(OpKind kind, int peer, models::Slice src, models::Slice dst) {
  models::Op op;
  op.kind = kind;
  op.peer = peer;
  op.src = src;
  op.dst = dst;
  return op;
}

/// A SendRecv of `bytes` over `n` ranks: rank r sends to r+1 (op 0), receives from r-1 (op 1).
models::Schedule sendrecv_ring(int n, std::uint64_t bytes, Collective c = Collective::SendRecv) {
  models::Schedule s;
  s.collective = c;
  s.algorithm = "ring";
  s.nranks = n;
  s.bytes = bytes;
  s.element_size = 4;
  s.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    s.ranks[static_cast<std::size_t>(r)].add(make_op(OpKind::Send, (r + 1) % n, {BufferKind::Input, 0, bytes}, {}));
    s.ranks[static_cast<std::size_t>(r)].add(make_op(OpKind::Recv, (r + n - 1) % n, {}, {BufferKind::Output, 0, bytes}));
  }
  return s;
}

/// A replayed size over the 2-op-per-rank schedule above. Measured in iteration `it` (us), on
/// every rank: the send (op 0) issued at 1 + it, the receive (op 1) at 3 + it, both done at
/// 6 + it. Simulated: op o of rank r at [10r + 3o, +1) us.
replay::ReplayedSize replayed(int n, std::uint64_t bytes, int iters, Collective c = Collective::SendRecv) {
  replay::ReplayedSize s;
  s.bytes = bytes;
  s.algorithm = "ring";
  s.protocol = "Simple";
  s.schedule = sendrecv_ring(n, bytes, c);
  for (int r = 0; r < n; ++r)
    for (std::uint32_t o = 0; o < 2; ++o) {
      const double start = (10.0 * r + 3.0 * o) * 1e-6;
      s.simulated.ops.push_back({r, o, start, start + 1e-6});
      s.simulated.makespan = std::max(s.simulated.makespan, start + 1e-6);
    }
  s.measured.bytes = bytes;
  for (int it = 0; it < iters; ++it) {
    std::vector<replay::MeasuredOp> ops;
    for (int r = 0; r < n; ++r) {
      ops.push_back({r, 0, (1.0 + it) * 1e-6, (6.0 + it) * 1e-6});
      ops.push_back({r, 1, (3.0 + it) * 1e-6, (6.0 + it) * 1e-6});
    }
    s.measured.ops.push_back(ops);
    s.measured.iteration_times.push_back((6.0 + it) * 1e-6);
  }
  return s;
}

std::vector<validate::LogTest> parse(const std::string& log) {
  std::istringstream in(log);
  return validate::parse_nccl_tests_log(in, "replay.log");
}

/// The #wrong column (last field) of each table row of `log`.
std::vector<std::string> wrong_column(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string f, last;
    while (fields >> f) last = f;
    out.push_back(last);
  }
  return out;
}

}  // namespace

TEST_CASE("replay report: the nccl-tests log reads back", "[validate][replay]") {
  const int n = 4;
  replay::LogInfo info;
  info.test = "all_reduce_perf";
  info.collective = Collective::AllReduce;
  info.nranks = n;
  info.type = "float";
  info.command = "ccsim replay x.yaml --op allreduce";
  info.backend = "host";
  info.where = "4 threads";
  info.scenario = "x.yaml";
  info.min_bytes = 1024;
  info.max_bytes = 1 << 20;
  info.factor = 32;
  info.warmup = 1;
  info.iters = 3;
  // Two sizes: 1 KiB in 10, 20, 30 us (median and mean 20 us); 1 MiB in 100, 100, 130 us
  // (median 100 us, mean 110 us), the second with 7 wrong elements.
  std::vector<replay::ReplayedSize> sizes(2);
  sizes[0].bytes = 1024;
  sizes[0].schedule = sendrecv_ring(n, 1024, Collective::AllReduce);
  sizes[0].measured.iteration_times = {10e-6, 20e-6, 30e-6};
  sizes[0].algorithm = "ring";
  sizes[0].protocol = "LL";
  sizes[1].bytes = 1 << 20;
  sizes[1].schedule = sendrecv_ring(n, 1 << 20, Collective::AllReduce);
  sizes[1].measured.iteration_times = {100e-6, 100e-6, 130e-6};
  sizes[1].measured.wrong = 7;
  sizes[1].measured.first_wrong = "rank 3 element 9: expected 12, found -1";
  sizes[1].algorithm = "ring";
  sizes[1].protocol = "Simple";
  // The time column: the median by default, the mean (nccl-tests' own) with median = false.
  const bool median = GENERATE(true, false);
  INFO((median ? "median" : "mean"));
  info.median = median;
  const double t1 = median ? 100.0 : 110.0;  // us, 1 MiB
  const std::string log = replay::nccl_tests_log(info, sizes);
  CHECK(log.find(median ? "# time: the median of 3 timed iterations" : "# time: the mean of 3 timed iterations") != std::string::npos);
  const auto tests = parse(log);
  REQUIRE(tests.size() == 1);
  const validate::LogTest& t = tests[0];
  CHECK(t.name == "all_reduce_perf");
  CHECK(t.collective == Collective::AllReduce);
  CHECK(t.nranks == n);
  REQUIRE(t.rows.size() == 2);
  const double factor = 2.0 * (n - 1) / n;  // nccl-tests' AllReduce busbw factor
  CHECK(models::busbw_factor(Collective::AllReduce, n) == Approx(factor));
  const struct {
    std::uint64_t size;
    double time_us;
  } expected[] = {{1024, 20.0}, {1 << 20, t1}};
  for (std::size_t i = 0; i < 2; ++i) {
    const validate::LogRow& row = t.rows[i];
    INFO("row " << i);
    CHECK(row.size == expected[i].size);
    CHECK(row.count == expected[i].size / 4);  // AllReduce: count of the whole buffer
    CHECK(row.type == "float");
    CHECK(row.redop == "sum");
    CHECK(row.root == -1);
    CHECK(row.time_us == Approx(expected[i].time_us).margin(0.05));
    const double algbw = static_cast<double>(expected[i].size) / (expected[i].time_us * 1e-6) / 1e9;  // GB/s
    CHECK(row.algbw == Approx(algbw).margin(0.005));
    CHECK(row.busbw == Approx(algbw * factor).margin(0.005));
  }
  CHECK(wrong_column(log) == std::vector<std::string>{"0", "7"});
  CHECK(log.find("# Out of bounds values : 7 FAILED") != std::string::npos);
  CHECK(log.find("first wrong: rank 3 element 9: expected 12, found -1") != std::string::npos);
  REQUIRE(t.avg_busbw);
  const double busbw0 = 1024 / 20e-6 / 1e9 * factor, busbw1 = 1048576 / (t1 * 1e-6) / 1e9 * factor;
  CHECK(*t.avg_busbw == Approx((busbw0 + busbw1) / 2).margin(1e-4));
}

TEST_CASE("replay report: per-rank counts and the root in the log", "[validate][replay]") {
  // AllGather: nccl-tests' count is per rank (S / 4 B / n); Broadcast prints its root.
  replay::LogInfo info;
  info.test = "all_gather_perf";
  info.collective = Collective::AllGather;
  info.nranks = 8;
  info.type = "float";
  std::vector<replay::ReplayedSize> sizes(1);
  sizes[0].bytes = 4096;
  sizes[0].schedule = sendrecv_ring(8, 4096, Collective::AllGather);
  sizes[0].measured.iteration_times = {50e-6};
  auto t = parse(replay::nccl_tests_log(info, sizes));
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].rows.size() == 1);
  CHECK(t[0].collective == Collective::AllGather);
  CHECK(t[0].nranks == 8);
  CHECK(t[0].rows[0].count == 4096 / 4 / 8);
  CHECK(t[0].rows[0].redop == "none");
  CHECK(t[0].rows[0].busbw == Approx(4096 / 50e-6 / 1e9 * 7.0 / 8).margin(0.005));

  info.test = "broadcast_perf";
  info.collective = Collective::Broadcast;
  info.root = 3;
  sizes[0].schedule.collective = Collective::Broadcast;
  t = parse(replay::nccl_tests_log(info, sizes));
  REQUIRE(t[0].rows.size() == 1);
  CHECK(t[0].collective == Collective::Broadcast);
  CHECK(t[0].rows[0].root == 3);
  CHECK(t[0].rows[0].count == 4096 / 4);
}

TEST_CASE("replay report: median_ops over odd and even iteration counts", "[validate][replay]") {
  SECTION("3 iterations: the middle one") {
    // Issues at {1, 2, 3} (send) and {3, 4, 5} (receive) us, ends at {6, 7, 8}: medians 2, 4 and 7.
    const replay::ReplayedSize s = replayed(2, 64, 3);
    const auto m = replay::median_ops(s.measured);
    REQUIRE(m.size() == 4);
    for (const auto& op : m) {
      CHECK(op.start == Approx((op.op == 0 ? 2.0 : 4.0) * 1e-6));
      CHECK(op.end == Approx(7e-6));
    }
    // Rank then op order.
    CHECK((m[0].rank == 0 && m[0].op == 0 && m[1].rank == 0 && m[1].op == 1 && m[2].rank == 1 && m[3].op == 1));
  }
  SECTION("4 iterations: the mean of the middle two") {
    // Send issues {1, 2, 3, 4}: (2 + 3) / 2; ends {6, 7, 8, 9}: 7.5.
    const replay::ReplayedSize s = replayed(2, 64, 4);
    const auto m = replay::median_ops(s.measured);
    REQUIRE(m.size() == 4);
    for (const auto& op : m) {
      CHECK(op.start == Approx((op.op == 0 ? 2.5 : 4.5) * 1e-6));
      CHECK(op.end == Approx(7.5e-6));
    }
  }
  SECTION("an outlier iteration does not move the median") {
    replay::SizeResult r;
    r.ops = {{{0, 0, 1e-6, 2e-6}}, {{0, 0, 1e-6, 2e-6}}, {{0, 0, 900e-6, 1000e-6}}};
    const auto m = replay::median_ops(r);
    REQUIRE(m.size() == 1);
    CHECK(m[0].start == Approx(1e-6));
    CHECK(m[0].end == Approx(2e-6));
  }
  SECTION("no records: empty") { CHECK(replay::median_ops(replay::SizeResult{}).empty()); }
}

TEST_CASE("replay report: compare_ops sorts by deviation and refuses an unsimulated op", "[validate][replay]") {
  // 3 iterations: medians send [2, 7], receive [4, 7] us. A transfer starts when both sides are
  // ready (the engines' start): the send at max(2, its receiver's 4) = 4, the receive at
  // max(4, 2) = 4; both last 3 us. Simulated: op o of rank r at [10r + 3o, +1).
  // Deviation max(|Δ start|, |Δ duration| = 2): rank r op 0 max(|4 - 10r|, 2) = 4, 6, 16 us;
  // op 1 max(|1 - 10r|, 2) = 2, 9, 19 us.
  const replay::ReplayedSize s = replayed(3, 64, 3);
  const auto rows = replay::compare_ops(s);
  REQUIRE(rows.size() == 6);
  const std::vector<std::pair<int, std::uint32_t>> order{{2, 1}, {2, 0}, {1, 1}, {1, 0}, {0, 0}, {0, 1}};
  const double deviation_us[] = {19, 16, 9, 6, 4, 2};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(rows[i].rank == order[i].first);
    CHECK(rows[i].op == order[i].second);
    CHECK(rows[i].deviation() == Approx(deviation_us[i] * 1e-6));
  }
  // The rows carry the schedule's op facts and the aligned measured times.
  for (const auto& row : rows) {
    CHECK(row.kind == (row.op == 0 ? OpKind::Send : OpKind::Recv));
    CHECK(row.peer == (row.op == 0 ? (row.rank + 1) % 3 : (row.rank + 2) % 3));
    CHECK(row.bytes == 64);
    CHECK(row.measured_start == Approx(4e-6));
    CHECK(row.measured_duration == Approx(3e-6));
    CHECK(row.simulated_start == Approx((10.0 * row.rank + 3.0 * row.op) * 1e-6));
    CHECK(row.simulated_duration == Approx(1e-6));
  }
  // Exact ties (every op measured [0, 0.5] s, simulated [0, 0.25] s: deviation 0.25 s) keep
  // rank then op order.
  replay::ReplayedSize tied = replayed(3, 64, 1);
  for (auto& m : tied.measured.ops[0]) m.start = 0, m.end = 0.5;
  for (auto& r : tied.simulated.ops) r.start = 0, r.end = 0.25;
  const auto tied_rows = replay::compare_ops(tied);
  REQUIRE(tied_rows.size() == 6);
  for (std::size_t i = 0; i < tied_rows.size(); ++i) {
    CHECK(tied_rows[i].deviation() == 0.25);
    CHECK(tied_rows[i].rank == static_cast<int>(i / 2));
    CHECK(tied_rows[i].op == i % 2);
  }

  // The table prints `top` rows under its title line.
  const std::string table = replay::comparison_table(rows, 2);
  CHECK(std::count(table.begin(), table.end(), '\n') == 3);
  const std::string title_only = replay::comparison_table(rows, 0);
  CHECK(std::count(title_only.begin(), title_only.end(), '\n') == 1);

  replay::ReplayedSize missing = replayed(3, 64, 3);
  missing.simulated.ops.erase(missing.simulated.ops.begin() + 2);  // rank 1 op 0
  try {
    replay::compare_ops(missing);
    FAIL("no std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "rank 1 op 0 was measured but is not in the simulated schedule");
  }
}

TEST_CASE("replay report: ops.csv has one row per op", "[validate][replay]") {
  const std::vector<replay::ReplayedSize> sizes{replayed(3, 64, 3), replayed(2, 128, 1)};
  const std::string csv = replay::ops_csv(sizes);
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  CHECK(header == "size_B,rank,op,kind,peer,channel,bytes,measured_start_us,measured_duration_us,simulated_start_us,simulated_duration_us");
  std::set<std::string> keys;
  std::size_t rows = 0;
  for (std::string line; std::getline(in, line);) {
    ++rows;
    std::istringstream f(line);
    std::vector<std::string> fields;
    for (std::string x; std::getline(f, x, ',');) fields.push_back(x);
    REQUIRE(fields.size() == 11);
    keys.insert(fields[0] + "/" + fields[1] + "/" + fields[2]);
    if (fields[0] == "64" && fields[1] == "2" && fields[2] == "1") {
      // Rank 2 op 1 of 3 iterations: measured start 4 us, duration 3 us; simulated 10·2 + 3 = 23 us, 1 us.
      CHECK(fields[3] == "recv");
      CHECK(fields[4] == "1");
      CHECK(std::stod(fields[7]) == Approx(4));
      CHECK(std::stod(fields[8]) == Approx(3));
      CHECK(std::stod(fields[9]) == Approx(23));
      CHECK(std::stod(fields[10]) == Approx(1));
    }
  }
  CHECK(rows == 3 * 2 + 2 * 2);
  CHECK(keys.size() == rows);  // each (size, rank, op) once
}

TEST_CASE("replay report: trace.json has one X event per op per process with the same ids", "[validate][replay]") {
  const replay::ReplayedSize s = replayed(3, 64, 3);
  const nlohmann::json j = nlohmann::json::parse(replay::trace_json(s, "host"));
  REQUIRE(j.contains("traceEvents"));
  std::map<int, std::multiset<std::pair<int, int>>> ids;  // pid -> (rank, op)
  std::map<int, std::string> process_names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X") continue;
    const int pid = e["pid"].get<int>();
    const int rank = e["tid"].get<int>();
    const int op = e["args"]["op"].get<int>();
    ids[pid].insert({rank, op});
    CHECK(e["dur"].get<double>() >= 0);
    if (pid == 2 && rank == 1 && op == 0) {
      CHECK(e["ts"].get<double>() == Approx(10.0));  // simulated start 10 us
      CHECK(e["name"] == "send -> 2");
    }
    if (pid == 1 && rank == 1 && op == 1) {
      CHECK(e["ts"].get<double>() == Approx(4.0));  // measured: both sides ready at 4 us (compare_ops' placement)
      CHECK(e["dur"].get<double>() == Approx(3.0));
      CHECK(e["name"] == "recv <- 0");
    }
  }
  REQUIRE(ids.size() == 2);
  CHECK(ids[1].size() == 6);  // 3 ranks × 2 ops
  CHECK(ids[1] == ids[2]);
  CHECK(process_names[1] == "measured (host backend, median of 3 iterations)");
  CHECK(process_names[2] == "simulated (analytic engine)");
  CHECK(j["otherData"]["size_B"] == 64);
  CHECK(j["otherData"]["ranks"] == 3);
}
