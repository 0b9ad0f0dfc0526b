#include "cli/commands/replay_command.hpp"

#include <algorithm>
#include <iostream>
#include <new>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/options.hpp"
#include "support/input_error.hpp"
#include "support/mpi/launcher.hpp"
#include "support/output_dir.hpp"
#include "support/progress.hpp"
#include "planner/collective/collective_runner.hpp"
#include "validate/measurements/nccl_tests_log.hpp"
#include "validate/replay/replay.hpp"
#include "validate/replay/replay_report.hpp"

namespace ccsim::cli {

using support::InputError;
namespace replay = validate::replay;

CLI::App* add_replay_command(CLI::App& app, ReplayCliOptions& o) {
  CLI::App* c = app.add_subcommand("replay", "Run a collective's simulated Schedule on real hardware (host threads, MPI, CUDA, RDMA verbs), "
                                             "check it, and print an nccl-tests log with the per-op comparison to the simulation");
  c->add_option("scenario", o.scenario, "scenario whose cluster the Schedules are lowered for")->required();
  c->add_option("--op", o.op, "allreduce, reducescatter, allgather, broadcast, reduce, alltoall, sendrecv")->required();
  c->add_option("--algo", o.algo, "auto (NCCL's choice on the scenario), an algorithm name, as ccsim collective, or synth:FILE (an MSCCL XML schedule)");
  c->add_option("--protocol", o.protocol, "auto, LL, LL128, Simple (chooses the schedule's pipelining; data moves as plain copies)");
  c->add_option("--channels", o.channels, "channels of the schedule (default: as ccsim collective)")->check(CLI::Range(1, 64));
  c->add_option("-b,--minbytes", o.min_bytes, "smallest size (nccl-tests syntax: 8, 64K, 1M)");
  c->add_option("-e,--maxbytes", o.max_bytes, "largest size");
  c->add_option("-f,--stepfactor", o.factor, "multiply the size by this factor between rows")->check(CLI::Range(2, 1024));
  c->add_option("--ranks", o.ranks, "use the first N GPUs of the scenario (default: all; mpi / verbs: the launcher's process count)")
      ->check(CLI::Range(1, 4096));
  c->add_option("--group", o.group, "use these global GPU ranks of the scenario, e.g. 0-3");
  c->add_option("--root", o.root, "root rank of Broadcast and Reduce");
  c->add_option("-d,--datatype", o.datatype, "element type with real arithmetic: int8, uint8, int32, uint32, int64, uint64, float, double");
  c->add_option("--backend", o.backend, "host (threads), mpi (under mpirun), cuda (GPUs of this node), verbs (RDMA, under mpirun)")
      ->check(CLI::IsMember({"host", "mpi", "cuda", "verbs"}));
  c->add_option("-n,--iters", o.iters, "timed iterations per size")->check(CLI::Range(1, 100000));
  c->add_option("-w,--warmup_iters", o.warmup, "untimed iterations before them")->check(CLI::Range(0, 100000));
  c->add_option("--out", o.out, "directory for the log, trace.json, ops.csv and replay.json")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  c->add_option("--trace-size", o.trace_size, "size whose per-op trace and comparison are shown (default: the largest)");
  c->add_option("--time-stat", o.time_stat, "the log's time column: median (default; robust on a shared host) or mean (nccl-tests' own)")
      ->check(CLI::IsMember({"median", "mean"}));
  c->add_option("--top", o.top, "per-op comparison rows printed (largest deviations)")->check(CLI::Range(0, 1000000));
  c->add_option("--devices", o.devices, "cuda: GPUs to use, e.g. 0,1 (default: all visible; ranks share GPUs round robin)");
  c->add_option("--nics", o.nics, "verbs: RDMA devices by rail, e.g. mlx5_0,mlx5_1 (default: the host's devices in name order)");
  c->add_option("--calibration", o.calibration, "calibration table of the simulation (default: as ccsim collective)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  return c;
}

namespace {

/// The comma-separated items of `text`, empty ones included ("a,,b" and "a," have an empty item;
/// std::getline would drop a trailing one).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', begin)) {
    out.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  out.push_back(text.substr(begin));
  return out;
}

std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  for (const std::string& item : split_list(text)) {
    int v = -1;
    std::size_t used = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 0) {
      throw InputError({"<command line>", 0, 0}, "--devices", "a comma-separated list of CUDA device numbers (0,1,...)", "'" + text + "'");
    }
    out.push_back(v);
  }
  return out;
}

