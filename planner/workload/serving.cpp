#include "planner/workload/serving.hpp"

#include <cmath>
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
  return load(path, std::vector<std::string>{gpu});
}

ServingCalibration ServingCalibration::load(const std::string& path, const std::vector<std::string>& gpu_names) {
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
    for (const std::string& gpu : gpu_names) {
      if (const auto mine = gpus->optional_map(gpu)) {
        read(*mine, false);
        break;
      }
    }
  }
  return c;
}

double sum_decode_steps(double first, double middle, double last, double n) {
  return n * (first + 2.0 * middle + last) / 4.0;
}

ServingSteps serving_steps(const models::WorkloadSpec& w) {
  ServingSteps s;
  s.prefill = w;
  s.prefill.phase = models::WorkloadPhase::Prefill;
  s.prefill.micro_batch_size = w.batch_size;
  s.prefill.sequence_length = w.input_len;
  const auto decode = [&](double context) {
    models::WorkloadSpec d = w;
    d.phase = models::WorkloadPhase::Decode;
    const double whole = std::floor(context);
    d.context_length = static_cast<std::int64_t>(whole) - (whole == context ? 1 : 0);
    d.generated_tokens = whole == context ? 2 : 1;
    return d;
  };
  s.decode_steps = static_cast<double>(w.output_len - 1);
  s.first = static_cast<double>(w.input_len) + 1.0;
  s.last = static_cast<double>(w.input_len) + s.decode_steps;
  s.middle = (s.first + s.last) / 2.0;
  s.decode_first = decode(s.first);
  s.decode_middle = decode(s.middle);
  s.decode_last = decode(s.last);
  return s;
}

ServingResult serving_result(const models::WorkloadSpec& w, const ServingSteps& steps, const ServingStepTimes& t) {
  const double n = steps.decode_steps;
  ServingResult sr;
  sr.ttft = t.prefill;
  sr.decode = {{steps.first, t.decode_first}, {steps.middle, t.decode_middle}, {steps.last, t.decode_last}};
  sr.e2e = sr.ttft + sum_decode_steps(t.decode_first, t.decode_middle, t.decode_last, n);
  sr.tpot = (sr.e2e - sr.ttft) / n;
  const double batch = static_cast<double>(w.batch_size);
  sr.output_tokens_per_s = batch * static_cast<double>(w.output_len) / sr.e2e;
  sr.total_tokens_per_s = batch * static_cast<double>(w.input_len + w.output_len) / sr.e2e;
  sr.prefill_compute = t.prefill_compute;
  sr.prefill_comm = t.prefill_comm;
  return sr;
}

}  // namespace ccsim::planner
