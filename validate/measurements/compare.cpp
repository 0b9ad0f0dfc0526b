#include "validate/measurements/compare.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "planner/algorithms/nccl_names.hpp"

namespace ccsim::validate {

Comparer::Comparer(const models::Cluster& cluster, const planner::CostModel& costs, CompareOptions options)
    : cluster_(cluster), costs_(costs), options_(std::move(options)) {}

Comparer::~Comparer() = default;

CompareResult Comparer::compare(const LogTest& test) {
  if (!test.collective) throw std::invalid_argument("the log does not say which collective it measured ('" + test.name + "'); name it with --op");
  const std::optional<int> n = options_.nranks ? options_.nranks : test.nranks;
  if (!n) throw std::invalid_argument("the log does not give its rank count; pass --ranks");
  const auto& gpus = cluster_.topology.gpus();
  if (*n < 1 || static_cast<std::size_t>(*n) > gpus.size()) {
    throw std::invalid_argument(fmt::format("the log has {} ranks but the scenario's cluster has {} GPUs", *n, gpus.size()));
  }
  CompareResult result;
  result.test = test.name;
  result.collective = *test.collective;
  result.nranks = *n;
  double abs_sum = 0, abs_large = 0;
  for (const LogRow& row : test.rows) {
    const auto element = type_size(row.type);
    if (!element) throw std::invalid_argument(fmt::format("line {}: unknown data type '{}'", row.line, row.type));
    const ResultKey key{*test.collective, *n, *element, row.size};
    auto found = results_.find(key);
    if (found == results_.end()) {
      std::unique_ptr<planner::CollectiveRunner>& runner = runners_[RunnerKey{*test.collective, *n, *element}];
      if (!runner) {
        planner::CollectiveOptions opts;
        opts.collective = *test.collective;
        opts.algorithm = options_.algorithm;
        opts.protocol = options_.protocol;
        if (!options_.nccl_algo.empty()) opts.algorithms = planner::parse_nccl_algo(options_.nccl_algo, opts.collective);
        if (!options_.nccl_proto.empty()) opts.protocols = planner::parse_nccl_proto(options_.nccl_proto, opts.collective);
        opts.engine = options_.engine;
        opts.element_size = *element;
        opts.gpus.assign(gpus.begin(), gpus.begin() + *n);
        runner = std::make_unique<planner::CollectiveRunner>(cluster_, costs_, opts);
      }
      planner::CollectiveResult simulated = runner->run(row.size);
      simulated.links = {};  // per-link records are not reported; keep the memo small
      found = results_.emplace(key, std::move(simulated)).first;
      ++simulations_;
    }
    const planner::CollectiveResult& sim = found->second;
    CompareRow out;
    out.size = row.size;
    out.measured_us = row.time_us;
    out.simulated_us = sim.time * 1e6;
    out.error_pct = (out.simulated_us - out.measured_us) / out.measured_us * 100.0;
    out.algorithm = sim.algorithm;
    out.protocol = sim.protocol;
    abs_sum += std::fabs(out.error_pct);
    if (row.size >= (1ULL << 20)) {
      abs_large += std::fabs(out.error_pct);
      ++result.large;
    }
    result.rows.push_back(out);
  }
  result.mape = result.rows.empty() ? 0.0 : abs_sum / static_cast<double>(result.rows.size());
  result.mape_large = result.large == 0 ? 0.0 : abs_large / result.large;
  return result;
}

CompareResult compare(const LogTest& test, const models::Cluster& cluster, const planner::CostModel& costs,
                      const CompareOptions& options) {
  return Comparer(cluster, costs, options).compare(test);
}

}  // namespace ccsim::validate
