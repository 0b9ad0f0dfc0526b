#pragma once
// Helpers shared by the subcommands.

#include <cstdint>
#include <optional>
#include <string>
#include <memory>
#include <vector>

#include "planner/collective/collective_runner.hpp"
#include "planner/synthesis/msccl_xml.hpp"

#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "planner/tuning/cost_model.hpp"

namespace ccsim::cli {

/// Loads the catalog (`catalog_dir`, or the default) and the scenario. Throws InputError.
models::Scenario load_scenario_file(const std::string& path, const std::string& catalog_dir, bool layout_rules = true);
/// load_scenario_file for the commands that simulate only the cluster (topo, collective, compare,
/// replay): the workload and strategy (or jobs) are read and checked but need not fit the
/// cluster (models::ScenarioChecks::cluster_only).
models::Scenario load_cluster_scenario_file(const std::string& path, const std::string& catalog_dir);

/// Where the calibration table a command loads comes from, in the order it is looked for.
enum class TableOrigin : std::uint8_t { CommandLine, Scenario, Default };

/// A calibration table chosen by choose_table: the path to load and where it was named.
struct TableChoice {
  std::string path;
  TableOrigin origin = TableOrigin::Default;
  /// For output headers: empty for the default table (headers print as they did before
  /// scenarios could name tables), else " (table PATH, from OPTION)" or
  /// " (table PATH, from the scenario's simulation.KEY)".
  std::string note(const std::string& option, const std::string& scenario_key) const;
};

/// The one rule every command follows for a calibration table: `option` (the command line's
/// --calibration / --compute-calibration value) when not empty, else `scenario` (the scenario's
/// simulation.calibration / compute_calibration, already resolved against the file that
/// writes it) when not empty, else `fallback` (the shipped default). Throws nothing; the
/// table's loader checks the file.
TableChoice choose_table(const std::string& option, const std::string& scenario, const std::string& fallback);

/// The collective cost table: --calibration, else the scenario's simulation.calibration, else
/// planner::CostModel::default_path(cluster) (rccl.yaml for AMD GPUs, nccl.yaml otherwise).
TableChoice collective_table(const std::string& option, const models::Scenario& scenario, const models::Cluster& cluster);
/// The compute efficiency table: --compute-calibration, else the scenario's
/// simulation.compute_calibration, else planner::ComputeCalibration::default_path().
TableChoice compute_table(const std::string& option, const models::Scenario& scenario);

/// nccl-tests' size syntax: a number with an optional K, M, G or T suffix (powers of 1024),
/// or any ccsim byte quantity ("64MB", "1GiB"). Throws InputError naming `option`.
std::uint64_t parse_size(const std::string& text, const std::string& option);
/// nccl-tests' sizes: from `lo` to `hi` bytes, times `factor` each row, each rounded down to a
/// whole `unit` (the element size, times the ranks where the size is split per rank); sizes
/// that round to 0 are left out.
std::vector<std::uint64_t> sweep_sizes(std::uint64_t lo, std::uint64_t hi, int factor, std::uint64_t unit);

/// The -b / -e / -f sweep of a command.
struct SizeSweep {
  std::uint64_t lo = 0;   ///< bytes
  std::uint64_t hi = 0;   ///< bytes
  int factor = 2;
  std::string max_bytes;  ///< -e as written, for the message
};
/// nccl-tests' sizes of a collective and their unit.
struct CollectiveSizes {
  /// models::size_granule: bytes of one element, times the ranks for ReduceScatter, AllGather
  /// and AlltoAll (whose size is a whole number of elements per rank).
  std::uint64_t unit = 0;
  std::vector<std::uint64_t> sizes;  ///< sweep_sizes(lo, hi, factor, unit)
};
/// The sizes `sweep` gives `collective` over `ranks` ranks of `element_size`-byte elements.
/// Throws InputError naming --maxbytes when none is left.
CollectiveSizes collective_sizes(const SizeSweep& sweep, models::Collective collective, std::uint32_t element_size, int ranks);

/// Ranks of a collective: all GPUs, the first `ranks`, or a `group` of global GPU ranks given
/// as a comma-separated list of numbers and ranges ("0-7,16-23"). Throws InputError.
std::vector<models::DeviceId> select_gpus(const models::Cluster& cluster, int ranks, const std::string& group);

/// `--algo` and `--protocol` values: nullopt for "auto"; throws InputError for unknown names.
/// The runner of `opts` on `cluster` with `costs` (which it keeps a reference to). Throws
/// support::InputError naming `algo_key` (--algo, or NCCL_ALGO where the choice came from the
/// environment) when the options cannot run here or no algorithm implements the collective with
/// the protocol asked (`algo`, `protocol`: the option texts, for messages).
std::unique_ptr<planner::CollectiveRunner> make_runner(const models::Cluster& cluster, const planner::CostModel& costs,
                                                       const planner::CollectiveOptions& opts, const std::string& algo,
                                                       const std::string& protocol, const std::string& algo_key = "--algo");
std::optional<planner::Algorithm> algorithm_option(const std::string& text);
std::optional<planner::Protocol> protocol_option(const std::string& text);
/// `--granularity` value: nullopt for "auto", else step or phase; throws InputError otherwise.
std::optional<models::Granularity> granularity_option(const std::string& text);
/// "auto (NCCL's choice), ring, tree, ...": the `--algo` values, the library algorithms of the
/// registry in its order.
std::string algorithm_help();

/// An MSCCL XML schedule named by `--algo synth:FILE` (planner/synthesis/msccl_xml.hpp).
struct SynthFile {
  std::string path;
  std::string text;
  planner::synthesis::MscclHeader header;
};
/// Whether `algo` is `synth:FILE`.
bool is_synth_option(const std::string& algo);
/// The file of `--algo synth:FILE`, read and checked against the run: its collective `c`, its
/// `ranks` ranks. Throws InputError: "synth:" without a path, a file that cannot be read, XML
/// that is not an MSCCL algorithm (line:column), another collective or rank count.
SynthFile synth_option(const std::string& algo, models::Collective c, int ranks);

/// `sizes` rounded down to whole loops of the file's chunking (nchunksperloop chunks of whole
/// `element_size` elements), zeros and repeats left out, in order.
std::vector<std::uint64_t> synth_sizes(const SynthFile& f, const std::vector<std::uint64_t>& sizes, std::uint32_t element_size);

/// Bytes per element for nccl-tests' -d names (float, half, bfloat16, double, int8, ...).
std::uint32_t element_size(const std::string& type);

}  // namespace ccsim::cli
