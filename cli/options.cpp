#include "cli/options.hpp"

#include "support/input_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "models/hardware/catalog.hpp"
#include "models/collective/collective.hpp"
#include "support/input_error.hpp"
#include "support/numbers.hpp"
#include "support/units.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/collective/synthesis_runner.hpp"
#include "planner/workload/workload_runner.hpp"
#include "validate/measurements/nccl_tests_log.hpp"

namespace ccsim::cli {

using support::InputError;

models::Scenario load_scenario_file(const std::string& path, const std::string& catalog_dir, bool layout_rules) {
  const models::Catalog catalog = models::Catalog::load(catalog_dir.empty() ? models::Catalog::default_dir() : catalog_dir);
  return models::load_scenario(models::load_scenario_layers(path), path, catalog,
                               {.algorithm_names = planner::algorithm_names(), .layout_rules = layout_rules});
}

models::Scenario load_cluster_scenario_file(const std::string& path, const std::string& catalog_dir) {
  const models::Catalog catalog = models::Catalog::load(catalog_dir.empty() ? models::Catalog::default_dir() : catalog_dir);
  return models::load_scenario(models::load_scenario_layers(path), path, catalog,
                               {.algorithm_names = planner::algorithm_names(), .cluster_only = true});
}

std::string TableChoice::note(const std::string& option, const std::string& scenario_key) const {
  switch (origin) {
    case TableOrigin::CommandLine: return fmt::format(" (table {}, from {})", path, option);
    case TableOrigin::Scenario: return fmt::format(" (table {}, from the scenario's simulation.{})", path, scenario_key);
    case TableOrigin::Default: break;
  }
  return {};
}

TableChoice choose_table(const std::string& option, const std::string& scenario, const std::string& fallback) {
  if (!option.empty()) return {option, TableOrigin::CommandLine};
  if (!scenario.empty()) return {scenario, TableOrigin::Scenario};
  return {fallback, TableOrigin::Default};
}

TableChoice collective_table(const std::string& option, const models::Scenario& scenario, const models::Cluster& cluster) {
  return choose_table(option, scenario.simulation.calibration, planner::CostModel::default_path(cluster));
}

TableChoice compute_table(const std::string& option, const models::Scenario& scenario) {
  return choose_table(option, scenario.simulation.compute_calibration, planner::ComputeCalibration::default_path());
}

std::uint64_t parse_size(const std::string& text, const std::string& option) {
  const std::string expected = "a size such as 8, 64K, 1M or 8G (powers of 1024, as nccl-tests reads them) or 1GB";
  const std::string limit = fmt::format("a size of at most {} bytes (4 TiB)", models::kMaxCollectiveBytes);
  // nccl-tests' own form: an integer with an optional K, M, G or T suffix (powers of 1024).
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits > 0) {
    std::string lower;
    for (char c : text.substr(digits)) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const int shift = lower.empty() ? 0 : lower == "k" ? 10 : lower == "m" ? 20 : lower == "g" ? 30 : lower == "t" ? 40 : -1;
    if (shift >= 0) {
      const support::Parsed<std::int64_t> value = support::parse_integer(std::string_view(text).substr(0, digits));
      if (!value || static_cast<std::uint64_t>(value.value) > (models::kMaxCollectiveBytes >> shift)) {
        throw InputError({"<command line>", 0, 0}, option, limit, support::quote_token(text));
      }
      return static_cast<std::uint64_t>(value.value) << shift;
    }
  }
  double bytes = -1.0;
  try {
    bytes = support::parse_quantity(text, support::Quantity::Bytes);
  } catch (const support::UnitError&) {
    throw InputError({"<command line>", 0, 0}, option, expected, support::quote_token(text));
  }
  if (bytes > static_cast<double>(models::kMaxCollectiveBytes)) {
    throw InputError({"<command line>", 0, 0}, option, limit, support::quote_token(text));
  }
  if (bytes >= 0 && bytes == std::floor(bytes)) return static_cast<std::uint64_t>(bytes);
  throw InputError({"<command line>", 0, 0}, option, expected, support::quote_token(text));
}

