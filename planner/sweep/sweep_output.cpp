#include "planner/sweep/sweep_output.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

namespace {

using nlohmann::ordered_json;

std::string number(const std::optional<double>& v) { return v ? fmt::format("{:.9g}", *v) : std::string(); }

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// Seconds for people: s, ms or us with three decimals.
std::string duration(const std::optional<double>& v) {
  if (!v) return "-";
  if (*v >= 1) return fmt::format("{:.3f} s", *v);
  if (*v >= 1e-3) return fmt::format("{:.3f} ms", *v * 1e3);
  return fmt::format("{:.3f} us", *v * 1e6);
}

std::vector<std::string> point_values(const SweepResult& r, std::size_t point) {
  const std::vector<std::size_t> idx = models::grid_point(r.axes, point);
  std::vector<std::string> out;
  for (std::size_t k = 0; k < r.axes.size(); ++k) out.push_back(r.axes[k].values[idx[k]]);
  return out;
}

/// Whether any point ran several jobs (their columns are printed then only).
bool has_jobs(const SweepResult& r) {
  return std::any_of(r.rows.begin(), r.rows.end(), [](const SweepRow& row) { return row.phase == "jobs"; });
}

/// Whether any point ran a reliability simulation (its columns are printed then only).
bool has_reliability(const SweepResult& r) {
  return std::any_of(r.rows.begin(), r.rows.end(), [](const SweepRow& row) { return row.ettr.has_value(); });
}

ordered_json optional_json(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json row_json(const SweepRow& row) {
  ordered_json j;
  j["feasible"] = row.feasible;
  j["reason"] = row.reason;
  j["gpus"] = row.gpus;
  j["phase"] = row.phase;
  j["step_time_s"] = optional_json(row.step_time_s);
  j["tokens_per_s"] = optional_json(row.tokens_per_s);
  j["mfu"] = optional_json(row.mfu);
  j["memory_per_gpu_gib"] = optional_json(row.memory_gib);
  j["hbm_gib"] = optional_json(row.hbm_gib);
  j["ttft_s"] = optional_json(row.ttft_s);
  j["tpot_s"] = optional_json(row.tpot_s);
  j["cost_per_mtok_usd"] = optional_json(row.cost_per_mtok);
  if (!row.layout.empty()) j["layout"] = row.layout;
  if (row.ettr) {
    j["ettr"] = *row.ettr;
    j["run_wall_s"] = optional_json(row.run_wall_s);
    j["checkpoint_interval_s"] = optional_json(row.checkpoint_interval_s);
  }
  if (row.phase == "jobs") {
    j["worst_slowdown"] = optional_json(row.worst_slowdown);
    j["slowdowns"] = row.slowdowns;
    j["placement"] = row.placement;
  }
  return j;
}

std::optional<double> optional_double(const ordered_json& j, const char* key) {
  const auto& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return v.get<double>();
}

/// "cluster.nodes[0].node.nics.link = ib-ndr, ib-xdr" for a tie's points.
std::string tie_values(const SweepResult& r, const SweepTie& t) {
  std::string values;
  for (std::size_t p : t.points) values += (values.empty() ? "" : ", ") + point_values(r, p)[t.axis];
  return r.axes[t.axis].key + " = " + values;
}

}  // namespace

std::vector<SweepTie> find_ties(const SweepResult& r) {
  std::vector<SweepTie> ties;
  const auto same = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); };
  for (std::size_t k = 0; k < r.axes.size(); ++k) {
    if (r.axes[k].values.size() < 2) continue;
    std::vector<bool> taken(r.rows.size(), false);
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
      const SweepRow& a = r.rows[i];
      if (taken[i] || !a.feasible || !a.step_time_s) continue;
      const auto va = point_values(r, i);
      SweepTie tie{k, {i}, {}};
      for (std::size_t j = i + 1; j < r.rows.size(); ++j) {
        const SweepRow& b = r.rows[j];
        if (taken[j] || !b.feasible || !b.step_time_s || b.gpus != a.gpus || !same(*a.step_time_s, *b.step_time_s)) continue;
        // A reliability or co-run point ties only when its own figures (ETTR, slowdown) do too.
        const auto differ = [&](const std::optional<double>& x, const std::optional<double>& y) {
          return x.has_value() != y.has_value() || (x && !same(*x, *y));
        };
        if (differ(a.ettr, b.ettr) || differ(a.run_wall_s, b.run_wall_s) || differ(a.worst_slowdown, b.worst_slowdown)) continue;
        const auto vb = point_values(r, j);
        bool others_alike = true;
        for (std::size_t o = 0; o < va.size(); ++o) others_alike = others_alike && (o == k || va[o] == vb[o]);
        if (!others_alike || va[k] == vb[k]) continue;
        tie.points.push_back(j);
        taken[j] = true;
      }
      if (tie.points.size() > 1) ties.push_back(std::move(tie));
    }
  }
  return ties;
}

