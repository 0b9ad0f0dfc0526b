#pragma once
// Turns an imported HostDescription (an NCCL topology XML, `nvidia-smi topo -m`) into a ccsim
// node template with the catalog's link kinds: the layout from the GPUs' scale-up links
// (links to an NVSwitch: nvswitch; GPU-to-GPU NVLink or xGMI: direct, with each pair's count;
// none: pcie-box), the PCIe tree as `pcie.tree` (docs/hardware-catalog.md), PCIe links by
// generation (2.5/5/8/16/32/64 GT/s: pcie-gen1 ... pcie-gen6) and width (a link narrower than
// x16 becomes a derived kind with bandwidth × width / 16, keeping its generation's efficiency
// in the cost table: a 2.5 GT/s x1 bridge is 0.25 GB/s raw, the 0.1875 GB/s NCCL credits after
// nccl.yaml's 0.75), NICs by line rate and class (InfiniBand 100/200/400/800 Gb/s: ib-edr,
// ib-hdr, ib-ndr, ib-xdr; Ethernet 100/200/400 Gb/s: roce-*), CPU socket links by vendor.
// What the file does not say comes from ImportOptions, or the import stops and names the
// option; what was assumed or left out is listed in ImportedNode::notes.
#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/hardware/import/host_description.hpp"

namespace ccsim::models::import {

/// What the user says that the file does not. Empty strings: take it from the file.
struct ImportOptions {
  std::string name;      ///< the template's name (default: the file's stem)
  std::string gpu;       ///< catalog GPU; required (no file format names the model)
  std::string nic;       ///< catalog network link of the NICs; default from their stated speed
  std::string pcie;      ///< PCIe link kind where the file gives none; default the GPU's host link
  std::string cpu;       ///< catalog CPU socket (host memory model); default none
  std::string cpu_link;  ///< socket link between CPUs; default from the CPU vendor the file names
  std::string nvlink;    ///< "nvswitch" or "none" when the file is silent about NVLink
  bool no_p2p = false;   ///< GPUs without PCIe peer-to-peer (GeForce cards, ACS on)
  /// NICs to leave out (storage, management ports), by name ("mlx5_4") or bus id.
  std::vector<std::string> skip_nics;
};

struct ImportedNode {
  std::string name;
  /// The node template as YAML: `key: value` lines of one map, no top-level key, indented by
  /// 0; comments name the devices (bus ids) each tree entry holds.
  std::string yaml;
  std::vector<std::string> notes;  ///< assumptions and what was left out, one sentence each
};

/// Builds the template, then reads it back through `catalog` (Catalog::node) so that a template
/// the catalog would refuse is never written. Throws support::InputError on the command line
/// ("--gpu", "--nic", ...) for what the file does not say and no option gives, and for catalog
/// names that do not exist or are of the wrong class.
ImportedNode write_node_template(const HostDescription& host, const Catalog& catalog, const ImportOptions& options);

/// `text` made safe for a YAML comment or a message: control characters and bytes outside
/// ASCII as '?', at most `max` characters (then "...").
std::string comment_safe(const std::string& text, std::size_t max = 80);

/// Indents every non-empty line of `text` by `spaces`.
std::string indent(const std::string& text, int spaces);

}  // namespace ccsim::models::import
