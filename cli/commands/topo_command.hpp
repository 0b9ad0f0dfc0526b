#pragma once
// `ccsim topo SCENARIO [--format text|json] [--dot FILE]`: the topology summary.

#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct TopoOptions {
  std::string scenario;
  std::string format = "text";
  std::string dot;
  std::string catalog;  ///< hardware catalog directory; empty = Catalog::default_dir()
};

/// Registers the subcommand; `options` must outlive `app`.
CLI::App* add_topo_command(CLI::App& app, TopoOptions& options);

/// Runs it, printing to stdout. Throws support::InputError on bad input.
int run_topo(const TopoOptions& options);

}  // namespace ccsim::cli
