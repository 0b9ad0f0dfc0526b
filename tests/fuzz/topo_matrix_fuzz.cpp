// libFuzzer target: `nvidia-smi topo -m` output and host lists, read the way `ccsim import
// nvidia-smi-topo FILE --gpu H100-SXM5 --nic ib-ndr --cpu-link upi` and `ccsim import hostfile`
// read them (the same bytes go to both readers and to the Slurm nodelist expander).
// Contract: success or a user-input error (tests/fuzz/fuzz_support.hpp).

#include "models/hardware/catalog.hpp"
#include "models/hardware/import/hostfile.hpp"
#include "models/hardware/import/node_template_writer.hpp"
#include "models/hardware/import/nvidia_smi_topo.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ccsim::models::Catalog catalog = ccsim::models::Catalog::load(ccsim::models::Catalog::default_dir());
  const std::string path = ccsim::fuzz::write_input("topo-m.txt", data, size);
  ccsim::fuzz::expect_success_or_input_error("import nvidia-smi-topo", [&] {
    const auto host = ccsim::models::import::read_nvidia_smi_topo(path);
    ccsim::models::import::ImportOptions o;
    o.gpu = "H100-SXM5";
    o.nic = "ib-ndr";
    o.cpu_link = "upi";
    (void)ccsim::models::import::write_node_template(host, catalog, o);
  });
  ccsim::fuzz::expect_success_or_input_error("import hostfile", [&] { (void)ccsim::models::import::read_hostfile(path); });
  const std::string text(reinterpret_cast<const char*>(data), size);
  ccsim::fuzz::expect_success_or_input_error("import nodelist", [&] {
    (void)ccsim::models::import::expand_nodelist(text.substr(0, text.find('\n')), {"<command line>", 1, 1});
  });
  return 0;
}
