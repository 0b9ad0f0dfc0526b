#include "validate/calibrate/step_time_model.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "support/atomic_file.hpp"
#include "models/hardware/catalog.hpp"
#include "support/input_error.hpp"
#include "support/numbers.hpp"
#include "models/scenario/scenario.hpp"
#include "models/scenario/effective_yaml.hpp"
#include "support/temp_files.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/algorithms/registry.hpp"
#include "planner/workload/serving.hpp"

namespace ccsim::validate {

using support::InputError;
using planner::ComputeCalibration;

namespace {

/// An error about the scenario with a row's overrides (its file is a removed temporary one),
/// placed at the row's line of the CSV file.
InputError at_row(const InputError& e, const std::string& file, const StepTimeRow& row) {
  return InputError({file, row.line, 0}, e.key(), e.expected(), e.found(),
                    fmt::format("in the scenario with this row's overrides ({}){}", row.text, e.hint().empty() ? "" : "; " + e.hint()));
}

/// One step-times row's simulation: its scenario, cluster and runner (which keeps the lowered
/// communication ops between candidate constants).
struct StepCase {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::CostModel costs;
  std::unique_ptr<planner::WorkloadRunner> runner;
};

/// Sets `key` (dotted path) in `doc` to the YAML scalar `value`.
void apply_override(YAML::Node doc, const std::string& key, const std::string& value, const std::string& file, int line) {
  YAML::Node node;
  try {
    node = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError({file, line, 0}, key, "a YAML scalar value", support::quote_token(value), e.msg);
  }
  if (value.empty() || !node || node.IsNull()) throw InputError({file, line, 0}, key, "a value after '='", "none");
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (true) {
    const std::size_t dot = key.find('.', pos);
    parts.push_back(key.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  // A number indexes a list (cluster.nodes.0.count); a missing map on the way is created (the
  // scenario loader then names an unknown key).
  YAML::Node cur = doc;
  std::string path;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (cur.IsSequence()) {
      const support::Parsed<std::int64_t> index = support::parse_integer(parts[i]);
      if (!index || index.value < 0 || index.value >= static_cast<std::int64_t>(cur.size())) {
        throw InputError({file, line, 0}, key, fmt::format("an index 0..{} into the list {}", cur.size() - 1, path),
                         support::quote_token(parts[i]));
      }
      const auto at = static_cast<std::size_t>(index.value);
      if (last) {
        cur[at] = node;
        return;
      }
      YAML::Node next = cur[at];
      cur.reset(next);
    } else if (cur.IsMap()) {
      if (last) {
        cur[parts[i]] = node;
        return;
      }
      YAML::Node next = cur[parts[i]];
      if (!next.IsDefined() || next.IsNull()) {
        next = YAML::Node(YAML::NodeType::Map);
        cur[parts[i]] = next;
      }
      cur.reset(next);
    } else {
      throw InputError({file, line, 0}, key, fmt::format("a key path through maps and lists of the scenario ({} is a value)", path),
                       support::quote_token(key));
    }
    path += (path.empty() ? "" : ".") + parts[i];
  }
}

std::unique_ptr<StepCase> make_case(const YAML::Node& base, const StepTimeRow& row, const std::string& file, const models::Catalog& catalog,
                                    const ComputeCalibration& start) {
  YAML::Node doc = YAML::Clone(base);
  bool layout = false, dp = false;
  for (const auto& [key, value] : row.overrides) {
    apply_override(doc, key, value, file, row.line);
    layout = layout || key == "strategy.tp" || key == "strategy.pp" || key == "strategy.cp" || key.rfind("cluster.", 0) == 0;
    dp = dp || key == "strategy.dp";
  }
  // Megatron derives the data-parallel size: dp = world / (tp·pp·cp), also when the cluster changes.
  if (layout && !dp && doc["strategy"].IsMap()) doc["strategy"].remove("dp");
  YAML::Emitter emitter;
  emitter << doc;
  static std::atomic<int> counter{0};
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("ccsim-calibrate-{}-{}.yaml", ::getpid(), counter++)).string();
  auto c = std::make_unique<StepCase>();
  {
    const support::TempFileGuard guard(path);
    {
      std::ofstream out(path);
      out << emitter.c_str() << "\n";
      if (!out) throw support::OutputError("cannot write the temporary scenario " + path);
    }
    try {
      c->scenario = models::load_scenario(path, catalog, {.algorithm_names = planner::algorithm_names()});
    } catch (const InputError& e) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
      throw at_row(e, file, row);
    }
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  c->cluster = models::build_scenario_cluster(c->scenario);
  // The collective costs `ccsim run` would use: the scenario's simulation.calibration, else the default.
  c->costs = planner::CostModel::load(c->scenario.simulation.calibration.empty() ? planner::CostModel::default_path(c->cluster)
                                                                                 : c->scenario.simulation.calibration);
  c->runner = std::make_unique<planner::WorkloadRunner>(c->scenario, c->cluster, c->costs, start, c->scenario.simulation.engine);
  if (c->scenario.workload->phase != models::WorkloadPhase::TrainingStep) {
    c->runner->set_serving(planner::ServingCalibration::load(planner::ServingCalibration::default_path(),
                                                             c->cluster.spec.groups.front().node.gpu.kind_names()));
  }
  return c;
}


}  // namespace

struct StepTimeModel::Impl {
  models::Catalog catalog;
  std::string file;
  std::vector<StepTimeRow> rows;
  std::vector<std::unique_ptr<StepCase>> cases;
  models::GpuSpec gpu;
};

StepTimeModel::StepTimeModel(const std::string& scenario_path, const std::string& step_times) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.file = step_times;
  m.rows = read_step_times(step_times);
  m.catalog = models::Catalog::load(models::Catalog::default_dir());
  const models::Scenario scenario = models::load_scenario(scenario_path, m.catalog, {.algorithm_names = planner::algorithm_names()});
  if (!scenario.workload) {
    throw InputError({scenario_path, 0, 0}, "workload", "a workload section (model, phase, ...) to simulate the measured steps",
                     "a scenario without one");
  }
  m.gpu = scenario.cluster.groups.front().node.gpu;
  // The rows' base: the scenario merged with its includes (effective_yaml), keeping of the
  // workload, strategy and simulation settings only those the user's files write, so that
  // derived values (dp, global_batch_size) are derived again for each row's overrides.
  YAML::Node base = YAML::Load(models::effective_yaml(scenario));
  for (const char* section : {"workload", "strategy", "simulation"}) {
    const YAML::Node& cbase = base;
    if (!cbase[section].IsDefined() || !cbase[section].IsMap()) continue;
    std::vector<std::string> derived;
    for (const auto& kv : cbase[section]) {
      const auto key = kv.first.as<std::string>();
      const bool written = std::any_of(scenario.layers.begin(), scenario.layers.end(), [&](const support::YamlSource& layer) {
        const YAML::Node& doc = layer.node;
        if (!doc.IsMap()) return false;
        const YAML::Node sec = doc[section];
        return sec.IsDefined() && sec.IsMap() && sec[key].IsDefined();
      });
      if (!written) derived.push_back(key);
    }
    for (const auto& key : derived) base[section].remove(key);
  }
  for (const StepTimeRow& row : m.rows) {
    m.cases.push_back(make_case(base, row, step_times, m.catalog, ComputeCalibration{}));
    const std::string row_gpu = m.cases.back()->cluster.spec.groups.front().node.gpu.name;
    if (row_gpu != m.gpu.name) {
      throw InputError({step_times, row.line, 0}, "overrides", "a cluster of the scenario's GPU " + m.gpu.name, support::quote_token(row_gpu),
                       "one calibration fits one GPU");
    }
  }
}

StepTimeModel::~StepTimeModel() = default;

const std::vector<StepTimeRow>& StepTimeModel::rows() const { return impl_->rows; }

const models::GpuSpec& StepTimeModel::gpu() const { return impl_->gpu; }

std::vector<double> StepTimeModel::operator()(const ComputeCalibration& c) {
  Impl& m = *impl_;
  std::vector<double> t;
  for (std::size_t i = 0; i < m.cases.size(); ++i) {
    m.cases[i]->runner->set_compute(c);
    planner::WorkloadResult r;
    try {
      r = m.cases[i]->runner->run();
    } catch (const InputError& e) {
      throw at_row(e, m.file, m.rows[i]);  // e.g. strategy.algorithms naming an algorithm the group cannot run
    }
    if (!r.feasible) {
      throw InputError({m.file, m.rows[i].line, 0}, "overrides", "a layout whose memory fits the GPU",
                       support::quote_token(m.rows[i].text) + " (out of memory)");
    }
    t.push_back(r.step_time);
  }
  return t;
}

}  // namespace ccsim::validate
