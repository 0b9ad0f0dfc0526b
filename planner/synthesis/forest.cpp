#include "planner/synthesis/forest.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <stdexcept>

#include "planner/synthesis/flow_network.hpp"

namespace ccsim::planner::synthesis {

int Tree::height() const {
  std::map<int, int> depth{{root, 0}};
  int h = 0;
  for (const TreeEdge& e : edges) {
    const int d = depth[e.parent] + 1;
    depth[e.child] = d;
    h = std::max(h, d);
  }
  return h;
}

int Forest::height() const {
  int h = 0;
  for (const Tree& t : trees) h = std::max(h, t.height());
  return h;
}

namespace {

std::int64_t units_of(double bandwidth, double unit) { return static_cast<std::int64_t>(std::llround(bandwidth / unit)); }

/// An arc of the working graph: capacity in scaled units, the switch path it stands for.
struct WorkArc {
  int from = 0, to = 0;
  std::int64_t cap = 0;
  std::vector<int> via;
  std::vector<models::LinkId> links;
};

class Synthesizer {
 public:
  Synthesizer(const SynthesisGraph& g, const ForestOptions& o) : g_(g), o_(o), n_(g.compute), v_(g.vertices()) {
    for (const SynthesisArc& a : g.arcs) {
      const std::int64_t c = units_of(a.bandwidth, o.unit);
      if (c > 0) arcs_.push_back({a.from, a.to, c, {}, a.links});
    }
  }

  Forest run() {
    if (n_ < 2) throw std::invalid_argument("allgather_forest: fewer than two ranks");
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
    auto t = Clock::now();
    optimum();
    f_.seconds_optimum = seconds(t);
    if (o_.build_trees) {
      for (WorkArc& a : arcs_) a.cap *= q_;
      t = Clock::now();
      split_switches();
      f_.seconds_splitting = seconds(t);
      t = Clock::now();
      pack();
      f_.seconds_packing = seconds(t);
    }
    f_.ranks = n_;
    f_.unit = o_.unit;
    f_.rate_num = p_;
    f_.rate_den = q_;
    f_.weight_per_root = p_;
    f_.max_flows = flows_;
    return std::move(f_);
  }

 private:
  /// The condition network: super-source s = v_ with p units into every rank, the working arcs
  /// with `scale` times their capacity.
  FlowNetwork network(std::int64_t p, std::int64_t scale) const {
    FlowNetwork net(v_ + 1);
    for (int r = 0; r < n_; ++r) net.add_arc(v_, r, p);
    for (const WorkArc& a : arcs_) net.add_arc(a.from, a.to, a.cap * scale);
    return net;
  }
  std::int64_t flow(const FlowNetwork& net, int sink, std::vector<char>* side = nullptr, int source = -1) {
    ++flows_;
    return net.max_flow(source < 0 ? v_ : source, sink, side);
  }

