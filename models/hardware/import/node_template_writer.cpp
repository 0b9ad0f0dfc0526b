#include "models/hardware/import/node_template_writer.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "support/input_error.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models::import {
namespace {

using support::InputError;

const support::SourceLocation kCommandLine{"<command line>", 0, 0};

/// NVSwitch systems per NVLink generation (the DGX of each: DGX-2 12 chips of NVSwitch 1, DGX
/// A100 6 of NVSwitch 2, DGX H100 4 of NVSwitch 3 with NVLink SHARP, DGX B200 2 of NVSwitch 4;
/// NVIDIA's DGX user guides and architecture whitepapers).
struct SwitchGeneration {
  const char* link;
  int generation;
  int chips;
  bool nvls;
};
constexpr SwitchGeneration kSwitchGenerations[] = {
    {"nvlink2", 1, 12, false}, {"nvlink3", 2, 6, false}, {"nvlink4", 3, 4, true}, {"nvlink5", 4, 2, true}};

/// The catalog's name of a link kind or its nearest catalog ancestor.
std::string root_name(const LinkSpec& l) { return l.lineage.empty() ? l.name : l.lineage.back(); }

/// A YAML double-quoted scalar: quotes and backslashes escaped, control characters and bytes
/// outside ASCII as \xHH, so no file name or attribute can break out of it.
std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64 || n.front() == '-' || n.front() == '.') return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; });
}

class Writer {
 public:
  Writer(const HostDescription& host, const Catalog& catalog, const ImportOptions& options)
      : host_(host), catalog_(catalog), options_(options) {
    for (const std::string& n : host.notes) {
      // A NIC the user already left out needs no note about it.
      bool skipped = false;
      for (const std::string& k : options.skip_nics) skipped = skipped || n.find("NIC " + k + " ") == 0;
      if (!skipped) notes_.push_back(comment_safe(n, 1000));
    }
  }

  ImportedNode write() {
    ImportedNode out;
    if (!options_.name.empty()) {
      if (!valid_name(options_.name)) {
        throw InputError(kCommandLine, "--name", "a template name of letters, digits, '.', '_' and '-' (at most 64, not starting with '.' or '-')",
                         "'" + comment_safe(options_.name) + "'");
      }
      out.name = options_.name;
    } else {
      // The file's stem, with what a catalog key cannot hold replaced by '-'.
      for (char c : std::filesystem::path(host_.file).stem().string()) {
        if (out.name.size() >= 64) break;
        out.name.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '-');
      }
      while (!out.name.empty() && (out.name.front() == '-' || out.name.front() == '.')) out.name.erase(0, 1);
      if (out.name.empty()) out.name = "imported-node";
    }
    const GpuSpec gpu = gpu_spec();
    const std::vector<int> nics = kept_nics();
    const std::string nic_link = nics.empty() ? std::string() : nic_link_name(nics);
    const std::string default_pcie = options_.pcie.empty() ? root_name(gpu.host_link) : options_.pcie;
    if (!options_.pcie.empty()) check_link(options_.pcie, LinkClass::Pcie, "--pcie");

    const std::string layout = layout_lines(gpu);
    const std::string pcie = pcie_lines(default_pcie, nics);
    std::string y;
    y += fmt::format("name: {}\n", out.name);
    y += fmt::format("source: {}\n", yaml_quoted(fmt::format("ccsim import of {} ({}): {} GPUs, {} NICs, {} CPUs (NUMA nodes)", host_.file,
                                                        host_.format, host_.gpus.size(), nics.size(), cpus_)));
    y += layout;
    y += fmt::format("gpus: {}\n", host_.gpus.size());
    y += pcie;
    y += fmt::format("cpus: {}\n", cpus_);
    if (cpus_ > 1) y += fmt::format("cpu_link: {}\n", cpu_link());
    if (!options_.cpu.empty()) {
      try {
        (void)catalog_.cpu(options_.cpu);
      } catch (const InputError& e) {
        throw InputError(kCommandLine, "--cpu", "a CPU of the catalog (" + join(catalog_.cpu_names()) + ")", yaml_quoted(options_.cpu));
      }
      y += fmt::format("cpu: {}\n", options_.cpu);
    } else {
      notes_.push_back("no --cpu: host memory is not modelled (needed for traffic staged through host memory)");
    }
    if (!nics.empty()) {
      // Every kept NIC the file marks gdr="0" (NCCL: no GPUDirect RDMA): verbs through host memory.
      bool no_gdr = true;
      for (int i : nics) no_gdr = no_gdr && host_.nics[static_cast<std::size_t>(i)].gdr == 0;
      const LinkSpec port = catalog_.link(nic_link);
      const bool verbs = no_gdr && port.transport_overhead[static_cast<std::size_t>(NicTransport::Verbs)].has_value();
      if (verbs) notes_.push_back("every NIC says gdr=\"0\" (no GPUDirect RDMA): transport verbs, staged through host memory");
      y += fmt::format("nics: {{link: {}, count: {}{}}}\n", nic_link, nics.size(), verbs ? ", transport: verbs" : "");
    }

