// libFuzzer target: one rank's Chakra execution trace, read the way `ccsim run --chakra DIR`
// reads a directory (models::chakra::read_chakra_dir: length-delimited messages, node types and
// attributes, dependencies, the topological order, the collectives' matching), then written
// again (chakra_files) and read back. Contract: success or a user-input error
// (tests/fuzz/fuzz_support.hpp).

#include <filesystem>

#include "models/workload/chakra/chakra_trace.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::filesystem::create_directories(ccsim::fuzz::work_dir() / "chakra");
  const std::string path = ccsim::fuzz::write_input("chakra/trace.0.et", data, size);
  ccsim::fuzz::expect_success_or_input_error("read_chakra_dir", [&] {
    const auto t = ccsim::models::chakra::read_chakra_dir(std::filesystem::path(path).parent_path().string());
    // What the reader accepted is written as a trace the writer can make (no exception).
    (void)ccsim::models::chakra::chakra_files(t.program, t.prefix);
  });
  return 0;
}