std::vector<models::DeviceId> select_gpus(const models::Cluster& cluster, int ranks, const std::string& group) {
  const auto& all = cluster.topology.gpus();
  if (!group.empty()) {
    std::vector<models::DeviceId> out;
    std::stringstream in(group);
    for (std::string item; std::getline(in, item, ',');) {
      int a = 0, b = 0;
      char dash = 0;
      std::istringstream one(item);
      if (!(one >> a)) throw InputError({"<command line>", 0, 0}, "--group", "GPU ranks and ranges such as 0-7,16-23", "'" + item + "'");
      b = a;
      if (one >> dash && (dash != '-' || !(one >> b))) {
        throw InputError({"<command line>", 0, 0}, "--group", "GPU ranks and ranges such as 0-7,16-23", "'" + item + "'");
      }
      if (std::string rest; one >> rest) {
        throw InputError({"<command line>", 0, 0}, "--group", "GPU ranks and ranges such as 0-7,16-23", "'" + item + "'");
      }
      if (a < 0 || b < a || static_cast<std::size_t>(b) >= all.size()) {
        throw InputError({"<command line>", 0, 0}, "--group", fmt::format("GPU ranks from 0 to {}", all.size() - 1), "'" + item + "'");
      }
      for (int r = a; r <= b; ++r) {
        const models::DeviceId g = all[static_cast<std::size_t>(r)];
        if (std::find(out.begin(), out.end(), g) != out.end()) {
          throw InputError({"<command line>", 0, 0}, "--group", "each GPU at most once (one rank per GPU)",
                           "GPU " + std::to_string(r) + " twice");
        }
        out.push_back(g);
      }
    }
    return out;
  }
  if (ranks > 0) {
    if (static_cast<std::size_t>(ranks) > all.size()) {
      throw InputError({"<command line>", 0, 0}, "--ranks", fmt::format("at most the cluster's {} GPUs", all.size()), std::to_string(ranks));
    }
    return {all.begin(), all.begin() + ranks};
  }
  return all;
}

std::vector<std::uint64_t> sweep_sizes(std::uint64_t lo, std::uint64_t hi, int factor, std::uint64_t unit) {
  std::vector<std::uint64_t> sizes;
  const auto f = static_cast<std::uint64_t>(factor);
  for (std::uint64_t size = lo; size <= hi; size *= f) {
    const std::uint64_t bytes = size / unit * unit;
    // Rounding down never repeats a size: a row at least `unit` grows by at least one unit.
    if (bytes > 0) sizes.push_back(bytes);
    if (size > hi / f) break;  // the next row would pass hi (or overflow)
  }
  return sizes;
}

CollectiveSizes collective_sizes(const SizeSweep& sweep, models::Collective collective, std::uint32_t element_size, int ranks) {
  // Sizes as nccl-tests makes them: whole elements, and for ReduceScatter, AllGather and
  // AlltoAll a whole number of elements per rank.
  const bool per_rank = models::sized_per_rank(collective);
  CollectiveSizes out;
  out.unit = models::size_granule(collective, element_size, ranks);
  out.sizes = sweep_sizes(sweep.lo, sweep.hi, sweep.factor, out.unit);
  if (out.sizes.empty()) {
    throw InputError({"<command line>", 0, 0}, "--maxbytes",
                     fmt::format("a size range holding at least one whole {}-byte element{}", element_size,
                                 per_rank ? fmt::format(" per rank ({} bytes)", out.unit) : ""),
                     sweep.max_bytes);
  }
  return out;
}

