#include "cli/commands/synthesize_command.hpp"

#include <chrono>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands/collective_command.hpp"
#include "cli/options.hpp"
#include "models/collective/collective.hpp"
#include "planner/synthesis/msccl_xml.hpp"
#include "planner/collective/synthesis_runner.hpp"
#include "planner/synthesis/tree_xml.hpp"
#include "support/output_dir.hpp"
#include "support/progress.hpp"
#include "support/input_error.hpp"

namespace ccsim::cli {

using support::InputError;

CLI::App* add_synthesize_command(CLI::App& app, SynthesizeCliOptions& o) {
  CLI::App* c = app.add_subcommand("synthesize", "Synthesize a collective's schedule for the fabric (ForestColl trees) and compare it with NCCL's");
  c->add_option("scenario", o.scenario, "scenario YAML file")->required();
  c->add_option("--op", o.op, "allgather, reducescatter or allreduce")->required();
  c->add_option("--method", o.method,
                "forest (ForestColl's throughput-optimal spanning trees), greedy (latency-aware TACOS-style link-chunk matching, "
                "up to 128 ranks) or auto (both timed per size, the faster kept)")
      ->check(CLI::IsMember({"auto", "forest", "greedy"}));
  c->add_option("-b,--minbytes", o.min_bytes, "smallest size (nccl-tests syntax: 8, 64K, 1M, 8G)");
  c->add_option("-e,--maxbytes", o.max_bytes, "largest size");
  c->add_option("-f,--stepfactor", o.factor, "multiply the size by this factor between rows")->check(CLI::Range(2, 1024));
  c->add_option("--engine", o.engine, "analytic or flow")->check(CLI::IsMember({"analytic", "flow"}));
  c->add_option("--ranks", o.ranks, "use the first N GPUs (default: all)")->check(CLI::Range(1, 1 << 20));
  c->add_option("--group", o.group, "use these global GPU ranks, e.g. 0-7,16-23");
  c->add_option("--chunks", o.chunks, "forest: pipeline chunks per tree (default: by size, up to 16); greedy: chunks per rank's block (default: one per 512 KiB, up to 8)")->check(CLI::Range(1, 256));
  c->add_option("-d,--datatype", o.datatype, "element type: float, half, bfloat16, double, int8");
  c->add_option("--format", o.format, "text, csv or json")->check(CLI::IsMember({"text", "csv", "json"}));
  c->add_option("--calibration", o.calibration, "calibration table (default: the scenario's simulation.calibration, else the shipped one)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  c->add_option("--out", o.out, "directory to write the trees (ForestColl XML) and the schedule (MSCCL XML) into")
      ->check([](const std::string& v) { return v.empty() ? std::string("--out: an empty path") : std::string(); });
  c->add_option("--max-tree-ranks", o.max_tree_ranks,
                "pack trees up to this many ranks; above, print the exact optimum, the node-level trees (forest, or auto above "
                "128 ranks) with the fraction of the optimum they reach, and NCCL's distance from it (packing grows as N^3: 128 "
                "ranks take about 20 s on 2 cores)")
      ->check(CLI::Range(2, 1 << 20));
  return c;
}

namespace {

/// "node0/gpu0-7, node1/gpu0-3": the GPUs of `ranks`, grouped by node.
std::string describe_ranks(const planner::synthesis::SynthesisGraph& g, const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < 4; ++i) out += (i ? ", " : "") + g.name[static_cast<std::size_t>(ranks[i])];
  if (ranks.size() > 4) out += ", ...";
  return out;
}

struct ForestSummary {
  std::string name;
  const planner::synthesis::Forest* f;
};

}  // namespace

int run_synthesize(const SynthesizeCliOptions& o) {
  const auto collective = models::parse_collective(o.op);
  if (!collective || (*collective != models::Collective::AllGather && *collective != models::Collective::ReduceScatter &&
                      *collective != models::Collective::AllReduce)) {
    throw InputError({"<command line>", 0, 0}, "--op", "allgather, reducescatter or allreduce (what ForestColl's trees build)", "'" + o.op + "'");
  }
  const std::uint64_t lo = parse_size(o.min_bytes, "--minbytes");
  const std::uint64_t hi = parse_size(o.max_bytes, "--maxbytes");
  if (lo == 0) throw InputError({"<command line>", 0, 0}, "--minbytes", "a size above 0", o.min_bytes);
  if (hi < lo) throw InputError({"<command line>", 0, 0}, "--maxbytes", "a size at least --minbytes", o.max_bytes);
  const models::Scenario scenario = load_cluster_scenario_file(o.scenario, o.catalog);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  planner::synthesis::SynthesisOptions opts;
  opts.collective = *collective;
  opts.gpus = select_gpus(cluster, o.ranks, o.group);
  opts.element_size = element_size(o.datatype);
  opts.chunks = o.chunks;
  opts.engine = *models::parse_engine_kind(o.engine);  // checked by the option
  opts.method = o.method == "forest" ? planner::synthesis::Method::Forest
                : o.method == "greedy" ? planner::synthesis::Method::Greedy : planner::synthesis::Method::Auto;
  const int n = static_cast<int>(opts.gpus.size());
  opts.forest.build_trees = n <= o.max_tree_ranks;
  const bool greedy_possible = opts.method != planner::synthesis::Method::Forest && n <= planner::synthesis::kGreedyMaxRanks;
  if (!opts.forest.build_trees && !greedy_possible && !o.out.empty()) {
    throw InputError({"<command line>", 0, 0}, "--out", fmt::format("no --out above --max-tree-ranks {} (no schedule is built there: node-level trees are timed in the fluid limit)", o.max_tree_ranks),
                     fmt::format("{} ranks", n), "raise --max-tree-ranks (synthesis grows as N^3) or choose fewer ranks");
  }
  const TableChoice cost_table = collective_table(o.calibration, scenario, cluster);
  const planner::CostModel costs = planner::CostModel::load(cost_table.path);

  const std::string stem(models::nccl_tests_name(*collective));
  std::optional<support::OutputDir> out;
  if (!o.out.empty()) {
    out.emplace(o.out, support::OutputDirRules{.option = "--out", .create = support::CreateDir::AtWrite,
                                               .regular_files = {stem + ".msccl.xml", "allgather.trees.xml", "reducescatter.trees.xml"},
                                               .probe_prefix = {}});
    out->prepare();
  }
  // Trees split every collective per rank: sizes go down to a whole number of elements per rank.
  const CollectiveSizes sizes = collective_sizes({lo, hi, o.factor, o.max_bytes}, *collective, opts.element_size, n);
  std::vector<std::uint64_t> wanted;
  const std::uint64_t per_rank = static_cast<std::uint64_t>(n) * opts.element_size;
  for (std::uint64_t bytes : sizes.sizes) {
    const std::uint64_t b = bytes / per_rank * per_rank;
    if (b > 0 && (wanted.empty() || wanted.back() != b)) wanted.push_back(b);
  }
  if (wanted.empty()) {
    throw InputError({"<command line>", 0, 0}, "--maxbytes",
                     fmt::format("a size of at least one {}-byte element per rank ({} bytes for {} ranks)", opts.element_size, per_rank, n),
                     o.max_bytes);
  }
  const auto start = std::chrono::steady_clock::now();
  // Progress on stderr (support/progress.hpp: on a terminal, or with CCSIM_PROGRESS=1).
  support::Progress progress("ccsim synthesize");
  progress.update(fmt::format("synthesizing the schedule over {} ranks", n));
  planner::synthesis::SynthesisRunner runner(cluster, costs, opts);
  progress.finish();
  const double synth_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << fmt::format("ccsim: note: {} in {:.2f} s\n",
                           runner.uses_forest()              ? "trees synthesized"
                           : runner.aggregated_allgather() || runner.aggregated_reducescatter() ? "optimum and node-level trees found"
                                                                                                 : "optimum found",
                           synth_seconds);
  std::vector<planner::synthesis::SynthesisRow> rows;
  for (std::uint64_t b : wanted) {
    progress.update("timing the sizes", rows.size(), wanted.size());
    rows.push_back(runner.run(b));
  }
  progress.finish();
  const bool timed = runner.uses_forest() || runner.uses_greedy();
  const bool greedy_last = timed && rows.back().method == planner::synthesis::Method::Greedy;
  std::vector<ForestSummary> forests;
  if (runner.allgather()) forests.push_back({"allgather", runner.allgather()});
  if (runner.reducescatter()) forests.push_back({"reducescatter", runner.reducescatter()});
  // What --out writes: the schedule of the method chosen at the largest size.
  std::vector<ForestSummary> written_trees = forests;
  if (greedy_last) {
    const int k = runner.greedy_chunks(rows.back().bytes);
    written_trees.clear();
    if (const auto* f = runner.greedy_allgather(k, rows.back().bytes)) written_trees.push_back({"allgather", f});
    if (const auto* f = runner.greedy_reducescatter(k, rows.back().bytes)) written_trees.push_back({"reducescatter", f});
  }

  std::string written;
  if (out) {
    const planner::synthesis::GridSchedule grid = greedy_last ? runner.greedy_grid_schedule(rows.back().bytes) : runner.grid_schedule();
    const std::string xml = planner::synthesis::to_msccl_xml(grid.schedule, fmt::format("ccsim {} {} {} ranks", greedy_last ? "greedy" : "forest", stem, n),
                                                             rows.front().bytes, hi);
    out->create();
    for (const ForestSummary& s : written_trees) out->write(s.name + ".trees.xml", planner::synthesis::to_tree_xml(*s.f, runner.graph(), s.name));
    out->write(stem + ".msccl.xml", xml);
    written = fmt::format("# wrote {}: {}.msccl.xml ({} schedule, {} chunks per rank's block, {}){}\n", o.out, stem, greedy_last ? "greedy" : "forest",
                          grid.grid,
                          greedy_last ? "the greedy's chunks" : grid.exact ? "the trees' weights exact"
                                                                           : fmt::format("the trees' weights rounded: fluid time x{:.4f}", grid.fluid_ratio),
                          written_trees.size() == 2 ? ", allgather.trees.xml, reducescatter.trees.xml" : ", " + written_trees.front().name + ".trees.xml");
  }
  std::vector<std::pair<std::string, const planner::synthesis::AggregatedForest*>> aggregated;
  if (runner.aggregated_allgather()) aggregated.emplace_back("allgather", runner.aggregated_allgather());
  if (runner.aggregated_reducescatter()) aggregated.emplace_back("reducescatter", runner.aggregated_reducescatter());
  // The trees' rate over the optimum's: at most 1 but for rounding (the two are found apart).
  const auto fraction = [&](const planner::synthesis::AggregatedForest& a) {
    const planner::synthesis::Forest* opt = a.reduce_scatter ? runner.reducescatter() : runner.allgather();
    if (!opt) return 0.0;
    const double x = a.rate / opt->rate();
    return x > 1 && x < 1 + 1e-9 ? 1.0 : x;
  };
  const auto aggregated_json = [&](const planner::synthesis::AggregatedForest& a) {
    const models::Topology& t = cluster.topology;
    return nlohmann::json{{"nodes", a.nodes}, {"rails", a.ranks_per_node}, {"leaves_per_rail", a.leaves}, {"height", a.height},
                          {"intra_node_forests", a.intra_classes}, {"rate_GBps", a.rate / 1e9}, {"algbw_GBps", a.rate * n / 1e9},
                          {"fraction_of_optimum", fraction(a)},
                          {"bottleneck", fmt::format("{} -> {}", t.name(t.link_source(a.bottleneck)), t.name(t.link_target(a.bottleneck)))},
                          {"bottleneck_blocks", a.bottleneck_load}, {"routes", a.routes}};
  };
  const double factor = models::busbw_factor(*collective, n);
  const bool reduces = *collective != models::Collective::AllGather;
  const std::string redop = reduces ? "sum" : "none";
  struct Cells {
    double us, algbw, busbw, bound_us, reached, forest_us, of_forest, fluid, nccl_us, nccl_busbw, gain;
  };
  const auto cells = [&](const planner::synthesis::SynthesisRow& r) {
    const double nccl_algbw = static_cast<double>(r.bytes) / r.nccl.time / 1e9;
    if (r.time <= 0) {  // no trees built: the synthesized columns are 0
      return Cells{0, 0, 0, r.bound * 1e6, 0, r.forest_time * 1e6, 0, 0, r.nccl.time * 1e6, nccl_algbw * factor, 0};
    }
    const double algbw = static_cast<double>(r.bytes) / r.time / 1e9;
    return Cells{r.time * 1e6, algbw, algbw * factor, r.bound * 1e6, r.bound / r.time * 100.0, r.forest_time * 1e6,
                 r.forest_time / r.time * 100.0, r.forest_time / r.fluid_time, r.nccl.time * 1e6, nccl_algbw * factor, r.nccl.time / r.time};
  };
  if (o.format == "json") {
    nlohmann::json j;
    j["collective"] = std::string(models::to_string(*collective));
    j["ranks"] = n;
    j["cluster"] = cluster.spec.name;
    j["engine"] = o.engine;
    j["method"] = o.method;
    for (const ForestSummary& s : forests) {
      j["forests"][s.name] = {{"trees", s.f->trees.size()}, {"height", s.f->height()}, {"rate_GBps", s.f->rate() / 1e9},
                              {"optimal_algbw_GBps", s.f->rate() * n / 1e9}, {"tight_cut_ranks", s.f->tight_cut},
                              {"tight_cut_GBps", s.f->tight_bandwidth / 1e9}, {"rank_classes", s.f->rank_classes},
                              {"max_flows", s.f->max_flows}};
    }
    for (const auto& [name, a] : aggregated) {
      j["aggregated"][name] = aggregated_json(*a);
    }
    if (!runner.aggregated_refusal().empty()) j["aggregated_refusal"] = runner.aggregated_refusal();
    j["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
      const Cells c = cells(r);
      j["rows"].push_back({{"size_B", r.bytes}, {"count", r.bytes / sizes.unit}, {"type", o.datatype}, {"redop", redop},
                           {"time_us", c.us}, {"algbw_GBps", c.algbw}, {"busbw_GBps", c.busbw}, {"chunks", r.chunks}, {"ops", r.ops},
                           {"bound_us", c.bound_us}, {"bound_reached_pct", c.reached}, {"forest_us", c.forest_us},
                           {"forest_reached_pct", c.of_forest}, {"fluid_fraction", c.fluid},
                           {"nccl", {{"algorithm", std::string(planner::to_string(r.nccl.algorithm))},
                                     {"protocol", std::string(planner::to_string(r.nccl.protocol))},
                                     {"time_us", c.nccl_us}, {"busbw_GBps", c.nccl_busbw}}},
                           {"speedup_vs_nccl", c.gain},
                           {"aggregated_us", r.aggregated_time > 0 ? nlohmann::json(r.aggregated_time * 1e6) : nlohmann::json(nullptr)}});
      if (timed) {
        j["rows"].back()["method"] = std::string(planner::synthesis::to_string(r.method));
        j["rows"].back()["forest_schedule_us"] = r.forest_schedule_time > 0 ? nlohmann::json(r.forest_schedule_time * 1e6) : nlohmann::json(nullptr);
        j["rows"].back()["greedy_us"] = r.greedy_time > 0 ? nlohmann::json(r.greedy_time * 1e6) : nlohmann::json(nullptr);
      }
    }
    std::cout << j.dump(2) << "\n";
  } else if (o.format == "csv") {
    std::cout << "size_B,count,type,redop,method,time_us,algbw_GBps,busbw_GBps,chunks,ops,bound_us,bound_reached_pct,forest_us,forest_reached_pct,fluid_fraction,"
                 "nccl_algorithm,nccl_protocol,nccl_time_us,nccl_busbw_GBps,speedup_vs_nccl,aggregated_us\n";
    for (const auto& r : rows) {
      const Cells c = cells(r);
      std::cout << fmt::format("{},{},{},{},{},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.4g},{:.6g},{:.4g},{:.6g},{},{},{:.6g},{:.6g},{:.4g},{}\n", r.bytes,
                               r.bytes / sizes.unit, o.datatype, redop, timed ? planner::synthesis::to_string(r.method) : "none", c.us, c.algbw, c.busbw, r.chunks, r.ops, c.bound_us, c.reached,
                               c.forest_us, c.of_forest, c.fluid, planner::to_string(r.nccl.algorithm), planner::to_string(r.nccl.protocol),
                               c.nccl_us, c.nccl_busbw, c.gain, r.aggregated_time > 0 ? fmt::format("{:.6g}", r.aggregated_time * 1e6) : "");
    }
  } else {
    std::cout << fmt::format("# ccsim synthesize: {} over {} ranks of {} ({} node{}, {} GPUs), method {}, {} engine\n",
                             models::to_string(*collective), n, cluster.spec.name, cluster.nodes.size(),
                             cluster.nodes.size() == 1 ? "" : "s", cluster.topology.gpus().size(), o.method, o.engine);
    for (const auto& line : cluster.perturbations) std::cout << "# what-if: " << line << "\n";
    for (const ForestSummary& s : forests) {
      std::set<int> roots;
      for (const auto& t : s.f->trees) roots.insert(t.root);
      if (runner.uses_forest()) {
        std::cout << fmt::format("# {} trees: {} for {} roots, height {}; optimum {:.2f} GB/s per root = algbw {:.2f} GB/s\n", s.name,
                                 s.f->trees.size(), roots.size(), s.f->height(), s.f->rate() / 1e9, s.f->rate() * n / 1e9);
      } else {
        std::cout << fmt::format("# {} optimum {:.4g} GB/s per root = algbw {:.2f} GB/s ({} rank class{} tested)\n", s.name, s.f->rate() / 1e9,
                                 s.f->rate() * n / 1e9, s.f->rank_classes, s.f->rank_classes == 1 ? "" : "es");
      }
      std::cout << fmt::format("#   tight cut: {} ({} of {} ranks), {:.2f} GB/s {} them\n", describe_ranks(runner.graph(), s.f->tight_cut),
                               s.f->tight_cut.size(), n, s.f->tight_bandwidth / 1e9, s.name == "allgather" ? "into" : "out of");
    }
    for (const auto& [name, a] : aggregated) {
      const models::Topology& t = cluster.topology;
      std::cout << fmt::format("# {} node-level trees: {} roots on {} nodes x {} rail{}, up to {} lea{} a rail, height {}, {} intra-node forest{}; "
                               "{:.4g} GB/s per root = algbw {:.2f} GB/s, {:.1f} % of the optimum\n",
                               name, a->ranks, a->nodes, a->ranks_per_node, a->ranks_per_node == 1 ? "" : "s", a->leaves, a->leaves == 1 ? "f" : "ves",
                               a->height, a->intra_classes, a->intra_classes == 1 ? "" : "s", a->rate / 1e9, a->rate * n / 1e9,
                               fraction(*a) * 100.0);
      std::cout << fmt::format("#   bottleneck: {} -> {} ({:.1f} GB/s), carrying {:.6g} x the rate of one root's block\n", t.name(t.link_source(a->bottleneck)),
                               t.name(t.link_target(a->bottleneck)), t.link(a->bottleneck).bandwidth / 1e9, a->bottleneck_load);
    }
    if (!runner.aggregated_refusal().empty()) {
      std::cout << "# node-level trees not built: " << runner.aggregated_refusal() << "\n";
    }
    std::cout << fmt::format("# costs: {} (the default row, Simple)\n", costs.source() + cost_table.note("--calibration", "calibration"));
    std::cout << written;
    if (runner.uses_greedy()) {
      std::cout << "# greedy: TACOS-style link-chunk matching on the router's routes (planner/synthesis/greedy.hpp), one tree per chunk\n";
    }
    double fluid = 1;
    for (const auto& r : rows) {
      if (r.fluid_time > 0 && r.method == planner::synthesis::Method::Forest) fluid = std::min(fluid, r.forest_time / r.fluid_time);
    }
    if (fluid < 0.999) {
      std::cout << fmt::format("# note: fluid {:.3f}: the trees take paths the router does not (a PCIe shortcut past an NVLink route or "
                               "a host-memory bounce), so the engine's links carry more than planned (docs/commands/synthesize.md, Limits)\n",
                               fluid);
    }
    std::cout << "# bound: planner/collective/bounds.hpp; forest: the trees' bandwidth term (S/N)/x*"
              << (*collective == models::Collective::AllReduce ? " for ReduceScatter plus AllGather" : " (ForestColl's optimum)") << "\n#\n";
    if (!timed) {
      std::cout << fmt::format("# packed trees not built: {} ranks is above --max-tree-ranks {} (packing grows as N^3); the optimum is exact{}\n#\n",
                               n, o.max_tree_ranks,
                               aggregated.empty() ? "" : "; trees: the node-level trees' bandwidth term on the engines' routes, reached: forest / trees");
      std::cout << fmt::format("#{:>11}  {:>12}  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}  {:<18}  {:>7}  {:>6}  {:>8}\n", "size", "count", "bound", "forest",
                               "trees", "reached", "optimal", "nccl", "time", "busbw", "headroom");
      std::cout << fmt::format("#{:>11}  {:>12}  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}  {:<18}  {:>7}  {:>6}  {:>8}\n", "(B)", "(elements)", "(us)", "(us)",
                               "(us)", "(%)", "(GB/s)", "(algorithm/proto)", "(us)", "(GB/s)", "(x)");
      for (const auto& r : rows) {
        const Cells c = cells(r);
        const std::string nccl = fmt::format("{}/{}", planner::to_string(r.nccl.algorithm), planner::to_string(r.nccl.protocol));
        const bool agg = r.aggregated_time > 0;
        std::cout << fmt::format("{:>12}  {:>12}  {:>7}  {:>7}  {:>7}  {:>7}  {:>8.2f}  {:<18}  {:>7}  {:>6.2f}  {:>8.2f}\n", r.bytes, r.bytes / sizes.unit,
                                 format_time_us(c.bound_us), format_time_us(c.forest_us), agg ? format_time_us(r.aggregated_time * 1e6) : "-",
                                 agg ? fmt::format("{:.1f}", r.forest_time / r.aggregated_time * 100.0) : "-",
                                 static_cast<double>(r.bytes) / r.forest_time / 1e9 * factor, nccl, format_time_us(c.nccl_us), c.nccl_busbw,
                                 r.nccl.time / r.forest_time);
      }
      return 0;
    }
    std::cout << fmt::format("#{:>11}  {:>12}  {:<6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}  {:>5}  {:<18}  {:>7}  {:>6}  {:>6}\n", "size",
                             "count", "method", "time", "algbw", "busbw", "chunks", "bound", "reached", "forest", "reached", "fluid", "nccl", "time",
                             "busbw", "gain");
    std::cout << fmt::format("#{:>11}  {:>12}  {:<6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}  {:>5}  {:<18}  {:>7}  {:>6}  {:>6}\n", "(B)",
                             "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(%)", "(us)", "(%)", "", "(algorithm/proto)",
                             "(us)", "(GB/s)", "(x)");
    for (const auto& r : rows) {
      const Cells c = cells(r);
      const std::string nccl = fmt::format("{}/{}", planner::to_string(r.nccl.algorithm), planner::to_string(r.nccl.protocol));
      std::cout << fmt::format("{:>12}  {:>12}  {:<6}  {:>7}  {:>6.2f}  {:>6.2f}  {:>6}  {:>7}  {:>7.1f}  {:>7}  {:>7.1f}  {:>5.3f}  {:<18}  {:>7}  {:>6.2f}  {:>6.2f}\n",
                               r.bytes, r.bytes / sizes.unit, planner::synthesis::to_string(r.method), format_time_us(c.us), c.algbw, c.busbw, r.chunks,
                               format_time_us(c.bound_us), c.reached, format_time_us(c.forest_us), c.of_forest, c.fluid, nccl,
                               format_time_us(c.nccl_us), c.nccl_busbw, c.gain);
    }
  }
  return 0;
}

}  // namespace ccsim::cli
