// libFuzzer target: an MSCCL XML schedule, read the way `ccsim collective --algo synth:FILE` reads
// it (planner::synthesis::read_msccl_header, then from_msccl_xml at one element per chunk and
// models::verify). Contract: success or a user-input error (tests/fuzz/fuzz_support.hpp).

#include "models/collective/schedule.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "support/input_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ccsim::fuzz::write_input("schedule.msccl.xml", data, size);
  ccsim::fuzz::expect_success_or_input_error("from_msccl_xml", [&] {
    const std::string text = ccsim::support::read_input_file(path, "an MSCCL XML schedule");
    const auto h = ccsim::planner::synthesis::read_msccl_header(text, path);
    if (h.ranks > 4096 || h.chunks_per_loop > (1 << 20)) return;  // the command line's rank check refuses these first
    const std::uint64_t smallest = static_cast<std::uint64_t>(h.chunks_per_loop) * 4;
    const auto s = ccsim::planner::synthesis::from_msccl_xml(text, path, smallest, 4);
    // As cli/options.cpp's synth_option: verify only buffers of at most 4 GiB (here 64 MiB: fast).
    const auto b = ccsim::models::buffer_sizes(h.collective, smallest, h.ranks);
    double elements = 0;
    for (const auto& r : s.ranks) elements += static_cast<double>(b.input + b.output + r.scratch_bytes) / 4.0;
    if (elements * 8.0 <= 64.0 * 1048576.0) (void)ccsim::models::verify(s);
  });
  return 0;
}
