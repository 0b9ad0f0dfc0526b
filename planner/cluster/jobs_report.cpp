// The report of a co-run of several jobs: text summary, report.json, steps.csv and warnings
// (declared in jobs.hpp).
#include "planner/cluster/jobs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "support/text_table.hpp"
#include "support/units.hpp"

namespace ccsim::planner {

namespace {

std::string seconds(double s) { return support::format_time(s); }

/// format_index_ranges, cut short for a text summary when long (a spread placement).
std::string short_ranges(const std::vector<int>& gpus) {
  std::string text = format_index_ranges(gpus);
  if (text.size() <= 96) return text;
  const std::size_t cut = text.rfind(',', 80);
  return fmt::format("{},... ({} ranges; report.json lists every GPU)", text.substr(0, cut), std::count(text.begin(), text.end(), ',') + 1);
}

std::string layout_of(const models::StrategySpec& s) {
  std::string out;
  const auto add = [&](const char* n, int v) {
    if (v <= 1) return;
    if (!out.empty()) out += " × ";
    out += fmt::format("{} {}", n, v);
  };
  add("TP", s.tp);
  add("PP", s.pp);
  add("CP", s.cp);
  add("DP", s.dp);
  add("EP", s.ep);
  return out.empty() ? "one GPU" : out;
}

}  // namespace

std::vector<std::string> jobs_warnings(const CoRunResult& r) {
  std::vector<std::string> out;
  if (r.passes > 0 && !r.converged) {
    out.push_back(fmt::format("the co-run did not converge in {} passes (the last moved a step by {:.2g} %): its step times are "
                              "one pass of an oscillation between overlap patterns, not a steady state",
                              r.passes, 100 * r.last_change));
  }
  if (r.over_capacity > 0) {
    out.push_back(fmt::format("{} shared link{} carr{} more than {} bandwidth in the co-run (up to {:.1f} %): each op is run beside "
                              "the overlapping ops at their own times, which under-counts overlaps that chain; the slowdowns are "
                              "lower bounds (docs/limitations.md)",
                              r.over_capacity, r.over_capacity == 1 ? "" : "s", r.over_capacity == 1 ? "ies" : "y",
                              r.over_capacity == 1 ? "its" : "their", 100 * r.max_utilisation));
  }
  return out;
}

std::string jobs_summary(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunResult& r,
                         const BestPlacement* ranking) {
  std::string out;
  const int total = static_cast<int>(cluster.topology.gpus().size());
  int used = 0;
  for (const auto& j : r.jobs) used += static_cast<int>(j.gpus.size());
  out += fmt::format("# ccsim run: {} — several jobs on one fabric, {} engine\n", scenario.name,
                     r.engine == models::EngineKind::Flow ? "flow" : "analytic");
  out += fmt::format("# {} job{} on {} GPUs of {} ({} idle)\n", r.jobs.size(), r.jobs.size() == 1 ? "" : "s", used, total, total - used);
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const auto& job = scenario.jobs[j];
    const auto& w = job.workload;
    out += fmt::format("# {}: {} {}, {}, GPUs {}\n", job.name, job.model.name, models::to_string(w.phase), layout_of(job.strategy),
                       short_ranges(r.jobs[j].gpus));
  }
  out += "\n";
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const auto& res = r.jobs[j].result;
    if (res.feasible) continue;
    double worst = 0;
    for (const auto& m : res.memory) worst = std::max(worst, m.total());
    out += fmt::format("INFEASIBLE: job {} needs {:.1f} GiB per GPU, more than the {:.1f} GiB of HBM; not simulated.\n", r.jobs[j].name,
                       worst / (1024.0 * 1024 * 1024), res.hbm_capacity / (1024.0 * 1024 * 1024));
  }
  if (r.passes == 0) return out;
  support::TextTable t({"job", "GPUs", "placement", "start", "alone", "co-run mean", "min", "p50", "max", "steps", "slowdown"},
                       {false, true, false, true, true, true, true, true, true, true, true});
  for (const auto& j : r.jobs) {
    t.add_row({j.name, std::to_string(j.gpus.size()), j.placement, seconds(j.start), seconds(j.alone), seconds(j.mean), seconds(j.min),
               seconds(j.p50), seconds(j.max), fmt::format("{}{}", j.step_time.size(), j.truncated ? " (limit)" : ""),
               fmt::format("{:.3f}x", j.slowdown)});
  }
  out += fmt::format("step time alone and beside the other jobs (window {}: {} step{} of the job with the longest step):\n", seconds(r.window),
                     r.steps, r.steps == 1 ? "" : "s");
  out += t.render(0);
  out += "\n";
  support::TextTable c({"job", "dim", "ops per step", "slowed per step", "comm alone per step", "beside others", "lost to"},
                       {false, false, true, true, true, true, false});
  for (const auto& j : r.jobs) {
    const double n = static_cast<double>(std::max<std::size_t>(j.step_time.size(), 1));
    for (const auto& d : j.comm) {
      std::string to;
      for (const auto& [who, lost] : d.to) to += fmt::format("{}{} {}", to.empty() ? "" : ", ", who, seconds(lost / n));
      c.add_row({j.name, d.dim, fmt::format("{:g}", static_cast<double>(d.ops) / n), fmt::format("{:g}", static_cast<double>(d.slowed) / n),
                 seconds(d.alone / n), seconds(d.contended / n), to.empty() ? "-" : to});
    }
  }
  out += "communication per step (means over the window's steps; times are sums over the ops of every pipeline stage and replica "
         "class, so they can exceed the step):\n";
  out += c.render(0);
  out += "\n";
  if (r.shared.empty()) {
    out += fmt::format("shared links: none (the jobs' traffic uses {} links, none of them carries two jobs)\n", r.fabric_links);
  } else {
    std::vector<std::string> head{"shared link", "bandwidth"};
    std::vector<bool> right{false, true};
    for (const auto& j : r.jobs) {
      head.push_back(j.name + " bytes/step");
      right.push_back(true);
      head.push_back(j.name + " share");
      right.push_back(true);
    }
    head.push_back("utilisation");
    right.push_back(true);
    support::TextTable s(head, right);
    const std::size_t shown = std::min<std::size_t>(r.shared.size(), 10);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& l = r.shared[i];
      std::vector<std::string> row{l.name, support::format_bandwidth(l.capacity)};
      double rate = 0;
      for (std::size_t j = 0; j < l.bytes.size(); ++j) rate += l.bytes[j] / r.jobs[j].mean;
      for (std::size_t j = 0; j < l.bytes.size(); ++j) {
        row.push_back(support::format_bytes(l.bytes[j]));
        row.push_back(fmt::format("{:.1f} %", rate > 0 ? 100 * l.bytes[j] / r.jobs[j].mean / rate : 0.0));
      }
      row.push_back(fmt::format("{:.1f} %", 100 * l.utilisation));
      s.add_row(row);
    }
    out += fmt::format("shared links: {} of the {} links the jobs use carry two or more jobs' traffic{}\n", r.shared.size(),
                       r.fabric_links, shown < r.shared.size() ? fmt::format(" (the {} busiest shown)", shown) : "");
    out += s.render(0);
    out += "(share: of the link's bytes per second in the co-run; utilisation: all jobs' bytes per second over its bandwidth)\n";
  }
  if (ranking != nullptr) {
    out += "\n";
    out += fmt::format("placement of job {} (placement: best), best first:\n", scenario.jobs[ranking->job].name);
    support::TextTable p({"policy", "GPUs", "worst slowdown", "job's mean step", "others' mean slowdown"}, {false, false, true, true, true});
    for (const auto& tr : ranking->ranking) {
      p.add_row({std::string(models::to_string(tr.policy)) + (tr.same_as.empty() ? "" : " (= " + tr.same_as + ")"),
                 short_ranges(tr.gpus), fmt::format("{:.3f}x", tr.worst_slowdown), seconds(tr.job_mean),
                 fmt::format("{:.3f}x", tr.others_mean_slowdown)});
    }
    out += p.render(0);
  }
  out += fmt::format("\n(co-run: {} pass{}{}, {} merged engine run{}; each communication op beside the other jobs' ops that overlap it on "
                     "shared links{})\n",
                     r.passes, r.passes == 1 ? "" : "es",
                     r.converged ? ", converged" : fmt::format(", NOT converged (the last pass moved a step by {:.2g} %)", 100 * r.last_change),
                     r.runs, r.runs == 1 ? "" : "s",
                     r.chained ? "; chained overlaps: the pairwise runs left a shared link above its bandwidth, so each op also ran "
                                 "beside its partners' partners"
                               : "");
  for (const std::string& w : jobs_warnings(r)) out += "warning: " + w + "\n";
  return out;
}

