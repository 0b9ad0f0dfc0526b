#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/input_error.hpp"
#include "test_support.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

using namespace ccsim;
using models::Collective;
using validate::LogRow;
using validate::LogTest;

namespace {

std::vector<LogTest> parse_shipped(const std::string& name) {
  const std::string path = test::source_path("tests/data/nccl-tests/" + name);
  std::ifstream in(path);
  REQUIRE(in);
  return validate::parse_nccl_tests_log(in, path);
}

std::vector<LogTest> parse_text(const std::string& text) {
  std::istringstream in(text);
  return validate::parse_nccl_tests_log(in, "synthetic.log");
}

/// The InputError the parser throws on `text` (fails the test when it throws nothing).
support::InputError parse_error(const std::string& text) {
  try {
    parse_text(text);
  } catch (const support::InputError& e) {
    return e;
  }
  FAIL("no support::InputError thrown");
  throw std::logic_error("unreachable");
}

}  // namespace

// The four shipped logs: every figure below is read off the log file by eye (row count = the
// lines of the table; line numbers count the header lines above the first row).

TEST_CASE("nccl-tests log: 2 x 8 H100 AllReduce over Ethernet", "[validate][log]") {
  const auto tests = parse_shipped("h100-2x8-ethernet-gpudirect-all_reduce.log");
  REQUIRE(tests.size() == 1);
  const LogTest& t = tests[0];
  CHECK(t.name == "all_reduce_perf");
  CHECK(t.collective == Collective::AllReduce);
  // Banner: "-g 1, 16 ranks (2 nodes x 8 GPUs ...)": the "16 ranks", not "-g 1" nor "8 GPUs".
  CHECK(t.nranks == 16);
  // 8 B to 8 GiB by ×2 is 31 sizes; the log published 21 of them (8, 1K, 8K, 64K, then every
  // power of two from 128K = 2^17 to 8G = 2^33: 4 + 17 = 21).
  REQUIRE(t.rows.size() == 21);
  const LogRow& first = t.rows.front();
  CHECK(first.line == 10);  // 9 comment lines above the table
  CHECK(first.size == 8);
  CHECK(first.count == 2);  // 8 B / 4 B per float
  CHECK(first.type == "float");
  CHECK(first.redop == "sum");
  CHECK(first.root == -1);
  CHECK(first.time_us == 135.8);
  CHECK(first.algbw == 0.0);
  CHECK(first.busbw == 0.0);
  CHECK_FALSE(first.in_place_time_us);  // only out-of-place columns were published
  const LogRow& last = t.rows.back();
  CHECK(last.line == 30);  // 10 + 20
  CHECK(last.size == 8589934592ULL);  // 8 GiB = 2^33
  CHECK(last.count == 2147483648ULL);  // 2^33 / 4
  CHECK(last.type == "float");
  CHECK(last.time_us == 47535.0);
  CHECK(last.algbw == 180.71);
  CHECK(last.busbw == 338.82);
  // No "# Avg bus bandwidth" footer in this log (it ends with "# Out of bounds values").
  CHECK_FALSE(t.avg_busbw);
}

TEST_CASE("nccl-tests log: 8 x MI300X AllReduce (rccl-tests)", "[validate][log]") {
  const auto tests = parse_shipped("mi300x-1x8-xgmi-all_reduce.log");
  REQUIRE(tests.size() == 1);
  const LogTest& t = tests[0];
  // "# rccl-tests all_reduce_perf ...": the binary name is found after the tool name.
  CHECK(t.name == "all_reduce_perf");
  CHECK(t.collective == Collective::AllReduce);
  CHECK(t.nranks == 8);  // "8 ranks (1 node x 8 GPUs ...)"
  // 8, 512, then 1K to 8G: 1K, 4K and every power of two from 16K = 2^14 to 8G = 2^33
  // (20 sizes): 2 + 2 + 20 = 24.
  REQUIRE(t.rows.size() == 24);
  const LogRow& first = t.rows.front();
  CHECK(first.line == 9);
  CHECK(first.size == 8);
  CHECK(first.count == 2);
  CHECK(first.type == "float");
  CHECK(first.time_us == 19.28);
  const LogRow& last = t.rows.back();
  CHECK(last.line == 32);  // 9 + 23
  CHECK(last.size == 8589934592ULL);
  CHECK(last.count == 2147483648ULL);
  CHECK(last.type == "float");
  CHECK(last.time_us == 47617.0);
  CHECK(last.busbw == 315.69);
  CHECK_FALSE(t.avg_busbw);
}