std::string command_line(const ReplayCliOptions& o) {
  std::string s = fmt::format("ccsim replay {} --op {} --algo {} --protocol {} -b {} -e {} -f {} -d {} --backend {} -n {} -w {} --time-stat {}",
                              o.scenario, o.op, o.algo, o.protocol, o.min_bytes, o.max_bytes, o.factor, o.datatype, o.backend, o.iters,
                              o.warmup, o.time_stat);
  if (o.ranks > 0) s += fmt::format(" --ranks {}", o.ranks);
  if (!o.group.empty()) s += " --group " + o.group;
  if (o.channels > 0) s += fmt::format(" --channels {}", o.channels);
  if (o.root != 0) s += fmt::format(" --root {}", o.root);
  if (!o.devices.empty()) s += " --devices " + o.devices;
  if (!o.nics.empty()) s += " --nics " + o.nics;
  return s;
}

nlohmann::json summary_json(const replay::LogInfo& info, const std::vector<replay::ReplayedSize>& sizes) {
  nlohmann::json j;
  j["test"] = info.test;
  j["backend"] = info.backend;
  j["ranks_run_as"] = info.where;
  j["ranks"] = info.nranks;
  j["type"] = info.type;
  j["scenario"] = info.scenario;
  j["command"] = info.command;
  j["sizes"] = nlohmann::json::array();
  for (const auto& s : sizes) {
    std::vector<double> t = s.measured.iteration_times;
    std::sort(t.begin(), t.end());
    const double median = t.empty() ? 0.0 : (t.size() % 2 == 1 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]));
    j["sizes"].push_back({{"size_B", s.bytes},
                          {"algorithm", s.algorithm},
                          {"protocol", s.protocol},
                          {"channels", s.schedule.channels},
                          {"ops", s.schedule.op_count()},
                          {"measured_mean_s", s.measured.mean_time()},
                          {"measured_median_s", median},
                          {"measured_min_s", t.empty() ? 0.0 : t.front()},
                          {"measured_max_s", t.empty() ? 0.0 : t.back()},
                          {"simulated_s", s.simulated.makespan},
                          {"wrong", s.measured.wrong},
                          {"first_wrong", s.measured.first_wrong}});
  }
  return j;
}

/// The command line's values checked before the scenario is read.
struct ReplayInputs {
  models::Collective collective{};
  replay::DataType type{};
  std::uint64_t lo = 0, hi = 0;  ///< -b and -e, bytes
  std::vector<int> devices;
  std::vector<std::string> nics;
};

