#include "planner/workload/placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ccsim::planner {

using models::ParallelDim;

Placement::Placement(const models::StrategySpec& s, int world) : s_(s), world_(world) {
  if (static_cast<std::int64_t>(s.tp) * s.cp * s.dp * s.pp != world) {
    throw std::invalid_argument(fmt::format("tp·cp·dp·pp = {} differs from the {} GPUs", s.tp * s.cp * s.dp * s.pp, world));
  }
  // The order names five dimensions; EP is folded into (cp, dp).
  std::size_t pos = 0;
  const std::string& o = s.order;
  while (pos <= o.size()) {
    const std::size_t dash = o.find('-', pos);
    const std::string part = o.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (part == "tp") order_.push_back('t');
    if (part == "cp") order_.push_back('c');
    if (part == "dp") order_.push_back('d');
    if (part == "pp") order_.push_back('p');
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  int stride = 1;
  for (char d : order_) {
    const int idx = d == 't' ? 0 : d == 'c' ? 1 : d == 'd' ? 2 : 3;
    stride_[static_cast<std::size_t>(idx)] = stride;
    stride *= d == 't' ? s.tp : d == 'c' ? s.cp : d == 'd' ? s.dp : s.pp;
  }
}

Placement::Coords Placement::coords(int rank) const {
  Coords c;
  c.tp = rank / stride_[0] % s_.tp;
  c.cp = rank / stride_[1] % s_.cp;
  c.dp = rank / stride_[2] % s_.dp;
  c.pp = rank / stride_[3] % s_.pp;
  return c;
}

int Placement::rank(const Coords& c) const {
  return c.tp * stride_[0] + c.cp * stride_[1] + c.dp * stride_[2] + c.pp * stride_[3];
}

std::vector<int> Placement::group(ParallelDim dim, int r) const {
  const Coords base = coords(r);
  std::vector<int> out;
  switch (dim) {
    case ParallelDim::TP:
      for (int i = 0; i < s_.tp; ++i) out.push_back(rank({i, base.cp, base.dp, base.pp}));
      break;
    case ParallelDim::CP:
      for (int i = 0; i < s_.cp; ++i) out.push_back(rank({base.tp, i, base.dp, base.pp}));
      break;
    case ParallelDim::PP:
      for (int i = 0; i < s_.pp; ++i) out.push_back(rank({base.tp, base.cp, base.dp, i}));
      break;
    case ParallelDim::DP:
      // Gradients are reduced over DP × CP (every replica of the parameters).
      for (int d = 0; d < s_.dp; ++d)
        for (int c = 0; c < s_.cp; ++c) out.push_back(rank({base.tp, c, d, base.pp}));
      break;
    case ParallelDim::EP: {
      const int combined = base.dp * s_.cp + base.cp;
      const int first = combined / s_.ep * s_.ep;
      for (int k = first; k < first + s_.ep; ++k) out.push_back(rank({base.tp, k % s_.cp, k / s_.cp, base.pp}));
      break;
    }
  }
  return out;
}

std::vector<int> Placement::expert_dp_group(int r) const {
  const Coords base = coords(r);
  const int combined = base.dp * s_.cp + base.cp;
  std::vector<int> out;
  for (int k = combined % s_.ep; k < s_.dp * s_.cp; k += s_.ep) out.push_back(rank({base.tp, k % s_.cp, k / s_.cp, base.pp}));
  return out;
}

const models::GpuSpec& gpu_spec(const models::Cluster& c, models::DeviceId gpu) {
  const int node = c.topology.device(gpu).node;
  return c.spec.groups[static_cast<std::size_t>(c.node_group[static_cast<std::size_t>(node)])].node.gpu;
}

namespace {

/// Union–find root of `x`.
int root(std::vector<int>& parent, int x) {
  while (parent[static_cast<std::size_t>(x)] != x) x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
  return x;
}

bool slower(const models::GpuSpec& a, const models::GpuSpec& b) {
  return a.bf16_flops < b.bf16_flops || (a.bf16_flops == b.bf16_flops && a.hbm_bandwidth < b.hbm_bandwidth);
}

}  // namespace

std::vector<int> replica_micro_batches(const Placement& p, const models::StrategySpec& s, const models::WorkloadSpec& w,
                                       const models::Cluster& c) {
  if (!s.dp_micro_batches.empty()) return s.dp_micro_batches;
  if (!s.dp_micro_batches_proportional) return {};
  const auto& gpus = c.topology.gpus();
  std::vector<double> speed(static_cast<std::size_t>(s.dp), std::numeric_limits<double>::infinity());
  for (int r = 0; r < p.world(); ++r) {
    const auto d = static_cast<std::size_t>(p.coords(r).dp);
    speed[d] = std::min(speed[d], gpu_spec(c, gpus[static_cast<std::size_t>(r)]).bf16_flops * c.speed_of(r).gemm);
  }
  const std::int64_t total = w.global_batch_size / w.micro_batch_size;
  double sum = 0;
  for (double v : speed) sum += v;
  std::vector<int> out(static_cast<std::size_t>(s.dp));
  std::vector<std::pair<double, int>> remainder;
  std::int64_t given = 0;
  for (int d = 0; d < s.dp; ++d) {
    const double ideal = static_cast<double>(total) * speed[static_cast<std::size_t>(d)] / sum;
    out[static_cast<std::size_t>(d)] = std::max(1, static_cast<int>(std::floor(ideal)));
    given += out[static_cast<std::size_t>(d)];
    remainder.emplace_back(ideal - out[static_cast<std::size_t>(d)], d);
  }
  // Largest remainders first (ties: the lower replica); take back from the smallest when the
  // floor of 1 gave too many.
  std::sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (std::size_t i = 0; given < total; i = (i + 1) % remainder.size(), ++given) ++out[static_cast<std::size_t>(remainder[i].second)];
  for (std::size_t i = remainder.size(); given > total;) {
    i = i == 0 ? remainder.size() - 1 : i - 1;
    int& n = out[static_cast<std::size_t>(remainder[i].second)];
    if (n > 1) {
      --n;
      --given;
    }
  }
  return out;
}

std::vector<ReplicaClass> replica_classes(const Placement& p, const models::StrategySpec& s, const models::Cluster& c,
                                          const std::vector<int>& micro_batches) {
  const models::Topology& topo = c.topology;
  const auto& gpus = topo.gpus();
  // Blocks: replicas joined by EP groups (an EP group is ep consecutive (cp, dp) indices).
  std::vector<int> parent(static_cast<std::size_t>(s.dp));
  for (int d = 0; d < s.dp; ++d) parent[static_cast<std::size_t>(d)] = d;
  for (int first = 0; first < s.dp * s.cp; first += s.ep) {
    const int a = root(parent, first / s.cp);
    for (int k = first; k < first + s.ep; ++k) parent[static_cast<std::size_t>(root(parent, k / s.cp))] = a;
  }
  std::vector<std::vector<int>> blocks;
  std::map<int, std::size_t> block_of_root;
  for (int d = 0; d < s.dp; ++d) {
    const auto [it, fresh] = block_of_root.emplace(root(parent, d), blocks.size());
    if (fresh) blocks.emplace_back();
    blocks[it->second].push_back(d);
  }
  std::vector<ReplicaClass> out;
  std::map<std::vector<std::uint64_t>, std::size_t> class_of_key;
  const auto bits = [](double v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof b);
    return b;
  };
  for (const auto& block : blocks) {
    ReplicaClass rc;
    std::vector<std::uint64_t> key;
    if (!micro_batches.empty()) {
      rc.micro_batches = micro_batches[static_cast<std::size_t>(block.front())];
      key.push_back(static_cast<std::uint64_t>(rc.micro_batches));
    }
    for (int stage = 0; stage < s.pp; ++stage) {
      rc.rank.push_back(p.rank({0, 0, block.front(), stage}));
      models::DeviceId slowest = gpus[static_cast<std::size_t>(rc.rank.back())];
      models::ComputeSpeed low = c.speed_of(rc.rank.back());
      models::DeviceId named = slowest;
      int last_node = topo.device(slowest).node;
      models::ComputeSpeed named_speed = low;
      for (int d : block) {
        for (int cp = 0; cp < s.cp; ++cp) {
          for (int tp = 0; tp < s.tp; ++tp) {
            const int r = p.rank({tp, cp, d, stage});
            const models::DeviceId g = gpus[static_cast<std::size_t>(r)];
            const int node = topo.device(g).node;
            // Nodes of one class hold one GPU model (Topology::node_class): compare on a new node only.
            if (node != last_node && slower(gpu_spec(c, g), gpu_spec(c, slowest))) slowest = g;
            last_node = node;
            const models::ComputeSpeed v = c.speed_of(r);
            if (std::tie(v.gemm, v.attention, v.memory) < std::tie(named_speed.gemm, named_speed.attention, named_speed.memory)) {
              named = g;
              named_speed = v;
            }
            low = {std::min(low.gemm, v.gemm), std::min(low.attention, v.attention), std::min(low.memory, v.memory)};
            // A GPU's position counts only on a perturbed node (Topology::node_perturbed).
            const int local = topo.node_perturbed(node) ? topo.device(g).local : -1;
            // The node class implies the GPU model (equal NodeSpecs), so the key need not name it.
            key.insert(key.end(), {static_cast<std::uint64_t>(topo.node_class(node)), static_cast<std::uint64_t>(static_cast<std::int64_t>(local)),
                                   bits(v.gemm), bits(v.attention), bits(v.memory)});
          }
        }
      }
      rc.compute_gpu.push_back(slowest);
      rc.slowest_gpu.push_back(named);
      rc.speed.push_back(low);
    }
    const auto [it, fresh] = class_of_key.emplace(key, out.size());
    if (fresh) {
      out.push_back(std::move(rc));
    }
    auto& members = out[it->second].replicas;
    members.insert(members.end(), block.begin(), block.end());
  }
  return out;
}

}  // namespace ccsim::planner
