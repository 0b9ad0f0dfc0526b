#pragma once
// Program (DESIGN.md): the per-rank DAG of a workload — compute ops and communication ops on
// streams, with dependencies. Built from a transformer, a parallel layout and a phase
// (training step, prefill, decode) by build_program(); lowered and timed by
// planner::WorkloadRunner, which turns every communication op into a Schedule.
//
// Symmetry: every rank of a TP / CP / EP group does the same work at the same time, and so does
// every DP replica of one replica class (planner/workload/placement.hpp: replicas with the same
// hardware and perturbations), so a Program holds one representative rank per (replica class,
// pipeline stage): build_program makes the one-class Program (`Program::ranks[s]` is stage s),
// join_replica_classes puts several classes' Programs together. Communication ops still name the
// whole group they run in; the runner simulates them on the real GPUs of those groups.
//
// Streams follow CUDA semantics: ops of one (rank, stream) run in order; an op starts when
// the previous op on its stream and all its dependencies have finished.

#include <cstdint>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"

namespace ccsim::models {

/// Megatron's parallel dimensions.
enum class ParallelDim : std::uint8_t { TP, PP, DP, EP, CP };
inline constexpr int kParallelDims = 5;
std::string_view to_string(ParallelDim d);

/// Streams of a rank, in trace order.
enum class Stream : std::uint8_t { Compute, TpComm, CpComm, EpComm, PpComm, DpComm };
inline constexpr int kStreams = 6;
std::string_view to_string(Stream s);

enum class ProgramOpKind : std::uint8_t {
  Gemm,        ///< matrix multiplications: `flops` at the tensor-core peak × efficiency
  Attention,   ///< attention core (QKᵀ, softmax, ·V): `flops`, and `bytes` of KV read
  Memory,      ///< memory-bound work (norms, activations, optimizer, KV reads): `bytes` of HBM traffic
  Collective,  ///< `collective` over the rank's `dim` group, `bytes` = nccl-tests size S
  SendRecv,    ///< point-to-point to pipeline stage `peer` (PP) of `bytes`
};

/// What part of the step an op belongs to (for breakdowns and the trace).
enum class Pass : std::uint8_t { Forward, Backward, Recompute, Optimizer, Other };
std::string_view to_string(Pass p);

struct ProgramOp {
  ProgramOpKind kind = ProgramOpKind::Gemm;
  Stream stream = Stream::Compute;
  Pass pass = Pass::Forward;
  std::string name;          ///< short label: "qkv", "attn", "tp-allreduce", "dp-reducescatter b3"
  double flops = 0;          ///< FLOPs executed by this rank
  double bytes = 0;          ///< HBM bytes (compute ops) or message size (communication ops)
  ParallelDim dim = ParallelDim::TP;   ///< communication ops: the group it runs in
  Collective collective = Collective::AllReduce;
  int peer = -1;             ///< SendRecv: destination pipeline stage
  bool expert = false;       ///< DP ops on expert (MoE) parameters: over the expert-data-parallel group, dp·cp/ep ranks
  int micro_batch = -1;      ///< -1 when not tied to a micro-batch
  int layer = -1;            ///< global layer index, -1 for embedding / head / optimizer
  /// Gemm: the problem shape of this rank's GEMM, C[m×n] = A[m×k]·B[k×n] after TP sharding,
  /// `batch` independent GEMMs of that shape (e.g. grouped experts). Attention: m query tokens
  /// per sequence, n key/value tokens attended, k head dimension, batch = sequences × local
  /// heads. 0 when unknown (the compute model then uses `flops` and `bytes` only).
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  /// SMs this compute op loses to communication kernels running beside it (Transformer
  /// Engine userbuffers overlap); 0 when none.
  int comm_sms = 0;
  std::vector<std::uint32_t> deps;  ///< global ids of ops (any rank) that must finish first
  /// Seconds this op takes when the input fixes it (a Chakra COMP node's runtime); negative:
  /// timed by the compute model (compute ops) or lowered (communication ops).
  double fixed_time = -1;
  /// Communication ops of a Program read from per-rank traces (models/workload/chakra): the
  /// world ranks of the op's group, in group order (a SendRecv: {sender, receiver}, and `peer`
  /// the other rank); empty for the Programs build_program makes (the group of `dim`).
  std::vector<int> group;
};

struct ProgramRank {
  int stage = 0;
  int replica_class = 0;           ///< the replica class this rank stands for (join_replica_classes)
  std::vector<std::uint32_t> ops;  ///< global op ids of this rank, in issue order
};

struct Program {
  std::vector<ProgramOp> ops;      ///< all ops, global ids
  std::vector<int> op_rank;        ///< rank (stage) of each op
  std::vector<ProgramRank> ranks;  ///< one per pipeline stage
  double model_flops = 0;          ///< useful FLOPs of the whole step on all GPUs (MFU numerator; no recomputation)
  double tokens = 0;               ///< tokens processed by the step (training: global batch × sequence; decode: batch)

  /// Appends `op` to `rank`; returns its global id.
  std::uint32_t add(int rank, ProgramOp op);
};

/// One Program for several replica classes: `classes[c]` is class c's Program (one rank per
/// stage, as build_program makes it), standing for `replicas[c]` of the `dp` DP replicas. Rank
/// c·pp + s of the result is stage s of class c (ProgramRank::replica_class = c). The classes
/// run independently except at their DP ops (Collective ops of dim DP, expert or not: one
/// collective over a group holding a rank of every replica): the k-th DP op of a stage in every
/// class is one collective, so each copy depends on what every copy waits for (the other copies'
/// dependencies and stream predecessors) and all start together, when the last class arrives.
/// model_flops and tokens are the classes' per-replica shares summed: Σ_c x_c · replicas[c] / dp.
/// One class: classes[0] unchanged. Throws std::invalid_argument when a class has no Programs'
/// shape in common with class 0 (stage count, DP ops of a stage differing in number, collective
/// or size) or the sizes disagree.
Program join_replica_classes(const std::vector<Program>& classes, const std::vector<int>& replicas, int dp);

/// Whether `op` is one collective over every replica class (a DP collective), which
/// join_replica_classes synchronises.
bool spans_replica_classes(const ProgramOp& op);

/// Per op of `p` (global id): the previous op of its rank on its stream, or ~0U for the first.
std::vector<std::uint32_t> stream_predecessors(const Program& p);

}  // namespace ccsim::models
