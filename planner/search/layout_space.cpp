#include "planner/search/layout_space.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "support/input_error.hpp"
#include "models/workload/program_builder.hpp"

namespace ccsim::planner {

namespace {

bool inference(models::WorkloadPhase phase) { return phase != models::WorkloadPhase::TrainingStep; }

std::string short_recompute(const std::string& r) { return r == "selective" ? "sel" : r == "full" ? "full" : "none"; }

std::vector<int> powers_of_two(int lo, int hi) {
  std::vector<int> out;
  for (std::int64_t v = 1; v <= hi; v *= 2)
    if (v >= lo) out.push_back(static_cast<int>(v));
  return out;
}

template <typename T>
void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

/// The placement an order gives, as the dimensions larger than 1, innermost first (EP is
/// folded into CP × DP by Placement): two orders with the same signature place ranks alike.
std::string order_signature(const std::string& order, const Layout& l) {
  std::string sig;
  std::size_t pos = 0;
  while (pos <= order.size()) {
    const std::size_t dash = order.find('-', pos);
    const std::string part = order.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    const int size = part == "tp" ? l.tp : part == "cp" ? l.cp : part == "dp" ? l.dp : part == "pp" ? l.pp : 1;
    if (size > 1) sig += part + "-";
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  return sig;
}

[[noreturn]] void bad(const std::string& option, const std::string& key, const std::string& expected, const std::string& found) {
  throw support::InputError({"<command line>", 0, 0}, option + " " + key, expected, found);
}

std::int64_t parse_int(const std::string& option, const std::string& key, const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) bad(option, key, "an integer", "'" + text + "'");
  if (v < lo || v > hi) bad(option, key, fmt::format("an integer in [{}, {}]", lo, hi), "'" + text + "'");
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

/// Integers of a comma list whose items are N or A..B (at most 4,096 values).
std::vector<std::int64_t> parse_ints(const std::string& option, const std::string& key, const std::string& text, std::int64_t lo,
                                     std::int64_t hi) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split(text, ',')) {
    const std::size_t dots = item.find("..");
    if (dots == std::string::npos) {
      add_unique(out, parse_int(option, key, item, lo, hi));
      continue;
    }
    const std::int64_t a = parse_int(option, key, item.substr(0, dots), lo, hi);
    const std::int64_t b = parse_int(option, key, item.substr(dots + 2), lo, hi);
    if (b < a) bad(option, key, "a range A..B with A ≤ B", "'" + item + "'");
    if (b - a > 4096) bad(option, key, "a range of at most 4,096 values", "'" + item + "'");
    for (std::int64_t v = a; v <= b; ++v) add_unique(out, v);
  }
  return out;
}

std::vector<std::string> parse_words(const std::string& option, const std::string& key, const std::string& text,
                                     const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& item : split(text, ',')) {
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      bad(option, key, "one of " + list, "'" + item + "'");
    }
    add_unique(out, item);
  }
  return out;
}

bool valid_order(const std::string& order) {
  const auto parts = split(order, '-');
  std::set<std::string> seen(parts.begin(), parts.end());
  return parts.size() == 5 && seen == std::set<std::string>{"tp", "cp", "ep", "pp", "dp"};
}

bool inference_batch_only(const Layout& a, const Layout& b) { return a.batch > 0 && b.batch > 0; }

}  // namespace

std::string layout_name(const Layout& l, models::WorkloadPhase phase) {
  std::string out = fmt::format("TP{} PP{} DP{}", l.tp, l.pp, l.dp);
  if (l.cp > 1) out += fmt::format(" CP{}", l.cp);
  if (l.ep > 1) out += fmt::format(" EP{}", l.ep);
  if (inference(phase)) return out + fmt::format(" batch {}", l.batch);
  out += fmt::format(" mbs{}", l.mbs);
  if (l.sp) out += " SP";
  if (l.tp_overlap) out += "+overlap";
  if (l.zero > 0) out += fmt::format(" ZeRO-{}", l.zero);
  if (l.pp > 1) out += l.v > 1 ? fmt::format(" interleaved×{}", l.v) : " 1F1B";
  out += " rc:" + short_recompute(l.recompute);
  if (l.order != "tp-cp-ep-pp-dp") out += " order:" + l.order;
  return out;
}