std::unique_ptr<planner::CollectiveRunner> make_runner(const models::Cluster& cluster, const planner::CostModel& costs,
                                                       const planner::CollectiveOptions& opts, const std::string& algo,
                                                       const std::string& protocol, const std::string& algo_key) {
  std::unique_ptr<planner::CollectiveRunner> runner;
  try {
    runner = std::make_unique<planner::CollectiveRunner>(cluster, costs, opts);
  } catch (const std::invalid_argument& e) {
    throw InputError({"<command line>", 0, 0}, algo_key, "an algorithm this cluster supports", "'" + algo + "'", e.what());
  }
  if (runner->candidates().empty()) {
    const std::string why = opts.algorithm ? runner->unsupported(*opts.algorithm) : std::string();
    throw InputError({"<command line>", 0, 0}, algo_key,
                     fmt::format("an algorithm that implements {} with protocol {}", models::to_string(opts.collective), protocol),
                     "'" + algo + "'", why);
  }
  return runner;
}

std::optional<planner::Algorithm> algorithm_option(const std::string& text) {
  if (text == "auto") return std::nullopt;
  const auto a = planner::parse_algorithm(text);
  if (!a) throw InputError({"<command line>", 0, 0}, "--algo", "auto or an algorithm name (see --help)", "'" + text + "'");
  return a;
}

std::optional<planner::Protocol> protocol_option(const std::string& text) {
  if (text == "auto") return std::nullopt;
  const auto p = planner::parse_protocol(text);
  if (!p) throw InputError({"<command line>", 0, 0}, "--protocol", "auto, LL, LL128 or Simple", "'" + text + "'");
  return p;
}

std::optional<models::Granularity> granularity_option(const std::string& text) {
  if (text == "auto") return std::nullopt;
  const auto g = models::parse_granularity(text);
  if (!g) throw InputError({"<command line>", 0, 0}, "--granularity", "auto, step or phase", "'" + text + "'");
  return g;
}

std::string algorithm_help() {
  std::string help = "auto (NCCL's choice)";
  for (std::string_view name : planner::algorithm_names()) help += ", " + std::string(name);
  return help;
}

bool is_synth_option(const std::string& algo) { return algo.rfind("synth:", 0) == 0; }

SynthFile synth_option(const std::string& algo, models::Collective c, int ranks) {
  if (!is_synth_option(algo) || algo.size() == 6) {
    throw InputError({"<command line>", 0, 0}, "--algo", "synth:FILE with the path of an MSCCL XML schedule", "'" + algo + "'");
  }
  SynthFile f;
  f.path = algo.substr(6);
  f.text = support::read_input_file(f.path, "an MSCCL XML schedule");
  f.header = planner::synthesis::read_msccl_header(f.text, f.path);
  if (f.header.ranks != ranks) {
    throw InputError(f.header.where, "algo.ngpus", fmt::format("{} (the ranks of this run; --ranks or --group choose them)", ranks),
                     std::to_string(f.header.ranks));
  }
  if (f.header.collective != c) {
    throw InputError(f.header.where, "algo.coll", std::string(models::to_string(c)) + " (--op)", std::string(models::to_string(f.header.collective)));
  }
  planner::synthesis::check_msccl_computes(f.text, f.header, f.path);
  return f;
}

std::vector<std::uint64_t> synth_sizes(const SynthFile& f, const std::vector<std::uint64_t>& sizes, std::uint32_t element_size) {
  const std::uint64_t granule = static_cast<std::uint64_t>(f.header.chunks_per_loop) * element_size;
  std::vector<std::uint64_t> out;
  for (std::uint64_t b : sizes) {
    const std::uint64_t r = b / granule * granule;
    if (r > 0 && (out.empty() || out.back() != r)) out.push_back(r);
  }
  return out;
}

std::uint32_t element_size(const std::string& type) {
  if (const auto s = validate::type_size(type)) return *s;
  throw InputError({"<command line>", 0, 0}, "--datatype", "float, half, bfloat16, double, int8, ...", "'" + type + "'");
}

}  // namespace ccsim::cli
