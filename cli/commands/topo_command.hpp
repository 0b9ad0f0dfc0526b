#pragma once
// `ccsim topo SCENARIO [--format text|json] [--dot FILE] [--calibration FILE]`: the topology summary.

#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct TopoOptions {
  std::string scenario;
  std::string format = "text";
  std::string dot;
  std::string catalog;  ///< hardware catalog directory; empty = Catalog::default_dir()
  /// collective calibration table whose link_efficiency gives the credited injection; empty:
  /// the scenario's simulation.calibration, else the default table for the GPUs
  std::string calibration;
};

/// Registers the subcommand; `options` must outlive `app`.
CLI::App* add_topo_command(CLI::App& app, TopoOptions& options);

/// Runs it, printing to stdout. Throws support::InputError on bad input.
int run_topo(const TopoOptions& options);

}  // namespace ccsim::cli
