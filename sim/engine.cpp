#include "sim/engine.hpp"

#include <stdexcept>
#include <string>

#include "sim/analytic_engine.hpp"
#include "sim/flow_engine.hpp"

namespace ccsim::sim {

std::unique_ptr<Engine> make_engine(std::string_view name, const models::Cluster& cluster) {
  if (name == "analytic") return std::make_unique<AnalyticEngine>(cluster);
  if (name == "flow") return std::make_unique<FlowEngine>(cluster);
  throw std::invalid_argument("unknown engine '" + std::string(name) + "' (expected analytic or flow)");
}

}  // namespace ccsim::sim