TEST_CASE("nccl-tests log: 2 x RTX 2080 Ti AllReduce without P2P", "[validate][log]") {
  const auto tests = parse_shipped("rtx2080ti-1x2-pcie3-nop2p-all_reduce.log");
  REQUIRE(tests.size() == 1);
  const LogTest& t = tests[0];
  CHECK(t.collective == Collective::AllReduce);
  CHECK(t.nranks == 2);  // "-g 2, 2 ranks (single process, 2 GPUs)"
  // 8, 64, 1K, 4K, every power of two 8K..4M (2^13..2^22: 10), 16M, 64M, 256M, 1G: 4 + 10 + 4.
  REQUIRE(t.rows.size() == 18);
  const LogRow& first = t.rows.front();
  CHECK(first.line == 10);
  CHECK(first.size == 8);
  CHECK(first.count == 2);
  CHECK(first.type == "float");
  CHECK(first.time_us == 12.25);
  const LogRow& last = t.rows.back();
  CHECK(last.line == 27);  // 10 + 17
  CHECK(last.size == 1073741824ULL);  // 1 GiB
  CHECK(last.count == 268435456ULL);  // 2^30 / 4
  CHECK(last.type == "float");
  CHECK(last.time_us == 268588.0);
  CHECK(last.busbw == 4.00);
  CHECK_FALSE(t.avg_busbw);
}

TEST_CASE("nccl-tests log: 8 x A100 SendRecv", "[validate][log]") {
  const auto tests = parse_shipped("a100-1x8-nvswitch-sendrecv.log");
  REQUIRE(tests.size() == 1);
  const LogTest& t = tests[0];
  CHECK(t.name == "sendrecv_perf");
  CHECK(t.collective == Collective::SendRecv);
  CHECK(t.nranks == 8);  // "-g 8, 8 GPUs in one process"
  // 128M, 256M, 512M, 1G.
  REQUIRE(t.rows.size() == 4);
  const LogRow& first = t.rows.front();
  CHECK(first.line == 8);
  CHECK(first.size == 134217728ULL);  // 128 MiB = 2^27
  CHECK(first.count == 33554432ULL);  // 2^27 / 4
  CHECK(first.type == "float");
  CHECK(first.redop == "sum");
  CHECK(first.root == -1);
  CHECK(first.time_us == 1211.2);
  CHECK(first.algbw == 110.81);
  const LogRow& last = t.rows.back();
  CHECK(last.line == 11);
  CHECK(last.size == 1073741824ULL);
  CHECK(last.count == 268435456ULL);
  CHECK(last.type == "float");
  CHECK(last.time_us == 5503.4);
  CHECK_FALSE(t.avg_busbw);
}