    // Read it back: a template the catalog refuses is never written.
    YAML::Node node;
    try {
      node = YAML::Load(y);
    } catch (const YAML::Exception& e) {
      // Every text from the file is escaped or checked above; this guards what was missed.
      throw InputError({host_.file, 0, 0}, "import", "names and values that make a valid node template",
                       fmt::format("text that breaks its YAML ({})", comment_safe(e.what(), 200)));
    }
    YAML::Node wrapper(YAML::NodeType::Map);
    wrapper["node"] = node;
    try {
      (void)catalog_.node(support::Fields({{wrapper, nullptr}}, ""), "node");
    } catch (const InputError& e) {
      throw InputError(kCommandLine, "import", "a node template the catalog accepts", "one it refuses: " + std::string(e.what()));
    }
    out.yaml = y;
    out.notes = notes_;
    return out;
  }

 private:
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }

  LinkSpec check_link(const std::string& name, LinkClass cls, const std::string& option) const {
    LinkSpec l;
    try {
      l = catalog_.link(name);
    } catch (const InputError&) {
      throw InputError(kCommandLine, option, "a link of the catalog (" + join(catalog_.link_names()) + ")", yaml_quoted(name));
    }
    if (l.link_class != cls) throw InputError(kCommandLine, option, fmt::format("a link of class {}", to_string(cls)), yaml_quoted(name));
    return l;
  }

  GpuSpec gpu_spec() const {
    if (options_.gpu.empty()) {
      const int sm = host_.gpus.front().sm;
      std::vector<std::string> same_arch;
      if (sm > 0) {
        for (const std::string& n : catalog_.gpu_names())
          if (catalog_.gpu(n).arch == fmt::format("sm{}", sm)) same_arch.push_back(n);
      }
      throw InputError(kCommandLine, "--gpu",
                       fmt::format("the GPU model, which {} does not name{}: one of {}", host_.format,
                                   sm > 0 ? fmt::format(" (it says sm {}{})", sm,
                                                        same_arch.empty() ? std::string() : ", as " + join(same_arch) + " are")
                                          : "",
                                   join(catalog_.gpu_names())),
                       "none");
    }
    try {
      return catalog_.gpu(options_.gpu);
    } catch (const InputError&) {
      const std::string near = support::closest_match(options_.gpu, catalog_.gpu_names());
      throw InputError(kCommandLine, "--gpu", "a GPU of the catalog (" + join(catalog_.gpu_names()) + ")", yaml_quoted(options_.gpu),
                       near.empty() ? "" : "did you mean '" + near + "'?");
    }
  }

  /// The NICs ccsim models: those of the fastest stated line rate (management and storage
  /// Ethernet ports of another speed are left out, with a note); every NIC when no speed is
  /// stated.
  std::vector<int> kept_nics() {
    std::vector<int> kept;
    double fastest = 0.0;
    for (const HostNic& n : host_.nics) fastest = std::max(fastest, n.speed);
    std::vector<std::string> dropped;
    std::set<std::string> unmatched(options_.skip_nics.begin(), options_.skip_nics.end());
    for (std::size_t i = 0; i < host_.nics.size(); ++i) {
      const HostNic& n = host_.nics[i];
      const bool skip = std::find(options_.skip_nics.begin(), options_.skip_nics.end(), n.name) != options_.skip_nics.end() ||
                        (!n.busid.empty() && std::find(options_.skip_nics.begin(), options_.skip_nics.end(), n.busid) != options_.skip_nics.end());
      if (skip) {
        unmatched.erase(n.name);
        unmatched.erase(n.busid);
        notes_.push_back(fmt::format("left out NIC {} (--skip-nic)", comment_safe(n.name.empty() ? n.busid : n.name)));
        continue;
      }
      if (fastest > 0.0 && n.speed != fastest) {
        dropped.push_back(fmt::format("{} ({} Gb/s)", comment_safe(n.name.empty() ? n.busid : n.name), n.speed / 1e9));
        continue;
      }
      kept.push_back(static_cast<int>(i));
    }
    if (!unmatched.empty()) {
      std::string names;
      for (const HostNic& n : host_.nics) names += (names.empty() ? "" : ", ") + comment_safe(n.name.empty() ? n.busid : n.name);
      throw InputError(kCommandLine, "--skip-nic", fmt::format("a NIC of the file ({})", names.empty() ? "it lists none" : names),
                       "'" + comment_safe(*unmatched.begin()) + "'");
    }
    if (!dropped.empty()) {
      notes_.push_back(fmt::format("left out {} NIC{} slower than the {} Gb/s ones: {}", dropped.size(), dropped.size() == 1 ? "" : "s",
                                   fastest / 1e9, join(dropped)));
    }
    for (std::size_t k = 0; k < kept.size(); ++k) nic_index_[kept[k]] = static_cast<int>(k);
    return kept;
  }

  std::string nic_link_name(const std::vector<int>& nics) {
    if (!options_.nic.empty()) {
      check_link(options_.nic, LinkClass::Network, "--nic");
      return options_.nic;
    }
    const HostNic& n = host_.nics[static_cast<std::size_t>(nics.front())];
    if (n.speed <= 0.0) {
      throw InputError(kCommandLine, "--nic",
                       fmt::format("the NICs' link kind, which {} does not give (no <net speed=...>): e.g. ib-hdr, ib-ndr, roce-400g",
                                   host_.format),
                       "none");
    }
    const long long gbps = static_cast<long long>(n.speed / 1e9 + 0.5);
    const bool ethernet = n.nic_class == NicClass::Ethernet;
    static const std::map<long long, const char*> ib{{100, "ib-edr"}, {200, "ib-hdr"}, {400, "ib-ndr"}, {800, "ib-xdr"}};
    static const std::map<long long, const char*> eth{{100, "roce-100g"}, {200, "roce-200g"}, {400, "roce-400g"}};
    const auto& table = ethernet ? eth : ib;
    const auto it = table.find(gbps);
    if (it == table.end()) {
      throw InputError(kCommandLine, "--nic",
                       fmt::format("a link kind for {} Gb/s {} NICs (the catalog has {} at 100/200/400{} Gb/s); name one with --nic",
                                   gbps, ethernet ? "Ethernet" : "InfiniBand", ethernet ? "RoCE" : "InfiniBand", ethernet ? "" : "/800"),
                       "none");
    }
    if (n.nic_class == NicClass::Unknown) notes_.push_back(fmt::format("NIC class not stated: {} Gb/s taken as InfiniBand ({})", gbps, it->second));
    return it->second;
  }

  std::string layout_lines(const GpuSpec& gpu) {
    bool to_switch = false;
    std::map<std::pair<int, int>, int> pairs;
    std::map<std::string, int> index_of;
    for (std::size_t g = 0; g < host_.gpus.size(); ++g) index_of[host_.gpus[g].busid] = static_cast<int>(g);
    for (std::size_t g = 0; g < host_.gpus.size(); ++g) {
      for (const HostScaleUpLink& l : host_.gpus[g].scaleup) {
        if (l.kind == ScaleUpTarget::NvSwitch) to_switch = true;
        if (l.kind != ScaleUpTarget::Gpu) continue;
        const auto it = index_of.find(l.target);
        if (it == index_of.end()) {
          notes_.push_back(fmt::format("a scale-up link of GPU {} to {}, not a GPU of the file, left out", g, l.target));
          continue;
        }
        const int a = std::min(static_cast<int>(g), it->second), b = std::max(static_cast<int>(g), it->second);
        if (a == b) {
          notes_.push_back(fmt::format("a scale-up link of GPU {} to itself left out", g));
          continue;
        }
        auto [p, fresh] = pairs.emplace(std::make_pair(a, b), l.count);
        if (!fresh && p->second != l.count) {  // both ends list it
          notes_.push_back(fmt::format("GPUs {} and {} list {} and {} links to each other: {} taken", a, b, p->second, l.count,
                                       std::min(p->second, l.count)));
          p->second = std::min(p->second, l.count);
        }
      }
    }
    std::string mode = options_.nvlink;
    if (!host_.scaleup_stated) {
      if (mode.empty() && gpu.scaleup_link) {
        throw InputError(kCommandLine, "--nvlink",
                         fmt::format("how the {} GPUs join, which {} does not say (NCCL_TOPO_FILE files of cloud images leave "
                                     "NVLink to NVML): nvswitch or none",
                                     gpu.name, host_.file),
                         "none");
      }
      if (mode.empty()) mode = "none";
      notes_.push_back(fmt::format("NVLink not in the file: --nvlink {}", mode));
    } else if (!mode.empty()) {
      throw InputError(kCommandLine, "--nvlink", "no --nvlink: the file says how its GPUs join", yaml_quoted(mode));
    }
    // A matrix (nvidia-smi) shows NV# between every pair of an NVSwitch node: more links in
    // all than the GPU has means a switch, not a mesh.
    if (!to_switch && host_.scaleup_stated && host_.gpus.size() > 2 && gpu.scaleup_links > 0 &&
        pairs.size() == host_.gpus.size() * (host_.gpus.size() - 1) / 2) {
      int per_gpu = 0;
      for (const auto& [p, c] : pairs)
        if (p.first == 0) per_gpu += c;
      if (per_gpu > gpu.scaleup_links) to_switch = true;
    }
    if (mode == "nvswitch") to_switch = true;
    if (to_switch && !pairs.empty() && host_.format == "NCCL topology XML") {
      notes_.push_back(fmt::format("{} GPU-to-GPU NVLink pair{} beside the NVSwitch links left out (one NVSwitch domain per node)",
                                   pairs.size(), pairs.size() == 1 ? "" : "s"));
    }
    if (!to_switch && gpu.scaleup_links > 0) {
      // More links on a GPU than it has, without every pair joined: NVLink islands (several
      // NVSwitch domains in one node), which a ccsim node cannot hold.
      std::map<int, int> per_gpu;
      for (const auto& [p, c] : pairs) {
        per_gpu[p.first] += c;
        per_gpu[p.second] += c;
      }
      for (const auto& [g, c] : per_gpu) {
        if (c > gpu.scaleup_links) {
          throw InputError({host_.file, 0, 0}, "NVLink",
                           fmt::format("GPU links that fit the {}'s {} scale-up links, or NV# between every pair of GPUs (one "
                                       "NVSwitch domain)",
                                       gpu.name, gpu.scaleup_links),
                           fmt::format("GPU {} with {} links to some GPUs but not all: NVLink islands (several switch domains in one "
                                       "node), which ccsim's nodes do not model",
                                       g, c));
        }
      }
    }
    if (to_switch) {
      if (!gpu.scaleup_link) throw InputError(kCommandLine, "--gpu", "a GPU with NVLink (the file joins the GPUs by NVSwitch)", yaml_quoted(gpu.name));
      const std::string link = root_name(*gpu.scaleup_link);
      const SwitchGeneration* sg = nullptr;
      for (const SwitchGeneration& s : kSwitchGenerations)
        if (link == s.link) sg = &s;
      if (!sg) throw InputError(kCommandLine, "--gpu", "a GPU whose NVLink generation has NVSwitch systems (nvlink2 to nvlink5)", yaml_quoted(gpu.name));
      notes_.push_back(fmt::format("NVSwitch generation {} with {} chips, as in NVIDIA's DGX of {}", sg->generation, sg->chips, link));
      return fmt::format("layout: nvswitch\ngpu: {}\nnvswitch: {{chips: {}, generation: {}, nvls: {}}}\n", gpu_reference(gpu), sg->chips,
                         sg->generation, sg->nvls ? "true" : "false");
    }
    if (pairs.empty()) return fmt::format("layout: pcie-box\ngpu: {}\n", gpu_reference(gpu));
    if (!gpu.scaleup_link) throw InputError(kCommandLine, "--gpu", "a GPU with scale-up links (the file joins GPU pairs by NVLink or xGMI)", yaml_quoted(gpu.name));
    std::string s = fmt::format("layout: direct\ngpu: {}\ngpu_links:\n", gpu_reference(gpu));
    for (const auto& [p, c] : pairs) s += fmt::format("  - {{pair: [{}, {}], count: {}}}\n", p.first, p.second, c);
    return s;
  }

  /// NVLink-C2C as a link of class pcie (as the catalog's nvl72 models it): the GPU's host link
  /// and its link to the CPU, at the file's bandwidth (the slowest GPU's, per direction).
  std::string c2c_reference() const {
    double c2c = 0.0;
    for (const HostGpu& g : host_.gpus)
      if (g.c2c_bandwidth > 0.0) c2c = c2c == 0.0 ? g.c2c_bandwidth : std::min(c2c, g.c2c_bandwidth);
    return fmt::format("{{base: pcie-gen5, name: nvlink-c2c, bandwidth: {:.6g}GB/s}}", c2c / 1e9);
  }

  /// The GPU's catalog name, or a derived entry whose host link is NVLink-C2C when the file
  /// gives the GPUs one.
  std::string gpu_reference(const GpuSpec&) const {
    bool c2c = false;
    for (const HostGpu& g : host_.gpus) c2c = c2c || g.c2c_bandwidth > 0.0;
    if (!c2c) return options_.gpu;
    return fmt::format("{{base: {}, host_link: {}}}", options_.gpu, c2c_reference());
  }

  /// A PCIe link reference for a stated link: the generation's catalog kind at x16, a derived
  /// kind (bandwidth × width / 16) when narrower or wider; `fallback` when not stated.
  std::string pcie_reference(const PcieLinkInfo& l, const std::string& fallback) {
    if (l.gts <= 0.0) return fallback;
    static const std::map<double, const char*> gens{{2.5, "pcie-gen1"}, {5.0, "pcie-gen2"}, {8.0, "pcie-gen3"},
                                                    {16.0, "pcie-gen4"}, {32.0, "pcie-gen5"}, {64.0, "pcie-gen6"}};
    const auto it = gens.find(l.gts);
    if (it == gens.end()) return fallback;
    LinkSpec base;
    try {
      base = catalog_.link(it->second);
    } catch (const InputError&) {
      throw InputError({host_.file, 0, 0}, "link_speed", fmt::format("a PCIe generation the catalog has ({} GT/s is {})", l.gts, it->second),
                       "none in this catalog");
    }
    const int width = l.width > 0 ? l.width : 16;
    if (width == 16) return it->second;
    return fmt::format("{{base: {}, name: {}-x{}, bandwidth: {:.6g}GB/s}}", it->second, it->second, width, base.bandwidth * width / 16.0 / 1e9);
  }

  std::string pcie_lines(const std::string& default_pcie, const std::vector<int>& nics) {
    struct Entry {
      int cpu;
      bool is_switch;
      std::string link, gpu_link, nic_link;
      std::vector<int> gpus, nics;
      std::vector<std::string> names;
    };
    std::vector<Entry> entries(host_.attaches.size());
    for (std::size_t a = 0; a < host_.attaches.size(); ++a) {
      entries[a].cpu = host_.attaches[a].cpu;
      entries[a].is_switch = host_.attaches[a].is_switch;
      entries[a].link = pcie_reference(host_.attaches[a].link, default_pcie);
      if (host_.attaches[a].name.find(':') != std::string::npos) entries[a].names.push_back("switch " + host_.attaches[a].name);
    }
    // A device's link: the slowest of the entry's devices of that kind (one link per kind and entry).
    std::vector<PcieLinkInfo> gpu_links(entries.size()), nic_links(entries.size());
    const auto slowest = [](PcieLinkInfo& acc, const PcieLinkInfo& l) {
      if (l.gts <= 0.0) return;
      const int w = l.width > 0 ? l.width : 16;
      if (acc.gts <= 0.0 || l.gts * w < acc.gts * (acc.width > 0 ? acc.width : 16)) acc = l;
    };
    for (std::size_t g = 0; g < host_.gpus.size(); ++g) {
      const HostGpu& d = host_.gpus[g];
      entries[static_cast<std::size_t>(d.attach)].gpus.push_back(static_cast<int>(g));
      entries[static_cast<std::size_t>(d.attach)].names.push_back(
          d.busid.find(':') == std::string::npos ? fmt::format("GPU {}", g) : fmt::format("GPU {} {}", g, d.busid));
      slowest(gpu_links[static_cast<std::size_t>(d.attach)], d.link);
    }
    for (int k : nics) {
      const HostNic& d = host_.nics[static_cast<std::size_t>(k)];
      const int index = nic_index_.at(k);
      entries[static_cast<std::size_t>(d.attach)].nics.push_back(index);
      entries[static_cast<std::size_t>(d.attach)].names.push_back(
          fmt::format("NIC {} {}", index, comment_safe(d.name.empty() ? d.busid : d.busid.empty() ? d.name : d.name + " " + d.busid)));
      slowest(nic_links[static_cast<std::size_t>(d.attach)], d.link);
    }
    // CPUs (NUMA nodes) that hold none of the kept devices carry no traffic: left out.
    std::map<int, int> cpu_index;
    for (const Entry& e : entries)
      if (!e.gpus.empty() || !e.nics.empty()) cpu_index.emplace(e.cpu, 0);
    int next = 0;
    for (auto& [c, i] : cpu_index) i = next++;
    if (cpu_index.size() < host_.cpus.size()) {
      notes_.push_back(fmt::format("left out {} CPU{} (NUMA node{}) with no GPU or kept NIC", host_.cpus.size() - cpu_index.size(),
                                   host_.cpus.size() - cpu_index.size() == 1 ? "" : "s", host_.cpus.size() - cpu_index.size() == 1 ? "" : "s"));
    }
    cpus_ = static_cast<int>(cpu_index.size());
    for (Entry& e : entries)
      if (cpu_index.count(e.cpu)) e.cpu = cpu_index[e.cpu];
    std::vector<bool> c2c_entry(entries.size(), false);
    for (const HostGpu& d : host_.gpus)
      if (d.c2c_bandwidth > 0.0) c2c_entry[static_cast<std::size_t>(d.attach)] = true;
    for (std::size_t a = 0; a < entries.size(); ++a) {
      entries[a].gpu_link = c2c_entry[a] ? c2c_reference() : pcie_reference(gpu_links[a], entries[a].link);
      entries[a].nic_link = pcie_reference(nic_links[a], entries[a].link);
    }
    // The most common switch link is the default; entries say theirs only when it differs.
    std::map<std::string, int> votes;
    for (const Entry& e : entries)
      if (!e.gpus.empty() || !e.nics.empty()) ++votes[e.link];
    std::string common = default_pcie;
    int best = 0;
    for (const auto& [l, v] : votes)
      if (v > best) {
        best = v;
        common = l;
      }
    std::string s = fmt::format("pcie:\n  link: {}\n", common);
    if (options_.no_p2p) s += "  p2p: false\n";
    s += "  tree:\n";
    const auto list = [](const std::vector<int>& v) {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
      return out + "]";
    };
    for (const Entry& e : entries) {
      if (e.gpus.empty() && e.nics.empty()) continue;
      std::string item = fmt::format("cpu: {}", e.cpu);
      if (!e.is_switch) item += ", switch: false";
      if (e.link != common) item += ", link: " + e.link;
      if (!e.gpus.empty() && e.gpu_link != e.link) item += ", gpu_link: " + e.gpu_link;
      if (!e.nics.empty() && e.nic_link != e.link) item += ", nic_link: " + e.nic_link;
      if (!e.gpus.empty()) item += ", gpus: " + list(e.gpus);
      if (!e.nics.empty()) item += ", nics: " + list(e.nics);
      std::string names;
      for (const std::string& n : e.names) names += (names.empty() ? "" : "; ") + n;
      s += fmt::format("    - {{{}}}   # {}\n", item, names);
    }
    return s;
  }

  std::string cpu_link() const {
    if (!options_.cpu_link.empty()) {
      check_link(options_.cpu_link, LinkClass::Host, "--cpu-link");
      return options_.cpu_link;
    }
    const HostCpu& c = host_.cpus.front();
    if (c.vendor == "AuthenticAMD") return "amd-socket-xgmi";
    if (c.vendor == "GenuineIntel") {
      // Skylake-SP (model 85) and later join sockets by UPI; Broadwell (79) and earlier by QPI.
      return c.model >= 85 ? "upi" : "qpi-broadwell";
    }
    throw InputError(kCommandLine, "--cpu-link",
                     fmt::format("the link between the node's {} CPUs (NUMA nodes), which {} does not give{}: upi, amd-socket-xgmi or "
                                 "qpi-broadwell",
                                 host_.cpus.size(), host_.file, c.vendor.empty() ? "" : " for vendor " + c.vendor),
                     "none");
  }

  const HostDescription& host_;
  const Catalog& catalog_;
  const ImportOptions& options_;
  std::vector<std::string> notes_;
  std::map<int, int> nic_index_;
  int cpus_ = 1;  ///< CPUs holding kept devices (pcie_lines)
};

}  // namespace

std::string comment_safe(const std::string& text, std::size_t max) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u >= 0x7f ? '?' : c);
  }
  return out;
}

std::string indent(const std::string& text, int spaces) {
  std::string out;
  const std::string pad(static_cast<std::size_t>(spaces), ' ');
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    out += (line.empty() ? "" : pad) + line + "\n";
    start = end + 1;
  }
  return out;
}

ImportedNode write_node_template(const HostDescription& host, const Catalog& catalog, const ImportOptions& options) {
  return Writer(host, catalog, options).write();
}

}  // namespace ccsim::models::import