  void optimum() {
    const std::vector<int> cls = vertex_classes(g_, o_.unit);
    std::vector<int> targets;
    std::vector<char> seen(static_cast<std::size_t>(v_), 0);
    for (int r = 0; r < n_; ++r) {
      if (!seen[static_cast<std::size_t>(cls[static_cast<std::size_t>(r)])]) {
        seen[static_cast<std::size_t>(cls[static_cast<std::size_t>(r)])] = 1;
        targets.push_back(r);
      }
    }
    f_.rank_classes = static_cast<int>(targets.size());
    // Start from the best single-rank cut: S = {r}, B⁻ = r's in-capacity, N − 1 blocks to enter.
    std::vector<std::int64_t> in(static_cast<std::size_t>(n_), 0);
    for (const WorkArc& a : arcs_) {
      if (a.to < n_) in[static_cast<std::size_t>(a.to)] += a.cap;
    }
    const auto lowest = std::min_element(in.begin(), in.end());
    if (*lowest <= 0) {
      throw std::invalid_argument(fmt::format("allgather_forest: rank {} has no capacity into it", lowest - in.begin()));
    }
    set_ratio(*lowest, n_ - 1, {static_cast<int>(lowest - in.begin())});
    const auto improve = [&](const std::vector<int>& ranks) {
      for (int t : ranks) {
        std::vector<char> side;
        const FlowNetwork net = network(p_, q_);
        const std::int64_t f = flow(net, t, &side);
        if (f >= static_cast<std::int64_t>(n_) * p_) continue;
        std::int64_t entering = 0;
        for (const WorkArc& a : arcs_) {
          if (side[static_cast<std::size_t>(a.to)] && !side[static_cast<std::size_t>(a.from)]) entering += a.cap;
        }
        std::vector<int> inside;
        for (int r = 0; r < n_; ++r) {
          if (side[static_cast<std::size_t>(r)]) inside.push_back(r);
        }
        const int outside = n_ - static_cast<int>(inside.size());
        if (outside < 1) throw std::logic_error("allgather_forest: a failing cut holds every rank");
        set_ratio(entering, outside, inside);
        return true;
      }
      return false;
    };
    while (improve(targets)) {
    }
    f_.every_rank_checked = n_ <= o_.check_all_up_to;
    if (f_.every_rank_checked) {
      std::vector<int> all(static_cast<std::size_t>(n_));
      std::iota(all.begin(), all.end(), 0);
      while (improve(all)) {
      }
    }
  }

  void set_ratio(std::int64_t entering, std::int64_t outside, std::vector<int> inside) {
    const std::int64_t d = std::gcd(entering, outside);
    p_ = entering / d;
    q_ = outside / d;
    f_.tight_cut = std::move(inside);
    f_.tight_bandwidth = static_cast<double>(entering) * o_.unit;
  }

  bool holds(const std::vector<int>& ranks) {
    const FlowNetwork net = network(p_, 1);
    for (int t : ranks) {
      if (flow(net, t) < static_cast<std::int64_t>(n_) * p_) return false;
    }
    return true;
  }

  /// Largest γ ≤ limit that arcs (u,w), (w,t) may move onto (u,t) (u = t: both dropped). The
  /// move takes γ from the cuts X (sink side, holding a rank) with u, t outside and w inside
  /// (u -> w no longer enters X) and from those with u, t inside and w outside (w -> t no longer
  /// does); no other cut changes. One forced max-flow per rank for each family.
  std::int64_t split_slack(int u, int w, int t, std::int64_t limit) {
    const std::int64_t need = static_cast<std::int64_t>(n_) * p_;
    FlowNetwork net = network(p_, 1);
    const std::size_t su = net.add_slot(v_, u), st = net.add_slot(v_, t), sw = net.add_slot(v_, w);
    std::vector<std::size_t> w_to(static_cast<std::size_t>(n_)), u_to(static_cast<std::size_t>(n_)), t_to(static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      w_to[static_cast<std::size_t>(r)] = net.add_slot(w, r);
      if (u != r) u_to[static_cast<std::size_t>(r)] = net.add_slot(u, r);
      if (t != r) t_to[static_cast<std::size_t>(r)] = net.add_slot(t, r);
    }
    FlowSolver solver(net);
    std::int64_t slack = limit;
    // u, t outside, w inside.
    solver.set_capacity(su, kUnbounded);
    solver.set_capacity(st, kUnbounded);
    for (int r = 0; r < n_ && slack > 0; ++r) {
      if (r == u || r == t) continue;
      solver.set_capacity(w_to[static_cast<std::size_t>(r)], kUnbounded);
      ++flows_;
      slack = std::min(slack, solver.max_flow(v_, r) - need);
      solver.set_capacity(w_to[static_cast<std::size_t>(r)], 0);
    }
    solver.set_capacity(su, 0);
    solver.set_capacity(st, 0);
    // u, t inside, w outside.
    if (slack > 0) {
      solver.set_capacity(sw, kUnbounded);
      const int rank = u < n_ ? u : (t < n_ ? t : -1);
      for (int r = (rank >= 0 ? rank : 0); r < (rank >= 0 ? rank + 1 : n_) && slack > 0; ++r) {
        if (u != r) solver.set_capacity(u_to[static_cast<std::size_t>(r)], kUnbounded);
        if (t != r) solver.set_capacity(t_to[static_cast<std::size_t>(r)], kUnbounded);
        ++flows_;
        slack = std::min(slack, solver.max_flow(v_, r) - need);
        if (u != r) solver.set_capacity(u_to[static_cast<std::size_t>(r)], 0);
        if (t != r) solver.set_capacity(t_to[static_cast<std::size_t>(r)], 0);
      }
    }
    return std::max<std::int64_t>(slack, 0);
  }

