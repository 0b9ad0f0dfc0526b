#include "cli/commands/collective_command.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <string>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>
#include "cli/commands/channel_dump.hpp"
#include "cli/commands/collective_table.hpp"
#include "cli/options.hpp"
#include "support/input_error.hpp"
#include "support/progress.hpp"
#include "support/units.hpp"
#include "planner/collective/channel_plan.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/algorithms/nccl_names.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "validate/measurements/nccl_tests_log.hpp"
#include "sim/engine.hpp"

namespace ccsim::cli {

using support::InputError;

std::string format_time_us(double us) {
  if (us < 100.0) return fmt::format("{:.2f}", us);
  if (us < 10000.0) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

CLI::App* add_collective_command(CLI::App& app, CollectiveCliOptions& o) {
  CLI::App* c = app.add_subcommand("collective", "Simulate one collective over a sweep of sizes and print nccl-tests' table");
  c->add_option("scenario", o.scenario, "scenario YAML file")->required();
  c->add_option("--op", o.op, "the collective: allreduce, reducescatter, allgather, broadcast, reduce, alltoall, sendrecv, "
                              "or nccl-tests' binary name (all_reduce_perf, ...); the reduction operation is -o/--redop")->required();
  c->add_option_function<std::string>(
      "--algo", [&o](const std::string& v) { o.algo = v, o.algo_given = true; },
      algorithm_help() + " (case-insensitive; NCCL's Ring, Tree, NVLS, NVLSTree, PAT), an NCCL_ALGO list (Ring,Tree or ^NVLS: "
                         "the automatic choice among them), or synth:FILE (an MSCCL XML schedule: ccsim synthesize --out, msccl-tools, "
                         "TACCL, TE-CCL); default: the environment's NCCL_ALGO, else auto");
  c->add_option_function<std::string>(
      "--protocol", [&o](const std::string& v) { o.protocol = v, o.protocol_given = true; },
      "auto, LL, LL128, Simple, or an NCCL_PROTO list (LL,LL128 or ^LL); default: the environment's NCCL_PROTO, else auto");
  c->add_option("-b,--minbytes", o.min_bytes, "smallest size (nccl-tests syntax: 8, 64K, 1M, 8G)");
  c->add_option("-e,--maxbytes", o.max_bytes, "largest size");
  c->add_option("-f,--stepfactor", o.factor, "multiply the size by this factor between rows")->check(CLI::Range(2, 1024));
  c->add_option("--engine", o.engine, "analytic or flow")->check(CLI::IsMember({"analytic", "flow"}));
  c->add_option("--ranks", o.ranks, "use the first N GPUs (default: all, or -g x -t)")->check(CLI::Range(1, 1 << 20));
  c->add_option("--group", o.group, "use these global GPU ranks, e.g. 0-7,16-23");
  c->add_option("-r,--root", o.root, "root rank of Broadcast and Reduce");
  c->add_option("--channels", o.channels, "channels: independent rings / tree pairs (default: one per NIC rail across nodes, the searched rings on a direct-link node, else 1); "
                 "SendRecv: the channels of each peer (default: NCCL's rule, NCCL_NCHANNELS_PER_NET_PEER from the environment)")->check(CLI::Range(1, 64));
  c->add_option("--nccl-version", o.nccl_version,
                "the NCCL release whose rules apply (2.19, 2.20.5, ...; today SendRecv's channels per peer); default: the scenario's "
                "simulation.nccl.version, else 2.30");
  c->add_option("--granularity", o.granularity, "auto, step or phase")->check(CLI::IsMember({"auto", "step", "phase"}));
  c->add_option("--ecmp", o.ecmp, "spine choice on a fat tree: hash (per-connection ECMP hash, static routing) or balanced "
                                  "(even rotation over the spines, as adaptive routing spreads); default: the scenario's fabric.ecmp")
      ->check(CLI::IsMember({"hash", "balanced"}));
  c->add_option("-d,--datatype", o.datatype, "element type, nccl-tests' names: int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                                             "bfloat16, f8e4m3, f8e5m2, or all");
  c->add_option("-o,--redop", o.redop, "reduction operation (nccl-tests' -o): sum, prod, max, min, avg, mulsum or all");
  c->add_option("-g,--ngpus", o.ngpus, "GPUs per process (nccl-tests' -g): the ranks are -g x -t unless --ranks/--group, which must be a multiple")
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("-t,--nthreads", o.nthreads, "threads per process (nccl-tests' -t), as -g")->check(CLI::Range(1, 1 << 20));
  c->add_option("-n,--iters", o.iters, "iterations (nccl-tests' -n): accepted; the simulation is deterministic")->check(CLI::Range(1, 1 << 30));
  c->add_option("-w,--warmup_iters", o.warmup_iters, "warm-up iterations (nccl-tests' -w): accepted, as -n")->check(CLI::Range(0, 1 << 30));
  c->add_option("-c,--check", o.check, "check results (nccl-tests' -c): 0 only, ccsim moves no data (#wrong is N/A)");
  c->add_option("-a,--average", o.average, "report the time averaged over ranks (0 rank 0, 1 avg, 2 min, 3 max; nccl-tests' -a): accepted, "
                                           "every rank's time per iteration is the collective's")->check(CLI::Range(0, 3));
  c->add_option("-z,--blocking", o.blocking, "blocking collectives (nccl-tests' -z): accepted, each simulated collective runs alone")
      ->check(CLI::Range(0, 1));
  c->add_option("-G,--cudagraph", o.cudagraph,
                "CUDA graph launches (nccl-tests' -G): above 0 the collectives are graph-launched (the table's launch.graph_latency "
                "replaces the per-collective launch cost), 0 eager; default: the scenario's simulation.launch")
      ->check(CLI::Range(0, 1 << 30));
  c->add_option("-R,--local_register", o.local_register,
                "buffer registration (nccl-tests' -R): 0 none, 1 local, 2 symmetric (NCCL 2.27+'s symmetric-memory kernels may run); "
                "default: the scenario's simulation.symmetric_memory")
      ->check(CLI::Range(0, 2));
  c->add_option("-m,--agg_iters", o.agg_iters,
                "collectives aggregated in one NCCL group (nccl-tests' -m): one launch's fixed cost shared by them")
      ->check(CLI::Range(1, 1 << 20));
  for (const char* flag : {"-i,--stepbytes", "-p,--parallel_init", "-C,--report_cputime", "-T,--timeout"}) {
    const std::string name = flag;
    c->add_option_function<std::string>(
         name, [&o, name](const std::string&) { if (o.refused_flag.empty()) o.refused_flag = name; },
         "nccl-tests' flag, refused: no meaning in a simulation")
        ->group("");
  }
  c->add_option("--format", o.format, "text, csv or json")->check(CLI::IsMember({"text", "csv", "json"}));
  c->add_option("--calibration", o.calibration, "calibration table (default: the scenario's simulation.calibration, else scenarios/calibration/nccl.yaml, rccl.yaml for AMD GPUs)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  c->add_option("--skew", o.skew,
                 "ready-time skew: ranks that call the collective late, 'R:TIME[,R:TIME...]' (3:50us), 'uniform:MAX[:SEED]' "
                 "or 'exponential:MEAN[:SEED]'; prints the time from the first and the last arrival and each rank's wait");
  c->add_flag("--dump-channels", o.dump_channels,
              "print the channels planned for the ranks (ring orders, node rings, tree pairs and heads; text or json) "
              "and exit without simulating");
  return c;
}

std::vector<double> parse_skew(const std::string& text, int ranks) {
  const auto bad = [&](const std::string& expected, const std::string& found) {
    return InputError({"<command line>", 0, 0}, "--skew", expected, found);
  };
  for (const char ch : text) {
    if (std::iscntrl(static_cast<unsigned char>(ch))) throw bad("printable text", "a control character in the spec");
  }
  // Past an hour the analytic engine's event coalescing (relative to the clock) would merge
  // events microseconds apart; a late rank is milliseconds to seconds.
  constexpr double kMaxSkew = 3600.0;
  const auto duration = [&](const std::string& t) {
    try {
      const double s = support::parse_quantity(t, support::Quantity::Time);
      if (!(s >= 0)) throw bad("a time of at least 0", "'" + t + "'");
      if (s > kMaxSkew) throw bad("a time of at most 1 hour (3600s)", "'" + t + "'");
      return s;
    } catch (const support::UnitError& e) {
      throw bad("a time with its unit (50us, 1.5ms, 0s)", "'" + t + "' (" + e.what() + ")");
    }
  };
  const auto trim = [](std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::size_t lead = 0;
    while (lead < s.size() && s[lead] == ' ') ++lead;
    return s.substr(lead);
  };
  const auto split = [&](const std::string& s, char sep) {  // fields with the spaces around them removed
    std::vector<std::string> parts;
    std::size_t from = 0;
    for (std::size_t at; (at = s.find(sep, from)) != std::string::npos; from = at + 1) parts.push_back(trim(s.substr(from, at - from)));
    parts.push_back(trim(s.substr(from)));
    return parts;
  };
  if (trim(text).empty()) throw bad("'RANK:TIME[,RANK:TIME...]' (3:50us), 'uniform:MAX[:SEED]' or 'exponential:MEAN[:SEED]'", "an empty spec");
  std::vector<double> ready(static_cast<std::size_t>(ranks), 0.0);
  const auto parse_list = [&] {
    std::vector<char> named(ready.size(), 0);
    for (const std::string& item : split(text, ',')) {
      const std::vector<std::string> kv = split(item, ':');
      if (kv.size() != 2 || kv[0].empty() || !std::isdigit(static_cast<unsigned char>(kv[0].front()))) {
        throw bad("'RANK:TIME[,RANK:TIME...]' (3:50us), 'uniform:MAX[:SEED]' or 'exponential:MEAN[:SEED]'", "'" + item + "'");
      }
      std::size_t used = 0;
      long r = -1;
      try {
        r = std::stol(kv[0], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != kv[0].size() || r < 0 || r >= ranks) throw bad(fmt::format("a rank from 0 to {}", ranks - 1), "'" + kv[0] + "' in '" + item + "'");
      if (named[static_cast<std::size_t>(r)]) throw bad("each rank named once", fmt::format("rank {} twice", r));
      named[static_cast<std::size_t>(r)] = 1;
      ready[static_cast<std::size_t>(r)] = duration(kv[1]);
    }
  };
  const std::vector<std::string> head = split(text, ':');
  if (head.front() == "uniform" || head.front() == "exponential") {
    if (head.size() < 2 || head.size() > 3) throw bad("'" + head.front() + ":TIME' or '" + head.front() + ":TIME:SEED'", "'" + text + "'");
    const double scale = duration(head[1]);
    if (head.front() == "exponential" && scale > 60.0) throw bad("a mean of at most 60s (draws reach 20 means and more)", "'" + head[1] + "'");
    std::uint64_t seed = 1;
    if (head.size() == 3) {
      std::size_t used = 0;
      try {
        seed = std::stoull(head[2], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != head[2].size() || head[2].front() == '-') throw bad("a seed (an integer of at least 0)", "'" + head[2] + "'");
    }
    std::mt19937_64 gen(seed);
    for (double& t : ready) {
      if (head.front() == "uniform") {
        t = std::uniform_real_distribution<double>(0.0, scale)(gen);
      } else {
        t = scale > 0 ? std::exponential_distribution<double>(1.0 / scale)(gen) : 0.0;
      }
    }
  } else {
    parse_list();
  }
  // The first arrival is the collective's start.
  const double first = *std::min_element(ready.begin(), ready.end());
  for (double& t : ready) {
    t -= first;
    if (t > kMaxSkew) throw bad("ready times of at most 1 hour (3600s)", fmt::format("{:g} s", t));
  }
  return ready;
}

namespace {

/// Runs every size of the sweep, notes on stderr the candidates skipped as too large and a
/// --granularity phase that the chosen algorithm cannot honour (once each).
std::vector<planner::CollectiveResult> simulate_sizes(planner::CollectiveRunner& runner, const std::vector<std::uint64_t>& sizes,
                                                      const std::string& algo, const std::string& algo_key) {
  std::vector<planner::CollectiveResult> rows;
  std::vector<std::string> granularity_notes;  // printed once each, however many sizes use them
  // Progress on stderr (support/progress.hpp: on a terminal, or with CCSIM_PROGRESS=1); erased
  // before a note so that the note stands on a line of its own.
  support::Progress progress("ccsim collective");
  for (const std::uint64_t bytes : sizes) {
    progress.update("sizes simulated", rows.size(), sizes.size());
    try {
      rows.push_back(runner.run(bytes));
      if (!rows.back().notes.empty() || !rows.back().granularity_note.empty()) progress.finish();
      // Candidates too large to simulate, skipped for this size (stderr: the table stays nccl-tests').
      for (const std::string& note : rows.back().notes) std::cerr << "ccsim: note: " << bytes << " bytes: " << note << "\n";
      // --granularity phase that the chosen algorithm cannot honour: say so instead of silently stepping.
      if (const planner::CollectiveResult& r = rows.back(); !r.granularity_note.empty()) {
        const std::string note = fmt::format("--granularity phase not applied to {}/{}: {}; step granularity used",
                                             planner::to_string(r.algorithm), planner::to_string(r.protocol), r.granularity_note);
        if (std::find(granularity_notes.begin(), granularity_notes.end(), note) == granularity_notes.end()) {
          granularity_notes.push_back(note);
          std::cerr << "ccsim: note: " << note << "\n";
        }
      }
    } catch (const std::invalid_argument& e) {
      throw InputError({"<command line>", 0, 0}, algo_key, "an algorithm that can run this collective here", algo, e.what());
    }
  }
  return rows;
}

/// `--algo synth:FILE`: the MSCCL XML schedule of FILE at every size, on the runner's ranks and
/// engine, with the bound of the runner's placement.
std::vector<planner::CollectiveResult> simulate_synthesized(const models::Cluster& cluster, const planner::CostModel& costs,
                                                            const planner::CollectiveOptions& opts, const std::string& algo,
                                                            const std::vector<std::uint64_t>& sizes) {
  const SynthFile synth = synth_option(algo, opts.collective, static_cast<int>(opts.gpus.size()));
  const std::string& text = synth.text;
  const std::string& file = synth.path;
  const planner::synthesis::MscclHeader& h = synth.header;
  planner::CollectiveOptions o = opts;
  o.algorithm.reset();
  planner::CollectiveRunner runner(cluster, costs, o);
  models::Router router(cluster);
  const planner::LowerBound bound = planner::lower_bound(cluster, router, opts.collective, opts.gpus, opts.root);
  std::unique_ptr<sim::Engine> engine = sim::make_engine(opts.engine, cluster);
  std::vector<planner::CollectiveResult> rows;
  const std::vector<std::uint64_t> rounded = synth_sizes(synth, sizes, opts.element_size);
  if (rounded.empty()) {
    throw InputError({"<command line>", 0, 0}, "--maxbytes",
                     fmt::format("a size of at least one loop of the file's {} chunks ({} bytes)", h.chunks_per_loop,
                                 static_cast<std::uint64_t>(h.chunks_per_loop) * opts.element_size),
                     fmt::format("{} bytes", sizes.back()));
  }
  for (const std::uint64_t bytes : rounded) {
    if (h.max_bytes > 0 && (bytes < h.min_bytes || bytes > h.max_bytes)) {
      std::cerr << "ccsim: note: " << bytes << " bytes: outside the file's minBytes " << h.min_bytes << " .. maxBytes " << h.max_bytes
                << " (MSCCL would not run it there); simulated anyway\n";
    }
    const models::Schedule s = planner::synthesis::from_msccl_xml(text, file, bytes, opts.element_size);
    const sim::Timeline tl = runner.run_schedule(s, planner::Algorithm::Synthesized, planner::Protocol::Simple, *engine);
    planner::CollectiveResult r;
    r.bytes = bytes;
    r.algorithm = planner::Algorithm::Synthesized;
    r.protocol = planner::Protocol::Simple;
    r.time = tl.makespan;
    r.transfers = tl.transfers;
    r.bound = bound.time(static_cast<double>(bytes));
    if (r.time < r.bound * (1.0 - 1e-9)) throw std::logic_error(fmt::format("{}: simulated below the lower bound at {} bytes", file, bytes));
    rows.push_back(std::move(r));
  }
  return rows;
}

/// The note printed before a direct AlltoAll that hashed ECMP makes slow to simulate.
/// `direct`: the choice may take the direct schedule (auto or --algo direct).
void note_slow_alltoall(bool direct, models::Collective collective, int n, const models::ClusterSpec& cluster) {
  // Hashed ECMP under a large direct AlltoAll is the analytic engine's known slow case
  // (sim/analytic/analytic_engine.hpp): colliding connections give thousands of coupled flows with
  // distinct rates, each completion re-solving them (512 ranks of h100-16k-rail, 1 MiB: about
  // 10 minutes on 2 cores; 384 ranks: over 10 minutes at 1 MiB, 15 s at 1 GiB). Oversubscribed
  // spines bottleneck every flow alike and stay fast; a balanced spread has no collisions.
  // Not said where the direct schedule (n·(2n − 1) ops) is refused as too large anyway.
  const bool direct_fits = static_cast<double>(n) * (2.0 * n - 1) <= static_cast<double>(planner::kMaxScheduleOps);
  if (collective == models::Collective::AlltoAll && direct && direct_fits && n >= 384 &&
      cluster.fabric.kind == models::FabricKind::FatTree && cluster.fabric.ecmp == models::Ecmp::Hash &&
      cluster.fabric.oversubscription <= 1.0) {
    std::cerr << "ccsim: note: direct AlltoAll over " << n
              << " ranks with hashed ECMP on a non-blocking fat tree can take minutes to simulate (ECMP collisions couple "
                 "thousands of flows); --ecmp balanced (adaptive routing's even spread) takes seconds and has no collisions\n";
  }
}

InputError command_line_error(const std::string& key, const std::string& expected, const std::string& found, const std::string& note = {}) {
  return InputError({"<command line>", 0, 0}, key, expected, found, note);
}

/// --op: ccsim's collective names, or nccl-tests' binary names (all_reduce_perf, alltoall_perf).
models::Collective collective_option(const std::string& op) {
  const std::string expected = "allreduce, reducescatter, allgather, broadcast, reduce, alltoall or sendrecv (or nccl-tests' all_reduce_perf, ...)";
  std::string stem = op;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, "_perf") == 0) stem.resize(stem.size() - 5);
  if (const auto c = models::parse_collective(stem)) return *c;
  for (const char* redop : {"sum", "prod", "max", "min", "avg", "mulsum", "all"}) {
    if (op == redop) {
      throw command_line_error("--op", expected, "'" + op + "'",
                               "--op names the collective in ccsim (nccl-tests' binary); the reduction operation is -o/--redop " + op);
    }
  }
  throw command_line_error("--op", expected, "'" + op + "'");
}

/// nccl-tests' type names, in its order (common.cu test_typenames; f8e4m3 and f8e5m2 where NCCL
/// 2.24+ has FP8): what -d all runs.
constexpr const char* kNcclTestsTypes[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
/// nccl-tests' reduction operations, in its order (common.cu test_opnames; avg from NCCL 2.10,
/// mulsum (ncclRedOpCreatePreMulSum) from 2.11): what -o all runs.
constexpr const char* kNcclTestsRedops[] = {"sum", "prod", "max", "min", "avg", "mulsum"};

std::vector<std::string> datatype_option(const std::string& d) {
  if (d == "all") return {std::begin(kNcclTestsTypes), std::end(kNcclTestsTypes)};
  if (!validate::type_size(d)) {
    throw command_line_error("--datatype", "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2 or all",
                             "'" + d + "'");
  }
  return {d};
}

std::vector<std::string> redop_option(const std::string& o, models::Collective c) {
  const bool reduces = c == models::Collective::AllReduce || c == models::Collective::ReduceScatter || c == models::Collective::Reduce;
  const bool known = o == "all" || std::find_if(std::begin(kNcclTestsRedops), std::end(kNcclTestsRedops), [&](const char* r) { return o == r; }) !=
                                       std::end(kNcclTestsRedops);
  if (!known) throw command_line_error("--redop", "sum, prod, max, min, avg, mulsum or all", "'" + o + "'");
  // nccl-tests runs a collective that does not reduce once, with redop "none", whatever -o says;
  // sum (its default) and all are taken as that, another operation is refused.
  if (!reduces) {
    if (o != "sum" && o != "all") {
      throw command_line_error("--redop", fmt::format("sum or all for {}, which does not reduce (nccl-tests prints redop none)", models::to_string(c)),
                               "'" + o + "'");
    }
    return {"none"};
  }
  if (o == "all") return {std::begin(kNcclTestsRedops), std::end(kNcclTestsRedops)};
  return {o};
}

/// What --algo / NCCL_ALGO and --protocol / NCCL_PROTO ask, and the header's words for them.
struct Choice {
  std::string algo_text;      ///< what the choice is read from ("auto", "ring", "Ring,Tree", "synth:F")
  std::string algo_key;       ///< "--algo" or "NCCL_ALGO" (messages)
  std::string algo_words;     ///< the header's words
  std::string protocol_text;  ///< likewise
  std::string protocol_key;
  std::string protocol_words;
};

/// Fills opts.algorithm / opts.algorithms and opts.protocol / opts.protocols from the flags, else
/// the environment (NCCL_ALGO, NCCL_PROTO; empty values are unset, as NCCL reads them).
Choice algorithm_choice(const CollectiveCliOptions& o, models::Collective collective, planner::CollectiveOptions& opts) {
  Choice ch{o.algo, "--algo", o.algo, o.protocol, "--protocol", o.protocol};
  if (!o.algo_given) {
    if (const char* env = std::getenv("NCCL_ALGO"); env != nullptr && *env != '\0') {
      ch.algo_text = env, ch.algo_key = "NCCL_ALGO", ch.algo_words = std::string("NCCL_ALGO=") + env + " (environment)";
    }
  }
  if (!o.protocol_given) {
    if (const char* env = std::getenv("NCCL_PROTO"); env != nullptr && *env != '\0') {
      ch.protocol_text = env, ch.protocol_key = "NCCL_PROTO", ch.protocol_words = std::string("NCCL_PROTO=") + env + " (environment)";
    }
  }
  const std::string& a = ch.algo_text;
  const bool from_env = ch.algo_key == "NCCL_ALGO";
  const auto collnet = [](const std::string& t) {
    std::string l;
    for (char x : t) l += static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
    return l == "collnetdirect" || l == "collnetchain";
  };
  if (is_synth_option(a)) {
    if (from_env) throw command_line_error("NCCL_ALGO", "NCCL's algorithm names (synth:FILE is --algo's)", "'" + a + "'");
    if (a.size() == 6) (void)synth_option(a, collective, 0);  // the refusal of "synth:" alone
    opts.algorithm = planner::Algorithm::Synthesized;
  } else if (!from_env && collnet(a)) {
    throw command_line_error(ch.algo_key, "an algorithm ccsim models", "'" + a + "'",
                             "CollNet (SHARP reduction in the network switches) has no model in ccsim");
  } else if (from_env || planner::is_nccl_list(a)) {
    std::optional<planner::AlgorithmFilter> f;
    try {
      f = planner::parse_nccl_algo(a, collective);
    } catch (const std::invalid_argument& e) {
      throw command_line_error(ch.algo_key, "an NCCL_ALGO value NCCL accepts ([^]NAME[,NAME...][;function:[^]NAME...])", "'" + a + "'", e.what());
    }
    if (!f) {
      ch.algo_words += fmt::format(", no entry for {}: auto", models::to_string(collective));
    } else {
      // "," or "allreduce:" names nothing: no algorithm enabled (as NCCL_PROTO's "at least one protocol").
      if (!f->exclude && !f->collnet && f->named.empty()) {
        throw command_line_error(ch.algo_key, "at least one algorithm named for " + std::string(models::to_string(collective)), "'" + a + "'");
      }
      if (f->collnet && !f->exclude && f->named.empty()) {
        throw command_line_error(ch.algo_key, "an algorithm ccsim models", "'" + a + "'",
                                 "CollNet (SHARP reduction in the network switches) has no model in ccsim");
      }
      if (f->collnet && !f->exclude) std::cerr << "ccsim: note: " << ch.algo_key << " '" << a << "': CollNet has no model in ccsim; left out\n";
      opts.algorithms = *f;
    }
  } else {
    opts.algorithm = algorithm_option(a);
  }
  const std::string& p = ch.protocol_text;
  if (ch.protocol_key == "NCCL_PROTO" || planner::is_nccl_list(p)) {
    std::optional<planner::EnumSet<planner::Protocol>> set;
    try {
      set = planner::parse_nccl_proto(p, collective);
    } catch (const std::invalid_argument& e) {
      throw command_line_error(ch.protocol_key, "an NCCL_PROTO value NCCL accepts ([^]LL|LL128|Simple[,...][;function:...])", "'" + p + "'", e.what());
    }
    if (set) {
      if (set->empty()) throw command_line_error(ch.protocol_key, "at least one protocol enabled", "'" + p + "'");
      opts.protocols = *set;
      ch.protocol_words += " (" + planner::to_string(*set) + ")";
    } else {
      ch.protocol_words += fmt::format(", no entry for {}: auto", models::to_string(collective));
    }
  } else {
    opts.protocol = protocol_option(p);
  }
  return ch;
}

/// The header lines of the text table: what was simulated and how it maps to nccl-tests.
std::vector<std::string> table_header(const CollectiveCliOptions& o, const Choice& ch, models::Collective collective, int n,
                                      const models::Cluster& cluster, int channels, const std::string& costs, std::uint64_t lo,
                                      std::uint64_t hi, bool synthesized) {
  std::vector<std::string> h;
  h.push_back(fmt::format("ccsim collective: {} over {} ranks of {} ({} node{}, {} GPUs), {} engine, {} channel{} per {}",
                          models::to_string(collective), n, cluster.spec.name, cluster.nodes.size(), cluster.nodes.size() == 1 ? "" : "s",
                          cluster.topology.gpus().size(), o.engine, channels, channels == 1 ? "" : "s",
                          collective == models::Collective::SendRecv ? "peer" : "ring"));
  // nccl-tests' binary for the collective (its name lets nccl-tests' parsers and ccsim compare
  // tell the collective).
  std::string perf;
  for (char x : std::string(models::to_string(collective))) {
    if (std::isupper(static_cast<unsigned char>(x)) && !perf.empty() && collective != models::Collective::AlltoAll &&
        collective != models::Collective::SendRecv)
      perf += '_';
    perf += static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
  }
  const int t = o.nthreads > 0 ? o.nthreads : 1;
  const int g = o.ngpus > 0 ? o.ngpus : 1;
  std::string launch_flags;  // -G, -R, -m as given (they change the simulated times)
  if (o.cudagraph) launch_flags += fmt::format(" -G {}", *o.cudagraph);
  if (o.local_register) launch_flags += fmt::format(" -R {}", *o.local_register);
  if (o.agg_iters != 1) launch_flags += fmt::format(" -m {}", o.agg_iters);
  h.push_back(fmt::format("as nccl-tests {}_perf -b {} -e {} -f {} -d {} -o {} -n {} -w {} -c 0 -a {} -z {}{}; {} process{} x nThread {} x nGpus {}",
                          perf, o.min_bytes, o.max_bytes, o.factor, o.datatype, o.redop, o.iters, o.warmup_iters, o.average, o.blocking, launch_flags, n / (t * g),
                          n / (t * g) == 1 ? "" : "es", t, g));
  h.push_back("simulated: deterministic, every iteration takes the same time (-n, -w, -a, -z change nothing); in-place = out-of-place; "
              "#wrong N/A (no data moved, as -c 0)");
  h.push_back(fmt::format("algorithm {}, protocol {}; costs: {}", ch.algo_words,
                          synthesized ? std::string("Simple") : ch.protocol_words, costs));
  for (const auto& line : cluster.perturbations) h.push_back("what-if: " + line);
  return h;
}

/// The NCCL settings of a run: the scenario's simulation.nccl, with --nccl-version and the
/// environment's NCCL_NCHANNELS_PER_NET_PEER and NCCL_PXN_DISABLE (an empty value is unset, as
/// NCCL reads it) over it.
models::NcclSettings nccl_settings(const CollectiveCliOptions& o, models::NcclSettings s) {
  if (o.nccl_version) {  // given, even empty: an empty value is refused as the scenario's is
    s.version = models::parse_nccl_version(*o.nccl_version);
    if (!s.version) throw command_line_error("--nccl-version", "an NCCL release such as 2.20 or 2.20.5 (2.0 or later)", "'" + *o.nccl_version + "'");
  }
  if (const char* env = std::getenv("NCCL_NCHANNELS_PER_NET_PEER"); env != nullptr && *env != '\0') {
    const std::string text(env);
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > models::kMaxNcclChannelsPerNetPeer) {
      throw command_line_error("NCCL_NCHANNELS_PER_NET_PEER", fmt::format("a whole number from 1 to {} (NCCL's MAXCHANNELS)", models::kMaxNcclChannelsPerNetPeer),
                               "'" + text + "'");
    }
    s.nchannels_per_net_peer = value;
  }
  // NCCL_PXN_DISABLE (src/graph/paths.cc): 1 turns PXN off for point-to-point sends.
  if (const char* env = std::getenv("NCCL_PXN_DISABLE"); env != nullptr && *env != '\0') {
    const std::string text(env);
    if (text != "0" && text != "1") throw command_line_error("NCCL_PXN_DISABLE", "0 or 1", "'" + text + "'");
    s.pxn_disable = text == "1";
  }
  return s;
}

}  // namespace

int run_collective(const CollectiveCliOptions& o) {
  const models::Collective collective = collective_option(o.op);
  if (!o.refused_flag.empty()) {
    throw command_line_error(o.refused_flag.substr(o.refused_flag.find(',') + 1), "an nccl-tests flag that applies to a simulation",
                             "'" + o.refused_flag.substr(0, o.refused_flag.find(',')) + "/" + o.refused_flag.substr(o.refused_flag.find(',') + 1) + "'",
                             "ccsim sweeps sizes by -f only and has no parallel init, CPU timer or timeout");
  }
  if (o.check != 0) {
    throw command_line_error("--check", "0 (ccsim moves no data: #wrong is N/A, as nccl-tests prints with -c 0)", std::to_string(o.check),
                             "ccsim replay runs a schedule on hardware and checks its results");
  }
  if (o.dump_channels && o.format == "csv") {
    throw command_line_error("--format", "text or json with --dump-channels (the channel plan has no CSV form)", "'" + o.format + "'");
  }
  const std::vector<std::string> types = datatype_option(o.datatype);
  const std::vector<std::string> redops = redop_option(o.redop, collective);
  planner::CollectiveOptions opts;
  opts.collective = collective;
  const Choice choice = algorithm_choice(o, collective, opts);
  const bool synthesized = opts.algorithm == planner::Algorithm::Synthesized;
  const std::uint64_t lo = parse_size(o.min_bytes, "--minbytes");
  const std::uint64_t hi = parse_size(o.max_bytes, "--maxbytes");
  if (lo == 0) throw command_line_error("--minbytes", "a size above 0", o.min_bytes);
  if (hi < lo) throw command_line_error("--maxbytes", "a size at least --minbytes", o.max_bytes);
  opts.engine = *models::parse_engine_kind(o.engine);  // checked by the option
  opts.channels = o.channels;
  opts.granularity = granularity_option(o.granularity);
  opts.root = o.root;

  models::Scenario scenario = load_cluster_scenario_file(o.scenario, o.catalog);
  if (!o.ecmp.empty()) {
    if (scenario.cluster.fabric.kind != models::FabricKind::FatTree) {
      throw command_line_error("--ecmp", "a scenario with a fat-tree fabric (spines to choose among)",
                               "'" + o.ecmp + "' on a scenario whose fabric is " +
                                   (scenario.cluster.fabric.kind == models::FabricKind::None ? std::string("absent (one node)")
                                                                                             : "a " + std::string(models::to_string(scenario.cluster.fabric.kind))));
    }
    scenario.cluster.fabric.ecmp = o.ecmp == "balanced" ? models::Ecmp::Balanced : models::Ecmp::Hash;
  }
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  opts.nccl = nccl_settings(o, scenario.simulation.nccl);
  opts.graph_launch = o.cudagraph ? *o.cudagraph > 0 : scenario.simulation.graph_launch;
  opts.symmetric = o.local_register ? *o.local_register == 2 : scenario.simulation.symmetric_memory;
  opts.agg_iters = o.agg_iters;
  // nccl-tests' ranks: processes x threads (-t) x GPUs per thread (-g); one process without --ranks / --group.
  const int per_process = std::max(1, o.ngpus) * std::max(1, o.nthreads);
  const bool nccl_tests_ranks = o.ngpus > 0 || o.nthreads > 0;
  const int total_gpus = static_cast<int>(cluster.topology.gpus().size());
  if (o.ranks == 0 && o.group.empty() && nccl_tests_ranks && per_process > total_gpus) {
    throw command_line_error(o.ngpus > 0 ? "--ngpus" : "--nthreads",
                             fmt::format("-g x -t at most the cluster's {} GPUs (one process; --ranks for more processes)", total_gpus),
                             fmt::format("-g {} -t {}", std::max(1, o.ngpus), std::max(1, o.nthreads)));
  }
  opts.gpus = select_gpus(cluster, o.ranks == 0 && o.group.empty() && nccl_tests_ranks ? per_process : o.ranks, o.group);
  const int n = static_cast<int>(opts.gpus.size());
  if (n % per_process != 0) {
    throw command_line_error(o.ngpus > 0 ? "--ngpus" : "--nthreads",
                             fmt::format("-g x -t dividing the {} ranks (nccl-tests' ranks are processes x -t x -g)", n),
                             fmt::format("-g {} -t {}", std::max(1, o.ngpus), std::max(1, o.nthreads)));
  }
  if (o.root < 0 || o.root >= n) throw command_line_error("--root", fmt::format("a rank from 0 to {}", n - 1), std::to_string(o.root));
  if (o.skew && o.dump_channels) throw command_line_error("--skew", "no --skew with --dump-channels (nothing is simulated)", "'" + *o.skew + "'");
  if (o.skew && (types.size() > 1 || redops.size() > 1)) {
    throw command_line_error("--skew", "one type and one reduction operation with --skew (no -d all, -o all)", "'" + *o.skew + "'");
  }
  if (o.skew) opts.rank_ready = parse_skew(*o.skew, n);
  if (o.dump_channels) {
    const planner::CostModel dump_costs = planner::CostModel::load(collective_table(o.calibration, scenario, cluster).path);
    const planner::ChannelPlan plan = planner::plan_channels(cluster, opts.gpus, opts.channels, &dump_costs);
    std::cout << (o.format == "json" ? channel_dump_json(cluster, opts.gpus, plan) : channel_dump_text(cluster, opts.gpus, plan));
    return 0;
  }
  const TableChoice cost_table = collective_table(o.calibration, scenario, cluster);
  const planner::CostModel costs = planner::CostModel::load(cost_table.path);
  if (synthesized) {
    if ((opts.protocol && *opts.protocol != planner::Protocol::Simple) || (opts.protocols && !opts.protocols->contains(planner::Protocol::Simple))) {
      throw command_line_error(choice.protocol_key, "auto or Simple with --algo synth:FILE (MSCCL schedules run on Simple)", choice.protocol_text);
    }
    if (o.skew) throw command_line_error("--skew", "no --skew with --algo synth:FILE", "'" + *o.skew + "'");
    if (o.channels != 0) {
      throw command_line_error("--channels", "no --channels with --algo synth:FILE (the file's thread blocks fix them)", std::to_string(o.channels));
    }
    if (o.granularity == "phase") {
      throw command_line_error("--granularity", "auto or step with --algo synth:FILE (an MSCCL schedule is step by step)", "'phase'");
    }
  }
  const std::string costs_words = costs.source() + cost_table.note("--calibration", "calibration");
  std::vector<TypeResults> results;
  int channels = 1;
  for (const std::string& type : types) {
    opts.element_size = element_size(type);
    if (synthesized) {
      const CollectiveSizes sizes = collective_sizes({lo, hi, o.factor, o.max_bytes}, collective, opts.element_size, n);
      results.push_back({type, sizes.unit, simulate_synthesized(cluster, costs, opts, o.algo, sizes.sizes)});
      continue;
    }
    // An error about an environment value names the variable: NCCL_ALGO when the algorithm came
    // from it, else NCCL_PROTO when the protocol did (nothing runs with the protocols it enables).
    const bool proto_env = choice.algo_key != "NCCL_ALGO" && choice.protocol_key == "NCCL_PROTO";
    const std::unique_ptr<planner::CollectiveRunner> runner = make_runner(cluster, costs, opts, choice.algo_text, choice.protocol_text,
                                                                          proto_env ? choice.protocol_key : choice.algo_key);
    channels = runner->channels();
    if (&type == &types.front()) {
      note_slow_alltoall(!opts.algorithm || *opts.algorithm == planner::Algorithm::Direct, collective, n, scenario.cluster);
    }
    const CollectiveSizes sizes = collective_sizes({lo, hi, o.factor, o.max_bytes}, collective, opts.element_size, n);
    results.push_back({type, sizes.unit, simulate_sizes(*runner, sizes.sizes, choice.algo_text, choice.algo_key)});
  }
  TableContext table;
  table.collective = collective;
  table.ranks = n;
  table.cluster = &cluster;
  table.engine = o.engine;
  table.format = o.format;
  table.redops = redops;
  table.root = models::has_root(collective) ? o.root : -1;
  table.header = table_header(o, choice, collective, n, cluster, channels, costs_words, lo, hi, synthesized);
  table.rank_ready = opts.rank_ready;
  if (o.skew) table.skew_spec = *o.skew;
  print_collective_table(table, results);
  return 0;
}

}  // namespace ccsim::cli
