#include "validate/calibrate/compute_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numbers>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "support/atomic_file.hpp"
#include "support/input_error.hpp"
#include "support/numbers.hpp"
#include "support/provenance.hpp"
#include "support/text_table.hpp"
#include "models/workload/program_builder.hpp"
#include "validate/calibrate/calibration_inputs.hpp"
#include "validate/calibrate/least_squares.hpp"

namespace ccsim::validate {

using support::InputError;
using planner::ComputeCalibration;

std::string_view to_string(ComputeConstant c) {
  switch (c) {
    case ComputeConstant::GemmEfficiency: return "gemm_efficiency";
    case ComputeConstant::GemmKOverhead: return "gemm_k_overhead";
    case ComputeConstant::AttentionEfficiency: return "attention_efficiency";
    case ComputeConstant::AttentionBackwardEfficiency: return "attention_backward_efficiency";
    case ComputeConstant::MemoryEfficiency: return "memory_efficiency";
    case ComputeConstant::KernelOverhead: break;
  }
  return "kernel_overhead";
}

double& constant_slot(ComputeCalibration& c, ComputeConstant constant) {
  switch (constant) {
    case ComputeConstant::GemmEfficiency: return c.gemm_efficiency;
    case ComputeConstant::GemmKOverhead: return c.gemm_k_overhead;
    case ComputeConstant::AttentionEfficiency: return c.attention_efficiency;
    case ComputeConstant::AttentionBackwardEfficiency: return c.attention_backward_efficiency;
    case ComputeConstant::MemoryEfficiency: return c.memory_efficiency;
    case ComputeConstant::KernelOverhead: break;
  }
  return c.kernel_overhead;
}

namespace {

/// Bounds of each constant (the loader's ranges) and a typical magnitude for the fit's scaling.
BoundedParameter bounds_of(ComputeConstant k, double value) {
  switch (k) {
    case ComputeConstant::KernelOverhead: return {std::string(to_string(k)), value, 0.0, 1e-3, std::max(value, 1e-6)};
    case ComputeConstant::GemmKOverhead: return {std::string(to_string(k)), value, 0.0, 65536.0, std::max(value, 64.0)};
    default: return {std::string(to_string(k)), value, 0.01, 1.0, value};
  }
}

/// The constant moved by about 10 % inside its bounds (an overhead at 0 moves by 1 us / 16 elements).
double perturbed(ComputeConstant k, double v) {
  switch (k) {
    case ComputeConstant::KernelOverhead: return v * 1.1 + (v == 0 ? 1e-6 : 0.0);
    case ComputeConstant::GemmKOverhead: return v * 1.1 + (v == 0 ? 16.0 : 0.0);
    default: return v * 0.9 >= 0.01 ? v * 0.9 : std::min(1.0, v * 1.1);
  }
}

double mape(const std::vector<RowResult>& rows, const std::vector<int>& which, bool after) {
  if (which.empty()) return 0;
  double sum = 0;
  for (int i : which) {
    const RowResult& r = rows[static_cast<std::size_t>(i)];
    sum += std::abs((after ? r.after : r.before) - r.measured) / r.measured;
  }
  return 100.0 * sum / static_cast<double>(which.size());
}

using Simulate = std::function<std::vector<double>(const ComputeCalibration&)>;

/// Fits `candidates` (in order) to `measured` (seconds per row) on `table.fit_rows`; fills
/// `table` (constants, rows, MAPE) and writes the fitted values into `fitted`, which comes in
/// with the constants fitted so far (by the GEMM table): the sensitivities and the fit start
/// there. `shipped` is the starting table, the rows' "before".
void fit_table(const std::vector<ComputeConstant>& candidates, const Simulate& simulate, const std::vector<double>& measured,
               const std::string& source, const ComputeCalibration& shipped, ComputeCalibration& fitted, TableFit& table) {
  const ComputeCalibration start = fitted;
  const std::vector<double> base = simulate(start);
  const std::vector<double> before = simulate(shipped);
  const auto nfit = static_cast<Eigen::Index>(table.fit_rows.size());
  // Sensitivity columns: relative change of each fitted row per relative change of the constant.
  std::vector<ComputeConstant> moving;
  std::vector<Eigen::VectorXd> columns;
  for (ComputeConstant k : candidates) {
    ConstantFit cf{k, constant_slot(fitted, k), constant_slot(fitted, k), false, source, {}};
    ComputeCalibration moved = start;
    const double v = constant_slot(moved, k);
    const double p = perturbed(k, v);
    constant_slot(moved, k) = p;
    const std::vector<double> t = simulate(moved);
    Eigen::VectorXd col(nfit);
    double largest = 0;
    for (Eigen::Index j = 0; j < nfit; ++j) {
      const auto row = static_cast<std::size_t>(table.fit_rows[static_cast<std::size_t>(j)]);
      largest = std::max(largest, std::abs(t[row] - base[row]) / base[row]);
      col(j) = (t[row] - base[row]) / base[row] / (v != 0 ? (p - v) / std::abs(v) : 1.0);
    }
    if (!(largest > 1e-9)) {
      cf.reason = "no fitted row's simulated time moves when it changes by 10 %: the rows do not constrain it";
    } else {
      moving.push_back(k);
      columns.push_back(col);
    }
    table.constants.push_back(cf);
  }
  if (table.fit_rows.size() < moving.size()) {
    std::vector<std::string> names;
    for (ComputeConstant k : moving) names.emplace_back(to_string(k));
    throw InputError({table.file, 0, 0}, "rows",
                     fmt::format("at least {} fitted rows, one per constant the rows constrain ({})", moving.size(), fmt::join(names, ", ")),
                     fmt::format("{} fitted row{}", table.fit_rows.size(), table.fit_rows.size() == 1 ? "" : "s"),
                     table.holdout_rows.empty() ? "" : "held-out rows are not fitted: add rows or use --holdout none");
  }
  // Separability: Gram-Schmidt over the normalized columns, in the candidates' order.
  std::vector<ComputeConstant> free;
  std::vector<Eigen::VectorXd> basis, accepted_cols;
  for (std::size_t i = 0; i < moving.size(); ++i) {
    const Eigen::VectorXd u = columns[i].normalized();
    Eigen::VectorXd rest = u;
    for (const auto& b : basis) rest -= b.dot(rest) * b;
    if (rest.norm() < kSeparationSine) {
      std::size_t closest = 0;
      for (std::size_t j = 1; j < accepted_cols.size(); ++j)
        if (std::abs(accepted_cols[j].dot(u)) > std::abs(accepted_cols[closest].dot(u))) closest = j;
      std::string with = std::string(to_string(free[closest]));
      if (free.size() > 1) with += " and the other fitted constants";
      for (auto& cf : table.constants)
        if (cf.constant == moving[i])
          cf.reason = fmt::format("cannot be separated from {} by these rows (sensitivity within {:.1f}° of theirs); kept at its table value",
                                  with, std::asin(std::min(1.0, rest.norm())) * 180.0 / std::numbers::pi);
      continue;
    }
    basis.push_back(rest.normalized());
    accepted_cols.push_back(u);
    free.push_back(moving[i]);
  }
  std::vector<BoundedParameter> params;
  for (ComputeConstant k : free) params.push_back(bounds_of(k, constant_slot(fitted, k)));
  if (!params.empty()) {
    const auto candidate = [&](const std::vector<double>& values) {
      ComputeCalibration c = start;
      for (std::size_t i = 0; i < free.size(); ++i) constant_slot(c, free[i]) = values[i];
      return c;
    };
    const LeastSquaresResult lsq = fit_bounded_least_squares(params, [&](const std::vector<double>& values) {
      const std::vector<double> t = simulate(candidate(values));
      Eigen::VectorXd r(nfit);
      for (Eigen::Index j = 0; j < nfit; ++j) {
        const auto row = static_cast<std::size_t>(table.fit_rows[static_cast<std::size_t>(j)]);
        r(j) = t[row] / measured[row] - 1.0;
      }
      return r;
    });
    table.converged = lsq.converged;
    fitted = candidate(lsq.values);
    for (auto& cf : table.constants) {
      const auto it = std::find(free.begin(), free.end(), cf.constant);
      if (it == free.end()) continue;
      cf.fitted = true;
      cf.after = lsq.values[static_cast<std::size_t>(it - free.begin())];
    }
  }
  const std::vector<double> after = simulate(fitted);
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    table.rows[i].before = before[i];
    table.rows[i].after = after[i];
  }
  table.mape_fit_before = mape(table.rows, table.fit_rows, false);
  table.mape_fit_after = mape(table.rows, table.fit_rows, true);
  table.mape_holdout_before = mape(table.rows, table.holdout_rows, false);
  table.mape_holdout_after = mape(table.rows, table.holdout_rows, true);
}

std::string seconds_text(double s) {
  if (s >= 1) return fmt::format("{:.4g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} us", s * 1e6);
}

std::string value_text(ComputeConstant k, double v) {
  if (k == ComputeConstant::KernelOverhead) return fmt::format("{:.4g}us", v * 1e6);
  return fmt::format("{:.4g}", v);
}

}  // namespace

