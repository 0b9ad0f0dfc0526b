// libFuzzer target: an nccl-tests log, opened and parsed the way `ccsim compare LOG` reads it
// (validate::parse_nccl_tests_log on the file). Contract: success or a user-input error
// (tests/fuzz/fuzz_support.hpp).

#include <fstream>

#include "tests/fuzz/fuzz_support.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ccsim::fuzz::write_input("nccl-tests.log", data, size);
  ccsim::fuzz::expect_success_or_input_error("parse_nccl_tests_log", [&] {
    std::ifstream in(path);
    const auto tests = ccsim::validate::parse_nccl_tests_log(in, path);
    (void)tests;
  });
  return 0;
}
