// ccsim: collective-communication simulator and what-if planner for GPU clusters.
// Exit codes: 0 success, 2 bad input (scenario, catalog or command line), 1 internal error.

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/topo_command.hpp"
#include "models/input_error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ccsim: simulate collective communication and LLM workloads on GPU clusters"};
  app.require_subcommand(1);
  ccsim::cli::TopoOptions topo;
  CLI::App* topo_cmd = ccsim::cli::add_topo_command(app, topo);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    if (topo_cmd->parsed()) return ccsim::cli::run_topo(topo);
  } catch (const ccsim::models::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ccsim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
