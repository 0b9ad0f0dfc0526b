#include "planner/workload/placement.hpp"

#include <cstdint>
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

StageRepresentatives stage_representatives(const Placement& p, const models::StrategySpec& s, const models::Cluster& c) {
  const auto& gpus = c.topology.gpus();
  StageRepresentatives out;
  for (int stage = 0; stage < s.pp; ++stage) {
    out.rank.push_back(p.rank({0, 0, 0, stage}));
    out.compute_gpu.push_back(gpus[static_cast<std::size_t>(out.rank.back())]);
  }
  for (int r = 0; r < p.world(); ++r) {
    const Placement::Coords at = p.coords(r);
    const auto stage = static_cast<std::size_t>(at.pp);
    const models::DeviceId g = gpus[static_cast<std::size_t>(r)];
    const auto& a = gpu_spec(c, g);
    const auto& b = gpu_spec(c, out.compute_gpu[stage]);
    if (a.bf16_flops < b.bf16_flops || (a.bf16_flops == b.bf16_flops && a.hbm_bandwidth < b.hbm_bandwidth)) {
      out.compute_gpu[stage] = g;
      out.rank[stage] = p.rank({0, 0, at.dp, at.pp});
    }
  }
  return out;
}

}  // namespace ccsim::planner