std::string jobs_report_json(const models::Scenario& scenario, const models::Cluster& cluster, const CoRunResult& r,
                             const BestPlacement* ranking, models::EngineKind engine) {
  nlohmann::ordered_json j;
  j["schema"] = "ccsim.jobs/1";
  j["scenario"] = scenario.name;
  j["engine"] = engine == models::EngineKind::Flow ? "flow" : "analytic";
  j["gpus"] = cluster.topology.gpus().size();
  j["steps"] = r.steps;
  j["window_s"] = r.window;
  j["passes"] = r.passes;
  j["converged"] = r.converged;
  j["last_pass_step_change"] = r.last_change;
  j["chained_overlaps"] = r.chained;
  j["warnings"] = jobs_warnings(r);
  j["merged_runs"] = r.runs;
  j["feasible"] = r.passes > 0;
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < r.jobs.size(); ++k) {
    const auto& o = r.jobs[k];
    nlohmann::ordered_json x;
    x["name"] = o.name;
    x["model"] = scenario.jobs[k].model.name;
    x["phase"] = std::string(models::to_string(scenario.jobs[k].workload.phase));
    x["placement"] = o.placement;
    x["gpus"] = o.gpus;
    x["start_s"] = o.start;
    x["feasible"] = o.result.feasible;
    // Figures that were not computed (a job out of memory, or a co-run that did not run) are null.
    const bool ran = r.passes > 0;
    const auto figure = [](bool known, double v) { return known ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
    x["alone_step_s"] = figure(o.result.feasible, o.alone);
    x["mfu_alone"] = figure(o.result.feasible, o.mfu_alone);
    x["step_start_s"] = o.step_start;
    x["step_time_s"] = o.step_time;
    x["mean_s"] = figure(ran, o.mean);
    x["min_s"] = figure(ran, o.min);
    x["p50_s"] = figure(ran, o.p50);
    x["max_s"] = figure(ran, o.max);
    x["slowdown"] = figure(ran, o.slowdown);
    x["steps_truncated"] = o.truncated;
    x["tokens_per_s_alone"] = figure(o.result.feasible && o.alone > 0, o.alone > 0 ? o.tokens / o.alone : 0.0);
    x["tokens_per_s"] = figure(ran && o.mean > 0, o.mean > 0 ? o.tokens / o.mean : 0.0);
    nlohmann::ordered_json comm = nlohmann::ordered_json::array();
    for (const auto& d : o.comm) {
      nlohmann::ordered_json lost = nlohmann::ordered_json::object();
      for (const auto& [who, t] : d.to) lost[who] = t;
      comm.push_back({{"dim", d.dim}, {"op_instances", d.ops}, {"slowed", d.slowed}, {"alone_s", d.alone}, {"co_run_s", d.contended},
                      {"lost_to_s", std::move(lost)}});
    }
    x["comm_over_window"] = std::move(comm);
    jobs.push_back(std::move(x));
  }
  j["jobs"] = std::move(jobs);
  nlohmann::ordered_json shared = nlohmann::ordered_json::array();
  for (const auto& l : r.shared) {
    nlohmann::ordered_json x;
    x["link"] = l.name;
    x["bandwidth_Bps"] = l.capacity;
    nlohmann::ordered_json per = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < l.bytes.size(); ++k) per[r.jobs[k].name] = l.bytes[k];
    x["bytes_per_step"] = std::move(per);
    x["utilisation"] = l.utilisation;
    shared.push_back(std::move(x));
  }
  j["shared_links"] = std::move(shared);
  j["links_used"] = r.fabric_links;
  if (ranking != nullptr) {
    nlohmann::ordered_json p = nlohmann::ordered_json::array();
    for (const auto& tr : ranking->ranking) {
      nlohmann::ordered_json x;
      x["policy"] = std::string(models::to_string(tr.policy));
      x["gpus"] = tr.gpus;
      x["same_as"] = tr.same_as;
      const bool ran = r.passes > 0;
      x["worst_slowdown"] = ran ? nlohmann::ordered_json(tr.worst_slowdown) : nlohmann::ordered_json(nullptr);
      x["job_mean_s"] = ran ? nlohmann::ordered_json(tr.job_mean) : nlohmann::ordered_json(nullptr);
      x["others_mean_slowdown"] = ran ? nlohmann::ordered_json(tr.others_mean_slowdown) : nlohmann::ordered_json(nullptr);
      p.push_back(std::move(x));
    }
    nlohmann::ordered_json pr;
    pr["job"] = scenario.jobs[ranking->job].name;
    pr["ranking"] = std::move(p);
    j["placement_ranking"] = std::move(pr);
  }
  return j.dump(2) + "\n";
}

std::string jobs_steps_csv(const CoRunResult& r) {
  // RFC 4180: a name with a comma, quote or line break is quoted, quotes doubled.
  const auto cell = [](const std::string& v) {
    if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out = "job,step,start_s,time_s,alone_s\n";
  for (const auto& j : r.jobs)
    for (std::size_t k = 0; k < j.step_time.size(); ++k)
      out += fmt::format("{},{},{:.9g},{:.9g},{:.9g}\n", cell(j.name), k, j.step_start[k], j.step_time[k], j.alone);
  return out;
}

}  // namespace ccsim::planner
