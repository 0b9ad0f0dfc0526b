// libFuzzer target: a Hugging Face config.json, read into a transformer model spec by
// models::load_transformer (the path a scenario's `workload.model` names). Contract: success or
// a user-input error (tests/fuzz/fuzz_support.hpp).

#include "models/workload/transformer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ccsim::fuzz::write_input("config.json", data, size);
  ccsim::fuzz::expect_success_or_input_error("load_transformer", [&] {
    const ccsim::models::TransformerConfig config = ccsim::models::load_transformer(path);
    (void)config;
  });
  return 0;
}
