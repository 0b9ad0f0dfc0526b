#include "cli/commands/collective_command.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <string>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands/channel_dump.hpp"
#include "cli/options.hpp"
#include "support/input_error.hpp"
#include "support/units.hpp"
#include "planner/collective/channel_plan.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/synthesis/msccl_xml.hpp"
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
  c->add_option("--op", o.op, "allreduce, reducescatter, allgather, broadcast, reduce, alltoall, sendrecv")->required();
  c->add_option("--algo", o.algo, algorithm_help() + ", or synth:FILE (an MSCCL XML schedule: ccsim synthesize --out, msccl-tools, TACCL, TE-CCL)");
  c->add_option("--protocol", o.protocol, "auto, LL, LL128, Simple");
  c->add_option("-b,--minbytes", o.min_bytes, "smallest size (nccl-tests syntax: 8, 64K, 1M, 8G)");
  c->add_option("-e,--maxbytes", o.max_bytes, "largest size");
  c->add_option("-f,--stepfactor", o.factor, "multiply the size by this factor between rows")->check(CLI::Range(2, 1024));
  c->add_option("--engine", o.engine, "analytic or flow")->check(CLI::IsMember({"analytic", "flow"}));
  c->add_option("--ranks", o.ranks, "use the first N GPUs (default: all)")->check(CLI::Range(1, 1 << 20));
  c->add_option("--group", o.group, "use these global GPU ranks, e.g. 0-7,16-23");
  c->add_option("--root", o.root, "root rank of Broadcast and Reduce");
  c->add_option("--channels", o.channels, "channels: independent rings / tree pairs (default: one per NIC rail across nodes, the searched rings on a direct-link node, else 1)")->check(CLI::Range(1, 64));
  c->add_option("--granularity", o.granularity, "auto, step or phase")->check(CLI::IsMember({"auto", "step", "phase"}));
  c->add_option("--ecmp", o.ecmp, "spine choice on a fat tree: hash (per-connection ECMP hash, static routing) or balanced "
                                  "(even rotation over the spines, as adaptive routing spreads); default: the scenario's fabric.ecmp")
      ->check(CLI::IsMember({"hash", "balanced"}));
  c->add_option("-d,--datatype", o.datatype, "element type: float, half, bfloat16, double, int8");
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

/// What the result table prints besides the rows.
struct TableContext {
  const CollectiveCliOptions& options;
  models::Collective collective;
  int ranks;
  const models::Cluster& cluster;
  std::uint64_t unit;     ///< bytes of one element, times the ranks for per-rank sizes
  int channels;           ///< ring channels of the runner
  std::string costs;      ///< the cost table's source and note
  const std::vector<double>& rank_ready;  ///< --skew (seconds per rank); empty: none
};

/// One size's figures under --skew, in microseconds: the per-rank wait is the rank's own time
/// (arrival to its last op's end) minus the same rank's time without skew.
struct SkewFigures {
  double from_first = 0, from_last = 0, mean_wait = 0, max_wait = 0;
  int max_rank = 0;
  std::vector<double> wait;
};

SkewFigures skew_figures(const planner::CollectiveResult& r) {
  SkewFigures f;
  const planner::SkewResult& s = *r.skew;
  f.from_first = s.from_first * 1e6;
  f.from_last = s.from_last * 1e6;
  for (std::size_t k = 0; k < s.rank_time.size(); ++k) {
    double w = (s.rank_time[k] - s.rank_time_unskewed[k]) * 1e6;
    if (std::fabs(w) < 1e-6 * std::max(1.0, s.rank_time_unskewed[k] * 1e6)) w = 0.0;  // rounding, not a wait (no "-0.00")
    f.wait.push_back(w);
    f.mean_wait += w / static_cast<double>(s.rank_time.size());
    if (k == 0 || w > f.max_wait) f.max_wait = w, f.max_rank = static_cast<int>(k);
  }
  if (std::fabs(f.mean_wait) < 1e-9) f.mean_wait = 0.0;
  return f;
}

