// Point-to-point sends, as pipeline parallelism moves activations and gradients between stages
// (NCCL's ncclSend / ncclRecv, Simple protocol): the ranks come in pairs, and rank 2i sends its
// whole input to rank 2i+1, which receives it into its output. Several pairs in one request are
// the same send running at the same time in several groups.

#include <string>

#include "planner/algorithms/generators.hpp"

namespace ccsim::planner::detail {

void p2p(Builder& b) {
  const Range all{0, b.request().bytes};
  for (int a = 0; a + 1 < b.nranks(); a += 2) {
    b.send(a, a + 1, in(all), 0);
    b.recv(a + 1, a, out(all), 0);
  }
}

std::string p2p_refusal(const AlgorithmRequest& r) {
  if (r.collective != models::Collective::SendRecv) return "p2p implements SendRecv";
  if (r.nranks % 2 != 0) return "p2p needs pairs of ranks (an even rank count)";
  return r.granularity == models::Granularity::Phase ? "p2p has no phase granularity" : "";
}

}  // namespace ccsim::planner::detail
