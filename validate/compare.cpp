#include "validate/compare.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::validate {

CompareResult compare(const LogTest& test, const models::Cluster& cluster, const planner::CostModel& costs,
                      const CompareOptions& options) {
  if (!test.collective) throw std::invalid_argument("the log does not say which collective it measured ('" + test.name + "')");
  const std::optional<int> n = options.nranks ? options.nranks : test.nranks;
  if (!n) throw std::invalid_argument("the log does not give its rank count; pass --ranks");
  const auto& gpus = cluster.topology.gpus();
  if (*n < 1 || static_cast<std::size_t>(*n) > gpus.size()) {
    throw std::invalid_argument(fmt::format("the log has {} ranks but the scenario's cluster has {} GPUs", *n, gpus.size()));
  }
  CompareResult result;
  result.test = test.name;
  result.collective = *test.collective;
  result.nranks = *n;
  planner::CollectiveOptions opts;
  opts.collective = *test.collective;
  opts.algorithm = options.algorithm;
  opts.protocol = options.protocol;
  opts.engine = options.engine;
  opts.gpus.assign(gpus.begin(), gpus.begin() + *n);
  std::optional<planner::CollectiveRunner> runner;
  std::uint32_t element = 0;
  double abs_sum = 0, abs_large = 0;
  for (const LogRow& row : test.rows) {
    const auto size = type_size(row.type);
    if (!size) throw std::invalid_argument(fmt::format("line {}: unknown data type '{}'", row.line, row.type));
    if (!runner || *size != element) {
      element = *size;
      opts.element_size = element;
      runner.emplace(cluster, costs, opts);
    }
    const planner::CollectiveResult sim = runner->run(row.size);
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

}  // namespace ccsim::validate
