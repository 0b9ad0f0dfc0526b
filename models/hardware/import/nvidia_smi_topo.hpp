#pragma once
// Reader of `nvidia-smi topo -m` output: the matrix of how each pair of GPUs and NICs connects
// (X self; NV# a bond of # NVLinks; PIX at most one PCIe switch; PXB several switches, no host
// bridge; PHB through the CPU's host bridge; NODE across host bridges of one NUMA node; SYS
// across the SMP interconnect; SOC, older drivers' name for SYS), then each GPU's CPU and NUMA
// affinity, then the legends (`NIC0: mlx5_0`). Terminal colour escapes are ignored.
//
// What the matrix does not say, the importer asks for: the GPU model, the NICs' speed, PCIe
// generations (node_template_writer.hpp). Devices joined by PIX or PXB share one PCIe switch;
// a device with neither sits on its CPU's root ports. A NIC belongs to the NUMA node of the
// GPU it is closest to.
#include <string>

#include "models/hardware/import/host_description.hpp"

namespace ccsim::models::import {

/// Reads `nvidia-smi topo -m` output saved to a file. Throws support::InputError (file:line:
/// column, expected, found) when there is no GPU header, a row has the wrong number of
/// entries, an entry is not one of the legend's words, the matrix is not symmetric, or the
/// file is larger than 1 MiB (a 64-device matrix is under 20 kB).
HostDescription read_nvidia_smi_topo(const std::string& path);

/// The same, from text already read.
HostDescription parse_nvidia_smi_topo(const std::string& text, const std::string& file);

}  // namespace ccsim::models::import