/// "rank 3 50.00 us late" for up to 4 late ranks, else how many and the latest.
std::string describe_skew(const std::vector<double>& ready) {
  std::vector<std::size_t> late;
  for (std::size_t r = 0; r < ready.size(); ++r)
    if (ready[r] > 0) late.push_back(r);
  if (late.empty()) return "every rank arrives together";
  if (late.size() <= 4) {
    std::string s;
    for (std::size_t r : late) s += fmt::format("{}rank {} {} us late", s.empty() ? "" : ", ", r, format_time_us(ready[r] * 1e6));
    return s;
  }
  const auto last = std::max_element(ready.begin(), ready.end());
  return fmt::format("{} of {} ranks late, the last (rank {}) {} us after the first", late.size(), ready.size(),
                     last - ready.begin(), format_time_us(*last * 1e6));
}

/// Runs every size of the sweep, notes on stderr the candidates skipped as too large and a
/// --granularity phase that the chosen algorithm cannot honour (once each).
std::vector<planner::CollectiveResult> simulate_sizes(planner::CollectiveRunner& runner, const std::vector<std::uint64_t>& sizes,
                                                      const std::string& algo) {
  std::vector<planner::CollectiveResult> rows;
  std::vector<std::string> granularity_notes;  // printed once each, however many sizes use them
  for (const std::uint64_t bytes : sizes) {
    try {
      rows.push_back(runner.run(bytes));
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
      throw InputError({"<command line>", 0, 0}, "--algo", "an algorithm that can run this collective here", algo, e.what());
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

/// nccl-tests' table of `rows` in the format asked (text, csv or json) on stdout.
void print_table(const TableContext& c, const std::vector<planner::CollectiveResult>& rows) {
  const CollectiveCliOptions& o = c.options;
  const bool reduces = c.collective == models::Collective::AllReduce || c.collective == models::Collective::ReduceScatter ||
                       c.collective == models::Collective::Reduce;
  const std::string redop = reduces ? "sum" : "none";
  const int root = models::has_root(c.collective) ? o.root : -1;
  const double factor = models::busbw_factor(c.collective, c.ranks);
  double busbw_sum = 0;
  const auto count_of = [&](std::uint64_t bytes) { return bytes / c.unit; };  // per-rank count for per-rank sizes
  struct Row {
    std::uint64_t bytes, count;
    double us, algbw, busbw, bound_us, reached;
    const planner::CollectiveResult* r;
  };
  std::vector<Row> table;
  for (const auto& r : rows) {
    const double us = r.time * 1e6;
    const double algbw = static_cast<double>(r.bytes) / r.time / 1e9;
    table.push_back({r.bytes, count_of(r.bytes), us, algbw, algbw * factor, r.bound * 1e6, r.bound / r.time * 100.0, &r});
    busbw_sum += algbw * factor;
  }
  const double avg_busbw = table.empty() ? 0.0 : busbw_sum / static_cast<double>(table.size());

  if (o.format == "json") {
    nlohmann::json j;
    j["collective"] = std::string(models::to_string(c.collective));
    j["ranks"] = c.ranks;
    j["cluster"] = c.cluster.spec.name;
    j["engine"] = o.engine;
    j["rows"] = nlohmann::json::array();
    for (const auto& t : table) {
      j["rows"].push_back({{"size_B", t.bytes}, {"count", t.count}, {"type", o.datatype}, {"redop", redop}, {"root", root},
                           {"time_us", t.us}, {"algbw_GBps", t.algbw}, {"busbw_GBps", t.busbw},
                           {"algorithm", std::string(planner::to_string(t.r->algorithm))},
                           {"protocol", std::string(planner::to_string(t.r->protocol))},
                           {"granularity", std::string(models::to_string(t.r->granularity))},
                           {"bound_us", t.bound_us}, {"bound_reached_pct", t.reached}});
    }
    if (!c.rank_ready.empty()) {
      nlohmann::json ready = nlohmann::json::array();
      for (double t : c.rank_ready) ready.push_back(t * 1e6);
      j["skew"] = {{"spec", *o.skew}, {"rank_ready_us", ready}};
      for (std::size_t i = 0; i < table.size(); ++i) {
        const SkewFigures f = skew_figures(*table[i].r);
        j["rows"][i]["skew"] = {{"from_first_us", f.from_first}, {"from_last_us", f.from_last}, {"mean_wait_us", f.mean_wait},
                                {"max_wait_us", f.max_wait}, {"max_wait_rank", f.max_rank}, {"rank_wait_us", f.wait}};
      }
    }
    j["avg_busbw_GBps"] = avg_busbw;
    if (!c.cluster.perturbations.empty()) j["perturbations"] = c.cluster.perturbations;
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (o.format == "csv") {
    const bool skewed = !c.rank_ready.empty();
    std::cout << "size_B,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,granularity,bound_us,bound_reached_pct"
              << (skewed ? ",skew_from_first_us,skew_from_last_us,skew_mean_wait_us,skew_max_wait_us,skew_max_wait_rank" : "") << "\n";
    for (const auto& t : table) {
      std::cout << fmt::format("{},{},{},{},{},{:.6g},{:.6g},{:.6g},{},{},{},{:.6g},{:.4g}", t.bytes, t.count, o.datatype, redop, root,
                               t.us, t.algbw, t.busbw, planner::to_string(t.r->algorithm), planner::to_string(t.r->protocol),
                               models::to_string(t.r->granularity), t.bound_us, t.reached);
      if (skewed) {
        const SkewFigures f = skew_figures(*t.r);
        std::cout << fmt::format(",{:.6g},{:.6g},{:.6g},{:.6g},{}", f.from_first, f.from_last, f.mean_wait, f.max_wait, f.max_rank);
      }
      std::cout << "\n";
    }
    return;
  }
  std::cout << fmt::format("# ccsim collective: {} over {} ranks of {} ({} node{}, {} GPUs), {} engine, {} channel{} per ring\n",
                           models::to_string(c.collective), c.ranks, c.cluster.spec.name, c.cluster.nodes.size(),
                           c.cluster.nodes.size() == 1 ? "" : "s", c.cluster.topology.gpus().size(), o.engine, c.channels,
                           c.channels == 1 ? "" : "s");
  std::cout << fmt::format("# algorithm {}, protocol {}; costs: {}\n", o.algo, is_synth_option(o.algo) ? std::string("Simple") : o.protocol,
                           c.costs);
  for (const auto& line : c.cluster.perturbations) std::cout << "# what-if: " << line << "\n";
  std::cout << "# bound: lower bound from latency, per-rank volume and the max-flow cut (planner/collective/bounds.hpp)\n#\n";
  std::cout << fmt::format("#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:<18}  {:<8}  {:<5}  {:>7}  {:>7}\n", "size",
                           "count", "type", "redop", "root", "time", "algbw", "busbw", "algorithm", "protocol", "gran", "bound", "reached");
  std::cout << fmt::format("#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:<18}  {:<8}  {:<5}  {:>7}  {:>7}\n", "(B)",
                           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", "", "(us)", "(%)");
  for (const auto& t : table) {
    std::cout << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6.2f}  {:>6.2f}  {:<18}  {:<8}  {:<5}  {:>7}  {:>7.1f}\n", t.bytes,
                             t.count, o.datatype, redop, root, format_time_us(t.us), t.algbw, t.busbw,
                             planner::to_string(t.r->algorithm), planner::to_string(t.r->protocol),
                             models::to_string(t.r->granularity), format_time_us(t.bound_us), t.reached);
  }
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n", avg_busbw);
  if (c.rank_ready.empty()) return;
  // The same algorithm with the ranks arriving late: the time from the first and from the last
  // arrival, and each rank's wait (its own time, arrival to its last op's end, minus the time
  // same rank without skew; negative when others' progress shortened it).
  std::cout << "#\n# skew (--skew " << *o.skew << "): " << describe_skew(c.rank_ready)
            << "; the algorithm and protocol are the ones chosen without skew\n";
  std::cout << fmt::format("#{:>11}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n", "size", "no skew", "from first", "from last",
                           "mean wait", "max wait", "max rank");
  std::cout << fmt::format("#{:>11}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n", "(B)", "(us)", "(us)", "(us)", "(us)", "(us)", "");
  for (const auto& t : table) {
    const SkewFigures f = skew_figures(*t.r);
    std::cout << fmt::format("{:>12}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}\n", t.bytes, format_time_us(t.us),
                             format_time_us(f.from_first), format_time_us(f.from_last), format_time_us(f.mean_wait),
                             format_time_us(f.max_wait), f.max_rank);
  }
}

/// The note printed before a direct AlltoAll that hashed ECMP makes slow to simulate.
void note_slow_alltoall(const CollectiveCliOptions& o, models::Collective collective, int n, const models::ClusterSpec& cluster) {
  // Hashed ECMP under a large direct AlltoAll is the analytic engine's known slow case
  // (sim/analytic/analytic_engine.hpp): colliding connections give thousands of coupled flows with
  // distinct rates, each completion re-solving them (512 ranks of h100-16k-rail, 1 MiB: about
  // 10 minutes on 2 cores; 384 ranks: over 10 minutes at 1 MiB, 15 s at 1 GiB). Oversubscribed
  // spines bottleneck every flow alike and stay fast; a balanced spread has no collisions.
  // Not said where the direct schedule (n·(2n − 1) ops) is refused as too large anyway.
  const bool direct = o.algo == "auto" || o.algo == "direct";
  const bool direct_fits = static_cast<double>(n) * (2.0 * n - 1) <= static_cast<double>(planner::kMaxScheduleOps);
  if (collective == models::Collective::AlltoAll && direct && direct_fits && n >= 384 &&
      cluster.fabric.kind == models::FabricKind::FatTree && cluster.fabric.ecmp == models::Ecmp::Hash &&
      cluster.fabric.oversubscription <= 1.0) {
    std::cerr << "ccsim: note: direct AlltoAll over " << n
              << " ranks with hashed ECMP on a non-blocking fat tree can take minutes to simulate (ECMP collisions couple "
                 "thousands of flows); --ecmp balanced (adaptive routing's even spread) takes seconds and has no collisions\n";
  }
}

}  // namespace

int run_collective(const CollectiveCliOptions& o) {
  const auto collective = models::parse_collective(o.op);
  if (!collective) {
    throw InputError({"<command line>", 0, 0}, "--op", "allreduce, reducescatter, allgather, broadcast, reduce, alltoall or sendrecv",
                     "'" + o.op + "'");
  }
  if (o.dump_channels && o.format == "csv") {
    throw InputError({"<command line>", 0, 0}, "--format", "text or json with --dump-channels (the channel plan has no CSV form)",
                     "'" + o.format + "'");
  }
  planner::CollectiveOptions opts;
  opts.collective = *collective;
  const bool synthesized = is_synth_option(o.algo);
  if (synthesized && o.algo.size() == 6) (void)synth_option(o.algo, *collective, 0);  // the refusal of "synth:" alone
  opts.algorithm = synthesized ? std::optional<planner::Algorithm>(planner::Algorithm::Synthesized) : algorithm_option(o.algo);
  opts.protocol = protocol_option(o.protocol);
  const std::uint64_t lo = parse_size(o.min_bytes, "--minbytes");
  const std::uint64_t hi = parse_size(o.max_bytes, "--maxbytes");
  if (lo == 0) throw InputError({"<command line>", 0, 0}, "--minbytes", "a size above 0", o.min_bytes);
  if (hi < lo) throw InputError({"<command line>", 0, 0}, "--maxbytes", "a size at least --minbytes", o.max_bytes);
  opts.element_size = element_size(o.datatype);
  opts.engine = *models::parse_engine_kind(o.engine);  // checked by the option
  opts.channels = o.channels;
  opts.granularity = granularity_option(o.granularity);
  opts.root = o.root;

  models::Scenario scenario = load_cluster_scenario_file(o.scenario, o.catalog);
  if (!o.ecmp.empty()) {
    if (scenario.cluster.fabric.kind != models::FabricKind::FatTree) {
      throw InputError({"<command line>", 0, 0}, "--ecmp", "a scenario with a fat-tree fabric (spines to choose among)",
                       "'" + o.ecmp + "' on a scenario whose fabric is " +
                           (scenario.cluster.fabric.kind == models::FabricKind::None ? std::string("absent (one node)")
                                                                                     : "a " + std::string(models::to_string(scenario.cluster.fabric.kind))));
    }
    scenario.cluster.fabric.ecmp = o.ecmp == "balanced" ? models::Ecmp::Balanced : models::Ecmp::Hash;
  }
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  opts.gpus = select_gpus(cluster, o.ranks, o.group);
  const int n = static_cast<int>(opts.gpus.size());
  if (o.root < 0 || o.root >= n) throw InputError({"<command line>", 0, 0}, "--root", fmt::format("a rank from 0 to {}", n - 1), std::to_string(o.root));
  if (o.skew && o.dump_channels) {
    throw InputError({"<command line>", 0, 0}, "--skew", "no --skew with --dump-channels (nothing is simulated)", "'" + *o.skew + "'");
  }
  if (o.skew) opts.rank_ready = parse_skew(*o.skew, n);
  if (o.dump_channels) {
    const planner::ChannelPlan plan = planner::plan_channels(cluster, opts.gpus, opts.channels);
    std::cout << (o.format == "json" ? channel_dump_json(cluster, opts.gpus, plan) : channel_dump_text(cluster, opts.gpus, plan));
    return 0;
  }
  const TableChoice cost_table = collective_table(o.calibration, scenario, cluster);
  const planner::CostModel costs = planner::CostModel::load(cost_table.path);
  if (opts.algorithm == planner::Algorithm::Synthesized) {
    if (opts.protocol && *opts.protocol != planner::Protocol::Simple) {
      throw InputError({"<command line>", 0, 0}, "--protocol", "auto or Simple with --algo synth:FILE (MSCCL schedules run on Simple)", o.protocol);
    }
    if (o.skew) throw InputError({"<command line>", 0, 0}, "--skew", "no --skew with --algo synth:FILE", "'" + *o.skew + "'");
    if (o.channels != 0) {
      throw InputError({"<command line>", 0, 0}, "--channels", "no --channels with --algo synth:FILE (the file's thread blocks fix them)",
                       std::to_string(o.channels));
    }
    if (o.granularity == "phase") {
      throw InputError({"<command line>", 0, 0}, "--granularity", "auto or step with --algo synth:FILE (an MSCCL schedule is step by step)",
                       "'phase'");
    }
    const CollectiveSizes sizes = collective_sizes({lo, hi, o.factor, o.max_bytes}, *collective, opts.element_size, n);
    const std::vector<planner::CollectiveResult> rows = simulate_synthesized(cluster, costs, opts, o.algo, sizes.sizes);
    print_table({o, *collective, n, cluster, sizes.unit, 1, costs.source() + cost_table.note("--calibration", "calibration"), opts.rank_ready}, rows);
    return 0;
  }
  const std::unique_ptr<planner::CollectiveRunner> built = make_runner(cluster, costs, opts, o.algo, o.protocol);
  planner::CollectiveRunner& runner = *built;

  note_slow_alltoall(o, *collective, n, scenario.cluster);
  const CollectiveSizes sizes = collective_sizes({lo, hi, o.factor, o.max_bytes}, *collective, opts.element_size, n);
  const std::vector<planner::CollectiveResult> rows = simulate_sizes(runner, sizes.sizes, o.algo);
  print_table({o, *collective, n, cluster, sizes.unit, runner.channels(), costs.source() + cost_table.note("--calibration", "calibration"),
               opts.rank_ready},
              rows);
  return 0;
}

}  // namespace ccsim::cli
