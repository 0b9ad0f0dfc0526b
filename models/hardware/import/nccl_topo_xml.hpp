#pragma once
// Reader of NCCL's topology XML: the file NCCL writes with NCCL_TOPO_DUMP_FILE and reads with
// NCCL_TOPO_FILE (also what cloud images ship, e.g. Azure's ndv4-topo.xml). Elements and
// attributes are those NCCL's src/graph/xml.cc and topo.cc read:
//   <system version>
//     <cpu numaid affinity arch vendor familyid modelid>
//       <pci busid class link_speed link_width ...>   class 0x0604xx bridge (PCIe switch),
//                                                      0x03xxxx GPU, 0x02xxxx NIC (0x0207 IB),
//                                                      0x0680xx NVSwitch
//         <gpu dev sm rank gdr> <nvlink target count tclass/> <c2c bw count/> </gpu>
//         <nic> <net name dev speed port latency guid maxconn gdr/> </nic>
// Limits are NCCL's own (xml.h): at most 256 elements, 16 attributes per element, attribute
// values of at most 255 characters; a file past them is refused, as NCCL refuses it.
#include <string>

#include "models/hardware/import/host_description.hpp"

namespace ccsim::models::import {

/// Reads an NCCL topology XML file. Nested PCIe switches are flattened into the switch below
/// the CPU; a device's link is the slowest PCIe link between it and that switch; link speeds
/// and widths are kept as stated (width 0 means x16, as NCCL reads it). Throws
/// support::InputError (file:line:column, element, expected, found) for a file that is not
/// well-formed XML, not a <system>, past NCCL's limits, or whose GPUs, NICs, bus ids, classes,
/// link speeds or widths cannot be read.
HostDescription read_nccl_topo_xml(const std::string& path);

/// The same, from text already read (`file` names it in messages).
HostDescription parse_nccl_topo_xml(const std::string& text, const std::string& file);

/// PCIe transfer rate per lane, GT/s, from NCCL's `link_speed` strings ("16 GT/s",
/// "32.0 GT/s PCIe", "2.5 GT/s"); 0 when the text names none (NCCL then assumes Gen3).
double parse_link_speed(const std::string& text);

}  // namespace ccsim::models::import
