#include "models/workload/program.hpp"

#include <stdexcept>

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

}  // namespace ccsim::models