std::vector<double> gemm_times(const std::vector<GemmRow>& rows, const models::GpuSpec& gpu, const ComputeCalibration& c) {
  std::vector<double> t;
  for (const GemmRow& row : rows) {
    models::ProgramOp op;
    op.kind = models::ProgramOpKind::Gemm;
    op.name = "gemm";
    op.m = row.m, op.n = row.n, op.k = row.k, op.batch = 1;
    const auto m = static_cast<double>(row.m), n = static_cast<double>(row.n), k = static_cast<double>(row.k);
    op.flops = 2.0 * m * n * k;
    op.bytes = (m * k + k * n + m * n) * models::dtype_bytes(row.dtype);
    t.push_back(planner::estimate_compute(op, gpu, c, row.dtype).time);
  }
  return t;
}

ComputeCalibrationResult fit_compute_calibration(const ComputeCalibrationRequest& request) {
  if (request.step_times.empty()) {
    throw InputError({"<command line>", 0, 0}, "--step-times", "a step-times CSV (overrides,step_time)", "none");
  }
  // Read every input before the first fit, so that a bad file fails fast.
  StepTimeModel model(request.scenario, request.step_times);
  std::vector<GemmRow> gemms;
  if (!request.gemm.empty()) gemms = read_gemm_table(request.gemm);
  const auto [fit_rows, holdout_rows] = split_holdout(request.holdout, static_cast<int>(model.rows().size()));
  ComputeCalibrationResult result;
  result.gpu = model.gpu().name;
  const std::string table = request.compute_table.empty() ? ComputeCalibration::default_path() : request.compute_table;
  result.defaults = ComputeCalibration::load(table, "");
  result.start = ComputeCalibration::load(table, model.gpu().kind_names());
  result.fitted = result.start;

  std::vector<ComputeConstant> step_candidates = {ComputeConstant::GemmEfficiency, ComputeConstant::AttentionEfficiency,
                                                  ComputeConstant::AttentionBackwardEfficiency, ComputeConstant::MemoryEfficiency,
                                                  ComputeConstant::KernelOverhead};
  if (!gemms.empty()) {
    TableFit g;
    g.file = request.gemm;
    std::vector<double> measured;
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      g.fit_rows.push_back(static_cast<int>(i));
      g.rows.push_back({static_cast<int>(i), gemms[i].line,
                        fmt::format("{}x{}x{} {}", gemms[i].m, gemms[i].n, gemms[i].k, gemms[i].dtype), gemms[i].seconds, 0, 0, false});
      measured.push_back(gemms[i].seconds);
    }
    const models::GpuSpec gpu = model.gpu();
    fit_table({ComputeConstant::GemmEfficiency, ComputeConstant::GemmKOverhead, ComputeConstant::KernelOverhead},
              [&](const ComputeCalibration& c) { return gemm_times(gemms, gpu, c); }, measured, "GEMM table", result.start, result.fitted, g);
    result.gemm = std::move(g);
    // The GEMM table fixed these; the step times fit the rest.
    step_candidates = {ComputeConstant::AttentionEfficiency, ComputeConstant::AttentionBackwardEfficiency, ComputeConstant::MemoryEfficiency};
  }

  TableFit& s = result.steps;
  s.file = request.step_times;
  s.fit_rows = fit_rows;
  s.holdout_rows = holdout_rows;
  std::vector<double> measured;
  for (std::size_t i = 0; i < model.rows().size(); ++i) {
    const StepTimeRow& row = model.rows()[i];
    const bool held = std::find(holdout_rows.begin(), holdout_rows.end(), static_cast<int>(i)) != holdout_rows.end();
    s.rows.push_back({static_cast<int>(i), row.line, row.text.empty() ? "(scenario)" : row.text, row.seconds, 0, 0, held});
    measured.push_back(row.seconds);
  }
  fit_table(step_candidates, std::ref(model), measured, "step times", result.start, result.fitted, s);
  if (result.gemm) {
    for (ComputeConstant k : {ComputeConstant::GemmEfficiency, ComputeConstant::GemmKOverhead, ComputeConstant::KernelOverhead}) {
      s.constants.push_back({k, constant_slot(result.start, k), constant_slot(result.fitted, k), false, "step times",
                             "fitted to the GEMM table instead"});
    }
  } else {
    s.constants.push_back({ComputeConstant::GemmKOverhead, result.start.gemm_k_overhead, result.start.gemm_k_overhead, false,
                           "step times", "fitted from a GEMM table only (--gemm)"});
  }
  return result;
}

