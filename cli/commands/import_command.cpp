#include "cli/commands/import_command.hpp"

#include <algorithm>
#include <iostream>
#include <string_view>
#include <map>

#include <fmt/format.h>

#include "models/hardware/catalog.hpp"
#include "models/hardware/import/hostfile.hpp"
#include "models/hardware/import/node_template_writer.hpp"
#include "models/hardware/import/nccl_topo_xml.hpp"
#include "models/hardware/import/nvidia_smi_topo.hpp"
#include "support/atomic_file.hpp"
#include "support/input_error.hpp"
#include "support/input_file.hpp"

namespace ccsim::cli {
namespace {

using support::InputError;
const support::SourceLocation kCommandLine{"<command line>", 0, 0};
/// The scenario's cap on a cluster's GPUs (models/scenario/cluster_section.cpp).
constexpr long long kMaxClusterGpus = 1 << 18;

/// The command line as a comment, so that an imported file says how to remake it.
/// `word` as one shell word: single-quoted when it holds anything but plain characters, and
/// comment-safe (no line break can end the comment).
std::string shell_word(const std::string& word) {
  const std::string safe = models::import::comment_safe(word, 4096);
  const bool plain = !safe.empty() && std::all_of(safe.begin(), safe.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (plain) return safe;
  std::string out = "'";
  for (char c : safe) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_comment(const ImportCliOptions& o) {
  std::string s = "# ccsim import " + o.format + " " + shell_word(o.input);
  const auto add = [&](const char* flag, const std::string& v) {
    if (!v.empty()) s += fmt::format(" {} {}", flag, shell_word(v));
  };
  add("--catalog", o.catalog);
  add("--gpu", o.gpu);
  add("--nic", o.nic);
  add("--pcie", o.pcie);
  add("--cpu", o.cpu);
  add("--cpu-link", o.cpu_link);
  add("--nvlink", o.nvlink);
  add("--name", o.name);
  add("--node", o.node);
  if (o.no_p2p) s += " --no-p2p";
  for (const std::string& n : o.skip_nics) s += " --skip-nic " + shell_word(n);
  if (o.as != "node") s += " --as " + o.as;
  if (o.nodes != 1) s += fmt::format(" --nodes {}", o.nodes);
  return s + "\n";
}

std::string import_node(const ImportCliOptions& o, const models::Catalog& catalog) {
  const models::import::HostDescription host =
      o.format == "nccl-topo" ? models::import::read_nccl_topo_xml(o.input) : models::import::read_nvidia_smi_topo(o.input);
  models::import::ImportOptions io;
  io.name = o.name;
  io.gpu = o.gpu;
  io.nic = o.nic;
  io.pcie = o.pcie;
  io.cpu = o.cpu;
  io.cpu_link = o.cpu_link;
  io.nvlink = o.nvlink;
  io.no_p2p = o.no_p2p;
  io.skip_nics = o.skip_nics;
  const models::import::ImportedNode node = models::import::write_node_template(host, catalog, io);
  if (o.as == "scenario" && static_cast<long long>(o.nodes) * static_cast<long long>(host.gpus.size()) > kMaxClusterGpus) {
    throw InputError(kCommandLine, "--nodes",
                     fmt::format("at most {} nodes of {} GPUs (a cluster holds at most {} GPUs)", kMaxClusterGpus / static_cast<long long>(host.gpus.size()),
                                 host.gpus.size(), kMaxClusterGpus),
                     std::to_string(o.nodes));
  }
  std::string text = command_comment(o);
  for (const std::string& n : node.notes) text += "# note: " + models::import::comment_safe(n, 1000) + "\n";
  for (const std::string& n : node.notes) std::cerr << "ccsim import: note: " << n << "\n";
  // The writer's first line is `name: NAME`; a nodes.yaml entry is keyed by the name instead.
  const std::string body = node.yaml.substr(node.yaml.find('\n') + 1);
  if (o.as == "node") return text + node.name + ":\n" + models::import::indent(body, 2);
  text += fmt::format("name: {}\ncluster:\n  nodes:\n    - count: {}\n      node:\n", node.name, o.nodes);
  text += models::import::indent(node.yaml, 8);
  if (o.nodes > 1) {
    text += "  # Assumed: a non-blocking rail-optimized fat tree (NIC i of every node on leaf i); the file\n"
            "  # describes one node, not the network. Edit to match yours (docs/scenario-format.md).\n"
            "  fabric:\n    kind: fat-tree\n    wiring: rail-optimized\n    oversubscription: 1\n";
  }
  return text;
}

std::string import_hosts(const ImportCliOptions& o, const models::Catalog& catalog) {
  std::vector<std::string> hosts;
  std::vector<int> slots;
  if (o.format == "nodelist") {
    hosts = models::import::expand_nodelist(o.input, {"<command line>", 1, 1});
    slots.assign(hosts.size(), 0);
  } else {
    // A file holding one Slurm nodelist line (scontrol's compressed form) reads as one.
    const std::string text = support::read_input_file(o.input, {"a hostfile (MPI, DeepSpeed) or a Slurm nodelist"});
    std::string first = text.substr(0, text.find('\n'));
    const bool one_line = text.find('\n') == std::string::npos || text.find_first_not_of(" \t\r\n", text.find('\n')) == std::string::npos;
    if (one_line && first.find('[') != std::string::npos) {
      while (!first.empty() && (first.back() == '\r' || first.back() == ' ')) first.pop_back();
      hosts = models::import::expand_nodelist(first, {o.input, 1, 1});
      slots.assign(hosts.size(), 0);
    } else {
      const models::import::HostList list = models::import::parse_hostfile(text, o.input);
      hosts = list.hosts;
      slots = list.slots;
    }
  }
  std::map<int, int> by_slots;
  for (int s : slots) ++by_slots[s];
  std::string summary = fmt::format("# {} host{}", hosts.size(), hosts.size() == 1 ? "" : "s");
  for (const auto& [s, n] : by_slots) {
    if (s > 0) summary += fmt::format(", {} with {} slot{}", n, s, s == 1 ? "" : "s");
  }
  summary += fmt::format(" ({} ... {})\n", models::import::comment_safe(hosts.front()), models::import::comment_safe(hosts.back()));
  if (o.node.empty()) {
    throw InputError(kCommandLine, "--node",
                     fmt::format("the node template the {} hosts are (a catalog name such as dgx-h100, or one from ccsim import "
                                 "nccl-topo)",
                                 hosts.size()),
                     "none");
  }
  models::NodeSpec node;
  try {
    node = catalog.node(o.node);
  } catch (const InputError& e) {
    throw InputError(kCommandLine, "--node", "a node template of the catalog (" + [&] {
      std::string s;
      for (const std::string& n : catalog.node_names()) s += (s.empty() ? "" : ", ") + n;
      return s;
    }() + ")", fmt::format("\"{}\"", o.node));
  }
  if (static_cast<long long>(hosts.size()) * node.gpus > kMaxClusterGpus) {
    throw InputError(kCommandLine, o.format == "nodelist" ? "nodelist" : "hostfile",
                     fmt::format("at most {} hosts of {} GPUs (a cluster holds at most {} GPUs)", kMaxClusterGpus / node.gpus, node.gpus,
                                 kMaxClusterGpus),
                     fmt::format("{} hosts", hosts.size()));
  }
  std::string text = command_comment(o) + summary;
  if (!o.catalog.empty()) {
    text += fmt::format("# node {} is from the catalog {}: run ccsim with --catalog {}\n", o.node, shell_word(o.catalog), shell_word(o.catalog));
  }
  for (const auto& [s, n] : by_slots) {
    if (s > 0 && s != node.gpus) {
      const std::string note = fmt::format("{} host{} with {} slot{}, not the {} GPUs of {}: a job on them uses {} ranks per node", n,
                                           n == 1 ? "" : "s", s, s == 1 ? "" : "s", node.gpus, o.node, s);
      text += "# note: " + note + "\n";
      std::cerr << "ccsim import: note: " << note << "\n";
    }
  }
  text += fmt::format("cluster:\n  nodes:\n    - node: {}\n      count: {}\n", o.node, hosts.size());
  if (hosts.size() > 1) {
    text += "  # Assumed: a non-blocking rail-optimized fat tree; a host list does not describe the network.\n"
            "  fabric:\n    kind: fat-tree\n    wiring: rail-optimized\n    oversubscription: 1\n";
  }
  return text;
}

}  // namespace

CLI::App* add_import_command(CLI::App& app, ImportCliOptions& o) {
  CLI::App* cmd = app.add_subcommand("import", "Turn a hardware description you already have into ccsim input: NCCL's topology XML or "
                                               "nvidia-smi topo -m into a node template, a hostfile or Slurm nodelist into node counts");
  cmd->add_option("format", o.format, "nccl-topo, nvidia-smi-topo, hostfile or nodelist")
      ->required()
      ->check(CLI::IsMember({"nccl-topo", "nvidia-smi-topo", "hostfile", "nodelist"}));
  cmd->add_option("input", o.input, "the file (nodelist: the nodelist text, e.g. gpu[001-016])")->required();
  cmd->add_option("--as", o.as, "node (a nodes.yaml entry; default) or scenario (a whole scenario with the node inline)")
      ->check(CLI::IsMember({"node", "scenario"}));
  cmd->add_option("--nodes", o.nodes, "nodes in the scenario (--as scenario)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--node", o.node, "hostfile, nodelist: the node template the hosts are");
  cmd->add_option("--name", o.name, "name of the node template (default: the file's name)");
  cmd->add_option("--gpu", o.gpu, "GPU model (catalog name); neither file format names it");
  cmd->add_option("--nic", o.nic, "NICs' link kind (ib-hdr, ib-ndr, roce-400g...) when the file gives no speed");
  cmd->add_option("--pcie", o.pcie, "PCIe link kind where the file gives no speed (default: the GPU's host link)");
  cmd->add_option("--cpu", o.cpu, "CPU socket model (catalog name), for host memory");
  cmd->add_option("--cpu-link", o.cpu_link, "link between CPUs when the file does not name the vendor (upi, amd-socket-xgmi, ...)");
  cmd->add_option("--nvlink", o.nvlink, "how GPUs join when the file does not say: nvswitch or none")
      ->check(CLI::IsMember({"nvswitch", "none"}));
  cmd->add_option("--skip-nic", o.skip_nics, "leave out this NIC (storage, management port), by name or bus id; repeatable");
  cmd->add_flag("--no-p2p", o.no_p2p, "GPUs without PCIe peer-to-peer (GeForce cards, ACS enabled)");
  cmd->add_option("--catalog", o.catalog, "hardware catalog directory (default: the shipped scenarios/hardware)");
  cmd->add_option("--out", o.out, "write the YAML to FILE (atomically) instead of standard output")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  return cmd;
}

int run_import(const ImportCliOptions& o) {
  const bool hosts = o.format == "hostfile" || o.format == "nodelist";
  const auto refuse = [&](const char* flag, bool given, const char* why) {
    if (given) throw InputError(kCommandLine, flag, fmt::format("no {} ({})", flag, why), "one");
  };
  refuse("--node", hosts ? false : !o.node.empty(), "it names the node of a hostfile or nodelist");
  for (const auto& [flag, value] : std::initializer_list<std::pair<const char*, const std::string*>>{
           {"--gpu", &o.gpu}, {"--nic", &o.nic}, {"--pcie", &o.pcie}, {"--cpu", &o.cpu}, {"--cpu-link", &o.cpu_link},
           {"--nvlink", &o.nvlink}, {"--name", &o.name}}) {
    refuse(flag, hosts && !value->empty(), "a hostfile or nodelist describes hosts, not their hardware: see --node");
  }
  refuse("--skip-nic", hosts && !o.skip_nics.empty(), "a hostfile or nodelist describes hosts, not their hardware");
  refuse("--no-p2p", hosts && o.no_p2p, "a hostfile or nodelist describes hosts, not their hardware");
  refuse("--as", hosts && o.as != "node", "a hostfile or nodelist gives node counts");
  refuse("--nodes", o.nodes != 1 && (hosts || o.as != "scenario"), "it sets the node count of --as scenario");
  if (o.input.empty()) throw InputError(kCommandLine, "input", "a file name (or nodelist text)", "an empty argument");
  const models::Catalog catalog = models::Catalog::load(o.catalog.empty() ? models::Catalog::default_dir() : o.catalog);
  const std::string text = hosts ? import_hosts(o, catalog) : import_node(o, catalog);
  if (!o.out.empty()) {
    support::write_file_atomic(o.out, text);
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace ccsim::cli