Layout layout_of(const models::Scenario& scenario) {
  const models::StrategySpec& s = *scenario.strategy;
  const models::WorkloadSpec& w = *scenario.workload;
  Layout l;
  l.tp = s.tp, l.pp = s.pp, l.dp = s.dp, l.cp = s.cp, l.ep = s.ep;
  l.sp = s.sequence_parallel, l.tp_overlap = s.tp_comm_overlap, l.zero = s.zero_stage;
  l.v = s.pipeline_schedule == "interleaved" ? s.virtual_stages : 1;
  l.order = s.order;
  if (inference(w.phase)) {
    l.batch = w.phase == models::WorkloadPhase::Prefill ? w.micro_batch_size : w.batch_size;
    l.mbs = w.micro_batch_size;
  } else {
    l.mbs = w.micro_batch_size;
    l.recompute = w.recompute;
  }
  return l;
}

bool same_layout(const Layout& a, const Layout& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.ep == b.ep && a.sp == b.sp && a.tp_overlap == b.tp_overlap &&
         a.zero == b.zero && a.v == b.v && a.recompute == b.recompute && a.batch == b.batch &&
         (inference_batch_only(a, b) || a.mbs == b.mbs) && order_signature(a.order, a) == order_signature(b.order, b);
}

SearchSpace default_space(const models::Scenario& scenario, const models::Cluster& cluster) {
  const models::TransformerConfig& m = *scenario.model;
  const models::WorkloadSpec& w = *scenario.workload;
  const models::StrategySpec& s = *scenario.strategy;
  int node_gpus = std::numeric_limits<int>::max();
  for (const auto& g : cluster.spec.groups) node_gpus = std::min(node_gpus, g.node.gpus);
  const int world = cluster.spec.total_gpus();
  SearchSpace sp;
  sp.tp = powers_of_two(1, std::min(node_gpus, world));
  sp.pp = powers_of_two(1, std::min(m.layers, world));
  sp.cp = {1};
  sp.ep = {1};
  sp.zero = {0};
  sp.v = {1};
  sp.sp = {false};
  sp.tp_overlap = {false};
  sp.recompute = {"none"};
  sp.order = {"tp-cp-ep-pp-dp"};
  if (inference(w.phase)) {
    for (std::int64_t b = 1; b <= 256; b *= 2) sp.batch.push_back(b);
    sp.mbs = {w.micro_batch_size};
    add_unique(sp.batch, w.phase == models::WorkloadPhase::Prefill ? w.micro_batch_size : w.batch_size);
  } else {
    if (w.sequence_length > 16384) {
      for (int c = 2; w.sequence_length / c >= 8192 && c <= world; c *= 2) sp.cp.push_back(c);
    }
    if (m.moe) {
      sp.ep.clear();
      for (int e = 1; e <= m.moe->experts && e <= world; e *= 2)
        if (m.moe->experts % e == 0) sp.ep.push_back(e);
    }
    sp.mbs = {1, 2, 4};
    sp.sp = {true};
    sp.tp_overlap = {false, true};
    sp.zero = {0, 1, 3};
    sp.v = {1, 2, 4};
    sp.recompute = {"none", "selective", "full"};
    sp.order = {"tp-cp-ep-pp-dp", "tp-cp-ep-dp-pp"};
    add_unique(sp.mbs, w.micro_batch_size);
    add_unique(sp.recompute, w.recompute);
    add_unique(sp.zero, s.zero_stage);
    add_unique(sp.v, s.pipeline_schedule == "interleaved" ? s.virtual_stages : 1);
    add_unique(sp.sp, s.sequence_parallel);
    add_unique(sp.tp_overlap, s.tp_comm_overlap);
  }
  sp.batch.empty() ? sp.batch.push_back(0) : void();
  add_unique(sp.tp, s.tp);
  add_unique(sp.pp, s.pp);
  add_unique(sp.cp, s.cp);
  add_unique(sp.ep, s.ep);
  add_unique(sp.order, s.order);
  return sp;
}

