#include "models/hardware/import/nccl_topo_xml.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "support/numbers.hpp"

namespace ccsim::models::import {
namespace {

using support::InputError;

// NCCL's limits on the topology XML (src/graph/xml.h): NCCL_TOPO_XML_MAX_NODES, MAX_ATTR_COUNT,
// MAX_STR_LEN.
constexpr int kMaxElements = 256;
constexpr int kMaxAttributes = 16;
constexpr std::size_t kMaxValueLength = 255;
// Files of this kind are a few kilobytes; NCCL reads them whole too.
constexpr std::size_t kMaxFileBytes = std::size_t{1} << 20;

/// A PCI class code's kind, as NCCL's kvDictPciClass matches prefixes of the "0x..." string.
enum class PciKind { Bridge, Gpu, Nic, NvSwitch, Other };

PciKind pci_kind(const std::string& cls) {
  std::string c = cls;
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (c.rfind("0x0604", 0) == 0) return PciKind::Bridge;
  if (c.rfind("0x0680", 0) == 0) return PciKind::NvSwitch;
  if (c.rfind("0x03", 0) == 0) return PciKind::Gpu;
  if (c.rfind("0x02", 0) == 0) return PciKind::Nic;
  return PciKind::Other;
}

/// The slower of two stated links (rate × width); a link not stated leaves the other.
PcieLinkInfo slower(const PcieLinkInfo& a, const PcieLinkInfo& b) {
  if (a.gts <= 0.0 || a.width <= 0) return b;
  if (b.gts <= 0.0 || b.width <= 0) return a;
  return a.gts * a.width <= b.gts * b.width ? a : b;
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  HostDescription read() {
    host_.file = file_;
    host_.format = "NCCL topology XML";
    const pugi::xml_parse_result ok = doc_.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!ok) throw InputError(where(ok.offset), "", "well-formed XML", ok.description());
    check_limits();
    const pugi::xml_node system = doc_.child("system");
    if (!system) {
      const pugi::xml_node first = doc_.first_child();
      throw InputError(where(first ? first.offset_debug() : 0), "system",
                       "an NCCL topology file: a top-level <system version=\"1\"> element",
                       first ? fmt::format("<{}>", first.name()) : std::string("no element"));
    }
    for (pugi::xml_node cpu : system.children("cpu")) read_cpu(cpu);
    if (host_.gpus.empty()) {
      throw InputError(where(system.offset_debug()), "system/cpu/pci",
                       "at least one GPU (a <pci> element of class 0x03xxxx, or a <gpu> element)", "none");
    }
    check_unique();
    sort_devices(host_);
    return host_;
  }

  /// Bus ids, GPU device indices, NIC names and NUMA ids name one device each.
  void check_unique() const {
    const auto dup = [&](const std::string& what, const std::string& value) {
      throw InputError({file_, 0, 0}, what, fmt::format("each {} once", what), fmt::format("'{}' twice", value));
    };
    std::set<std::string> busids, names;
    std::set<int> devs, numas;
    for (const HostGpu& g : host_.gpus) {
      if (!busids.insert(g.busid).second) dup("busid", g.busid);
      if (g.dev >= 0 && !devs.insert(g.dev).second) dup("gpu dev", std::to_string(g.dev));
    }
    for (const HostNic& n : host_.nics) {
      if (!n.name.empty() && !names.insert(n.name).second) dup("net name", n.name);
    }
    std::set<std::string> nic_busids;
    for (const HostNic& n : host_.nics)
      if (!n.busid.empty() && busids.count(n.busid)) dup("busid", n.busid);
    for (const HostCpu& c : host_.cpus)
      if (c.numa >= 0 && !numas.insert(c.numa).second) dup("cpu numaid", std::to_string(c.numa));
  }