ReplayInputs check_inputs(const ReplayCliOptions& o) {
  ReplayInputs in;
  const auto collective = models::parse_collective(o.op);
  if (!collective) {
    throw InputError({"<command line>", 0, 0}, "--op", "allreduce, reducescatter, allgather, broadcast, reduce, alltoall or sendrecv",
                     "'" + o.op + "'");
  }
  in.collective = *collective;
  if (!replay::parse_data_type(o.datatype, in.type)) {
    throw InputError({"<command line>", 0, 0}, "--datatype",
                     "a type with real arithmetic on every backend: int8, uint8, int32, uint32, int64, uint64, float, double",
                     "'" + o.datatype + "'", "half, bfloat16 and fp8 have no host arithmetic; the data volume of float at the same byte size is the same");
  }
  in.lo = parse_size(o.min_bytes, "--minbytes");
  in.hi = parse_size(o.max_bytes, "--maxbytes");
  if (in.lo == 0) throw InputError({"<command line>", 0, 0}, "--minbytes", "a size above 0", o.min_bytes);
  if (in.hi < in.lo) throw InputError({"<command line>", 0, 0}, "--maxbytes", "a size at least --minbytes", o.max_bytes);
  // Host memory of a replay: input + output + scratch per rank; refuse what cannot be meant.
  constexpr std::uint64_t kMaxReplayBytes = std::uint64_t{16} << 30;
  if (in.hi > kMaxReplayBytes) throw InputError({"<command line>", 0, 0}, "--maxbytes", "a size of at most 16G (each rank holds input and output buffers)", o.max_bytes);
  in.devices = parse_devices(o.devices);
  in.nics = o.nics.empty() ? std::vector<std::string>{} : split_list(o.nics);
  for (const std::string& n : in.nics)
    if (n.empty()) throw InputError({"<command line>", 0, 0}, "--nics", "a comma-separated list of RDMA device names", "'" + o.nics + "'");
  return in;
}

/// The backend `name`, or nullptr when it cannot run here (the error printed: exit 3).
std::unique_ptr<replay::Backend> start_backend(const std::string& name, const replay::BackendOptions& options) {
  try {
    return replay::make_backend(name, options);
  } catch (const replay::ReplayError& e) {
    std::cerr << "ccsim: error: " << e.what() << "\n";
    return nullptr;
  }
}

/// The collective's options for the ranks the command line and the backend agree on (mpi and
/// verbs: one rank per process the launcher started). Throws InputError when they disagree.
planner::CollectiveOptions collective_options(const ReplayCliOptions& o, const ReplayInputs& in, const models::Cluster& cluster,
                                              const replay::Backend& backend) {
  int ranks = o.ranks;
  if (backend.world_ranks() > 0) {
    if (ranks > 0 && ranks != backend.world_ranks()) {
      throw InputError({"<command line>", 0, 0}, "--ranks", fmt::format("the {} processes mpirun started", backend.world_ranks()),
                       std::to_string(ranks), fmt::format("use mpirun -n {} or --ranks {}", ranks, backend.world_ranks()));
    }
    if (o.group.empty()) ranks = backend.world_ranks();
  }
  planner::CollectiveOptions opts;
  opts.collective = in.collective;
  opts.algorithm = is_synth_option(o.algo) ? std::nullopt : algorithm_option(o.algo);  // synth:FILE: the file's schedule (plan_size)
  opts.protocol = protocol_option(o.protocol);
  opts.element_size = replay::size_of(in.type);
  opts.channels = o.channels;
  opts.root = o.root;
  opts.gpus = select_gpus(cluster, ranks, o.group);
  const int n = static_cast<int>(opts.gpus.size());
  if (backend.world_ranks() > 0 && n != backend.world_ranks()) {
    throw InputError({"<command line>", 0, 0}, "--group", fmt::format("{} GPUs, one per process mpirun started", backend.world_ranks()),
                     fmt::format("{} GPUs", n));
  }
  if (o.root != 0 && !models::has_root(in.collective)) {
    throw InputError({"<command line>", 0, 0}, "--root", "no --root: only Broadcast and Reduce have a root", std::to_string(o.root));
  }
  // One thread per rank: beyond this the host backend measures the scheduler, not the Schedule.
  constexpr int kMaxHostRanks = 1024;
  if (o.backend == "host" && n > kMaxHostRanks) {
    throw InputError({"<command line>", 0, 0}, o.group.empty() ? "--ranks" : "--group",
                     fmt::format("at most {} ranks on the host backend (one thread per rank)", kMaxHostRanks), fmt::format("{} ranks", n),
                     "use --ranks N, or the mpi backend across machines");
  }
  if (o.root < 0 || o.root >= n) throw InputError({"<command line>", 0, 0}, "--root", fmt::format("a rank from 0 to {}", n - 1), std::to_string(o.root));
  return opts;
}