std::string apply_space_option(SearchSpace& space, const std::string& arg, bool fix) {
  const std::string option = fix ? "--fix" : "--space";
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) bad(option, "", "KNOB=VALUES (e.g. tp=8, pp=1..16)", "'" + arg + "'");
  std::string key = arg.substr(0, eq);
  const std::string text = arg.substr(eq + 1);
  static const std::map<std::string, std::string> aliases = {
      {"zero_stage", "zero"},      {"micro_batch_size", "mbs"}, {"virtual_stages", "v"},  {"sequence_parallel", "sp"},
      {"tp_comm_overlap", "tp_overlap"}, {"batch_size", "batch"}};
  if (const auto it = aliases.find(key); it != aliases.end()) key = it->second;
  if (fix && text.find_first_of(",.") != std::string::npos && key != "order") {
    bad(option, key, "one value (use --space for several)", "'" + text + "'");
  }
  const auto ints = [&](std::int64_t lo, std::int64_t hi) { return parse_ints(option, key, text, lo, hi); };
  const auto to_int = [](const std::vector<std::int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  if (key == "tp") space.tp = to_int(ints(1, 1 << 20));
  else if (key == "pp") space.pp = to_int(ints(1, 4096));
  else if (key == "cp") space.cp = to_int(ints(1, 1 << 20));
  else if (key == "ep") space.ep = to_int(ints(1, 1 << 20));
  else if (key == "zero") space.zero = to_int(ints(0, 3));
  else if (key == "v") space.v = to_int(ints(1, 64));
  else if (key == "mbs") space.mbs = ints(1, 1 << 20);
  else if (key == "batch") space.batch = ints(1, 1 << 24);
  else if (key == "sp" || key == "tp_overlap") {
    std::vector<bool> out;
    for (const auto& w : parse_words(option, key, text, {"true", "false"})) out.push_back(w == "true");
    (key == "sp" ? space.sp : space.tp_overlap) = out;
  } else if (key == "recompute") {
    space.recompute = parse_words(option, key, text, {"none", "selective", "full"});
  } else if (key == "order") {
    std::vector<std::string> out;
    for (const auto& o : split(text, ',')) {
      if (!valid_order(o)) bad(option, key, "an order of tp, cp, ep, pp, dp joined by '-' (e.g. tp-cp-ep-pp-dp)", "'" + o + "'");
      add_unique(out, o);
    }
    if (fix && out.size() > 1) bad(option, key, "one value (use --space for several)", "'" + text + "'");
    space.order = out;
  } else {
    bad(option, key.empty() ? "''" : key,
        "a knob: tp, pp, cp, ep, zero, mbs, v, sp, tp_overlap, recompute, order, batch (dp follows from the GPUs)",
        "'" + key + "'");
  }
  return key;
}

SearchSpace space_from_options(const models::Scenario& scenario, const models::Cluster& cluster, const std::vector<std::string>& space,
                               const std::vector<std::string>& fix) {
  SearchSpace out = default_space(scenario, cluster);
  std::map<std::string, std::string> seen;  // knob -> the option that set it
  const models::WorkloadPhase phase = scenario.workload->phase;
  static const std::set<std::string> training_only = {"cp", "ep", "mbs", "sp", "tp_overlap", "zero", "v", "recompute"};
  const auto apply = [&](const std::string& arg, bool is_fix) {
    const std::string option = is_fix ? "--fix" : "--space";
    const std::string knob = apply_space_option(out, arg, is_fix);
    if (const auto it = seen.find(knob); it != seen.end()) {
      bad(option, knob, "each knob in one --space or --fix", "it in " + it->second + " as well");
    }
    seen[knob] = option;
    if (inference(phase) && training_only.count(knob) != 0) {
      bad(option, knob, "a knob of the inference layout (tp, pp, batch, order)", "phase " + std::string(models::to_string(phase)) + " (" + knob + " is a training-step knob)");
    }
    if (!inference(phase) && knob == "batch") {
      bad(option, knob, "a training knob (batch is for inference phases; mbs is the micro-batch)", "phase training_step");
    }
  };
  for (const auto& s : space) apply(s, false);
  for (const auto& f : fix) apply(f, true);
  return out;
}

models::Scenario with_layout(const models::Scenario& scenario, const Candidate& c) {
  models::Scenario out = scenario;
  out.strategy = c.strategy;
  out.workload = c.workload;
  return out;
}

