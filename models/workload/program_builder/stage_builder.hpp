#pragma once
// The ops of one pipeline stage's representative rank (models/workload/program_builder.hpp):
// GEMMs, attention, element-wise work and the TP / CP / EP collectives of one transformer
// layer, forward and backward, as Megatron-LM, Transformer Engine and vLLM run them. The
// training and inference Program builders (training_program.hpp, inference_program.hpp) call
// it once per layer per pass; they add the embedding, the LM head, PP sends and DP reductions.
//
// Sizes: `tokens` rows of this rank's TP group, bytes per element e of the workload's dtype,
// message sizes in bytes (nccl-tests size), FLOPs per rank. Op ids index Program::ops.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/workload/layout_rules.hpp"
#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"
#include "models/workload/workload_spec.hpp"

namespace ccsim::models::detail {

/// Builds the ops of one rank (pipeline stage); see build_program.
class StageBuilder {
 public:
  StageBuilder(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int stage);

  /// Adds one op on this rank; `deps` of this rank or others.
  std::uint32_t add(ProgramOp op) { return p_.add(stage_, std::move(op)); }

  std::uint32_t compute(ProgramOpKind kind, Pass pass, std::string name, double flops, double bytes, int mb, int layer,
                        std::vector<std::uint32_t> deps);
  /// Records the GEMM shape of op `id` (see ProgramOp::m): C[m×n] = A[m×k]·B[k×n], `batch` of them.
  void shape(std::uint32_t id, double m, double n, double k, double batch = 1);
  /// A GEMM C[m×n] = A[m×k]·B[k×n] (`batch` of them): 2·m·n·k·batch FLOPs, `weight_bytes` of
  /// HBM read for its weight; `comm_sms` SMs taken by communication kernels beside it.
  std::uint32_t gemm(Pass pass, std::string name, double m, double n, double k, double batch, double weight_bytes, int mb,
                     int layer, std::vector<std::uint32_t> deps, int comm_sms = 0);
  std::uint32_t comm(ParallelDim dim, Collective c, Pass pass, std::string name, double bytes, int mb, int layer,
                     std::vector<std::uint32_t> deps);
  /// A TP collective of `bytes` (nccl-tests size) after `deps`; no op when tp = 1.
  std::uint32_t tp(Collective c, Pass pass, double bytes, int mb, int layer, std::vector<std::uint32_t> deps);
  /// Dependencies for the next compute op (kept for build_inference: nothing is pending since
  /// the userbuffers overlap is built inside the GEMMs).
  std::vector<std::uint32_t> flush(std::uint32_t dep) { return {dep}; }

  /// The collective's name in lower case ("allreduce"), as op names write it.
  static std::string to_lower(Collective c);

  /// A linear layer of this rank: `in` × `out` local weight (column-parallel: out = N/t,
  /// in = K; row-parallel: in = K/t, out = N), applied to `tokens` rows.
  struct Linear {
    std::string name;
    double in = 0, out = 0;
  };