/// The sizes replayed (-b, -e, -f as nccl-tests makes them) and the one traced.
struct ReplaySizes {
  std::vector<std::uint64_t> sizes;  ///< bytes, ascending
  std::uint64_t traced = 0;          ///< bytes: --trace-size rounded, else the largest
};

ReplaySizes replay_sizes(const ReplayCliOptions& o, const ReplayInputs& in, std::uint32_t element_size, int n) {
  ReplaySizes out;
  const CollectiveSizes swept = collective_sizes({in.lo, in.hi, o.factor, o.max_bytes}, in.collective, element_size, n);
  const std::uint64_t unit = swept.unit;
  out.sizes = swept.sizes;
  out.traced = out.sizes.back();
  if (!o.trace_size.empty()) {
    const std::uint64_t t = parse_size(o.trace_size, "--trace-size");
    const std::uint64_t rounded = t / unit * unit;
    if (std::find(out.sizes.begin(), out.sizes.end(), rounded) == out.sizes.end()) {
      std::string list;
      for (std::uint64_t b : out.sizes) list += (list.empty() ? "" : ", ") + std::to_string(b);
      throw InputError({"<command line>", 0, 0}, "--trace-size", "one of the sizes replayed (-b, -e, -f, rounded to whole elements): " + list,
                       o.trace_size);
    }
    out.traced = rounded;
  }
  return out;
}

/// What the size loop works with.
struct SizeLoop {
  const ReplayCliOptions& o;
  replay::DataType type;
  planner::CollectiveRunner& runner;
  sim::Engine& engine;
  replay::Backend& backend;
  bool reporter;  ///< launched as rank 0: prints the notes
  const SynthFile* synth = nullptr;  ///< --algo synth:FILE: its schedule at every size
};

/// What the size loop measured.
struct Replayed {
  std::vector<replay::ReplayedSize> sizes;
  std::string csv_rows;  ///< ops.csv's rows of every size (with --out on the reporting rank)
};

/// One size's Schedule (the collective's choice at `bytes`) and its simulated timeline.
replay::ReplayedSize plan_size(const SizeLoop& loop, std::uint64_t bytes) {
  replay::ReplayedSize s;
  s.bytes = bytes;
  planner::Algorithm a{};
  planner::Protocol p{};
  if (loop.synth != nullptr) {
    s.schedule = planner::synthesis::from_msccl_xml(loop.synth->text, loop.synth->path, bytes, loop.runner.options().element_size);
    s.algorithm = "synthesized";
    s.protocol = "Simple";
    s.simulated = loop.runner.run_schedule(s.schedule, planner::Algorithm::Synthesized, planner::Protocol::Simple, loop.engine);
    return s;
  }
  try {
    const planner::CollectiveResult choice = loop.runner.run(bytes);
    a = choice.algorithm;
    p = choice.protocol;
    s.schedule = loop.runner.step_schedule(a, p, bytes);
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw InputError({"<command line>", 0, 0}, "--algo", "an algorithm that can run this collective here", loop.o.algo, e.what());
  }
  s.algorithm = std::string(planner::to_string(a));
  s.protocol = std::string(planner::to_string(p));
  s.simulated = loop.runner.run_schedule(s.schedule, a, p, loop.engine);
  return s;
}