  void split_switches() {
    std::vector<int> order;
    for (int w = n_; w < v_; ++w) order.push_back(w);
    std::vector<std::int64_t> degree(static_cast<std::size_t>(v_), 0);
    for (const WorkArc& a : arcs_) {
      ++degree[static_cast<std::size_t>(a.from)];
      ++degree[static_cast<std::size_t>(a.to)];
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return degree[static_cast<std::size_t>(a)] < degree[static_cast<std::size_t>(b)]; });
    std::vector<int> all(static_cast<std::size_t>(n_));
    std::iota(all.begin(), all.end(), 0);
    for (int w : order) {
      std::int64_t in = 0, out = 0;
      for (const WorkArc& a : arcs_) {
        if (a.to == w) in += a.cap;
        if (a.from == w) out += a.cap;
      }
      split_off(w);
      // With in = out the splitting theorem guarantees the condition; otherwise check it.
      if (in != out && !holds(all)) {
        throw SplittingFailed(fmt::format("switch {} takes in {:.2f} GB/s and sends out {:.2f} GB/s: ForestColl's switch removal "
                                          "cannot split it off (a NIC shared by several GPUs, a link degraded in one direction)",
                                          g_.name[static_cast<std::size_t>(w)], static_cast<double>(in) / q_ * o_.unit / 1e9,
                                          static_cast<double>(out) / q_ * o_.unit / 1e9));
      }
    }
    if (!holds(all)) throw std::logic_error("allgather_forest: switch removal broke the max-flow condition");
  }

  void split_off(int w) {
    for (;;) {
      std::vector<std::size_t> ins, outs;
      for (std::size_t i = 0; i < arcs_.size(); ++i) {
        if (arcs_[i].cap <= 0) continue;
        if (arcs_[i].to == w) ins.push_back(i);
        if (arcs_[i].from == w) outs.push_back(i);
      }
      if (ins.empty() || outs.empty()) break;
      bool progress = false;
      for (std::size_t bi : outs) {
        // Pairs that make the router's route between two ranks come first, pairs making a path
        // the router does not take after them, loops (u -> w -> u, carrying nothing) last.
        const auto rank_of = [&](std::size_t x) {
          const int u = arcs_[x].from, t = arcs_[bi].to;
          if (u == t) return 2;
          if (u >= n_ || t >= n_) return 0;
          const auto route = g_.routes.find({u, t});
          if (route == g_.routes.end()) return 0;
          std::vector<models::LinkId> links = arcs_[x].links;
          links.insert(links.end(), arcs_[bi].links.begin(), arcs_[bi].links.end());
          return links == route->second ? 0 : 1;
        };
        std::stable_sort(ins.begin(), ins.end(), [&](std::size_t x, std::size_t y) { return rank_of(x) < rank_of(y); });
        for (std::size_t ai : ins) {
          if (arcs_[bi].cap <= 0) break;
          if (arcs_[ai].cap <= 0) continue;
          const int u = arcs_[ai].from, t = arcs_[bi].to;
          const std::int64_t gamma = split_slack(u, w, t, std::min(arcs_[ai].cap, arcs_[bi].cap));
          if (gamma <= 0) continue;
          progress = true;
          arcs_[ai].cap -= gamma;
          arcs_[bi].cap -= gamma;
          if (u == t) continue;  // a loop: dropped
          WorkArc merged{u, t, gamma, arcs_[ai].via, arcs_[ai].links};
          merged.via.push_back(w);
          merged.via.insert(merged.via.end(), arcs_[bi].via.begin(), arcs_[bi].via.end());
          merged.links.insert(merged.links.end(), arcs_[bi].links.begin(), arcs_[bi].links.end());
          const auto same = std::find_if(arcs_.begin(), arcs_.end(), [&](const WorkArc& a) {
            return a.from == u && a.to == t && a.via == merged.via && a.links == merged.links;
          });
          if (same != arcs_.end()) {
            same->cap += gamma;
          } else {
            arcs_.push_back(std::move(merged));  // invalidates nothing: indices stay valid
          }
        }
      }
      if (!progress) break;
    }
    // What is left at w cannot be split without breaking the condition: drop it.
    std::erase_if(arcs_, [&](const WorkArc& a) { return a.cap <= 0 || a.from == w || a.to == w; });
  }