void print_compute_calibration(const ComputeCalibrationResult& result, std::ostream& report) {
  const auto print_table = [&](const TableFit& t, const std::string& title) {
    report << fmt::format("{} {}: {} rows, {} fitted, {} held out\n", title, t.file, t.rows.size(), t.fit_rows.size(), t.holdout_rows.size());
    support::TextTable rows({"row", "line", "set", "measured", "before", "after", "error", "input"}, {true, true, false, true, true, true, true, false});
    for (const RowResult& r : t.rows) {
      rows.add_row({std::to_string(r.row), std::to_string(r.line), r.held_out ? "holdout" : "fit", seconds_text(r.measured), seconds_text(r.before),
                    seconds_text(r.after), fmt::format("{:+.1f} %", 100.0 * (r.after - r.measured) / r.measured), r.label});
    }
    report << rows.render();
    report << fmt::format("  MAPE fitted rows: {:.2f} % -> {:.2f} %", t.mape_fit_before, t.mape_fit_after);
    if (!t.holdout_rows.empty()) report << fmt::format("; held-out rows: {:.2f} % -> {:.2f} %", t.mape_holdout_before, t.mape_holdout_after);
    report << (t.converged ? "\n" : "\n  (the fit stopped at its iteration cap)\n");
  };
  report << fmt::format("compute calibration for {}\n", result.gpu);
  if (result.gemm) print_table(*result.gemm, "GEMM table");
  print_table(result.steps, "step times");
  support::TextTable constants({"constant", "table", "fitted", "from"}, {false, true, true, false});
  std::vector<std::string> notes;
  const auto add = [&](const TableFit& t) {
    for (const ConstantFit& c : t.constants) {
      if (c.fitted) constants.add_row({std::string(to_string(c.constant)), value_text(c.constant, c.before), value_text(c.constant, c.after), c.source});
      else if (c.reason != "fitted to the GEMM table instead") notes.push_back(fmt::format("  {} not fitted by the {}: {}", to_string(c.constant), c.source, c.reason));
    }
  };
  if (result.gemm) add(*result.gemm);
  add(result.steps);
  report << "constants\n" << constants.render();
  for (const auto& n : notes) report << n << "\n";
}

