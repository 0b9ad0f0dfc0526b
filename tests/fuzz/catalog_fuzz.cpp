// libFuzzer target: the hardware catalog (models::Catalog::load on a directory). The first byte
// of an input picks the file it replaces: 'g' gpus.yaml, 'l' links.yaml, 'n' nodes.yaml,
// 'c' cpus.yaml (any other byte: its value modulo 4); the rest is that file's text, and the
// other three files are the shipped ones. Every entry is then resolved by name, as scenarios
// do. Contract: success or a user-input error (tests/fuzz/fuzz_support.hpp).

#include <array>
#include <filesystem>

#include "models/hardware/catalog.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

constexpr std::array<const char*, 4> kFiles = {"gpus.yaml", "links.yaml", "nodes.yaml", "cpus.yaml"};

std::size_t pick(std::uint8_t first) {
  switch (first) {
    case 'g': return 0;
    case 'l': return 1;
    case 'n': return 2;
    case 'c': return 3;
    default: return first % kFiles.size();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  if (size == 0) return 0;
  const fs::path dir = ccsim::fuzz::work_dir() / "catalog";
  const std::string shipped = ccsim::models::Catalog::default_dir();
  // The shipped files are copied in once; afterwards only the one the last input replaced is
  // restored.
  static std::size_t last = kFiles.size();
  static const bool copied = [&] {
    fs::create_directories(dir);
    for (const char* file : kFiles) fs::copy_file(fs::path(shipped) / file, dir / file, fs::copy_options::overwrite_existing);
    return true;
  }();
  (void)copied;
  const std::size_t replaced = pick(data[0]);
  if (last < kFiles.size() && last != replaced) {
    fs::copy_file(fs::path(shipped) / kFiles[last], dir / kFiles[last], fs::copy_options::overwrite_existing);
  }
  last = replaced;
  ccsim::fuzz::write_input(std::string("catalog/") + kFiles[replaced], data + 1, size - 1);
  ccsim::fuzz::expect_success_or_input_error("Catalog::load", [&] {
    const ccsim::models::Catalog catalog = ccsim::models::Catalog::load(dir.string());
    for (const std::string& name : catalog.gpu_names()) (void)catalog.gpu(name);
    for (const std::string& name : catalog.link_names()) (void)catalog.link(name);
    for (const std::string& name : catalog.cpu_names()) (void)catalog.cpu(name);
    for (const std::string& name : catalog.node_names()) (void)catalog.node(name);
  });
  return 0;
}