  struct Partial {
    int root = 0;
    std::int64_t weight = 0;
    std::vector<char> in;
    std::vector<int> members;  ///< in order of joining (the root first)
    std::vector<TreeEdge> edges;
  };

  /// The packing network with tree `grow` tentatively grown: ranks, super-source, one vertex per
  /// incomplete tree (its weight from s, unbounded arcs to its members), the compute arcs; tree
  /// `grow` keeps weight − mu and a copy of it joined by `y` has mu. A complete tree meets every
  /// cut: it is left out and `need` (what every rank must receive) lowered by its weight.
  FlowNetwork packing_network(const std::vector<Partial>& trees, std::size_t grow, std::int64_t mu, int y, std::int64_t& need) const {
    FlowNetwork net(n_ + 2 + static_cast<int>(trees.size()));
    const int s = n_;
    need = static_cast<std::int64_t>(n_) * p_;
    for (std::size_t i = 0; i < trees.size(); ++i) {
      const std::int64_t w = trees[i].weight - (i == grow ? mu : 0);
      if (static_cast<int>(trees[i].members.size()) == n_) {
        need -= trees[i].weight;
        continue;
      }
      const int a = n_ + 1 + static_cast<int>(i);
      net.add_arc(s, a, w);
      for (int m : trees[i].members) net.add_arc(a, m, kUnbounded);
    }
    if (grow < trees.size() && mu > 0) {  // the grown copy
      const int a = n_ + 1 + static_cast<int>(trees.size());
      if (static_cast<int>(trees[grow].members.size()) + 1 == n_) {
        need -= mu;
      } else {
        net.add_arc(s, a, mu);
        for (int m : trees[grow].members) net.add_arc(a, m, kUnbounded);
        net.add_arc(a, y, kUnbounded);
      }
    }
    for (const WorkArc& arc : arcs_) net.add_arc(arc.from, arc.to, arc.cap);
    return net;
  }