/// Replays every size in order. Returns 0, or 3 when the backend failed (the error printed).
int replay_all(const SizeLoop& loop, const ReplaySizes& sizes, Replayed& out) {
  const ReplayCliOptions& o = loop.o;
  replay::ReplayConfig config;
  config.type = loop.type;
  config.iters = o.iters;
  config.warmup = o.warmup;
  // Progress on the reporting rank's stderr (support/progress.hpp: a terminal, or CCSIM_PROGRESS=1).
  support::ProgressOptions shown;
  shown.enabled = shown.enabled && loop.reporter;
  support::Progress progress("ccsim replay", shown);
  std::size_t done = 0;
  for (std::uint64_t bytes : sizes.sizes) {
    progress.update(fmt::format("{} backend, sizes replayed", o.backend), done++, sizes.sizes.size());
    replay::ReplayedSize s = plan_size(loop, bytes);
    // Per-op records cost about 48 bytes per op per timed iteration: bounded at 2^25 records.
    constexpr double kMaxRecords = 33554432.0;
    config.record_ops = static_cast<double>(o.iters) * static_cast<double>(s.schedule.op_count()) <= kMaxRecords;
    if (!config.record_ops && loop.reporter) {
      progress.finish();
      std::cerr << fmt::format("ccsim: note: {} bytes: per-op times not recorded ({} iterations x {} ops is over {:.0f} records); "
                               "only iteration times are kept\n", bytes, o.iters, s.schedule.op_count(), kMaxRecords);
    }
    try {
      s.measured = loop.backend.run(s.schedule, config);
    } catch (const replay::ReplayError& e) {
      progress.finish();
      std::cerr << fmt::format("ccsim: error: {} backend, {} bytes ({}/{}): {}\n", o.backend, bytes, s.algorithm, s.protocol, e.what());
      return 3;
    } catch (const std::bad_alloc&) {
      progress.finish();
      std::cerr << fmt::format("ccsim: error: {} backend, {} bytes: not enough memory for the ranks' buffers (use a smaller -e or fewer "
                               "ranks)\n", o.backend, bytes);
      return 3;
    }
    // ops.csv gets every op of every size; per-op records are kept for the traced size only.
    if (!o.out.empty() && loop.backend.reporter()) out.csv_rows += replay::ops_csv_rows(s);
    if (!config.record_ops || bytes != sizes.traced) s.measured.ops.clear();
    out.sizes.push_back(std::move(s));
  }
  return 0;
}

replay::LogInfo log_info(const ReplayCliOptions& o, const ReplayInputs& in, int n, const replay::Backend& backend) {
  replay::LogInfo info;
  info.test = replay::perf_test_name(in.collective);
  info.collective = in.collective;
  info.nranks = n;
  info.type = std::string(replay::to_string(in.type));
  info.root = models::has_root(in.collective) ? o.root : -1;
  info.command = command_line(o);
  info.backend = o.backend;
  info.where = backend.describe(n);
  info.scenario = o.scenario;
  info.min_bytes = in.lo;
  info.max_bytes = in.hi;
  info.factor = o.factor;
  info.warmup = o.warmup;
  info.iters = o.iters;
  info.median = o.time_stat == "median";
  return info;
}

/// Prints the log and the traced size's per-op comparison, then writes --out's files. Returns
/// the exit code: 0 every element right, 4 some wrong.
int report(const ReplayCliOptions& o, const replay::LogInfo& info, const Replayed& replayed, std::uint64_t traced_bytes,
           const support::OutputDir* out) {
  const std::vector<replay::ReplayedSize>& done = replayed.sizes;
  const std::string log = replay::nccl_tests_log(info, done);
  const replay::ReplayedSize& traced = *std::find_if(done.begin(), done.end(), [&](const auto& s) { return s.bytes == traced_bytes; });
  const std::vector<replay::OpComparison> comparison = replay::compare_ops(traced);
  std::uint64_t wrong = 0;
  for (const auto& s : done) wrong += s.measured.wrong;

  std::cout << log;
  std::cout << fmt::format("#\n# Per-op comparison at {} bytes ({}/{}, {} ops): measured median of {} iterations vs simulated, largest "
                           "deviations first\n",
                           traced.bytes, traced.algorithm, traced.protocol, traced.schedule.op_count(), o.iters);
  std::cout << replay::comparison_table(comparison, static_cast<std::size_t>(o.top));
  std::cout.flush();  // the measurements reach the terminal even if --out then fails
  if (out != nullptr) {
    // A log left by an earlier run would mark the new, partly written set complete: remove it first.
    out->remove_stale(info.test + ".log", support::Stale::RemoveOrThrow);
    out->write("trace.json", replay::trace_json(traced, o.backend));
    out->write("ops.csv", replay::ops_csv({}) + replayed.csv_rows);
    out->write("replay.json", summary_json(info, done).dump(2) + "\n");
    out->write(info.test + ".log", log);  // last: its presence means the set is complete
  }
  return wrong == 0 ? 0 : 4;
}

}  // namespace