TEST_CASE("nccl-tests log: two tests, in-place columns, N/A, no root column, CRLF", "[validate][log]") {
  // Two runs of nccl-tests ≥ 2.17 pasted into one file with Windows line ends. The first
  // (all_gather_perf, 4 ranks from its "#  Rank" lines) has in-place columns, N/A in its
  // second row and the footer; the second (reduce_scatter_perf, 2 ranks) comes from an older
  // nccl-tests without the root column and has no footer.
  const std::string log =
      "# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602\r\n"                                       // 1
      "# Collective test starting: all_gather_perf\r\n"                                                              // 2
      "# nThread 1 nGpus 4 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\r\n"  // 3
      "#\r\n"                                                                                                        // 4
      "# Using devices\r\n"                                                                                          // 5
      "#  Rank  0 Group  0 Pid   1000 on      node0 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB\r\n"                // 6
      "#  Rank  1 Group  0 Pid   1000 on      node0 device  1 [0000:0a:00] NVIDIA A100-SXM4-80GB\r\n"                // 7
      "#  Rank  2 Group  0 Pid   1000 on      node0 device  2 [0000:44:00] NVIDIA A100-SXM4-80GB\r\n"                // 8
      "#  Rank  3 Group  0 Pid   1000 on      node0 device  3 [0000:4a:00] NVIDIA A100-SXM4-80GB\r\n"                // 9
      "#\r\n"                                                                                                        // 10
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\r\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\r\n"
      "        1024            64     float    none      -1    12.50    0.08    0.06      0    11.90    0.09    0.06      0\r\n"  // 13
      "        2048           128     float    none      -1    13.00    0.16    0.12    N/A      N/A     N/A     N/A    N/A\r\n"  // 14
      "# Out of bounds values : 0 OK\r\n"
      "# Avg bus bandwidth    : 0.09 \r\n"
      "#\r\n"
      "\r\n"
      "# Collective test starting: reduce_scatter_perf\r\n"                                                          // 19
      "#  Rank  0 Group  0 Pid   2000 on      node0 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB\r\n"
      "#  Rank  1 Group  0 Pid   2000 on      node0 device  1 [0000:0a:00] NVIDIA A100-SXM4-80GB\r\n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\r\n"
      "        4096          1024      half     sum    20.00    0.20    0.10      0    19.50    0.21    0.11      0\r\n"  // 23
      "        8192          2048      half     sum    21.00     N/A     N/A    N/A    20.25    0.40    0.20      0\r\n";  // 24
  const auto tests = parse_text(log);
  REQUIRE(tests.size() == 2);

  const LogTest& ag = tests[0];
  CHECK(ag.name == "all_gather_perf");
  CHECK(ag.collective == Collective::AllGather);
  CHECK(ag.nranks == 4);  // four "#  Rank" lines
  REQUIRE(ag.avg_busbw);
  CHECK(*ag.avg_busbw == 0.09);
  // CR stripped from the header lines too.
  REQUIRE_FALSE(ag.header.empty());
  for (const auto& h : ag.header) CHECK(h.find('\r') == std::string::npos);
  REQUIRE(ag.rows.size() == 2);
  const LogRow& a0 = ag.rows[0];
  CHECK(a0.line == 13);
  CHECK(a0.size == 1024);
  CHECK(a0.count == 64);
  CHECK(a0.type == "float");
  CHECK(a0.redop == "none");
  CHECK(a0.root == -1);
  CHECK(a0.time_us == 12.50);
  CHECK(a0.algbw == 0.08);
  CHECK(a0.busbw == 0.06);
  REQUIRE(a0.in_place_time_us);
  CHECK(*a0.in_place_time_us == 11.90);
  const LogRow& a1 = ag.rows[1];
  CHECK(a1.line == 14);
  CHECK(a1.size == 2048);
  CHECK(a1.time_us == 13.00);
  CHECK_FALSE(a1.in_place_time_us);  // in-place time N/A

  const LogTest& rs = tests[1];
  CHECK(rs.name == "reduce_scatter_perf");
  CHECK(rs.collective == Collective::ReduceScatter);
  CHECK(rs.nranks == 2);  // its own two "#  Rank" lines, not 4 + 2
  CHECK_FALSE(rs.avg_busbw);
  REQUIRE(rs.rows.size() == 2);
  const LogRow& r0 = rs.rows[0];
  CHECK(r0.line == 23);
  CHECK(r0.size == 4096);
  CHECK(r0.count == 1024);
  CHECK(r0.type == "half");
  CHECK(r0.redop == "sum");
  CHECK(r0.root == -1);  // no root column
  CHECK(r0.time_us == 20.00);
  CHECK(r0.algbw == 0.20);
  CHECK(r0.busbw == 0.10);
  REQUIRE(r0.in_place_time_us);
  CHECK(*r0.in_place_time_us == 19.50);
  const LogRow& r1 = rs.rows[1];
  CHECK(r1.line == 24);
  CHECK(r1.time_us == 21.00);
  CHECK(r1.algbw == 0.0);  // N/A
  CHECK(r1.busbw == 0.0);  // N/A
  REQUIRE(r1.in_place_time_us);
  CHECK(*r1.in_place_time_us == 20.25);
}

TEST_CASE("nccl-tests log: rank count from -g when the banner gives no count", "[validate][log]") {
  const auto tests = parse_text(
      "# all_reduce_perf -b 8 -e 16 -f 2 -g 4\n"
      "           8             2     float     sum      -1    10.00    0.00    0.00      0\n"
      "          16             4     float     sum      -1    10.50    0.00    0.00      0\n");
  REQUIRE(tests.size() == 1);
  CHECK(tests[0].nranks == 4);
  CHECK(tests[0].rows.size() == 2);
  CHECK(tests[0].rows[1].line == 3);
}

