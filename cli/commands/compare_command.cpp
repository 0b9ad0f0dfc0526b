#include "cli/commands/compare_command.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands/collective_command.hpp"
#include "cli/options.hpp"
#include "planner/algorithms/nccl_names.hpp"
#include "support/input_error.hpp"
#include "support/input_file.hpp"
#include "validate/measurements/compare.hpp"

namespace ccsim::cli {

using support::InputError;

CLI::App* add_compare_command(CLI::App& app, CompareCliOptions& o) {
  CLI::App* c = app.add_subcommand("compare", "Compare a real nccl-tests / rccl-tests log with ccsim's prediction (error per size, MAPE)");
  c->add_option("log", o.log, "nccl-tests stdout log")->required();
  c->add_option("--scenario", o.scenario, "scenario describing the measured system")->required();
  c->add_option("--engine", o.engine, "analytic or flow")->check(CLI::IsMember({"analytic", "flow"}));
  c->add_option("--ranks", o.ranks, "rank count when the log does not say")->check(CLI::Range(1, 1 << 20));
  c->add_option("--algo", o.algo, "auto (NCCL's choice), an algorithm name (ccsim's or NCCL's, case-insensitive), or the NCCL_ALGO "
                                  "list the log was taken with (Ring,Tree or ^NVLS)");
  c->add_option("--protocol", o.protocol, "auto, LL, LL128, Simple, or the NCCL_PROTO list the log was taken with (LL,LL128 or ^LL)");
  c->add_option("--format", o.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  c->add_option("--calibration", o.calibration, "calibration table (default: the scenario's simulation.calibration, else scenarios/calibration/nccl.yaml, rccl.yaml for AMD GPUs)");
  c->add_option("--catalog", o.catalog, "hardware catalog directory");
  c->add_option("--op", o.op, "the collective the log measured, for logs that do not name it (allreduce, reducescatter, "
                              "allgather, broadcast, reduce, alltoall, sendrecv)");
  return c;
}

void name_collective(std::vector<validate::LogTest>& tests, const std::string& op_name) {
  if (op_name.empty()) return;
  const auto op = models::parse_collective(op_name);
  if (!op) {
    throw InputError({"<command line>", 0, 0}, "--op", "allreduce, reducescatter, allgather, broadcast, reduce, alltoall or sendrecv",
                     "'" + op_name + "'");
  }
  for (auto& test : tests) {
    if (test.collective && *test.collective != *op) {
      throw InputError({"<command line>", 0, 0}, "--op",
                       fmt::format("the collective the log names ({}, '{}')", models::to_string(*test.collective), test.name),
                       "'" + op_name + "'");
    }
    test.collective = op;
    if (test.name.empty()) test.name = "--op " + op_name;
  }
}

int run_compare(const CompareCliOptions& o) {
  std::istringstream in(support::read_input_file(o.log, {"an nccl-tests log file"}));
  auto tests = validate::parse_nccl_tests_log(in, o.log);
  name_collective(tests, o.op);
  const models::Scenario scenario = load_cluster_scenario_file(o.scenario, o.catalog);
  const models::Cluster cluster = models::build_scenario_cluster(scenario);
  const TableChoice table = collective_table(o.calibration, scenario, cluster);
  const planner::CostModel costs = planner::CostModel::load(table.path);
  validate::CompareOptions opts;
  opts.engine = *models::parse_engine_kind(o.engine);  // checked by the option
  if (o.ranks > 0) opts.nranks = o.ranks;
  // NCCL_ALGO / NCCL_PROTO lists (the settings the log was taken with) or one name each.
  if (planner::is_nccl_list(o.algo)) {
    try {
      (void)planner::parse_nccl_algo(o.algo, models::Collective::AllReduce);
    } catch (const std::invalid_argument& e) {
      throw InputError({"<command line>", 0, 0}, "--algo", "an NCCL_ALGO value NCCL accepts ([^]NAME[,NAME...][;function:...])", "'" + o.algo + "'",
                       e.what());
    }
    opts.nccl_algo = o.algo;
  } else {
    opts.algorithm = algorithm_option(o.algo);
  }
  if (planner::is_nccl_list(o.protocol)) {
    try {
      (void)planner::parse_nccl_proto(o.protocol, models::Collective::AllReduce);
    } catch (const std::invalid_argument& e) {
      throw InputError({"<command line>", 0, 0}, "--protocol", "an NCCL_PROTO value NCCL accepts ([^]LL|LL128|Simple[,...])",
                       "'" + o.protocol + "'", e.what());
    }
    opts.nccl_proto = o.protocol;
  } else {
    opts.protocol = protocol_option(o.protocol);
  }
  nlohmann::json all = nlohmann::json::array();
  std::ostringstream text;
  validate::Comparer comparer(cluster, costs, opts);  // equal sizes are simulated once, across the log's tests too
  for (const auto& test : tests) {
    validate::CompareResult r;
    try {
      r = comparer.compare(test);
    } catch (const std::invalid_argument& e) {
      throw InputError({o.log, test.rows.empty() ? 0 : test.rows.front().line, 0}, "", "a log ccsim can replay on this scenario",
                       "'" + test.name + "'", e.what());
    }
    if (o.format == "json") {
      nlohmann::json j;
      j["test"] = r.test;
      j["collective"] = std::string(models::to_string(r.collective));
      j["ranks"] = r.nranks;
      j["rows"] = nlohmann::json::array();
      for (const auto& row : r.rows) {
        j["rows"].push_back({{"size_B", row.size}, {"measured_us", row.measured_us}, {"simulated_us", row.simulated_us},
                             {"error_pct", row.error_pct}, {"algorithm", std::string(planner::to_string(row.algorithm))},
                             {"protocol", std::string(planner::to_string(row.protocol))}});
      }
      j["mape_pct"] = r.mape;
      j["mape_ge_1MiB_pct"] = r.large > 0 ? nlohmann::json(r.mape_large) : nlohmann::json(nullptr);
      all.push_back(j);
      continue;
    }
    text << fmt::format("# ccsim compare: {} ({}) over {} ranks, measured {} vs scenario {} ({} engine){}\n", r.test,
                        models::to_string(r.collective), r.nranks, o.log, cluster.spec.name, o.engine,
                        table.note("--calibration", "calibration"));
    text << fmt::format("#{:>11}  {:>10}  {:>10}  {:>8}  {:<18}  {:<8}\n", "size", "measured", "simulated", "error", "algorithm",
                             "protocol");
    text << fmt::format("#{:>11}  {:>10}  {:>10}  {:>8}  {:<18}  {:<8}\n", "(B)", "(us)", "(us)", "(%)", "", "");
    for (const auto& row : r.rows) {
      text << fmt::format("{:>12}  {:>10}  {:>10}  {:>+8.1f}  {:<18}  {:<8}\n", row.size, format_time_us(row.measured_us),
                               format_time_us(row.simulated_us), row.error_pct, planner::to_string(row.algorithm),
                               planner::to_string(row.protocol));
    }
    text << fmt::format("# MAPE, all {} sizes     : {:.1f} %\n", r.rows.size(), r.mape);
    if (r.large > 0) text << fmt::format("# MAPE, {} sizes >= 1 MiB: {:.1f} %\n", r.large, r.mape_large);
  }
  // Everything is printed at the end, so a log whose later test fails leaves no partial output.
  if (o.format == "json") std::cout << all.dump(2) << "\n";
  else std::cout << text.str();
  return 0;
}

}  // namespace ccsim::cli