int run_replay(const ReplayCliOptions& o) {
  const ReplayInputs in = check_inputs(o);
  models::Scenario scenario = load_cluster_scenario_file(o.scenario, o.catalog);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);

  // --out is checked (and created) before the backend starts: under mpirun only rank 0 writes,
  // and a rank 0 that stopped here after MPI had started would leave the other ranks waiting.
  // A directory this run creates is removed again when the run stops before writing into it
  // (a size the planner refuses, a backend failure): bad input leaves nothing behind.
  const bool reporter = support::mpi::launched_rank() == 0;
  std::optional<support::OutputDir> out;
  if (!o.out.empty()) {
    support::OutputDirRules rules;
    rules.create = support::CreateDir::BeforeWork;
    rules.probe_prefix = ".ccsim-replay-probe";
    out.emplace(o.out, rules);
    if (reporter) out->prepare();
  }

  // The backend first: mpi and verbs learn the rank count from the launcher.
  replay::BackendOptions backend_options;
  backend_options.devices = in.devices;
  backend_options.nics = in.nics;
  std::unique_ptr<replay::Backend> backend = start_backend(o.backend, backend_options);
  if (!backend) return 3;
  const planner::CollectiveOptions opts = collective_options(o, in, cluster, *backend);
  const int n = static_cast<int>(opts.gpus.size());
  for (models::DeviceId g : opts.gpus) backend_options.rail_of_rank.push_back(std::max(0, cluster.topology.device(g).rail));
  if (o.backend == "verbs") {  // again, with the rails
    backend = start_backend(o.backend, backend_options);
    if (!backend) return 3;
  }

  const TableChoice cost_table = collective_table(o.calibration, scenario, cluster);
  const planner::CostModel costs = planner::CostModel::load(cost_table.path);
  std::optional<SynthFile> synth;
  if (is_synth_option(o.algo)) {
    synth = synth_option(o.algo, in.collective, n);
    if (opts.protocol && *opts.protocol != planner::Protocol::Simple) {
      throw InputError({"<command line>", 0, 0}, "--protocol", "auto or Simple with --algo synth:FILE (MSCCL schedules run on Simple)", o.protocol);
    }
  }
  const std::unique_ptr<planner::CollectiveRunner> runner = make_runner(cluster, costs, opts, synth ? "auto" : o.algo, o.protocol);
  ReplaySizes sizes = replay_sizes(o, in, opts.element_size, n);
  if (synth) {  // whole loops of the file's chunking
    sizes.sizes = synth_sizes(*synth, sizes.sizes, opts.element_size);
    if (sizes.sizes.empty()) {
      throw InputError({"<command line>", 0, 0}, "--maxbytes",
                       fmt::format("a size of at least one loop of the file's {} chunks", synth->header.chunks_per_loop), o.max_bytes);
    }
    sizes.traced = synth_sizes(*synth, {sizes.traced}, opts.element_size).empty() ? sizes.sizes.back()
                                                                                 : synth_sizes(*synth, {sizes.traced}, opts.element_size).front();
    if (std::find(sizes.sizes.begin(), sizes.sizes.end(), sizes.traced) == sizes.sizes.end()) sizes.traced = sizes.sizes.back();
  }
  const std::unique_ptr<sim::Engine> engine = sim::make_engine(models::EngineKind::Analytic, cluster);
  Replayed replayed;
  if (const int rc = replay_all({o, in.type, *runner, *engine, *backend, reporter, synth ? &*synth : nullptr}, sizes, replayed); rc != 0) return rc;
  if (!backend->reporter()) return 0;
  return report(o, log_info(o, in, n, *backend), replayed, sizes.traced, out ? &*out : nullptr);
}

}  // namespace ccsim::cli