std::string sweep_text(const SweepResult& r) {
  std::size_t feasible = 0;
  bool ttft = false;
  bool tpot = false;
  const bool reliability = has_reliability(r);
  const bool jobs = has_jobs(r);
  for (const auto& row : r.rows) {
    feasible += row.feasible ? 1 : 0;
    ttft = ttft || row.ttft_s;
    tpot = tpot || row.tpot_s;
  }
  std::string out = fmt::format("# ccsim sweep: {} — {} point{}, {} feasible\n", r.scenario, r.rows.size(),
                                r.rows.size() == 1 ? "" : "s", feasible);
  std::vector<std::string> headers{"#"};
  std::vector<bool> right{true};
  for (const auto& a : r.axes) {
    headers.push_back(a.key);
    right.push_back(true);
  }
  if (r.planned) {
    headers.emplace_back("best layout");
    right.push_back(false);
  }
  for (const char* h : {"feasible", "GPUs", "step time", "tokens/s", "MFU", "mem/GPU GiB"}) {
    headers.emplace_back(h);
    right.push_back(true);
  }
  if (ttft) {
    headers.emplace_back("TTFT");
    right.push_back(true);
  }
  if (tpot) {
    headers.emplace_back("TPOT");
    right.push_back(true);
  }
  if (r.price_per_gpu_hour) {
    headers.emplace_back("USD/Mtok");
    right.push_back(true);
  }
  if (reliability) {
    for (const char* h : {"ETTR", "run time", "ckpt interval"}) {
      headers.emplace_back(h);
      right.push_back(true);
    }
  }
  if (jobs) {
    for (const char* h : {"last job's placement", "worst slowdown", "slowdowns"}) {
      headers.emplace_back(h);
      right.push_back(std::string(h) == "worst slowdown");
    }
  }
  headers.emplace_back("reason");
  right.push_back(false);
  support::TextTable table(headers, right);
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    std::vector<std::string> cells{std::to_string(i)};
    for (auto& v : point_values(r, i)) cells.push_back(v);
    if (r.planned) cells.push_back(row.layout.empty() ? "-" : row.layout);
    cells.emplace_back(row.feasible ? "yes" : "no");
    cells.push_back(row.gpus > 0 ? std::to_string(row.gpus) : "-");
    cells.push_back(duration(row.step_time_s));
    cells.push_back(row.tokens_per_s ? fmt::format("{:.0f}", *row.tokens_per_s) : "-");
    cells.push_back(row.mfu ? fmt::format("{:.1f} %", 100 * *row.mfu) : "-");
    cells.push_back(row.memory_gib ? fmt::format("{:.2f}", *row.memory_gib) : "-");
    if (ttft) cells.push_back(duration(row.ttft_s));
    if (tpot) cells.push_back(duration(row.tpot_s));
    if (r.price_per_gpu_hour) cells.push_back(row.cost_per_mtok ? fmt::format("{:.3f}", *row.cost_per_mtok) : "-");
    if (reliability) {
      cells.push_back(row.ettr ? fmt::format("{:.2f} %", 100 * *row.ettr) : "-");
      cells.push_back(row.run_wall_s ? support::format_duration(*row.run_wall_s) : "-");
      cells.push_back(row.checkpoint_interval_s ? support::format_duration(*row.checkpoint_interval_s) : "-");
    }
    if (jobs) {
      cells.push_back(row.placement.empty() ? "-" : row.placement);
      cells.push_back(row.worst_slowdown ? fmt::format("{:.3f}x", *row.worst_slowdown) : "-");
      cells.push_back(row.slowdowns.empty() ? "-" : row.slowdowns);
    }
    cells.push_back(row.reason);
    table.add_row(std::move(cells));
  }
  out += table.render(0);
  if (!r.ties.empty()) {
    out += "\nidentical results\n";
    for (const SweepTie& t : r.ties) {
      std::string points;
      for (std::size_t p : t.points) points += (points.empty() ? "" : ", ") + std::to_string(p);
      out += fmt::format("  points {} ({}): the same step time, {}{}\n", points, tie_values(r, t), duration(r.rows[t.points.front()].step_time_s),
                         t.note.empty() ? std::string() : "; " + t.note);
    }
  }
  return out;
}