std::string compute_calibration_yaml(const ComputeCalibrationResult& result, const ComputeCalibrationRequest& request, const std::string& date) {
  const auto quoted = [](const std::string& s) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << s;
    return std::string(e.c_str());
  };
  const auto constants = [](const ComputeCalibration& c, const std::string& indent) {
    std::string out;
    out += fmt::format("{}gemm_efficiency: {:.6g}\n", indent, c.gemm_efficiency);
    out += fmt::format("{}gemm_tile_m: {}\n{}gemm_tile_n: {}\n", indent, c.gemm_tile_m, indent, c.gemm_tile_n);
    out += fmt::format("{}gemm_k_overhead: {:.6g}\n", indent, c.gemm_k_overhead);
    out += fmt::format("{}gemm_split_k_min: {:.6g}\n", indent, c.gemm_split_k_min);
    out += fmt::format("{}attention_efficiency: {:.6g}\n", indent, c.attention_efficiency);
    out += fmt::format("{}attention_backward_efficiency: {:.6g}\n", indent, c.attention_backward_efficiency);
    out += fmt::format("{}attention_seq_half: {:.6g}\n", indent, c.attention_seq_half);
    out += fmt::format("{}attention_backward_seq_half: {:.6g}\n", indent, c.attention_backward_seq_half);
    out += fmt::format("{}attention_tile_m: {}\n", indent, c.attention_tile_m);
    out += fmt::format("{}memory_efficiency: {:.6g}\n", indent, c.memory_efficiency);
    out += fmt::format("{}kernel_overhead: {:.6g}us\n", indent, c.kernel_overhead * 1e6);
    return out;
  };
  const std::string table = request.compute_table.empty() ? ComputeCalibration::default_path() : request.compute_table;
  std::string y;
  y += "# Compute model constants fitted by `ccsim calibrate` (validate/calibrate/compute_calibration.hpp) to the\n";
  y += "# measurements named in `provenance`; `defaults` are the starting table's, unchanged.\n";
  y += "# Format and model: scenarios/calibration/compute.yaml.\n";
  y += "source: " + quoted(fmt::format("fitted by ccsim calibrate for {} from {} (starting table {})", result.gpu, request.step_times, table)) + "\n";
  y += "defaults:\n" + constants(result.defaults, "  ");
  y += "gpus:\n  " + quoted(result.gpu) + ":\n" + constants(result.fitted, "    ");
  y += "provenance:\n";
  y += "  tool: \"ccsim calibrate\"\n";
  y += "  date: " + quoted(date) + "\n";
  y += "  gpu: " + quoted(result.gpu) + "\n";
  y += "  inputs:\n";
  const auto input = [&](const std::string& role, const std::string& path) {
    if (path.empty()) return;
    y += fmt::format("    {}:\n      path: {}\n      sha256: {}\n", role, quoted(path), sha256_file(path));
  };
  input("scenario", request.scenario);
  input("step_times", request.step_times);
  input("gemm", request.gemm);
  input("compute_table", table);
  y += "  holdout: " + quoted(request.holdout) + "\n";
  y += fmt::format("  fit_rows: [{}]\n", fmt::join(result.steps.fit_rows, ", "));
  y += fmt::format("  holdout_rows: [{}]\n", fmt::join(result.steps.holdout_rows, ", "));
  if (result.gemm) y += fmt::format("  gemm_rows: [{}]\n", fmt::join(result.gemm->fit_rows, ", "));
  y += "  fitted:\n";
  std::string not_fitted;
  for (const TableFit* t : {result.gemm ? &*result.gemm : nullptr, &result.steps}) {
    if (t == nullptr) continue;
    for (const ConstantFit& c : t->constants) {
      if (c.fitted) {
        y += fmt::format("    {}: {{value: {}, table: {}, from: {}}}\n", to_string(c.constant), value_text(c.constant, c.after),
                         value_text(c.constant, c.before), quoted(c.source));
      } else if (c.reason != "fitted to the GEMM table instead") {
        not_fitted += fmt::format("    {}: {}\n", to_string(c.constant), quoted(c.source + ": " + c.reason));
      }
    }
  }
  y += not_fitted.empty() ? "  not_fitted: {}\n" : "  not_fitted:\n" + not_fitted;
  y += "  mape:\n";
  const auto m = [&](const std::string& name, const TableFit& t) {
    y += fmt::format("    {}: {{fit_before: {:.4g}, fit_after: {:.4g}", name, t.mape_fit_before, t.mape_fit_after);
    if (!t.holdout_rows.empty()) y += fmt::format(", holdout_before: {:.4g}, holdout_after: {:.4g}", t.mape_holdout_before, t.mape_holdout_after);
    y += "}  # percent\n";
  };
  if (result.gemm) m("gemm", *result.gemm);
  m("step_times", result.steps);
  return y;
}

void calibrate_compute(const ComputeCalibrationRequest& request, std::ostream& report) {
  const ComputeCalibrationResult result = fit_compute_calibration(request);
  print_compute_calibration(result, report);
  if (!request.out.empty()) {
    support::write_file_atomic(request.out, compute_calibration_yaml(result, request, support::iso8601_utc_now()));
    report << "wrote " << request.out << "\n";
  }
}

}  // namespace ccsim::validate
