#include "models/hardware/import/nvidia_smi_topo.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "support/numbers.hpp"

namespace ccsim::models::import {
namespace {

using support::InputError;

constexpr std::size_t kMaxFileBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxDevices = 256;

/// How two devices connect, nearest first (the legend's order).
enum class Relation { Self, NvLink, Pix, Pxb, Phb, Node, Sys };

struct Entry {
  Relation relation = Relation::Sys;
  int links = 0;  ///< NV#: the bonded link count
};

/// A line split on whitespace, each token with its column (1-based).
struct Token {
  std::string text;
  int column = 0;
};

std::string strip_escapes(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {  // CSI: ESC [ parameters final-byte
      std::size_t j = i + 1;
      if (j < line.size() && line[j] == '[') {
        ++j;
        while (j < line.size() && !(line[j] >= '@' && line[j] <= '~')) ++j;
      }
      i = j;
      continue;
    }
    if (line[i] == '\r') continue;
    out.push_back(line[i]);
  }
  return out;
}

std::vector<Token> split(const std::string& line) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back({line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return out;
}

bool is_gpu_name(const std::string& t) {
  return t.size() > 3 && t.size() <= 7 && t.rfind("GPU", 0) == 0 &&
         std::all_of(t.begin() + 3, t.end(), [](unsigned char c) { return std::isdigit(c); });
}

class Reader {
 public:
  Reader(const std::string& text, std::string file) : file_(std::move(file)) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) lines_.push_back(strip_escapes(line));
  }

  HostDescription read() {
    HostDescription host;
    host.file = file_;
    host.format = "nvidia-smi topo -m";
    host.scaleup_stated = true;  // the matrix always says how GPUs join, NV# or not
    find_header();
    read_rows();
    read_legend();
    check_symmetric();

    const std::size_t n = names_.size();
    std::vector<std::size_t> gpus, nics;
    for (std::size_t i = 0; i < n; ++i) (is_gpu_name(names_[i]) ? gpus : nics).push_back(i);
    if (gpus.empty()) throw InputError({file_, header_line_, 1}, "header", "at least one GPU column (GPU0, GPU1, ...)", "none");

    // CPUs (NUMA nodes): the GPUs' NUMA affinity, else their CPU affinity lists, else one.
    std::map<std::string, int> cpu_of_key;
    std::vector<int> cpu(n, -1);
    for (std::size_t g : gpus) {
      const std::string key = !numa_[g].empty() && numa_[g] != "N/A" ? "numa " + numa_[g]
                              : !affinity_[g].empty() && affinity_[g] != "N/A" ? "cpus " + affinity_[g]
                                                                                 : "all";
      const auto [it, fresh] = cpu_of_key.emplace(key, static_cast<int>(cpu_of_key.size()));
      cpu[g] = it->second;
      if (fresh) {
        HostCpu c;
        const support::Parsed<std::int64_t> numa = support::parse_integer(numa_[g]);
        c.numa = numa ? static_cast<int>(numa.value) : it->second;
        host.cpus.push_back(c);
      }
    }
    int gpu_less_cpu = -1;
    // A NIC goes with the GPU it is nearest to (PIX < PXB < PHB < NODE); a NIC that is SYS to
    // every GPU sits on a NUMA node with no GPU.
    for (std::size_t k : nics) {
      std::size_t best = gpus.front();
      for (std::size_t g : gpus)
        if (matrix_[k][g].relation < matrix_[k][best].relation) best = g;
      if (matrix_[k][best].relation == Relation::Sys) {
        if (gpu_less_cpu < 0) {  // one NUMA node for every NIC with no GPU near it
          gpu_less_cpu = static_cast<int>(host.cpus.size());
          HostCpu c;
          c.numa = gpu_less_cpu;
          host.cpus.push_back(c);
        }
        cpu[k] = gpu_less_cpu;
      } else {
        cpu[k] = cpu[best];
      }
    }
    // PCIe switches: devices joined by PIX or PXB.
    std::vector<std::size_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    const auto find = [&](std::size_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    std::vector<bool> switched(n, false);
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b)
        if (matrix_[a][b].relation == Relation::Pix || matrix_[a][b].relation == Relation::Pxb) {
          parent[find(a)] = find(b);
          switched[a] = switched[b] = true;
        }
    std::map<std::size_t, int> attach_of_root;
    std::map<int, int> root_port_of_cpu;
    std::vector<int> attach(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      if (switched[i]) {
        const auto [it, fresh] = attach_of_root.emplace(find(i), static_cast<int>(host.attaches.size()));
        if (fresh) host.attaches.push_back(HostAttach{cpu[i], true, {}, "switch of " + names_[i]});
        attach[i] = it->second;
      } else {
        const auto [it, fresh] = root_port_of_cpu.emplace(cpu[i], static_cast<int>(host.attaches.size()));
        if (fresh) host.attaches.push_back(HostAttach{cpu[i], false, {}, ""});
        attach[i] = it->second;
      }
    }
    for (std::size_t g : gpus) {
      HostGpu d;
      d.busid = names_[g];
      d.dev = static_cast<int>(support::parse_integer(names_[g].substr(3)).value);
      d.attach = attach[g];
      for (std::size_t h : gpus) {
        if (h != g && matrix_[g][h].relation == Relation::NvLink) d.scaleup.push_back({names_[h], ScaleUpTarget::Gpu, matrix_[g][h].links});
      }
      host.gpus.push_back(d);
    }
    for (std::size_t j = 0; j < nics.size(); ++j) {
      const std::size_t k = nics[j];
      HostNic d;
      d.busid = "";
      d.name = nic_legend_.count(names_[k]) ? nic_legend_[names_[k]] : names_[k];
      d.dev = static_cast<int>(j);
      d.attach = attach[k];
      bool near_gpu = false;
      for (std::size_t g : gpus) near_gpu = near_gpu || matrix_[k][g].relation == Relation::Pix || matrix_[k][g].relation == Relation::Pxb;
      if (!near_gpu) {
        host.notes.push_back(fmt::format("NIC {} shares no PCIe switch with a GPU (a storage or management port?): --skip-nic {} "
                                         "leaves it out",
                                         d.name, d.name));
      }
      host.nics.push_back(d);
    }
    sort_devices(host);
    return host;
  }