std::string sweep_csv(const SweepResult& r) {
  std::string out = "point";
  for (const auto& a : r.axes) out += "," + csv_cell(a.key);
  out += ",feasible,reason,gpus,phase,step_time_s,tokens_per_s,mfu,memory_per_gpu_gib,hbm_gib,ttft_s,tpot_s,cost_per_mtok_usd";
  if (r.planned) out += ",layout";
  const bool reliability = has_reliability(r);
  if (reliability) out += ",ettr,run_wall_s,checkpoint_interval_s";
  const bool jobs = has_jobs(r);
  if (jobs) out += ",placement,worst_slowdown,slowdowns";
  out += "\n";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    out += std::to_string(i);
    for (const auto& v : point_values(r, i)) out += "," + csv_cell(v);
    out += fmt::format(",{},{},{},{}", row.feasible ? "yes" : "no", csv_cell(row.reason), row.gpus > 0 ? std::to_string(row.gpus) : "",
                       row.phase);
    for (const auto* v : {&row.step_time_s, &row.tokens_per_s, &row.mfu, &row.memory_gib, &row.hbm_gib, &row.ttft_s, &row.tpot_s,
                          &row.cost_per_mtok}) {
      out += "," + number(*v);
    }
    if (r.planned) out += "," + csv_cell(row.layout);
    if (reliability) out += "," + number(row.ettr) + "," + number(row.run_wall_s) + "," + number(row.checkpoint_interval_s);
    if (jobs) out += "," + csv_cell(row.placement) + "," + number(row.worst_slowdown) + "," + csv_cell(row.slowdowns);
    out += "\n";
  }
  return out;
}

std::string sweep_json(const SweepResult& r) {
  ordered_json j;
  j["schema"] = "ccsim.sweep/1";
  j["scenario"] = r.scenario;
  ordered_json keys = ordered_json::array();
  for (const auto& a : r.axes) keys.push_back({{"key", a.key}, {"values", a.values}});
  j["keys"] = keys;
  j["price_per_gpu_hour"] = optional_json(r.price_per_gpu_hour);
  j["planned"] = r.planned;
  const SweepMeta& m = r.meta;
  ordered_json groups = ordered_json::array();
  for (const auto& g : m.node_groups) {
    groups.push_back({{"node", g.node}, {"gpu", g.gpu}, {"count", g.count}, {"gpus_per_node", g.gpus_per_node}});
  }
  j["meta"] = {{"name", m.name},
               {"model", m.model},
               {"phase", m.phase},
               {"workload", m.workload},
               {"cluster", m.cluster},
               {"node_groups", groups},
               {"calibration", m.calibration},
               {"compute_calibration", m.compute_calibration},
               {"engine", m.engine},
               {"ccsim_version", m.ccsim_version}};
  ordered_json points = ordered_json::array();
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    ordered_json p;
    p["point"] = i;
    ordered_json values;
    const auto v = point_values(r, i);
    for (std::size_t k = 0; k < r.axes.size(); ++k) values[r.axes[k].key] = v[k];
    p["values"] = values.is_null() ? ordered_json::object() : values;
    p.update(row_json(r.rows[i]));
    points.push_back(p);
  }
  j["points"] = points;
  ordered_json ties = ordered_json::array();
  for (const SweepTie& t : r.ties) {
    ordered_json values = ordered_json::array();
    for (std::size_t p : t.points) values.push_back(point_values(r, p)[t.axis]);
    ties.push_back({{"key", r.axes[t.axis].key}, {"points", t.points}, {"values", values}, {"note", t.note}});
  }
  j["ties"] = ties;
  return j.dump(2) + "\n";
}

std::string encode_row(const SweepRow& row) { return row_json(row).dump(); }

SweepRow decode_row(const std::string& text) {
  const ordered_json j = ordered_json::parse(text);
  SweepRow row;
  row.feasible = j.at("feasible").get<bool>();
  row.reason = j.at("reason").get<std::string>();
  row.gpus = j.at("gpus").get<int>();
  row.phase = j.at("phase").get<std::string>();
  row.step_time_s = optional_double(j, "step_time_s");
  row.tokens_per_s = optional_double(j, "tokens_per_s");
  row.mfu = optional_double(j, "mfu");
  row.memory_gib = optional_double(j, "memory_per_gpu_gib");
  row.hbm_gib = optional_double(j, "hbm_gib");
  row.ttft_s = optional_double(j, "ttft_s");
  row.tpot_s = optional_double(j, "tpot_s");
  row.cost_per_mtok = optional_double(j, "cost_per_mtok_usd");
  if (j.contains("layout")) row.layout = j.at("layout").get<std::string>();
  if (j.contains("ettr")) {
    row.ettr = optional_double(j, "ettr");
    row.run_wall_s = optional_double(j, "run_wall_s");
    row.checkpoint_interval_s = optional_double(j, "checkpoint_interval_s");
  }
  if (j.contains("worst_slowdown")) {
    row.worst_slowdown = optional_double(j, "worst_slowdown");
    row.slowdowns = j.at("slowdowns").get<std::string>();
    row.placement = j.at("placement").get<std::string>();
  }
  return row;
}

}  // namespace ccsim::planner
