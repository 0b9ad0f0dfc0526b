// The one input-file reader (support/input_file.hpp) and the one number parser
// (support/numbers.hpp), and the physical ranges of parse_quantity (support/units.hpp).

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <sys/stat.h>

#include "support/input_file.hpp"
#include "support/numbers.hpp"
#include "support/units.hpp"
#include "test_support.hpp"

using namespace ccsim;
using support::InputError;
using support::NumberProblem;

namespace {

/// The message read_input_file throws for `path` (fails the test when it reads).
std::string refusal(const std::string& path, std::uint64_t cap = support::kMaxInputFileBytes) {
  try {
    support::read_input_file(path, {"an input file", cap});
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("read_input_file accepted " << path);
  return {};
}

}  // namespace

TEST_CASE("read_input_file reads regular files and links to them", "[input]") {
  test::TempDir dir;
  const std::string path = dir.write("a.yaml", "key: value\n");
  CHECK(support::read_input_file(path, {"an input file"}) == "key: value\n");
  std::filesystem::create_symlink(path, dir.path / "link.yaml");
  CHECK(support::read_input_file((dir.path / "link.yaml").string(), {"an input file"}) == "key: value\n");
  CHECK(support::read_input_file(dir.write("empty.yaml", ""), {"an input file"}).empty());
}

TEST_CASE("read_input_file refuses every kind of non-regular file with exit-2 errors", "[input]") {
  test::TempDir dir;
  const std::string missing = (dir.path / "missing.yaml").string();
  CHECK(refusal(missing) == missing + ": error: expected an input file, found no such file");
  CHECK(refusal(dir.path.string()) == dir.path.string() + ": error: expected an input file, found a directory");
  const std::string loop = (dir.path / "loop.yaml").string();
  std::filesystem::create_symlink(loop, loop);
  CHECK(refusal(loop) == loop + ": error: expected an input file, found a symbolic link loop");
  const std::string fifo = (dir.path / "fifo.yaml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(refusal(fifo) == fifo + ": error: expected an input file, found a named pipe (FIFO)");  // and returns at once
  CHECK(refusal("/dev/null") == "/dev/null: error: expected an input file, found a character device");
  const std::string under_file = dir.write("plain.txt", "x") + "/child.yaml";
  CHECK(refusal(under_file).find("found no such file (a part of the path is not a directory)") != std::string::npos);
}

TEST_CASE("read_input_file caps the size, on the descriptor and while reading", "[input]") {
  test::TempDir dir;
  const std::string path = dir.write("big.log", std::string(1000, 'x'));
  CHECK(support::read_input_file(path, {"a log", 1000}).size() == 1000);  // exactly the cap: read
  CHECK(refusal(path, 999) == path + ": error: expected an input file, found a file of 1000 bytes or more "
                                     "(the limit for an input file is 999 bytes)");
}

TEST_CASE("read_input_file errors point at the include that named the file", "[input]") {
  test::TempDir dir;
  const std::string missing = (dir.path / "gone.yaml").string();
  try {
    support::read_input_file(missing, {"the path of a scenario file", support::kMaxInputFileBytes, {"top.yaml", 3, 10}, "include"});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "top.yaml:3:10: error: include: expected the path of a scenario file, found '" + missing +
                                       "' (no such file)");
  }
}

TEST_CASE("parse_decimal accepts plain decimals only and flags range problems", "[input][numbers]") {
  CHECK(support::parse_decimal("12").value == 12.0);
  CHECK(support::parse_decimal("+1.5e9").value == 1.5e9);
  CHECK(support::parse_decimal("-0.25").value == -0.25);
  CHECK(support::parse_decimal(".5").value == 0.5);
  CHECK(support::parse_decimal("5.").value == 5.0);
  CHECK(support::parse_decimal("0").value == 0.0);
  for (const char* bad : {"", "+", "-", ".", "e5", "1e", "1e+", "inf", "nan", "0x10", "1,5", " 1", "1 ", "1.5.2", "--1", "1e5x"}) {
    INFO(bad);
    CHECK(support::parse_decimal(bad).problem == NumberProblem::Malformed);
  }
  // 1e999 overflows a double; 1e-308 is below DBL_MIN (2.2e-308): denormal, which std::stod rejected
  // with an exception. Both are out of range, not malformed.
  for (const char* far : {"1e999", "-1e400", "1e-308", "1e-400"}) {
    INFO(far);
    CHECK(support::parse_decimal(far).problem == NumberProblem::OutOfRange);
  }
  CHECK(support::parse_decimal("2.3e-308").value == 2.3e-308);
  // A 40,000-digit number is parsed linearly, not recursively.
  CHECK(support::parse_decimal(std::string(40000, '9')).problem == NumberProblem::OutOfRange);
}

TEST_CASE("parse_integer covers int64 and nothing else", "[input][numbers]") {
  CHECK(support::parse_integer("0").value == 0);
  CHECK(support::parse_integer("-1").value == -1);
  CHECK(support::parse_integer("+42").value == 42);
  CHECK(support::parse_integer("9223372036854775807").value == std::numeric_limits<std::int64_t>::max());
  CHECK(support::parse_integer("9223372036854775808").problem == NumberProblem::OutOfRange);
  CHECK(support::parse_integer("99999999999999999999999").problem == NumberProblem::OutOfRange);
  for (const char* bad : {"", "-", "+", "1.0", "1e3", "0x1", " 1", "1 ", "+-1"}) {
    INFO(bad);
    CHECK(support::parse_integer(bad).problem == NumberProblem::Malformed);
  }
}

TEST_CASE("quote_token never echoes more than 40 printable characters", "[input][numbers]") {
  CHECK(support::quote_token("abc") == "'abc'");
  CHECK(support::quote_token(std::string(100, 'x')) == "'" + std::string(40, 'x') + "...' (100 characters)");
  CHECK(support::quote_token(std::string("a\0b\n", 4)) == "'a?b?'");
}

TEST_CASE("parse_quantity rejects values outside the physical range and names the range", "[input][units]") {
  using support::Quantity;
  // In range: the widest real figures.
  CHECK(support::parse_quantity("8TB/s", Quantity::Bandwidth) == 8e12);
  CHECK(support::parse_quantity("288GB", Quantity::Bytes) == 288e9);
  CHECK(support::parse_quantity("20PFLOPS", Quantity::FlopRate) == 20e15);
  CHECK(support::parse_quantity("0GB/s", Quantity::Bandwidth) == 0.0);  // zero is left to the caller
  const auto message = [](const char* text, Quantity q) {
    try {
      support::parse_quantity(text, q);
    } catch (const support::UnitError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // 1e300GB/s must not overflow to inf; 1e10GB/s and 1e-300GB/s must not be accepted.
  CHECK(message("1e300GB/s", Quantity::Bandwidth) == "the value (beyond a double) is outside the accepted range, 1 kB/s to 1 PB/s");
  CHECK(message("1e10GB/s", Quantity::Bandwidth) == "1e+19 B/s is outside the accepted range, 1 kB/s to 1 PB/s");
  CHECK(message("1e-300GB/s", Quantity::Bandwidth).find("is outside the accepted range, 1 kB/s to 1 PB/s") != std::string::npos);
  CHECK(message("1e300TB", Quantity::Bytes).find("is outside the accepted range") != std::string::npos);
  CHECK(message("2PB", Quantity::Bytes).find("is outside the accepted range") != std::string::npos);
  // A step time is at most a day: `days` belongs to the durations of a run (Quantity::Duration).
  CHECK(message("2days", Quantity::Time) == "unit 'days' is not a unit of this kind of quantity");
  CHECK(message("200y", Quantity::Duration).find("is outside the accepted range") != std::string::npos);
  CHECK(message("1e6s", Quantity::Time).find("is outside the accepted range") != std::string::npos);
  CHECK(message("1e20FLOPS", Quantity::FlopRate).find("is outside the accepted range") != std::string::npos);
}

TEST_CASE("error messages stay one printable line of bounded length", "[input]") {
  // A scalar with a terminal escape sequence and a newline (raw ESC/BEL must not reach the terminal).
  const InputError e({"s.yaml", 3, 9}, "cluster.nodes[0].node", "the name of a node", "'dgx\x1b]0;x\x07\n'");
  CHECK(std::string(e.what()) == "s.yaml:3:9: error: cluster.nodes[0].node: expected the name of a node, found 'dgx?]0;x?" "?'");
  // A 1 MB value is cut to 300 characters plus its length.
  const InputError big({"s.yaml", 1, 1}, "node", "a name", std::string(1000000, 'a'));
  CHECK(std::string(big.what()).size() < 400);
  CHECK(std::string(big.what()).find("... (1000000 characters)") != std::string::npos);
  // closest_match does no quadratic work on a huge word.
  CHECK(support::closest_match(std::string(100000, 'a'), std::vector<std::string>{"dgx-h100"}).empty());
}

TEST_CASE("parse_quantity reads its number with the one parser: denormals are out of range, PiB is a unit", "[input][units]") {
  using support::Quantity;
  // `latency: 1e-320us` must not be accepted as 0.
  CHECK_THROWS_WITH(support::parse_quantity("1e-320us", Quantity::Time), "number '1e-320' is out of the range of a double");
  CHECK_THROWS_WITH(support::parse_quantity("1e999GB", Quantity::Bytes), "number '1e999' is out of the range of a double");
  CHECK_THROWS_WITH(support::parse_quantity("1.2.3GB", Quantity::Bytes), "malformed number '1.2.3'");
  CHECK(support::parse_quantity("1PiB", Quantity::Bytes) == 1125899906842624.0);  // the top of the Bytes range
}