 private:
  [[noreturn]] void fail(int line, int column, const std::string& key, const std::string& expected, const std::string& found) const {
    throw InputError({file_, line, column}, key, expected, found);
  }

  /// The header: the first line whose first token is GPU0; columns up to "CPU Affinity".
  void find_header() {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::vector<Token> t = split(lines_[i]);
      if (t.empty() || t.front().text != "GPU0") continue;
      header_line_ = static_cast<int>(i) + 1;
      for (const Token& tok : t) {
        if (tok.text == "CPU" || tok.text == "NUMA" || tok.text == "GPU" || tok.text == "Affinity" || tok.text == "ID") break;
        names_.push_back(tok.text);
      }
      // Trailing columns after the matrix, in order: CPU Affinity, NUMA Affinity, GPU NUMA ID.
      // Older drivers print "NUMA" alone, newer "NUMA Affinity" and "GPU NUMA ID".
      for (std::size_t k = names_.size() + 1; k < t.size(); ++k) {
        if (t[k - 1].text == "CPU" && t[k].text == "Affinity") trailing_.push_back("cpu");
        if (t[k - 1].text == "NUMA" && t[k].text == "Affinity") trailing_.push_back("numa");
        if (t[k - 1].text == "NUMA" && t[k].text == "ID") trailing_.push_back("gpu-numa");
      }
      if (t.back().text == "NUMA" && t.size() > names_.size()) trailing_.push_back("numa");
      if (names_.size() > kMaxDevices) fail(header_line_, 1, "header", fmt::format("at most {} devices", kMaxDevices), std::to_string(names_.size()));
      for (std::size_t k = 0; k < names_.size(); ++k) {
        const std::string& name = names_[k];
        if (name.size() > 3 && name.rfind("GPU", 0) == 0 && !is_gpu_name(name) &&
            std::all_of(name.begin() + 3, name.end(), [](unsigned char c) { return std::isdigit(c); })) {
          fail(header_line_, t[k].column, "header", "GPU columns GPU0 to GPU9999", support::quote_token(name));
        }
      }
      std::map<std::string, int> seen;
      for (const std::string& name : names_)
        if (++seen[name] > 1) fail(header_line_, 1, "header", "each device named once", fmt::format("{} twice", name));
      return;
    }
    fail(1, 1, "header", "nvidia-smi topo -m output: a header line starting with GPU0", "none");
  }

  Entry entry(const Token& tok, int line, const std::string& row) const {
    const std::string& t = tok.text;
    if (t == "X") return {Relation::Self, 0};
    if (t == "PIX") return {Relation::Pix, 0};
    if (t == "PXB") return {Relation::Pxb, 0};
    if (t == "PHB") return {Relation::Phb, 0};
    if (t == "NODE") return {Relation::Node, 0};
    if (t == "SYS" || t == "SOC") return {Relation::Sys, 0};
    if (t.size() > 2 && t.rfind("NV", 0) == 0) {
      const support::Parsed<std::int64_t> k = support::parse_integer(t.substr(2));
      if (k && k.value >= 1 && k.value <= 64) return {Relation::NvLink, static_cast<int>(k.value)};
    }
    fail(line, tok.column, row, "X, NV# (1 to 64), PIX, PXB, PHB, NODE, SYS or SOC", support::quote_token(t));
  }

  void read_rows() {
    const std::size_t n = names_.size();
    matrix_.assign(n, std::vector<Entry>(n));
    numa_.assign(n, "");
    affinity_.assign(n, "");
    std::vector<bool> seen(n, false);
    std::size_t i = static_cast<std::size_t>(header_line_);
    for (; i < lines_.size(); ++i) {
      const std::vector<Token> t = split(lines_[i]);
      if (t.empty() || t.front().text == "Legend:") break;
      const int line = static_cast<int>(i) + 1;
      const auto it = std::find(names_.begin(), names_.end(), t.front().text);
      if (it == names_.end()) {
        fail(line, 1, "row", fmt::format("a row named after a header column ({} ...)", names_.front()), support::quote_token(t.front().text));
      }
      const std::size_t r = static_cast<std::size_t>(it - names_.begin());
      if (seen[r]) fail(line, 1, t.front().text, "each device's row once", "a second row");
      seen[r] = true;
      if (t.size() < n + 1) {
        fail(line, t.back().column, t.front().text, fmt::format("{} entries, one per column", n), std::to_string(t.size() - 1));
      }
      for (std::size_t c = 0; c < n; ++c) {
        matrix_[r][c] = entry(t[c + 1], line, t.front().text);
        if ((matrix_[r][c].relation == Relation::Self) != (r == c)) {
          fail(line, t[c + 1].column, t.front().text, r == c ? "X on the diagonal" : "X only on the diagonal", support::quote_token(t[c + 1].text));
        }
      }
      // After the matrix: CPU affinity (ranges) and NUMA affinity for GPU rows.
      std::size_t k = n + 1;
      for (const std::string& col : trailing_) {
        if (k >= t.size()) break;
        if (col == "cpu") affinity_[r] = t[k].text;
        if (col == "numa") numa_[r] = t[k].text;
        ++k;
      }
    }
    for (std::size_t r = 0; r < n; ++r)
      if (!seen[r]) fail(static_cast<int>(i) + 1, 1, names_[r], "a row for every header column", "none");
  }

  void read_legend() {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::vector<Token> t = split(lines_[i]);
      if (t.size() == 2 && t[0].text.size() > 1 && t[0].text.back() == ':' && t[0].text.rfind("NIC", 0) == 0) {
        nic_legend_[t[0].text.substr(0, t[0].text.size() - 1)] = t[1].text;
      }
    }
  }

  void check_symmetric() const {
    for (std::size_t a = 0; a < names_.size(); ++a)
      for (std::size_t b = a + 1; b < names_.size(); ++b)
        if (matrix_[a][b].relation != matrix_[b][a].relation || matrix_[a][b].links != matrix_[b][a].links) {
          fail(header_line_, 1, names_[a] + "/" + names_[b], "a symmetric matrix (each pair connects the same way both ways)",
               "different entries in the two rows");
        }
  }

  std::string file_;
  std::vector<std::string> lines_;
  int header_line_ = 0;
  std::vector<std::string> names_;
  std::vector<std::string> trailing_;
  std::vector<std::vector<Entry>> matrix_;
  std::vector<std::string> numa_, affinity_;
  std::map<std::string, std::string> nic_legend_;
};

}  // namespace

HostDescription parse_nvidia_smi_topo(const std::string& text, const std::string& file) { return Reader(text, file).read(); }

HostDescription read_nvidia_smi_topo(const std::string& path) {
  return parse_nvidia_smi_topo(support::read_input_file(path, {"nvidia-smi topo -m output", kMaxFileBytes}), path);
}

}  // namespace ccsim::models::import
