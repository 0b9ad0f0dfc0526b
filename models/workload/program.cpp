#include "models/workload/program.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::models {

std::string_view to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::TP: return "TP";
    case ParallelDim::PP: return "PP";
    case ParallelDim::DP: return "DP";
    case ParallelDim::EP: return "EP";
    case ParallelDim::CP: return "CP";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::TpComm: return "comm TP";
    case Stream::CpComm: return "comm CP";
    case Stream::EpComm: return "comm EP";
    case Stream::PpComm: return "comm PP";
    case Stream::DpComm: return "comm DP";
  }
  return "?";
}

std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::Forward: return "forward";
    case Pass::Backward: return "backward";
    case Pass::Recompute: return "recompute";
    case Pass::Optimizer: return "optimizer";
    case Pass::Other: return "other";
  }
  return "?";
}

std::uint32_t Program::add(int rank, ProgramOp op) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= ranks.size()) throw std::out_of_range("Program::add: no such rank");
  const auto id = static_cast<std::uint32_t>(ops.size());
  for (std::uint32_t d : op.deps) {
    if (d >= id) throw std::logic_error("Program::add: a dependency must be an existing op");
  }
  ops.push_back(std::move(op));
  op_rank.push_back(rank);
  ranks[static_cast<std::size_t>(rank)].ops.push_back(id);
  return id;
}

bool spans_replica_classes(const ProgramOp& op) { return op.kind == ProgramOpKind::Collective && op.dim == ParallelDim::DP; }

std::vector<std::uint32_t> stream_predecessors(const Program& p) {
  std::vector<std::uint32_t> pred(p.ops.size(), ~0U);
  for (const auto& rank : p.ranks) {
    std::array<std::uint32_t, kStreams> last;
    last.fill(~0U);
    for (std::uint32_t id : rank.ops) {
      auto& l = last[static_cast<std::size_t>(p.ops[id].stream)];
      pred[id] = l;
      l = id;
    }
  }
  return pred;
}

Program join_replica_classes(const std::vector<Program>& classes, const std::vector<int>& replicas, int dp) {
  if (classes.empty() || classes.size() != replicas.size()) throw std::invalid_argument("join_replica_classes: one replica count per class");
  if (classes.size() == 1) return classes.front();
  const std::size_t pp = classes.front().ranks.size();
  Program out;
  out.ranks.resize(pp * classes.size());
  std::vector<std::vector<std::vector<std::uint32_t>>> dp_ops(classes.size(), std::vector<std::vector<std::uint32_t>>(pp));
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const Program& p = classes[c];
    if (p.ranks.size() != pp) throw std::invalid_argument("join_replica_classes: classes with different stage counts");
    const auto base = static_cast<std::uint32_t>(out.ops.size());
    for (std::size_t s = 0; s < pp; ++s) {
      out.ranks[c * pp + s].stage = p.ranks[s].stage;
      out.ranks[c * pp + s].replica_class = static_cast<int>(c);
    }
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      ProgramOp op = p.ops[i];
      for (auto& d : op.deps) d += base;
      const auto rank = static_cast<std::size_t>(p.op_rank[i]);
      const std::uint32_t id = out.add(static_cast<int>(c * pp + rank), std::move(op));
      if (spans_replica_classes(out.ops[id])) dp_ops[c][rank].push_back(id);
    }
    const double share = static_cast<double>(replicas[c]) / dp;
    out.model_flops += p.model_flops * share;
    out.tokens += p.tokens * share;
  }
  // Each DP collective: every copy waits for what every copy waits for.
  const std::vector<std::uint32_t> pred = stream_predecessors(out);
  for (std::size_t s = 0; s < pp; ++s) {
    for (std::size_t c = 1; c < classes.size(); ++c) {
      if (dp_ops[c][s].size() != dp_ops[0][s].size()) {
        throw std::invalid_argument(fmt::format("join_replica_classes: stage {} has {} DP ops in class {} and {} in class 0", s,
                                                dp_ops[c][s].size(), c, dp_ops[0][s].size()));
      }
    }
    for (std::size_t k = 0; k < dp_ops[0][s].size(); ++k) {
      std::vector<std::uint32_t> all;
      for (std::size_t c = 0; c < classes.size(); ++c) {
        const std::uint32_t id = dp_ops[c][s][k];
        const ProgramOp& a = out.ops[id];
        const ProgramOp& b = out.ops[dp_ops[0][s][k]];
        if (a.collective != b.collective || a.bytes != b.bytes || a.expert != b.expert) {
          throw std::invalid_argument(fmt::format("join_replica_classes: DP op {} of stage {} differs between class {} and class 0", k, s, c));
        }
        all.insert(all.end(), a.deps.begin(), a.deps.end());
        if (pred[id] != ~0U) all.push_back(pred[id]);
      }
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      for (std::size_t c = 0; c < classes.size(); ++c) {
        const std::uint32_t id = dp_ops[c][s][k];
        std::vector<std::uint32_t> deps;
        for (std::uint32_t d : all)
          if (d != pred[id]) deps.push_back(d);  // its own stream predecessor stays implicit
        out.ops[id].deps = std::move(deps);
      }
    }
  }
  return out;
}

}  // namespace ccsim::models
