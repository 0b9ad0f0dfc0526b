#include "models/scenario/simulation_section.hpp"

#include <filesystem>

namespace ccsim::models {
namespace {

namespace fs = std::filesystem;

/// The path a table key names (simulation.calibration, compute_calibration), relative to the
/// directory of the file that writes the key, as include paths and model config paths are; empty
/// when no layer has the key. Throws InputError at the key when the value is not a non-empty
/// string or the resolved path is not a readable regular file (input_file_problem). The table's
/// content is read and checked by its loader, not here.
std::string table_path(const support::Fields& f, std::string_view key, const std::string& table) {
  const auto value = f.find(key);
  if (!value) return {};
  if (!value->node.IsScalar() || value->node.Scalar().empty()) throw f.error(key, "the path of " + table);
  const support::SourceLocation where = f.location(key);
  const fs::path written(value->node.Scalar());
  const fs::path resolved = written.is_absolute() ? written : fs::path(where.file).parent_path() / written;
  if (const std::string problem = support::input_file_problem(resolved.string()); !problem.empty()) {
    throw support::InputError(where, f.key_path(key), table, "'" + resolved.string() + "' (" + problem + ")",
                              written.is_absolute() ? std::string() : "a relative path is read from the directory of " + where.file);
  }
  return resolved.string();
}

/// simulation.nccl: {version, nchannels_per_net_peer, pxn_disable}.
NcclSettings parse_nccl(const support::Fields& f) {
  f.reject_unknown({"version", "nchannels_per_net_peer", "pxn_disable"});
  NcclSettings nccl;
  if (const auto v = f.find("version")) {
    nccl.version = v->node.IsScalar() ? parse_nccl_version(v->node.Scalar()) : std::nullopt;
    if (!nccl.version) throw f.error("version", "an NCCL release such as \"2.20\" or \"2.20.5\" (2.0 or later)");
  }
  if (f.has("nchannels_per_net_peer")) {
    nccl.nchannels_per_net_peer = f.count("nchannels_per_net_peer", 1, kMaxNcclChannelsPerNetPeer);
  }
  if (f.has("pxn_disable")) nccl.pxn_disable = f.boolean("pxn_disable", false);
  return nccl;
}

}  // namespace

SimulationSpec parse_simulation(const support::Fields& f) {
  f.reject_unknown({"engine", "granularity", "calibration", "compute_calibration", "contention", "nccl", "launch", "symmetric_memory"});
  SimulationSpec spec;
  spec.engine = *parse_engine_kind(f.choice("engine", {"analytic", "flow"}, "analytic"));
  spec.granularity = parse_granularity(f.choice("granularity", {"auto", "step", "phase"}, "auto"));
  spec.calibration = table_path(f, "calibration", "a collective calibration table (like scenarios/calibration/nccl.yaml)");
  spec.compute_calibration =
      table_path(f, "compute_calibration", "a compute calibration table (like scenarios/calibration/compute.yaml)");
  spec.contention = f.boolean("contention", false);
  spec.graph_launch = f.choice("launch", {"eager", "graph"}, "eager") == "graph";
  spec.symmetric_memory = f.boolean("symmetric_memory", false);
  if (const auto nccl = f.optional_map("nccl")) spec.nccl = parse_nccl(*nccl);
  return spec;
}

}  // namespace ccsim::models