  /// Column-parallel linear forward (Megatron ColumnParallelLinear / TE's qkv and fc1): with
  /// SP the sequence-sharded input is all-gathered first (b·s·h·e) — exposed, or with
  /// tp_comm_overlap TE's "ring_exchange" (qkv_fprop, fc1_fprop): the GEMM runs in tp chunks
  /// of tokens/tp rows, chunk 0 on the local shard while the next shard (act/tp bytes per
  /// rank) arrives from the ring neighbour; only the last chunk's GEMM is left after the
  /// exchange. `ub` false for linears Megatron does not overlap (the LM head).
  std::uint32_t column_forward(Pass pass, const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps,
                               bool ub);
  /// Row-parallel linear forward (RowParallelLinear / TE's proj and fc2): the GEMM, then the
  /// partial sums are AllReduced, or reduce-scattered with SP (b·s·h·e). With tp_comm_overlap
  /// TE's "pipeline" (proj_fprop, fc2_fprop): num_splits = 4 GEMM chunks of tokens/4 rows, each
  /// chunk's ReduceScatter (act/4) beside the next chunk's GEMM, which loses num_sm = 16 SMs;
  /// the last chunk's ReduceScatter is exposed.
  std::uint32_t row_forward(Pass pass, const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps);
  /// Row-parallel linear backward (autograd of RowParallelLinear): with SP the output
  /// gradient is all-gathered first (the backward of the forward's ReduceScatter) — exposed,
  /// or with tp_comm_overlap TE's "ring_exchange" (proj_dgrad, fc2_dgrad) chunked with the
  /// dgrad GEMM; without SP no communication (the AllReduce's backward is the identity).
  /// Data gradient dX[T × in] = dY[T × out]·W (m = T, n = in, k = out), then weight gradient
  /// dW[out × in] = dYᵀ·X (m = out, n = in, k = T). Returns the wgrad GEMM.
  std::uint32_t row_backward(const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps);
  /// Column-parallel linear backward as Megatron's LinearWithGradAccumulationAndAsyncCommunication
  /// .backward runs it (megatron/core/tensor_parallel/layers.py): with SP the input is
  /// all-gathered again (for the weight gradient) asynchronously beside the dgrad GEMM; the
  /// input gradient is AllReduced (ReduceScatter with SP) asynchronously beside the wgrad GEMM.
  /// With tp_comm_overlap TE runs the same two as "bulk" overlaps (qkv_dgrad / fc1_dgrad
  /// AllGather, qkv_wgrad / fc1_wgrad ReduceScatter), its kernels on 16 SMs of the GEMM's.
  /// dgrad: m = T, n = in, k = out; wgrad: m = out, n = in, k = T. Returns {wgrad, reduction}
  /// (the reduction is ~0U when tp = 1): the next op waits for both.
  std::pair<std::uint32_t, std::uint32_t> column_backward(const Linear& lin, double tokens, int mb, int l,
                                                          std::vector<std::uint32_t> deps, bool ub);

  /// Local sizes of the layer's linears.
  Linear qkv() const;
  Linear attn_out() const;
  Linear mlp_up() const;
  Linear mlp_down() const;
  double attn_params() const { return static_cast<double>(m_.attention_params() - m_.hidden); }
  double out_params() const;
  double d_qk() const { return m_.mla ? m_.mla->qk_nope_head_dim + m_.mla->qk_rope_head_dim : m_.head_dim; }

  /// The attention core of `tokens` tokens attending over `context`: forward FLOPs
  /// (× kAttentionBackwardFactor in backward), shape per sequence (m queries, n keys, k head
  /// dim, batch = sequences × local heads).
  std::uint32_t attention(Pass pass, double tokens, double context, double kv_read, int mb, int l, std::vector<std::uint32_t> deps);

  /// One transformer layer's forward (Pass::Forward, or Pass::Recompute for full
  /// recomputation) for `tokens` tokens of this rank's TP group, attending over `context`
  /// tokens. Returns the last op. `kv_read` is the KV-cache bytes the attention reads (inference).
  std::uint32_t layer(Pass pass, int mb, int l, double tokens, double context, double kv_read, std::uint32_t dep,
                      const std::vector<std::uint32_t>& extra_deps);

  /// One transformer layer's backward as autograd runs it: the MLP block first, then the
  /// attention block, each linear as a data-gradient and a weight-gradient GEMM (see
  /// row_backward / column_backward for the TP communication), the attention core at
  /// kAttentionBackwardFactor × its forward FLOPs, element-wise ops at
  /// kElementwiseBackwardFactor × their forward bytes. `rc` Selective recomputes each module of
  /// the workload's recompute_modules (forward) just before its backward. Returns the last op: the input norm's backward,
  /// after which all the layer's gradients are written.
  std::uint32_t layer_backward(int mb, int l, double tokens, double context, std::uint32_t dep,
                               const std::vector<std::uint32_t>& extra_deps, LayerRecompute rc);

  Program& p_;
  const TransformerConfig& m_;
  const WorkloadSpec& w_;
  const StrategySpec& s_;
  int stage_;
  double e_ = 2;
  int sp_ = 1;
  bool ub_ = false;
};

}  // namespace ccsim::models::detail
