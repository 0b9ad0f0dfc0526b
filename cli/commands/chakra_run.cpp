#include "cli/commands/chakra_run.hpp"

#include <filesystem>
#include <iostream>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "cli/options.hpp"
#include "models/workload/chakra/chakra_trace.hpp"
#include "planner/workload/chakra_run.hpp"
#include "support/input_error.hpp"
#include "support/input_file.hpp"

namespace ccsim::cli {

namespace {

const support::SourceLocation kCommandLine{"<command line>", 0, 0};

std::unique_ptr<support::OutputDir> open_out(const std::string& dir) {
  support::OutputDirRules rules;
  rules.option = "--chakra-out";
  rules.create = support::CreateDir::BeforeWork;
  auto out = std::make_unique<support::OutputDir>(dir, rules);
  out->prepare();
  return out;
}

/// PREFIX of the traces --chakra-out writes for a scenario: the scenario file's stem.
std::string trace_prefix(const RunCliOptions& o) { return std::filesystem::path(o.scenario).stem().string(); }

/// The checks on what --chakra-out DIR holds already, before anything is written into it (and,
/// for a scenario, before the simulation), for traces named PREFIX.R.et:
///  * PREFIX.R.et files (any R) and comm_group.json must be missing or regular files (a link to
///    one counts): a FIFO, device, socket or directory in their place is refused, never written
///    through or renamed over (support/output_dir.hpp's rule for a set's files; opening a FIFO
///    would wait for a reader for ever);
///  * no trace files of another PREFIX: `--chakra DIR` reads one PREFIX per directory, so
///    writing beside another workload's traces would leave a directory it refuses. They are
///    the user's files: refused, not removed.
void check_chakra_out(const support::OutputDir& out, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> ours;
  for (const models::chakra::ChakraRankFile& f : models::chakra::chakra_rank_files(out.dir())) {
    if (f.prefix != prefix) {
      throw support::InputError(kCommandLine, "--chakra-out",
                                fmt::format("a directory without the traces of another workload (this run writes {}.R.et; --chakra reads one PREFIX per directory)", prefix),
                                fmt::format("{} (prefix '{}') in {}", f.name, f.prefix, out.dir()));
    }
    ours.push_back(f.name);
  }
  ours.push_back("comm_group.json");
  for (const std::string& name : ours) {
    const std::string path = out.path(name);
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);  // follows links: a link to a regular file is one
    // Missing, or a dangling link (write_file_atomic creates the file it names): written.
    if (st.type() == fs::file_type::not_found || fs::is_regular_file(st)) continue;
    std::string what = support::input_file_problem(path);  // stat only: a FIFO is not opened
    if (what.empty()) what = "not a regular file";
    throw support::InputError(kCommandLine, "--chakra-out",
                              fmt::format("missing or regular files where the traces go ({}.R.et, comm_group.json: each is replaced by a rename, and a special file is never renamed over)", prefix),
                              fmt::format("{} at {}", what, path));
  }
}

/// Writes `files` (models::chakra::chakra_files) into `out`, after removing this prefix's
/// files that the new set does not hold (ranks beyond its count, PREFIX.00.et beside
/// PREFIX.0.et, a comm_group.json the new trace has no use for): the directory then holds one
/// trace, as --chakra reads it. check_chakra_out ran before, so every such file is regular.
void write_traces(const support::OutputDir& out, const std::string& prefix, const std::vector<std::pair<std::string, std::string>>& files) {
  std::set<std::string> names;
  for (const auto& f : files) names.insert(f.first);
  for (const models::chakra::ChakraRankFile& f : models::chakra::chakra_rank_files(out.dir())) {
    if (f.prefix == prefix && names.count(f.name) == 0) out.remove_stale(f.name, support::Stale::RemoveOrThrow);
  }
  if (names.count("comm_group.json") == 0) out.remove_stale("comm_group.json", support::Stale::RemoveOrThrow);
  for (const auto& [name, bytes] : files) out.write(name, bytes);
}

}  // namespace

int run_chakra_trace(const RunCliOptions& o, const models::Scenario& scenario) {
  if (!o.out.empty()) throw support::InputError(kCommandLine, "--out", "no --out with --chakra (a trace run prints its summary; --chakra-out DIR writes the trace again)", "--out " + o.out);
  if (o.horizon) throw support::InputError(kCommandLine, "--horizon", "no --horizon with --chakra (failures over a run are modelled for the scenario's own training workload)", "--horizon");
  if (o.steps) throw support::InputError(kCommandLine, "--steps", "no --steps with --chakra", "--steps");
  if (!scenario.jobs.empty()) throw support::InputError({o.scenario, 0, 0}, "jobs", "a one-job scenario for --chakra (the trace is the workload)", "a jobs: list");
  std::unique_ptr<support::OutputDir> out;
  if (!o.chakra_out.empty()) out = open_out(o.chakra_out);
  const models::chakra::ChakraTrace trace = models::chakra::read_chakra_dir(o.chakra);
  if (out) check_chakra_out(*out, trace.prefix);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const planner::CostModel costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
  planner::ChakraRunOptions ro;
  ro.compute = planner::ComputeCalibration::load_for_cluster(compute_table(o.compute_calibration, scenario).path, cluster);
  ro.engine = models::parse_engine_kind(o.engine).value_or(scenario.simulation.engine);
  if (scenario.workload) ro.dtype = scenario.workload->dtype;
  const planner::ChakraRunResult r = planner::run_chakra(trace.program, cluster, costs, ro);
  if (out) write_traces(*out, trace.prefix, models::chakra::chakra_files(trace.program, trace.prefix));
  std::cout << planner::chakra_summary(o.chakra, trace.program, r);
  return 0;
}

std::unique_ptr<support::OutputDir> prepare_chakra_out(const RunCliOptions& o, const models::Scenario& scenario) {
  if (o.chakra_out.empty()) return nullptr;
  if (!scenario.jobs.empty()) throw support::InputError(kCommandLine, "--chakra-out", "a one-job scenario (a jobs: list has no single Program)", "a jobs: list");
  if (scenario.workload && scenario.workload->phase == models::WorkloadPhase::Serving) {
    throw support::InputError(kCommandLine, "--chakra-out", "a training step, prefill or decode workload (one step's Program)", "phase serving (many steps)");
  }
  std::unique_ptr<support::OutputDir> out = open_out(o.chakra_out);
  check_chakra_out(*out, trace_prefix(o));
  return out;
}

void write_chakra_out(const support::OutputDir& dir, const RunCliOptions& o, const models::Scenario& scenario,
                      const planner::WorkloadResult& result) {
  if (!result.feasible) return;  // nothing was simulated
  const models::Program world = planner::world_program(result, scenario);
  const std::string prefix = trace_prefix(o);
  write_traces(dir, prefix, models::chakra::chakra_files(world, prefix));
}

}  // namespace ccsim::cli
