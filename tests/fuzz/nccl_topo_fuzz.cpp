// libFuzzer target: an NCCL topology XML, read the way `ccsim import nccl-topo FILE --gpu
// A100-SXM4-80GB --nic ib-hdr` reads it (read_nccl_topo_xml, then write_node_template, which
// reads the template back through the catalog). Contract: success or a user-input error
// (tests/fuzz/fuzz_support.hpp).

#include "models/hardware/catalog.hpp"
#include "models/hardware/import/nccl_topo_xml.hpp"
#include "models/hardware/import/node_template_writer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ccsim::models::Catalog catalog = ccsim::models::Catalog::load(ccsim::models::Catalog::default_dir());
  const std::string path = ccsim::fuzz::write_input("topo.xml", data, size);
  ccsim::fuzz::expect_success_or_input_error("import nccl-topo", [&] {
    const auto host = ccsim::models::import::read_nccl_topo_xml(path);
    ccsim::models::import::ImportOptions o;
    o.gpu = "A100-SXM4-80GB";
    o.nic = "ib-hdr";
    o.cpu_link = "upi";
    if (!host.scaleup_stated) o.nvlink = "nvswitch";
    (void)ccsim::models::import::write_node_template(host, catalog, o);
  });
  return 0;
}