 private:
  support::SourceLocation where(std::ptrdiff_t offset) const {
    int line = 1, column = 1;
    for (std::ptrdiff_t i = 0; i < offset && i < static_cast<std::ptrdiff_t>(text_.size()); ++i) {
      if (text_[static_cast<std::size_t>(i)] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return {file_, line, column};
  }

  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& attr, const std::string& expected, const std::string& found) const {
    throw InputError(where(n.offset_debug()), fmt::format("<{}>{}", n.name(), attr.empty() ? "" : " " + attr), expected, found);
  }

  void check_limits() const {
    int elements = 0;
    std::function<void(const pugi::xml_node&)> visit = [&](const pugi::xml_node& n) {
      for (pugi::xml_node c : n.children()) {
        if (c.type() != pugi::node_element) continue;
        if (++elements > kMaxElements) {
          fail(c, "", fmt::format("at most {} elements (NCCL's NCCL_TOPO_XML_MAX_NODES)", kMaxElements),
               fmt::format("more (element {} is <{}>)", elements, c.name()));
        }
        int attributes = 0;
        for (pugi::xml_attribute a : c.attributes()) {
          if (++attributes > kMaxAttributes) {
            fail(c, "", fmt::format("at most {} attributes per element (NCCL's MAX_ATTR_COUNT)", kMaxAttributes), "more");
          }
          if (std::strlen(a.value()) > kMaxValueLength) {
            fail(c, a.name(), fmt::format("a value of at most {} characters (NCCL's MAX_STR_LEN)", kMaxValueLength),
                 fmt::format("{} characters", std::strlen(a.value())));
          }
        }
        visit(c);  // depth is bounded by the element count
      }
    };
    visit(doc_);
  }

  std::string attr(const pugi::xml_node& n, const char* name) const { return n.attribute(name).value(); }

  /// An integer attribute in [lo, hi]; `fallback` when absent.
  long long int_attr(const pugi::xml_node& n, const char* name, long long lo, long long hi, long long fallback) const {
    const pugi::xml_attribute a = n.attribute(name);
    if (!a) return fallback;
    std::string v = a.value();
    int base = 10;
    if (v.rfind("0x", 0) == 0 || v.rfind("0X", 0) == 0) {
      v = v.substr(2);
      base = 16;
    }
    long long out = 0;
    bool ok = !v.empty();
    for (char ch : v) {
      const int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                    : (base == 16 && std::isxdigit(static_cast<unsigned char>(ch))) ? std::tolower(static_cast<unsigned char>(ch)) - 'a' + 10
                                                                                     : -1;
      // Stop past `hi` (every bound is far below 2^62): no overflow, whatever the length.
      if (d < 0 || out > (hi - d) / base) {
        ok = false;
        break;
      }
      out = out * base + d;
    }
    if (!ok || out < lo || out > hi) {
      fail(n, name, fmt::format("an integer from {} to {}", lo, hi), support::quote_token(a.value()));
    }
    return out;
  }

  PcieLinkInfo link_of(const pugi::xml_node& pci) const {
    PcieLinkInfo l;
    const pugi::xml_attribute speed = pci.attribute("link_speed");
    if (speed) {
      l.gts = parse_link_speed(speed.value());
      if (l.gts == 0.0 && std::strlen(speed.value()) > 0 && std::string(speed.value()) != "Unknown") {
        fail(pci, "link_speed", "a PCIe rate such as \"16 GT/s\" or \"32.0 GT/s PCIe\" (2.5, 5, 8, 16, 32 or 64 GT/s)",
             support::quote_token(speed.value()));
      }
    }
    // NCCL: "Manage cases where speed was not indicated in /sys": width 0 reads as x16.
    const long long width = int_attr(pci, "link_width", 0, 32, -1);
    l.width = width < 0 ? 0 : width == 0 ? 16 : static_cast<int>(width);
    if (l.gts > 0.0 && l.width == 0) l.width = 16;
    return l;
  }

  std::string busid_of(const pugi::xml_node& pci) const {
    const std::string raw = attr(pci, "busid");
    const std::string id = normalise_busid(raw);
    if (id.empty()) fail(pci, "busid", "a PCI bus id such as \"0000:07:00.0\"", raw.empty() ? "none" : support::quote_token(raw));
    return id;
  }

  void read_cpu(const pugi::xml_node& cpu) {
    HostCpu c;
    c.numa = static_cast<int>(int_attr(cpu, "numaid", -1, 4095, static_cast<long long>(host_.cpus.size())));
    c.arch = attr(cpu, "arch");
    c.vendor = attr(cpu, "vendor");
    c.family = static_cast<int>(int_attr(cpu, "familyid", 0, 1 << 20, -1));
    c.model = static_cast<int>(int_attr(cpu, "modelid", 0, 1 << 20, -1));
    const int index = static_cast<int>(host_.cpus.size());
    host_.cpus.push_back(c);
    int root = -1;  // the CPU's root-port attachment, made when a device sits there
    const auto root_port = [&] {
      if (root < 0) {
        root = static_cast<int>(host_.attaches.size());
        host_.attaches.push_back(HostAttach{index, false, {}, ""});
      }
      return root;
    };
    for (pugi::xml_node child : cpu.children()) {
      if (child.type() != pugi::node_element) continue;
      const std::string name = child.name();
      if (name == "pci") {
        const PciKind kind = pci_kind(attr(child, "class"));
        if (kind == PciKind::Bridge || (kind == PciKind::Other && child.child("pci"))) {
          const int a = static_cast<int>(host_.attaches.size());
          host_.attaches.push_back(HostAttach{index, true, link_of(child), busid_of(child)});
          for (pugi::xml_node sub : child.children("pci")) read_pci(sub, a, PcieLinkInfo{});
          for (pugi::xml_node sub : child.children("nic")) read_nic(sub, a, "", PcieLinkInfo{});
        } else {
          read_pci(child, -1, PcieLinkInfo{}, root_port);
        }
      } else if (name == "nic") {
        read_nic(child, root_port(), "", PcieLinkInfo{});
      }
    }
  }

  /// A <pci> element below attachment `attach` (-1: directly below the CPU, made on demand by
  /// `root_port`); `above` is the slowest link between it and the attachment point.
  void read_pci(const pugi::xml_node& pci, int attach, PcieLinkInfo above, const std::function<int()>& root_port = {}) {
    const PciKind kind = pci_kind(attr(pci, "class"));
    const PcieLinkInfo here = slower(above, link_of(pci));
    const auto attach_point = [&] { return attach >= 0 ? attach : root_port(); };
    switch (kind) {
      case PciKind::Bridge:
      case PciKind::Other:
        for (pugi::xml_node sub : pci.children("pci")) read_pci(sub, attach_point(), here);
        for (pugi::xml_node sub : pci.children("nic")) read_nic(sub, attach_point(), "", here);
        return;
      case PciKind::NvSwitch: return;  // NVLink switches: a GPU's nvlink elements say how it joins them
      case PciKind::Gpu: {
        HostGpu g;
        g.busid = busid_of(pci);
        g.attach = attach_point();
        g.link = here;
        if (const pugi::xml_node gpu = pci.child("gpu")) read_gpu(gpu, g);
        host_.gpus.push_back(g);
        return;
      }
      case PciKind::Nic: {
        const std::string busid = busid_of(pci);
        NicClass cls = NicClass::Unknown;
        const std::string c = attr(pci, "class");
        if (c.rfind("0x0207", 0) == 0) cls = NicClass::Infiniband;
        if (c.rfind("0x0200", 0) == 0) cls = NicClass::Ethernet;
        const std::size_t before = host_.nics.size();
        for (pugi::xml_node nic : pci.children("nic")) read_nic(nic, attach_point(), busid, here);
        if (host_.nics.size() == before) {  // a NIC the file lists without its <nic><net> (NCCL_TOPO_FILE)
          HostNic n;
          n.busid = busid;
          n.attach = attach_point();
          n.link = here;
          host_.nics.push_back(n);
        }
        for (std::size_t k = before; k < host_.nics.size(); ++k) host_.nics[k].nic_class = cls;
        return;
      }
    }
  }

  void read_gpu(const pugi::xml_node& gpu, HostGpu& g) {
    g.dev = static_cast<int>(int_attr(gpu, "dev", 0, 4095, -1));
    g.sm = static_cast<int>(int_attr(gpu, "sm", 0, 10000, 0));
    for (pugi::xml_node link : gpu.children()) {
      const std::string name = link.name();
      if (name == "nvlink" || name == "xgmi") {
        host_.scaleup_stated = true;
        HostScaleUpLink l;
        l.target = normalise_busid(attr(link, "target"));
        const std::string tclass = attr(link, "tclass");
        const PciKind kind = pci_kind(tclass);
        std::string t = tclass;
        std::transform(t.begin(), t.end(), t.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        l.kind = t.rfind("0x068001", 0) == 0 ? ScaleUpTarget::Cpu
                 : kind == PciKind::NvSwitch ? ScaleUpTarget::NvSwitch
                 : kind == PciKind::Gpu      ? ScaleUpTarget::Gpu
                                             : ScaleUpTarget::Gpu;
        if (kind != PciKind::Gpu && kind != PciKind::NvSwitch) {
          fail(link, "tclass", "the class of the link's target: 0x03xxxx (a GPU), 0x068000 (an NVSwitch) or 0x068001 (a CPU)",
               tclass.empty() ? "none" : support::quote_token(tclass));
        }
        if (l.kind == ScaleUpTarget::Gpu && l.target.empty()) {
          fail(link, "target", "the bus id of the peer GPU", support::quote_token(attr(link, "target")));
        }
        l.count = static_cast<int>(int_attr(link, "count", 1, 64, 1));
        g.scaleup.push_back(l);
      } else if (name == "c2c") {
        // NVLink-C2C to the Grace CPU: `bw` MB/s per link (NVML's figure) × `count` links; NCCL's
        // topo.cc: c2cBw = bw × count / 1000 GB/s.
        const long long bw = int_attr(link, "bw", 1, 10000000, -1);
        if (bw < 0) fail(link, "bw", "the bandwidth of one C2C link in MB/s", "none");
        const long long count = int_attr(link, "count", 1, 1024, 1);
        g.c2c_bandwidth = static_cast<double>(bw) * 1e6 * static_cast<double>(count);
      }
    }
  }

  void read_nic(const pugi::xml_node& nic, int attach, const std::string& busid, PcieLinkInfo link) {
    bool any = false;
    for (pugi::xml_node net : nic.children("net")) {
      any = true;
      HostNic n;
      n.busid = busid;
      n.attach = attach;
      n.link = link;
      n.name = attr(net, "name");
      n.dev = static_cast<int>(int_attr(net, "dev", 0, 4095, -1));
      // NCCL: speed in Mb/s (net->net.bw = speed / 8000 GB/s).
      const long long mbps = int_attr(net, "speed", 0, 100000000, 0);
      n.speed = static_cast<double>(mbps) * 1e6;
      // NCCL: gdr="0" is a NIC without GPUDirect RDMA (net.gdrSupport; ncclTopoCheckGdr).
      n.gdr = static_cast<int>(int_attr(net, "gdr", 0, 1, -1));
      host_.nics.push_back(n);
    }
    if (!any && busid.empty()) {
      HostNic n;
      n.attach = attach;
      n.link = link;
      host_.nics.push_back(n);
    }
  }

  const std::string& text_;
  std::string file_;
  pugi::xml_document doc_;
  HostDescription host_;
};

}  // namespace

std::string normalise_busid(const std::string& busid) {
  // dddd:bb:dd.f, the domain possibly 8 hex digits ("00000000:07:00.0" in nvidia-smi).
  std::string s;
  for (char ch : busid) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  const std::size_t c1 = s.find(':');
  const std::size_t c2 = c1 == std::string::npos ? c1 : s.find(':', c1 + 1);
  const std::size_t dot = c2 == std::string::npos ? c2 : s.find('.', c2 + 1);
  if (dot == std::string::npos) return "";
  std::string domain = s.substr(0, c1);
  const std::string bus = s.substr(c1 + 1, c2 - c1 - 1), dev = s.substr(c2 + 1, dot - c2 - 1), fn = s.substr(dot + 1);
  const auto hex = [](const std::string& t, std::size_t lo, std::size_t hi) {
    return t.size() >= lo && t.size() <= hi && std::all_of(t.begin(), t.end(), [](unsigned char ch) { return std::isxdigit(ch); });
  };
  if (!hex(domain, 1, 8) || !hex(bus, 1, 2) || !hex(dev, 1, 2) || !hex(fn, 1, 1)) return "";
  if (domain.size() > 4) {
    // Keep the low four digits of the domain (NCCL's own shortening: "0000:07:00.0"),
    // unless the high ones are not zero (NCCL's "fffffff:ffff:ff" virtual ids keep them).
    const std::string high = domain.substr(0, domain.size() - 4);
    if (std::all_of(high.begin(), high.end(), [](char ch) { return ch == '0'; })) domain = domain.substr(domain.size() - 4);
  }
  while (domain.size() < 4) domain = "0" + domain;
  return fmt::format("{}:{:0>2}:{:0>2}.{}", domain, bus, dev, fn);
}

void sort_devices(HostDescription& host) {
  std::stable_sort(host.gpus.begin(), host.gpus.end(), [](const HostGpu& a, const HostGpu& b) {
    if ((a.dev >= 0) != (b.dev >= 0)) return a.dev >= 0;
    if (a.dev != b.dev) return a.dev < b.dev;
    return a.busid < b.busid;
  });
  std::stable_sort(host.nics.begin(), host.nics.end(), [](const HostNic& a, const HostNic& b) {
    if ((a.dev >= 0) != (b.dev >= 0)) return a.dev >= 0;
    if (a.dev != b.dev) return a.dev < b.dev;
    if (a.busid != b.busid) return a.busid < b.busid;
    return a.name < b.name;
  });
}

double parse_link_speed(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  std::size_t j = i;
  while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
  if (j == i) return 0.0;
  const support::Parsed<double> v = support::parse_decimal(text.substr(i, j - i));
  if (!v) return 0.0;
  std::string rest = text.substr(j);
  rest.erase(0, rest.find_first_not_of(' '));
  if (rest.rfind("GT/s", 0) != 0) return 0.0;
  for (double known : {2.5, 5.0, 8.0, 16.0, 32.0, 64.0})
    if (v.value == known) return known;
  return 0.0;
}

HostDescription parse_nccl_topo_xml(const std::string& text, const std::string& file) { return Reader(text, file).read(); }

HostDescription read_nccl_topo_xml(const std::string& path) {
  const std::string text = support::read_input_file(path, {"an NCCL topology XML file", kMaxFileBytes});
  return parse_nccl_topo_xml(text, path);
}

}  // namespace ccsim::models::import
