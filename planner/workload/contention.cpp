#include "planner/workload/contention.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "sim/execution/plan_merge.hpp"

namespace ccsim::planner {

namespace {

using models::ParallelDim;

/// One communication op at its start: the Program ops it stands for (the copies of a DP
/// collective joined across replica classes are one op).
struct Instance {
  int cost = 0;
  int dim = 0;
  double start = 0, end = 0;
  std::vector<std::uint32_t> ops;
};

}  // namespace

int contention_dimension(const models::ProgramOp& op) {
  if (op.expert && op.dim == models::ParallelDim::DP) return 5;
  return static_cast<int>(op.dim);
}

const char* contention_dimension_name(int d) {
  static constexpr const char* kNames[kContentionDims] = {"TP", "PP", "DP", "EP", "CP", "EDP"};
  return kNames[d];
}

bool sorted_intersect(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

class CrossDimensionContention::Impl {
 public:
  Impl(const models::Program& p, const std::vector<int>& op_comm, const std::vector<CommCost>& costs, sim::Engine& engine)
      : p_(p), op_comm_(op_comm), costs_(costs), engine_(engine), links_(costs.size()), gpus_(costs.size()) {
    for (std::size_t c = 0; c < costs.size(); ++c) {
      for (const auto& l : costs[c].links)
        if (l.bytes > 0) links_[c].push_back(l.link);
      std::sort(links_[c].begin(), links_[c].end());
      if (costs[c].plan) {
        gpus_[c].assign(costs[c].plan->rank_gpu.begin(), costs[c].plan->rank_gpu.end());
        std::sort(gpus_[c].begin(), gpus_[c].end());
      }
    }
  }

  /// The instances of `timing`, by start.
  std::vector<Instance> instances(const std::vector<OpTiming>& timing, const std::vector<double>& alone) const {
    std::map<std::pair<int, double>, std::size_t> index;
    std::vector<Instance> out;
    for (std::uint32_t i = 0; i < p_.ops.size(); ++i) {
      const int c = op_comm_[i];
      if (c < 0 || !costs_[static_cast<std::size_t>(c)].plan || alone[i] <= 0) continue;
      const auto [it, fresh] = index.try_emplace({c, timing[i].start}, out.size());
      if (fresh) out.push_back({c, contention_dimension(p_.ops[i]), timing[i].start, timing[i].end, {}});
      out[it->second].ops.push_back(i);
    }
    std::sort(out.begin(), out.end(), [](const Instance& a, const Instance& b) {
      return a.start != b.start ? a.start < b.start : a.cost < b.cost;
    });
    return out;
  }

  /// Instance k's duration beside the instances of other dimensions that overlap it; `partners`
  /// gets the bit set of those dimensions.
  double contended(const std::vector<Instance>& in, std::size_t k, double alone, double max_length, unsigned& partners) {
    partners = 0;
    const Instance& me = in[k];
    const double eps = 1e-12 * std::max(1.0, me.end);
    // Candidates: every instance whose start is within max_length before my end.
    std::vector<std::pair<double, std::size_t>> cand;  // (overlap, index)
    const auto first = std::lower_bound(in.begin(), in.end(), me.start - max_length,
                                        [](const Instance& a, double t) { return a.start < t; });
    for (auto it = first; it != in.end() && it->start < me.end - eps; ++it) {
      const auto j = static_cast<std::size_t>(it - in.begin());
      if (j == k || it->dim == me.dim || it->end <= me.start + eps) continue;
      if (!shares_links(me.cost, it->cost)) continue;
      cand.emplace_back(std::min(me.end, it->end) - std::max(me.start, it->start), j);
    }
    if (cand.empty()) return alone;
    std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::vector<std::size_t> chosen;
    for (const auto& [overlap, j] : cand) {
      bool twin = false;  // the same physical op, seen from another replica class
      for (std::size_t c : chosen)
        twin = twin || (in[c].dim == in[j].dim && shares_gpus(in[c].cost, in[j].cost));
      if (!twin) chosen.push_back(j);
    }
    for (std::size_t j : chosen) partners |= 1U << in[j].dim;
    // Offsets from my start, rounded to 1e-4 of my time alone: the key of the run.
    const double q = 1e-4 * alone;
    std::vector<std::pair<int, long long>> key{{me.cost, 0}};
    for (std::size_t j : chosen) key.emplace_back(in[j].cost, std::llround((in[j].start - me.start) / q));
    std::sort(key.begin() + 1, key.end());
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::vector<const sim::PlanPart*> parts;
    std::vector<double> offset;
    for (const auto& [c, off] : key) {
      parts.push_back(costs_[static_cast<std::size_t>(c)].plan.get());
      offset.push_back(static_cast<double>(off) * q);
    }
    const double shift = -*std::min_element(offset.begin(), offset.end());
    for (double& o : offset) o += shift;
    const auto merged = sim::merge_plans(parts, offset);
    const sim::Timeline tl = engine_.run(merged->plan);
    const double t = sim::part_ends(merged->plan, tl).front() - shift;
    ++runs_;
    memo_.emplace(std::move(key), t);
    return t;
  }

  std::size_t runs() const { return runs_; }

  std::vector<double> alone;   ///< per op: its duration costed alone
  std::vector<Instance> in;    ///< the last durations() call's instances
  std::vector<double> length;  ///< and their contended durations
  std::vector<unsigned> partners;  ///< and the dimensions they ran beside (bit set)

 private:
  bool shares_links(int a, int b) {
    const auto k = std::minmax(a, b);
    const auto [it, fresh] = link_memo_.try_emplace(k, false);
    if (fresh) it->second = sorted_intersect(links_[static_cast<std::size_t>(a)], links_[static_cast<std::size_t>(b)]);
    return it->second;
  }
  bool shares_gpus(int a, int b) {
    const auto k = std::minmax(a, b);
    const auto [it, fresh] = gpu_memo_.try_emplace(k, false);
    if (fresh) it->second = a == b || sorted_intersect(gpus_[static_cast<std::size_t>(a)], gpus_[static_cast<std::size_t>(b)]);
    return it->second;
  }

  const models::Program& p_;
  const std::vector<int>& op_comm_;
  const std::vector<CommCost>& costs_;
  sim::Engine& engine_;
  std::vector<std::vector<std::uint32_t>> links_;  ///< per cost: links that carried bytes, ascending
  std::vector<std::vector<std::uint32_t>> gpus_;   ///< per cost: its run's GPUs, ascending
  std::map<std::pair<int, int>, bool> link_memo_, gpu_memo_;
  std::map<std::vector<std::pair<int, long long>>, double> memo_;
  std::size_t runs_ = 0;
};

CrossDimensionContention::CrossDimensionContention(const models::Program& p, const std::vector<int>& op_comm,
                                                   const std::vector<CommCost>& costs, sim::Engine& engine, std::vector<double> alone)
    : impl_(std::make_unique<Impl>(p, op_comm, costs, engine)) {
  impl_->alone = std::move(alone);
}

CrossDimensionContention::~CrossDimensionContention() = default;

std::size_t CrossDimensionContention::runs() const { return impl_->runs(); }

std::vector<double> CrossDimensionContention::durations(const std::vector<OpTiming>& timing) {
  Impl& c = *impl_;
  c.in = c.instances(timing, c.alone);
  double max_length = 0;
  for (const Instance& i : c.in) max_length = std::max(max_length, i.end - i.start);
  std::vector<double> next = c.alone;
  c.length.assign(c.in.size(), 0.0);
  c.partners.assign(c.in.size(), 0);
  for (std::size_t k = 0; k < c.in.size(); ++k) {
    const double a = c.alone[c.in[k].ops.front()];
    c.length[k] = std::max(a, c.contended(c.in, k, a, max_length, c.partners[k]));
    for (std::uint32_t op : c.in[k].ops) next[op] = c.length[k];
  }
  return next;
}

std::vector<DimensionContention> CrossDimensionContention::dims() const {
  const Impl& c = *impl_;
  std::vector<DimensionContention> dims(kContentionDims);
  for (std::size_t k = 0; k < c.in.size(); ++k) {
    auto& d = dims[static_cast<std::size_t>(c.in[k].dim)];
    const double a = c.alone[c.in[k].ops.front()];
    d.ops += 1;
    d.alone += a;
    d.contended += c.length[k];
    d.slowed += c.length[k] > a * (1 + 1e-9) ? 1 : 0;
    // The loss split evenly over the dimensions it ran beside.
    const int n = __builtin_popcount(c.partners[k]);
    if (n == 0 || c.length[k] <= a) continue;
    if (d.lost_to.empty()) d.lost_to.assign(kContentionDims, 0.0);
    for (int other = 0; other < kContentionDims; ++other)
      if ((c.partners[k] >> other) & 1U) d.lost_to[static_cast<std::size_t>(other)] += (c.length[k] - a) / n;
  }
  std::vector<DimensionContention> out;
  for (int d = 0; d < kContentionDims; ++d) {
    if (dims[static_cast<std::size_t>(d)].ops == 0) continue;
    DimensionContention& x = dims[static_cast<std::size_t>(d)];
    x.dim = contention_dimension_name(d);
    for (std::size_t o = 0; o < x.lost_to.size(); ++o)
      if (x.lost_to[o] > 0) x.to.emplace_back(contention_dimension_name(static_cast<int>(o)), x.lost_to[o]);
    x.lost_to.clear();
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace ccsim::planner