Enumeration enumerate_layouts(const models::Scenario& scenario, const models::Cluster& cluster, const SearchSpace& space) {
  const models::TransformerConfig& m = *scenario.model;
  const models::WorkloadSpec& w0 = *scenario.workload;
  const models::StrategySpec& s0 = *scenario.strategy;
  const int world = cluster.spec.total_gpus();
  double hbm = std::numeric_limits<double>::infinity();
  for (const auto& g : cluster.spec.groups) hbm = std::min(hbm, g.node.gpu.hbm_capacity);
  const bool infer = inference(w0.phase);
  Enumeration out;
  const auto prune = [&](const char* reason) { ++out.pruned[reason]; };
  for (int tp : space.tp)
    for (int pp : space.pp)
      for (int cp : space.cp) {
        const std::int64_t tpc = static_cast<std::int64_t>(tp) * pp * cp;
        for (int ep : space.ep)
          for (std::int64_t mbs : space.mbs)
            for (std::int64_t batch : space.batch)
              for (bool sp : space.sp)
                for (bool overlap : space.tp_overlap)
                  for (int zero : space.zero)
                    for (int v : space.v)
                      for (const std::string& rc : space.recompute) {
                        std::set<std::string> orders_seen;
                        for (const std::string& order : space.order) {
                          // Settings that do not change the layout are not enumerated twice.
                          if (tp == 1 && (sp != space.sp.front() || overlap != space.tp_overlap.front())) continue;
                          if (tp > 1 && overlap && !sp) continue;
                          if (pp == 1 && v > 1) continue;
                          Layout l;
                          l.tp = tp, l.pp = pp, l.cp = cp, l.ep = ep, l.sp = sp && tp > 1, l.tp_overlap = overlap && tp > 1;
                          l.zero = zero, l.mbs = mbs, l.v = v, l.recompute = rc, l.order = order, l.batch = batch;
                          l.dp = world % tpc == 0 ? static_cast<int>(world / tpc) : 0;
                          // A layout that does not divide the GPUs is one layout, whatever its order.
                          if (!orders_seen.insert(l.dp > 0 ? order_signature(order, l) : std::string()).second) continue;
                          // Without data parallelism there is nothing to shard: ZeRO stages coincide.
                          if (l.dp > 0 && static_cast<std::int64_t>(l.dp) * cp == 1 && zero != space.zero.front()) continue;
                          ++out.total;
                          if (l.dp == 0) {
                            prune(kPruneGpus);
                            continue;
                          }
                          Candidate c;
                          c.layout = l;
                          c.strategy = s0;
                          c.workload = w0;
                          auto& s = c.strategy;
                          auto& w = c.workload;
                          s.tp = tp, s.pp = pp, s.dp = l.dp, s.cp = cp, s.ep = ep;
                          s.sequence_parallel = l.sp;
                          s.tp_comm_overlap = l.tp_overlap;
                          s.zero_stage = zero;
                          s.virtual_stages = v;
                          s.pipeline_schedule = v > 1 ? "interleaved" : "1f1b";
                          s.order = order;
                          // A split of the scenario's own layout (per DP replica, per model chunk)
                          // does not carry over to a layout of other sizes.
                          // Uneven micro-batches hold for the scenario's own dp, ep, ZeRO stage and
                          // 1f1b only (the scenario rules); proportional for 1f1b below ZeRO-3.
                          if (s.dp != s0.dp || s.ep != s0.ep || s.zero_stage != s0.zero_stage || v > 1) s.dp_micro_batches.clear();
                          if (v > 1 || s.zero_stage == 3 || s.ep > s.cp) s.dp_micro_batches_proportional = false;
                          if (s.pp != s0.pp || s.virtual_stages != s0.virtual_stages) s.pipeline_layers.clear();
                          if (s.pp != s0.pp || s.virtual_stages > 1) s.decoder_first_pipeline_num_layers = s.decoder_last_pipeline_num_layers = 0;
                          if (infer) {
                            if (w.phase == models::WorkloadPhase::Prefill) w.micro_batch_size = batch;
                            else w.batch_size = batch;
                          } else {
                            w.micro_batch_size = mbs;
                            if (mbs != w0.micro_batch_size) s.dp_micro_batches.clear();
                            w.recompute = rc;
                            if (w.global_batch_size > 0 && w.global_batch_size % (mbs * l.dp) != 0) {
                              prune(kPruneBatch);
                              continue;
                            }
                          }
                          if (ep > 1 && (static_cast<std::int64_t>(l.dp) * cp) % ep != 0) {
                            prune(kPruneModel);
                            continue;
                          }
                          if (const auto problem = models::check_layout(m, w, s)) {
                            const bool interleave = v > 1 && (problem->key == "microbatch_group_size_per_vp_stage" ||
                                                              (problem->key == "global_batch_size" && problem->expected.find("interleaved") != std::string::npos));
                            prune(interleave                          ? kPruneInterleave
                                  : problem->key == "global_batch_size" ? kPruneBatch
                                  : problem->key == "pp"                ? kPruneDepth
                                                                        : kPruneModel);
                            continue;
                          }
                          double mem = 0;
                          for (const auto& f : models::memory_footprint(m, w, s)) mem = std::max(mem, f.total());
                          if (mem > hbm) {
                            prune(kPruneMemory);
                            continue;
                          }
                          c.memory = mem;
                          out.candidates.push_back(std::move(c));
                        }
                      }
      }
  return out;
}

}  // namespace ccsim::planner