  void pack() {
    std::vector<Partial> trees;
    for (int r = 0; r < n_; ++r) {
      Partial t;
      t.root = r;
      t.weight = p_;
      t.in.assign(static_cast<std::size_t>(n_), 0);
      t.in[static_cast<std::size_t>(r)] = 1;
      t.members = {r};
      trees.push_back(std::move(t));
    }
    std::vector<std::size_t> stack;
    for (std::size_t i = trees.size(); i-- > 0;) stack.push_back(i);
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      if (static_cast<int>(trees[i].members.size()) == n_) {
        stack.pop_back();
        continue;
      }
      bool grown = false;
      // Parents in order of joining: shallow trees.
      for (std::size_t mi = 0; mi < trees[i].members.size() && !grown; ++mi) {
        const int x = trees[i].members[mi];
        for (std::size_t ai = 0; ai < arcs_.size() && !grown; ++ai) {
          if (arcs_[ai].from != x || arcs_[ai].cap <= 0 || trees[i].in[static_cast<std::size_t>(arcs_[ai].to)]) continue;
          const int y = arcs_[ai].to;
          std::int64_t mu = std::min(trees[i].weight, arcs_[ai].cap);
          while (mu > 0) {
            // Tentative: the arc loses mu; tree i keeps weight − mu, a copy of it with y joins at mu.
            arcs_[ai].cap -= mu;
            std::vector<char> side;
            std::int64_t need = 0;
            const std::int64_t f = flow(packing_network(trees, i, mu, y, need), y, &side, n_);
            if (f >= need) {
              Partial grown_tree = trees[i];
              grown_tree.weight = mu;
              grown_tree.in[static_cast<std::size_t>(y)] = 1;
              grown_tree.members.push_back(y);
              TreeEdge e{x, y, arcs_[ai].via, arcs_[ai].links};
              if (mu == trees[i].weight) {
                trees[i].in[static_cast<std::size_t>(y)] = 1;
                trees[i].members.push_back(y);
                trees[i].edges.push_back(std::move(e));
              } else {
                grown_tree.edges.push_back(std::move(e));
                trees[i].weight -= mu;
                trees.push_back(std::move(grown_tree));
                stack.push_back(trees.size() - 1);
              }
              grown = true;
              break;
            }
            arcs_[ai].cap += mu;
            // The failing cut X (y inside) lost mu exactly when x is outside and X meets tree i.
            bool meets = false;
            for (int m : trees[i].members) meets = meets || (m != x && side[static_cast<std::size_t>(m)]);
            if (side[static_cast<std::size_t>(x)] || !meets) throw std::logic_error("allgather_forest: packing started from an infeasible state");
            mu -= need - f;
          }
        }
      }
      if (!grown) throw std::logic_error(fmt::format("allgather_forest: no arc extends a tree of root {}", trees[i].root));
    }
    for (Partial& t : trees) f_.trees.push_back({t.root, t.weight, std::move(t.edges)});
    std::stable_sort(f_.trees.begin(), f_.trees.end(), [](const Tree& a, const Tree& b) { return a.root < b.root; });
  }

  const SynthesisGraph& g_;
  const ForestOptions& o_;
  int n_ = 0;
  int v_ = 0;
  std::vector<WorkArc> arcs_;
  std::int64_t p_ = 0, q_ = 1;
  std::int64_t flows_ = 0;
  Forest f_;
};

}  // namespace

std::vector<int> vertex_classes(const SynthesisGraph& g, double unit) {
  const std::size_t v = static_cast<std::size_t>(g.vertices());
  std::vector<int> colour(v);
  for (std::size_t i = 0; i < v; ++i) colour[i] = static_cast<int>(i) < g.compute ? 0 : 1;
  std::vector<std::vector<std::pair<std::int64_t, int>>> out(v), in(v);
  for (;;) {
    for (auto& x : out) x.clear();
    for (auto& x : in) x.clear();
    for (const SynthesisArc& a : g.arcs) {
      const std::int64_t c = units_of(a.bandwidth, unit);
      out[static_cast<std::size_t>(a.from)].push_back({c, colour[static_cast<std::size_t>(a.to)]});
      in[static_cast<std::size_t>(a.to)].push_back({c, colour[static_cast<std::size_t>(a.from)]});
    }
    std::map<std::tuple<int, std::vector<std::pair<std::int64_t, int>>, std::vector<std::pair<std::int64_t, int>>>, int> ids;
    std::vector<int> next(v);
    for (std::size_t i = 0; i < v; ++i) {
      std::sort(out[i].begin(), out[i].end());
      std::sort(in[i].begin(), in[i].end());
      const auto [it, fresh] = ids.try_emplace({colour[i], out[i], in[i]}, static_cast<int>(ids.size()));
      next[i] = it->second;
    }
    const std::size_t before = std::set<int>(colour.begin(), colour.end()).size();
    colour = std::move(next);
    if (ids.size() == before) break;
  }
  return colour;
}

Forest allgather_forest(const SynthesisGraph& g, const ForestOptions& options) {
  return Synthesizer(g, options).run();
}

}  // namespace ccsim::planner::synthesis
