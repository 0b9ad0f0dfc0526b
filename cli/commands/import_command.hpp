#pragma once
// `ccsim import FORMAT FILE`: the hardware description users already have, as ccsim input.
//   nccl-topo FILE        NCCL's topology XML (NCCL_TOPO_DUMP_FILE / NCCL_TOPO_FILE) -> a node template
//   nvidia-smi-topo FILE  `nvidia-smi topo -m` saved to a file                    -> a node template
//   hostfile FILE         MPI / DeepSpeed hostfile, or a file holding a Slurm nodelist -> node counts
//   nodelist TEXT         a Slurm nodelist such as gpu[001-016]                      -> node counts
// A node template prints as a nodes.yaml entry (`--as node`, default) or as a whole scenario
// (`--as scenario --nodes N`); docs/commands/import.md.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct ImportCliOptions {
  std::string format;   ///< nccl-topo, nvidia-smi-topo, hostfile, nodelist
  std::string input;    ///< the file (or the nodelist text)
  std::string as = "node";
  int nodes = 1;
  std::string node;     ///< hostfile/nodelist: the node template the hosts are
  std::string name, gpu, nic, pcie, cpu, cpu_link, nvlink;
  bool no_p2p = false;
  std::vector<std::string> skip_nics;
  std::string catalog;
  std::string out;
};

/// Registers the subcommand; `options` must outlive `app`.
CLI::App* add_import_command(CLI::App& app, ImportCliOptions& options);

/// Runs it, printing the YAML to stdout (or --out FILE, written atomically) and notes to
/// stderr. Throws support::InputError on bad input (exit 2).
int run_import(const ImportCliOptions& options);

}  // namespace ccsim::cli