TEST_CASE("nccl-tests log: malformed input names the file and line", "[validate][log][bad]") {
  SECTION("a row with a wrong field count") {
    // Line 3 has 7 fields: neither 8/12 (no root column) nor 9/13 (with root). The row
    // starts after 5 spaces: column 6.
    const auto e = parse_error(
        "# all_reduce_perf -g 2\n"
        "     8  2  float  sum  -1  10.0  0.00  0.00  0\n"
        "     16  4  float  sum  -1  10.0  0.00\n");
    CHECK(e.where().file == "synthetic.log");
    CHECK(e.where().line == 3);
    CHECK(e.where().column == 6);
    CHECK(e.found() == "7 fields");
    CHECK(std::string(e.what()).find("synthetic.log:3:6: error:") == 0);
  }
  SECTION("a non-numeric time") {
    const auto e = parse_error(
        "# all_reduce_perf -g 2\n"
        "#  size count type redop root time algbw busbw #wrong\n"
        "     8  2  float  sum  -1  10.0  0.00  0.00  0\n"
        "     16  4  float  sum  -1  fast  0.00  0.00  0\n");
    CHECK(e.where().line == 4);
    CHECK(e.expected() == "a time in us from 0.001 to 1e+10");
    CHECK(e.found() == "'fast' (not a number)");
  }
  SECTION("an N/A out-of-place time") {
    const auto e = parse_error("# all_reduce_perf -g 2\n     8  2  float  sum  -1  N/A  N/A  N/A  N/A\n");
    CHECK(e.where().line == 2);
    CHECK(e.found() == "'N/A' (not a number)");
  }
  SECTION("a log with no rows") {
    const auto e = parse_error(
        "# Collective test starting: all_reduce_perf\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        "# Avg bus bandwidth    : 0.00\n");
    CHECK(e.where().line == 1);  // a whole-file error: 1:1
    CHECK(e.found() == "no table rows");
  }
  SECTION("an empty log") {
    const auto e = parse_error("");
    CHECK(e.where().line == 1);
    CHECK(e.found() == "no table rows");
  }
  SECTION("nan, inf and hex are not numbers") {
    for (const char* bad : {"nan", "inf", "0x10"}) {
      const auto e = parse_error(std::string("# all_reduce_perf -g 2\n     8  2  float  sum  -1  ") + bad + "  0.00  0.00  0\n");
      CHECK(e.where().line == 2);
      CHECK(e.expected() == "a time in us from 0.001 to 1e+10");
    }
  }
  SECTION("a zero time (the error would be infinite)") {
    const auto e = parse_error("# all_reduce_perf -g 2\n     8  2  float  sum  -1  0  0.00  0.00  0\n");
    CHECK(e.where().line == 2);
    CHECK(e.expected() == "a time in us from 0.001 to 1e+10");
  }
  SECTION("a negative size") {
    const auto e = parse_error("# all_reduce_perf -g 2\n    -8  2  float  sum  -1  10.0  0.00  0.00  0\n");
    CHECK(e.where().line == 2);
    CHECK(e.expected() == "a size in bytes from 0 to 4.39805e+12");
  }
  SECTION("a footer without a number is not a footer") {
    // "# Avg bus bandwidth : e" is a comment; the log still parses, with no footer value.
    std::istringstream in("# all_reduce_perf -g 2\n     8  2  float  sum  -1  10.0  0.00  0.00  0\n# Avg bus bandwidth : e\n");
    const auto tests = validate::parse_nccl_tests_log(in, "synthetic.log");
    REQUIRE(tests.size() == 1);
    CHECK_FALSE(tests[0].avg_busbw.has_value());
  }
}

TEST_CASE("nccl-tests type sizes", "[validate][log]") {
  // Bytes per element of nccl-tests' type names (nccl-tests src/common.cu test_typenames).
  CHECK(validate::type_size("int8") == 1u);
  CHECK(validate::type_size("uint8") == 1u);
  CHECK(validate::type_size("f8e4m3") == 1u);
  CHECK(validate::type_size("f8e5m2") == 1u);
  CHECK(validate::type_size("half") == 2u);
  CHECK(validate::type_size("bfloat16") == 2u);
  CHECK(validate::type_size("float") == 4u);
  CHECK(validate::type_size("int32") == 4u);
  CHECK(validate::type_size("uint32") == 4u);
  CHECK(validate::type_size("double") == 8u);
  CHECK(validate::type_size("int64") == 8u);
  CHECK(validate::type_size("uint64") == 8u);
  CHECK_FALSE(validate::type_size("bogus"));
  CHECK_FALSE(validate::type_size(""));
  CHECK_FALSE(validate::type_size("Float"));  // names are case-sensitive, as nccl-tests prints them
}

TEST_CASE("the log parser is linear in line length and range-checks every number", "[log][input]") {
  const std::string row = "           8             2     float     sum      -1    12.00    0.00    0.00      0\n";
  // A 1,000,000-character header line (a recursive std::regex would overflow the stack at 40,000) before a valid table.
  const auto tests = parse_text("#" + std::string(1000000, 'x') + "\n# all_reduce_perf -g 8\n" + row);
  REQUIRE(tests.size() == 1);
  CHECK(tests[0].name == "all_reduce_perf");
  CHECK(tests[0].nranks == 8);
  CHECK(tests[0].rows.size() == 1);
  // A 1,000,000-character table row is one field too many, reported without echoing it.
  const support::InputError wide = parse_error(std::string(1000000, '1') + "\n");
  CHECK(std::string(wide.what()).size() < 300);
  // Numbers beyond a double, denormal, beyond int, beyond any GPU's memory.
  CHECK(std::string(parse_error("# Avg bus bandwidth : 1e999\n" + row).what()) ==
        "synthetic.log:1:23: error: expected an average bus bandwidth in GB/s from 0 to 1e+06, found '1e999' (out of range)");
  CHECK(std::string(parse_error("           8             2     float     sum      -1   1e-308    0.00    0.00    N/A\n").what()) ==
        "synthetic.log:1:56: error: expected a time in us from 0.001 to 1e+10, found '1e-308' (out of range)");
  CHECK(std::string(parse_error("# all_reduce_perf -g 99999999999\n" + row).what()) ==
        "synthetic.log:1:22: error: expected a GPU count (-g) from 1 to 1048576, found '99999999999'");
  CHECK(std::string(parse_error("# 99999999999 ranks\n" + row).what()) ==
        "synthetic.log:1:3: error: expected a rank count from 1 to 1048576, found '99999999999'");
  for (const char* size : {"1e19", "1e30", "1e300", "4398046511105"}) {
    INFO(size);
    const std::string text = fmt::format("{:>12}             2     float     sum      -1    12.00    0.00    0.00      0\n", size);
    CHECK(std::string(parse_error(text).what()).find("expected a size in bytes from 0 to 4.39805e+12") != std::string::npos);
  }
  // The largest accepted size, 4 TiB, parses.
  CHECK(parse_text("4398046511104 1099511627776 float sum -1 12.00 0.00 0.00 0\n")[0].rows[0].size == 4398046511104ull);
}

TEST_CASE("nccl-tests log: the pre-2020 all_gather layout without redop and root columns", "[validate][log]") {
  // nccl-tests before 2020 printed all_gather_perf rows as size count type time algbw busbw
  // error (+ the same four in place), with no redop or root column; only the column header
  // tells that layout from a malformed row (7 fields under a header with redop stay an error,
  // tested above). Rows of this synthetic log follow that layout.
  const auto tests = parse_text(
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
      "#\n"
      "#                                             out-of-place                       in-place\n"
      "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "        1024            32   float    30.50    0.03    0.03  0e+00    29.80    0.03    0.03  0e+00\n"
      "     1048576         32768   float    60.25   17.40   15.23  0e+00    59.90   17.51   15.32  0e+00\n");
  REQUIRE(tests.size() == 1);
  REQUIRE(tests[0].rows.size() == 2);
  const auto& r = tests[0].rows[1];
  CHECK(r.size == 1048576);
  CHECK(r.count == 32768);
  CHECK(r.type == "float");
  CHECK(r.redop == "none");
  CHECK(r.root == -1);
  CHECK(r.time_us == Approx(60.25));
  CHECK(r.algbw == Approx(17.40));
  CHECK(r.busbw == Approx(15.23));
  CHECK(r.in_place_time_us == Approx(59.90));
  CHECK(!tests[0].collective);  // the log does not name it: `ccsim compare --op allgather`
  CHECK(!tests[0].nranks);  // no _perf line or rank lines: `ccsim compare --ranks 8`
}
