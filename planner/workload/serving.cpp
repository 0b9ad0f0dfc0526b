#include "planner/workload/serving.hpp"

#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "support/yaml_fields.hpp"
#include "support/data_dir.hpp"

namespace ccsim::planner {

std::string ServingCalibration::default_path() {
  const std::filesystem::path base = support::data_dir();
  return (base / "calibration" / "serving.yaml").string();
}

ServingCalibration ServingCalibration::load(const std::string& path, const std::string& gpu) {
  const support::YamlSource doc =
      support::load_yaml_map_file(path, {"a serving calibration table (like scenarios/calibration/serving.yaml)"});
  const support::Fields root({doc}, "");
  root.reject_unknown({"source", "defaults", "gpus"});
  ServingCalibration c;
  c.source = root.optional_string("source").value_or("");
  // `defaults` must give every constant; per-GPU entries override any of them.
  const auto read = [&](const support::Fields& f, bool required) {
    f.reject_unknown({"prefill_step_overhead", "decode_step_overhead", "custom_allreduce_launch", "custom_allreduce_stage"});
    for (auto [key, slot, limit, what] :
         {std::tuple{"prefill_step_overhead", &c.prefill_step_overhead, 1.0, "a host overhead per step of at most 1s"},
          std::tuple{"decode_step_overhead", &c.decode_step_overhead, 1.0, "a host overhead per step of at most 1s"},
          std::tuple{"custom_allreduce_launch", &c.custom_allreduce_launch, 1e-3, "a launch latency of at most 1ms"},
          std::tuple{"custom_allreduce_stage", &c.custom_allreduce_stage, 1e-3, "a barrier latency of at most 1ms"}}) {
      if (!required && !f.has(key)) continue;
      *slot = f.quantity(key, support::Quantity::Time, false);
      if (*slot > limit) throw f.error(key, what);
    }
  };
  read(root.map("defaults"), true);
  if (const auto gpus = root.optional_map("gpus")) {
    if (const auto mine = gpus->optional_map(gpu)) read(*mine, false);
  }
  return c;
}

double sum_decode_steps(double first, double middle, double last, double n) {
  return n * (first + 2.0 * middle + last) / 4.0;
}

}  // namespace ccsim::planner
