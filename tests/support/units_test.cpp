#include <catch2/catch.hpp>

#include "support/units.hpp"

using ccsim::support::parse_quantity;
using ccsim::support::Quantity;
using ccsim::support::UnitError;
using Catch::Matchers::Contains;

TEST_CASE("bandwidth strings convert to bytes per second", "[units]") {
  // Gbps are bits: 400e9 / 8 = 50e9 bytes/s. GB/s and GBps are decimal bytes.
  CHECK(parse_quantity("400Gbps", Quantity::Bandwidth) == 50e9);
  CHECK(parse_quantity("200 Gb/s", Quantity::Bandwidth) == 25e9);
  CHECK(parse_quantity("50GB/s", Quantity::Bandwidth) == 50e9);
  CHECK(parse_quantity("25GBps", Quantity::Bandwidth) == 25e9);
  CHECK(parse_quantity("15.75GB/s", Quantity::Bandwidth) == Approx(15.75e9).epsilon(1e-15));
  CHECK(parse_quantity("1GiB/s", Quantity::Bandwidth) == 1073741824.0);
  CHECK(parse_quantity("3.2Tbps", Quantity::Bandwidth) == Approx(400e9).epsilon(1e-15));
}

TEST_CASE("sizes distinguish decimal and binary prefixes", "[units]") {
  // GB = 1e9 bytes (nccl-tests); GiB = 2^30 bytes.
  CHECK(parse_quantity("80GB", Quantity::Bytes) == 80e9);
  CHECK(parse_quantity("80GiB", Quantity::Bytes) == 80.0 * 1073741824.0);
  CHECK(parse_quantity("4096", Quantity::Bytes) == 4096.0);
  CHECK(parse_quantity("1.5MiB", Quantity::Bytes) == 1.5 * 1048576.0);
}

TEST_CASE("times and compute rates", "[units]") {
  CHECK(parse_quantity("1.5us", Quantity::Time) == Approx(1.5e-6).epsilon(1e-15));
  CHECK(parse_quantity("700ns", Quantity::Time) == Approx(700e-9).epsilon(1e-15));
  CHECK(parse_quantity("2ms", Quantity::Time) == Approx(2e-3).epsilon(1e-15));
  CHECK(parse_quantity("1e-6s", Quantity::Time) == Approx(1e-6).epsilon(1e-15));
  CHECK(parse_quantity("989TFLOPS", Quantity::FlopRate) == 989e12);
  CHECK(parse_quantity("2.25PFLOP/s", Quantity::FlopRate) == 2.25e15);
  // Durations of a run: 1 min = 60 s, 1 h = 3,600 s, 1 d = 86,400 s, 1 w = 7 d, 1 y = 365 d.
  CHECK(parse_quantity("10min", Quantity::Duration) == 600.0);
  CHECK(parse_quantity("3.1h", Quantity::Duration) == Approx(11160.0).epsilon(1e-15));
  CHECK(parse_quantity("54d", Quantity::Duration) == 54 * 86400.0);
  CHECK(parse_quantity("2w", Quantity::Duration) == 14 * 86400.0);
  CHECK(parse_quantity("1y", Quantity::Duration) == 365 * 86400.0);
  // The long forms people write, singular and plural ("30hours" was refused beside "30days").
  CHECK(parse_quantity("30hours", Quantity::Duration) == 30 * 3600.0);
  CHECK(parse_quantity("1 hour", Quantity::Duration) == 3600.0);
  CHECK(parse_quantity("2weeks", Quantity::Duration) == 14 * 86400.0);
  CHECK(parse_quantity("1day", Quantity::Duration) == 86400.0);
  CHECK(parse_quantity("90mins", Quantity::Duration) == 5400.0);
  CHECK(parse_quantity("1year", Quantity::Duration) == 365 * 86400.0);
  CHECK(ccsim::support::format_duration(2.5 * 3600) == "2.5 h");
  CHECK(ccsim::support::format_duration(54 * 86400.0) == "54 d");
  CHECK(ccsim::support::format_duration(45) == "45 s");
}

TEST_CASE("malformed quantities are rejected with the reason", "[units]") {
  CHECK_THROWS_WITH(parse_quantity("400", Quantity::Bandwidth), Contains("missing unit"));
  CHECK_THROWS_WITH(parse_quantity("12 furlongs", Quantity::Bandwidth), Contains("unknown unit 'furlongs'"));
  CHECK_THROWS_WITH(parse_quantity("400GB", Quantity::Bandwidth), Contains("not a unit of this kind"));
  CHECK_THROWS_WITH(parse_quantity("Gbps", Quantity::Bandwidth), Contains("no number"));
  CHECK_THROWS_WITH(parse_quantity("1.2.3GB/s", Quantity::Bandwidth), Contains("malformed number"));
  CHECK_THROWS_AS(parse_quantity("", Quantity::Time), UnitError);
}

TEST_CASE("formatting uses decimal prefixes", "[units]") {
  CHECK(ccsim::support::format_bandwidth(450e9) == "450 GB/s");
  CHECK(ccsim::support::format_bandwidth(12.8e12) == "12.8 TB/s");
  CHECK(ccsim::support::format_time(6e-7) == "600 ns");
  CHECK(ccsim::support::format_time(4e-6) == "4 us");
  CHECK(ccsim::support::format_bytes(80e9) == "80 GB");
}
