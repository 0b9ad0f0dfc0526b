#include "models/hardware/kinds.hpp"

namespace ccsim::models {

std::string_view to_string(LinkClass c) {
  switch (c) {
    case LinkClass::ScaleUp: return "scale-up";
    case LinkClass::Pcie: return "pcie";
    case LinkClass::Host: return "host";
    case LinkClass::Network: return "network";
  }
  return "?";
}

std::string_view to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::NvSwitch: return "nvswitch";
    case DeviceKind::PcieSwitch: return "pcie-switch";
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::NetworkSwitch: return "network-switch";
    case DeviceKind::Memory: return "memory";
  }
  return "?";
}

std::string_view to_string(PathType t) {
  switch (t) {
    case PathType::Nvl: return "NVL";
    case PathType::Pix: return "PIX";
    case PathType::Pxb: return "PXB";
    case PathType::Phb: return "PHB";
    case PathType::Sys: return "SYS";
    case PathType::Net: return "NET";
  }
  return "?";
}

std::string_view to_string(NicTransport t) {
  switch (t) {
    case NicTransport::Gdr: return "gdr";
    case NicTransport::Verbs: return "verbs";
    case NicTransport::Socket: return "socket";
  }
  return "?";
}

std::optional<NicTransport> parse_nic_transport(std::string_view s) {
  for (NicTransport t : {NicTransport::Gdr, NicTransport::Verbs, NicTransport::Socket})
    if (to_string(t) == s) return t;
  return std::nullopt;
}

std::optional<LinkClass> parse_link_class(std::string_view s) {
  for (LinkClass c : {LinkClass::ScaleUp, LinkClass::Pcie, LinkClass::Host, LinkClass::Network})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

}  // namespace ccsim::models
