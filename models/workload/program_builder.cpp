#include "models/workload/program_builder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <stdexcept>

#include <fmt/format.h>

namespace ccsim::models {

namespace {

/// Megatron's default DP gradient bucket: max(40M, 1M · dp) parameters
/// (megatron/core/distributed/distributed_data_parallel_config.py, bucket_size).
std::int64_t default_bucket(int dp) { return std::max<std::int64_t>(40'000'000, 1'000'000LL * dp); }

/// Bytes of HBM traffic per element of b·s·h for a layer's norms, residual adds, dropout and
/// activation function, forward (a documented default: two norms and two residual adds read
/// and write the hidden state, ~4 reads + 4 writes; the MLP activation is counted on the MLP
/// width separately).
constexpr double kElementwisePerHidden = 8.0;
/// Adam optimizer step traffic per local parameter: read fp32 master, m, v and the fp32 grad,
/// write master, m, v and the bf16 copy: 4·4 + 3·4 + 2 = 30 bytes.
constexpr double kOptimizerBytesPerParam = 30.0;

}  // namespace

namespace {

/// Transformer Engine userbuffers defaults (transformer_engine/pytorch/module/base.py,
/// initialize_ub, get_default_config): "pipeline" and "bulk" overlaps run their communication
/// kernels on num_sm = 16 SMs and set an SM margin on the GEMM (set_sm_margin), "pipeline"
/// splits the GEMM into num_splits = 4 chunks; "ring_exchange" uses num_splits = tp chunks and
/// the copy engines (use_ce, no SM margin).
constexpr int kUbCommSms = 16;
constexpr int kUbPipelineSplits = 4;

/// FlashAttention-2 backward FLOPs = 2.5 × the forward's matmul FLOPs: the backward runs five
/// matmuls (S = QKᵀ recomputed, dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q) against the
/// forward's two (Dao 2023, "FlashAttention-2", §4 benchmark accounting: "the backward pass
/// FLOPs are 2.5 times the forward pass").
constexpr double kAttentionBackwardFactor = 2.5;

/// Element-wise work of the backward (norms, activation, residual): it reads the saved input
/// and the output gradient and writes the input gradient (and, for norms, accumulates the
/// weight gradient): modelled as twice the forward's HBM traffic.
constexpr double kElementwiseBackwardFactor = 2.0;

/// ⌈x / d⌉ · d.
double pad_to(double x, double d) { return std::ceil(x / d - 1e-12) * d; }

/// Megatron-Core's distributed-optimizer bucket padding (param_and_grad_buffer.py,
/// _ParamAndGradBuffer.__init__, _pad_end_of_bucket_if_needed): with use_distributed_optimizer
/// each bucket's end (and so the buffer) is padded to a multiple of lcm(data-parallel size,
/// 128) elements, so that every rank's shard is whole and 256-byte aligned
/// (pad_buckets_for_high_nccl_busbw, default False, would add 2^16). Without the distributed
/// optimizer buckets are not padded. `numel` elements, `group` ranks; returns elements.
double pad_bucket(double numel, int group, bool distributed_optimizer) {
  if (!distributed_optimizer) return numel;
  return pad_to(numel, static_cast<double>(std::lcm(static_cast<std::int64_t>(group), std::int64_t{128})));
}

/// Builds the ops of one rank (pipeline stage); see build_program.
class StageBuilder {
 public:
  StageBuilder(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int stage)
      : p_(p), m_(m), w_(w), s_(s), stage_(stage) {
    e_ = dtype_bytes(w.dtype);
    sp_ = s.sequence_parallel ? s.tp : 1;
    // TE userbuffers overlap exists only with sequence parallelism (check_layout).
    ub_ = s.tp_comm_overlap && s.sequence_parallel && s.tp > 1;
  }

  /// Adds one op on this rank; `deps` of this rank or others.
  std::uint32_t add(ProgramOp op) { return p_.add(stage_, std::move(op)); }

  std::uint32_t compute(ProgramOpKind kind, Pass pass, std::string name, double flops, double bytes, int mb, int layer,
                        std::vector<std::uint32_t> deps) {
    ProgramOp op;
    op.kind = kind;
    op.pass = pass;
    op.name = std::move(name);
    op.flops = flops;
    op.bytes = bytes;
    op.micro_batch = mb;
    op.layer = layer;
    op.deps = std::move(deps);
    return add(std::move(op));
  }
  /// Records the GEMM shape of op `id` (see ProgramOp::m): C[m×n] = A[m×k]·B[k×n], `batch` of them.
  void shape(std::uint32_t id, double m, double n, double k, double batch = 1) {
    ProgramOp& op = p_.ops[id];
    op.m = static_cast<std::int64_t>(std::llround(m));
    op.n = static_cast<std::int64_t>(std::llround(n));
    op.k = static_cast<std::int64_t>(std::llround(k));
    op.batch = static_cast<std::int64_t>(std::llround(batch));
  }
  /// A GEMM C[m×n] = A[m×k]·B[k×n] (`batch` of them): 2·m·n·k·batch FLOPs, `weight_bytes` of
  /// HBM read for its weight; `comm_sms` SMs taken by communication kernels beside it.
  std::uint32_t gemm(Pass pass, std::string name, double m, double n, double k, double batch, double weight_bytes, int mb,
                     int layer, std::vector<std::uint32_t> deps, int comm_sms = 0) {
    const std::uint32_t id =
        compute(ProgramOpKind::Gemm, pass, std::move(name), 2.0 * m * n * k * batch, weight_bytes, mb, layer, std::move(deps));
    shape(id, m, n, k, batch);
    p_.ops[id].comm_sms = comm_sms;
    return id;
  }
  std::uint32_t comm(ParallelDim dim, Collective c, Pass pass, std::string name, double bytes, int mb, int layer,
                     std::vector<std::uint32_t> deps) {
    ProgramOp op;
    op.kind = ProgramOpKind::Collective;
    op.stream = dim == ParallelDim::TP   ? Stream::TpComm
                : dim == ParallelDim::CP ? Stream::CpComm
                : dim == ParallelDim::EP ? Stream::EpComm
                : dim == ParallelDim::PP ? Stream::PpComm
                                         : Stream::DpComm;
    op.dim = dim;
    op.collective = c;
    op.pass = pass;
    op.name = std::move(name);
    op.bytes = std::round(bytes);
    op.micro_batch = mb;
    op.layer = layer;
    op.deps = std::move(deps);
    return add(std::move(op));
  }
  /// A TP collective of `bytes` (nccl-tests size) after `deps`; no op when tp = 1.
  std::uint32_t tp(Collective c, Pass pass, double bytes, int mb, int layer, std::vector<std::uint32_t> deps) {
    return comm(ParallelDim::TP, c, pass, fmt::format("tp-{}", to_lower(c)), bytes, mb, layer, std::move(deps));
  }
  /// Dependencies for the next compute op (kept for build_inference: nothing is pending since
  /// the userbuffers overlap is built inside the GEMMs).
  std::vector<std::uint32_t> flush(std::uint32_t dep) { return {dep}; }

  static std::string to_lower(Collective c) {
    std::string s(models::to_string(c));
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }

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
                               bool ub) {
    const double act = tokens * static_cast<double>(m_.hidden) * e_;
    const double wbytes = lin.in * lin.out * e_;
    if (sp_ == 1) return gemm(pass, lin.name, tokens, lin.out, lin.in, 1, wbytes, mb, l, std::move(deps));
    if (!(ub && ub_)) {
      const std::uint32_t ag = tp(Collective::AllGather, pass, act, mb, l, std::move(deps));
      return gemm(pass, lin.name, tokens, lin.out, lin.in, 1, wbytes, mb, l, {ag});
    }
    const int t = s_.tp;
    std::uint32_t g = gemm(pass, lin.name, tokens / t, lin.out, lin.in, 1, wbytes, mb, l, deps);
    std::uint32_t x = ~0U;
    for (int j = 1; j < t; ++j) {
      x = comm(ParallelDim::TP, Collective::SendRecv, pass, "tp-ring-exchange", act / t, mb, l, j == 1 ? deps : std::vector{x});
      g = gemm(pass, lin.name, tokens / t, lin.out, lin.in, 1, wbytes, mb, l, {g, x});
    }
    return g;
  }
  /// Row-parallel linear forward (RowParallelLinear / TE's proj and fc2): the GEMM, then the
  /// partial sums are AllReduced, or reduce-scattered with SP (b·s·h·e). With tp_comm_overlap
  /// TE's "pipeline" (proj_fprop, fc2_fprop): num_splits = 4 GEMM chunks of tokens/4 rows, each
  /// chunk's ReduceScatter (act/4) beside the next chunk's GEMM, which loses num_sm = 16 SMs;
  /// the last chunk's ReduceScatter is exposed.
  std::uint32_t row_forward(Pass pass, const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps) {
    const double act = tokens * static_cast<double>(m_.hidden) * e_;
    const double wbytes = lin.in * lin.out * e_;
    if (!ub_) {
      const std::uint32_t g = gemm(pass, lin.name, tokens, lin.out, lin.in, 1, wbytes, mb, l, std::move(deps));
      if (s_.tp == 1) return g;
      return tp(s_.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, l, {g});
    }
    std::uint32_t g = ~0U, rs = ~0U;
    for (int i = 0; i < kUbPipelineSplits; ++i) {
      g = gemm(pass, lin.name, tokens / kUbPipelineSplits, lin.out, lin.in, 1, wbytes, mb, l, i == 0 ? deps : std::vector<std::uint32_t>{},
               i == 0 ? 0 : kUbCommSms);
      rs = tp(Collective::ReduceScatter, pass, act / kUbPipelineSplits, mb, l, {g});
    }
    return rs;
  }
  /// Row-parallel linear backward (autograd of RowParallelLinear): with SP the output
  /// gradient is all-gathered first (the backward of the forward's ReduceScatter) — exposed,
  /// or with tp_comm_overlap TE's "ring_exchange" (proj_dgrad, fc2_dgrad) chunked with the
  /// dgrad GEMM; without SP no communication (the AllReduce's backward is the identity).
  /// Data gradient dX[T × in] = dY[T × out]·W (m = T, n = in, k = out), then weight gradient
  /// dW[out × in] = dYᵀ·X (m = out, n = in, k = T). Returns the wgrad GEMM.
  std::uint32_t row_backward(const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps) {
    const Pass pass = Pass::Backward;
    const double act = tokens * static_cast<double>(m_.hidden) * e_;
    const double wbytes = lin.in * lin.out * e_;
    const std::string dname = lin.name + "-dgrad", wname = lin.name + "-wgrad";
    std::uint32_t dg = ~0U;
    if (sp_ == 1) {
      dg = gemm(pass, dname, tokens, lin.in, lin.out, 1, wbytes, mb, l, std::move(deps));
    } else if (!ub_) {
      const std::uint32_t ag = tp(Collective::AllGather, pass, act, mb, l, std::move(deps));
      dg = gemm(pass, dname, tokens, lin.in, lin.out, 1, wbytes, mb, l, {ag});
    } else {
      const int t = s_.tp;
      dg = gemm(pass, dname, tokens / t, lin.in, lin.out, 1, wbytes, mb, l, deps);
      std::uint32_t x = ~0U;
      for (int j = 1; j < t; ++j) {
        x = comm(ParallelDim::TP, Collective::SendRecv, pass, "tp-ring-exchange", act / t, mb, l, j == 1 ? deps : std::vector{x});
        dg = gemm(pass, dname, tokens / t, lin.in, lin.out, 1, wbytes, mb, l, {dg, x});
      }
    }
    return gemm(pass, wname, lin.out, lin.in, tokens, 1, wbytes, mb, l, {dg});
  }
  /// Column-parallel linear backward as Megatron's LinearWithGradAccumulationAndAsyncCommunication
  /// .backward runs it (megatron/core/tensor_parallel/layers.py): with SP the input is
  /// all-gathered again (for the weight gradient) asynchronously beside the dgrad GEMM; the
  /// input gradient is AllReduced (ReduceScatter with SP) asynchronously beside the wgrad GEMM.
  /// With tp_comm_overlap TE runs the same two as "bulk" overlaps (qkv_dgrad / fc1_dgrad
  /// AllGather, qkv_wgrad / fc1_wgrad ReduceScatter), its kernels on 16 SMs of the GEMM's.
  /// dgrad: m = T, n = in, k = out; wgrad: m = out, n = in, k = T. Returns {wgrad, reduction}
  /// (the reduction is ~0U when tp = 1): the next op waits for both.
  std::pair<std::uint32_t, std::uint32_t> column_backward(const Linear& lin, double tokens, int mb, int l,
                                                          std::vector<std::uint32_t> deps, bool ub) {
    const Pass pass = Pass::Backward;
    const double act = tokens * static_cast<double>(m_.hidden) * e_;
    const double wbytes = lin.in * lin.out * e_;
    const int sms = ub && ub_ ? kUbCommSms : 0;
    std::uint32_t ag = ~0U;
    if (sp_ > 1) ag = tp(Collective::AllGather, pass, act, mb, l, deps);
    const std::uint32_t dg = gemm(pass, lin.name + "-dgrad", tokens, lin.in, lin.out, 1, wbytes, mb, l, std::move(deps), sms);
    std::vector<std::uint32_t> after{dg};
    if (ag != ~0U) after.push_back(ag);
    std::uint32_t red = ~0U;
    if (s_.tp > 1) red = tp(s_.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, l, after);
    const std::uint32_t wg = gemm(pass, lin.name + "-wgrad", lin.out, lin.in, tokens, 1, wbytes, mb, l, after, sms);
    return {wg, red};
  }

  /// Local sizes of the layer's linears.
  Linear qkv() const {
    const double h = static_cast<double>(m_.hidden);
    return {"qkv", h, (attn_params() - out_params()) / h / s_.tp};
  }
  Linear attn_out() const {
    const double h = static_cast<double>(m_.hidden);
    return {"attn-out", out_params() / h / s_.tp, h};
  }
  Linear mlp_up() const {
    const double h = static_cast<double>(m_.hidden);
    return {"mlp-up", h, (m_.gated_mlp ? 2.0 : 1.0) * static_cast<double>(m_.intermediate) / s_.tp};
  }
  Linear mlp_down() const {
    return {"mlp-down", static_cast<double>(m_.intermediate) / s_.tp, static_cast<double>(m_.hidden)};
  }
  double attn_params() const { return static_cast<double>(m_.attention_params() - m_.hidden); }
  double out_params() const {
    const int d_v = m_.mla ? m_.mla->v_head_dim : m_.head_dim;
    return static_cast<double>(m_.heads) * d_v * static_cast<double>(m_.hidden);
  }
  double d_qk() const { return m_.mla ? m_.mla->qk_nope_head_dim + m_.mla->qk_rope_head_dim : m_.head_dim; }

  /// The attention core of `tokens` tokens attending over `context`: forward FLOPs
  /// (× kAttentionBackwardFactor in backward), shape per sequence (m queries, n keys, k head
  /// dim, batch = sequences × local heads).
  std::uint32_t attention(Pass pass, double tokens, double context, double kv_read, int mb, int l, std::vector<std::uint32_t> deps) {
    const int t = s_.tp;
    const int d_v = m_.mla ? m_.mla->v_head_dim : m_.head_dim;
    const double factor = pass == Pass::Backward ? kAttentionBackwardFactor : 1.0;
    const double io = tokens * (static_cast<double>(m_.heads) / t) * (2 * d_qk() + 2 * d_v) * e_;
    const std::uint32_t id = compute(ProgramOpKind::Attention, pass, "attention", factor * tokens * m_.attention_score_flops(context) / t,
                                     (pass == Pass::Backward ? 2.0 : 1.0) * io + kv_read, mb, l, std::move(deps));
    const double seqs = w_.phase == WorkloadPhase::Decode ? tokens : std::max(1.0, tokens / context);
    shape(id, tokens / seqs, context, d_qk(), seqs * std::max(1.0, static_cast<double>(m_.heads) / t));
    return id;
  }

  /// One transformer layer's forward (Pass::Forward, or Pass::Recompute for full
  /// recomputation) for `tokens` tokens of this rank's TP group, attending over `context`
  /// tokens. Returns the last op. `kv_read` is the KV-cache bytes the attention reads (inference).
  std::uint32_t layer(Pass pass, int mb, int l, double tokens, double context, double kv_read, std::uint32_t dep,
                      const std::vector<std::uint32_t>& extra_deps) {
    const int t = s_.tp;
    const double h = static_cast<double>(m_.hidden);
    const double act = tokens * h * e_;  // b·s·h·e of this TP group
    const bool decode = w_.phase == WorkloadPhase::Decode;
    std::vector<std::uint32_t> d{dep};
    d.insert(d.end(), extra_deps.begin(), extra_deps.end());
    std::uint32_t cur = compute(ProgramOpKind::Memory, pass, "norm", 0, kElementwisePerHidden / 2 * act / sp_, mb, l, d);
    const std::uint32_t qkv_op = cur = column_forward(pass, qkv(), tokens, mb, l, {cur}, true);
    cur = attention(pass, tokens, context, kv_read, mb, l, {qkv_op});
    std::vector<std::uint32_t> after_attn{cur};
    if (s_.cp > 1) {
      // With CP, K/V blocks travel around the CP ring beside the attention.
      const double kv_heads_local = m_.mla ? m_.heads / static_cast<double>(t) : std::max(1.0, static_cast<double>(m_.kv_heads) / t);
      const double kv_block = 2.0 * tokens * kv_heads_local * d_qk() * e_;  // K and V of this rank's tokens
      after_attn.push_back(comm(ParallelDim::CP, Collective::SendRecv, pass, "cp-kv-ring", (s_.cp - 1) * kv_block, mb, l, {qkv_op}));
    }
    cur = row_forward(pass, attn_out(), tokens, mb, l, after_attn);
    cur = compute(ProgramOpKind::Memory, pass, "norm", 0, kElementwisePerHidden / 2 * act / sp_, mb, l, {cur});
    if (m_.is_moe_layer(l)) {
      if (s_.sequence_parallel) cur = tp(Collective::AllGather, pass, act, mb, l, {cur});
      const auto& moe = *m_.moe;
      const double expert_params = static_cast<double>(m_.expert_params());
      const double k = moe.experts_per_token;
      cur = gemm(pass, "router", tokens, moe.experts, h, 1, h * moe.experts * e_, mb, l, {cur});
      const double routed = tokens * k * h * e_ / t;  // this rank's share of T·k·h·e
      if (s_.ep > 1) cur = comm(ParallelDim::EP, Collective::AlltoAll, pass, "ep-dispatch", routed, mb, l, {cur});
      // Experts: this rank computes T·k tokens' worth of expert FFNs (balanced routing) over
      // its experts/ep experts; in decode only the experts some token picks are read.
      double touched = static_cast<double>(moe.experts) / s_.ep;
      if (decode) touched *= 1.0 - std::pow(1.0 - k / moe.experts, tokens);
      const double shared = moe.shared_experts;
      // Balanced routing: each of this rank's experts sees tokens·(k + shared)/local experts.
      const double local = std::max(1.0, static_cast<double>(moe.experts) / s_.ep);
      cur = gemm(pass, "experts", tokens * (k + shared) / local, expert_params / h / t, h, local,
                 (touched + shared) * expert_params * e_ / t, mb, l, {cur});
      if (s_.ep > 1) cur = comm(ParallelDim::EP, Collective::AlltoAll, pass, "ep-combine", routed, mb, l, {cur});
      if (t > 1) cur = tp(s_.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, l, {cur});
    } else {
      const double i = static_cast<double>(m_.intermediate);
      cur = column_forward(pass, mlp_up(), tokens, mb, l, {cur}, true);
      cur = compute(ProgramOpKind::Memory, pass, "activation", 0, 3.0 * tokens * i * e_ / t, mb, l, {cur});
      cur = row_forward(pass, mlp_down(), tokens, mb, l, {cur});
    }
    return cur;
  }

  /// One transformer layer's backward as autograd runs it: the MLP block first, then the
  /// attention block, each linear as a data-gradient and a weight-gradient GEMM (see
  /// row_backward / column_backward for the TP communication), the attention core at
  /// kAttentionBackwardFactor × its forward FLOPs, element-wise ops at
  /// kElementwiseBackwardFactor × their forward bytes. `rc` Selective recomputes each module of
  /// the workload's recompute_modules (forward) just before its backward. Returns the last op: the input norm's backward,
  /// after which all the layer's gradients are written.
  std::uint32_t layer_backward(int mb, int l, double tokens, double context, std::uint32_t dep,
                               const std::vector<std::uint32_t>& extra_deps, LayerRecompute rc) {
    const Pass pass = Pass::Backward;
    const int t = s_.tp;
    const double h = static_cast<double>(m_.hidden);
    const double act = tokens * h * e_;
    std::vector<std::uint32_t> d{dep};
    d.insert(d.end(), extra_deps.begin(), extra_deps.end());
    std::vector<std::uint32_t> cur;
    // Selective recomputation (Megatron-Core --recompute-modules): each listed module's
    // forward runs again just before its backward (TransformerLayer / MLP / MoELayer checkpoint
    // the module's forward; layernorm, moe_act and mla_up_proj use CheckpointWithoutOutput).
    const auto recomputes = [&](const char* mod) {
      return rc == LayerRecompute::Selective &&
             std::find(w_.recompute_modules.begin(), w_.recompute_modules.end(), std::string(mod)) != w_.recompute_modules.end();
    };
    const auto norm_recompute = [&](std::vector<std::uint32_t> deps) {
      return compute(ProgramOpKind::Memory, Pass::Recompute, "norm", 0, kElementwisePerHidden / 2 * act / sp_, mb, l, std::move(deps));
    };
    if (m_.is_moe_layer(l)) {
      const auto& moe = *m_.moe;
      const double expert_params = static_cast<double>(m_.expert_params());
      const double k = moe.experts_per_token;
      const double shared = moe.shared_experts;
      const double local = std::max(1.0, static_cast<double>(moe.experts) / s_.ep);
      const double routed = tokens * k * h * e_ / t;
      if (recomputes("moe")) {
        // The whole MoE block's forward: router, dispatch, experts (one grouped GEMM), combine.
        std::uint32_t r = gemm(Pass::Recompute, "router", tokens, moe.experts, h, 1, h * moe.experts * e_, mb, l, d);
        if (s_.ep > 1) r = comm(ParallelDim::EP, Collective::AlltoAll, Pass::Recompute, "ep-dispatch", routed, mb, l, {r});
        r = gemm(Pass::Recompute, "experts", tokens * (k + shared) / local, expert_params / h / t, h, local,
                 (static_cast<double>(moe.experts) / s_.ep + shared) * expert_params * e_ / t, mb, l, {r});
        if (s_.ep > 1) r = comm(ParallelDim::EP, Collective::AlltoAll, Pass::Recompute, "ep-combine", routed, mb, l, {r});
        d = {r};
      } else {
        if (recomputes("shared_experts") && shared > 0) {
          d = {gemm(Pass::Recompute, "shared-experts", tokens, expert_params / h / t, h, shared, shared * expert_params * e_ / t, mb,
                    l, d)};
        }
        if (recomputes("moe_act")) {
          // The experts' activation function over the routed tokens' intermediate width.
          const double width = (m_.gated_mlp ? 3.0 : 2.0) * static_cast<double>(moe.expert_intermediate) / t;
          d = {compute(ProgramOpKind::Memory, Pass::Recompute, "moe-activation", 0, tokens * k * width * e_, mb, l, d)};
        }
      }
      std::uint32_t c = d.front();
      // The forward ReduceScatter's backward is an AllGather (SP); an AllReduce's is the identity.
      if (s_.sequence_parallel) c = tp(Collective::AllGather, pass, act, mb, l, d);
      else c = compute(ProgramOpKind::Memory, pass, "moe-grad", 0, 0, mb, l, d);
      if (s_.ep > 1) c = comm(ParallelDim::EP, Collective::AlltoAll, pass, "ep-combine", routed, mb, l, {c});
      const double rows = tokens * (k + shared) / local, wbytes = (static_cast<double>(moe.experts) / s_.ep + shared) * expert_params * e_ / t;
      // Expert FFNs as one grouped GEMM (all their linears): dgrad m = rows, n = h, k = params/h/t; wgrad m = params/h/t, n = h, k = rows.
      c = gemm(pass, "experts-dgrad", rows, h, expert_params / h / t, local, wbytes, mb, l, {c});
      c = gemm(pass, "experts-wgrad", expert_params / h / t, h, rows, local, wbytes, mb, l, {c});
      if (s_.ep > 1) c = comm(ParallelDim::EP, Collective::AlltoAll, pass, "ep-dispatch", routed, mb, l, {c});
      // Router (replicated over TP): dgrad and wgrad; the input gradient is summed over TP
      // (ReduceScatter with SP, the backward of the forward AllGather; AllReduce without).
      c = gemm(pass, "router-dgrad", tokens, h, moe.experts, 1, h * moe.experts * e_, mb, l, {c});
      c = gemm(pass, "router-wgrad", moe.experts, h, tokens, 1, h * moe.experts * e_, mb, l, {c});
      cur = {c};
      if (t > 1) cur.push_back(tp(s_.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, l, {c}));
    } else {
      const double i = static_cast<double>(m_.intermediate);
      if (recomputes("mlp")) {
        // The MLP's forward again, with its column-parallel input gather (SP) and row-parallel reduction.
        std::uint32_t r = column_forward(Pass::Recompute, mlp_up(), tokens, mb, l, d, false);
        r = compute(ProgramOpKind::Memory, Pass::Recompute, "activation", 0, 3.0 * tokens * i * e_ / t, mb, l, {r});
        d = {row_forward(Pass::Recompute, mlp_down(), tokens, mb, l, {r})};
      }
      std::uint32_t c = row_backward(mlp_down(), tokens, mb, l, d);
      c = compute(ProgramOpKind::Memory, pass, "activation", 0, kElementwiseBackwardFactor * 3.0 * tokens * i * e_ / t, mb, l, {c});
      const auto [wg, red] = column_backward(mlp_up(), tokens, mb, l, {c}, true);
      cur = {wg};
      if (red != ~0U) cur.push_back(red);
    }
    if (recomputes("layernorm")) cur = {norm_recompute(cur)};
    std::uint32_t c = compute(ProgramOpKind::Memory, pass, "norm", 0, kElementwiseBackwardFactor * kElementwisePerHidden / 2 * act / sp_,
                              mb, l, cur);
    c = row_backward(attn_out(), tokens, mb, l, {c});
    if (recomputes("core_attn")) c = attention(Pass::Recompute, tokens, context, 0, mb, l, {c});
    if (recomputes("mla_up_proj") && m_.mla) {
      // MLA's up-projections of the latent q and kv (q_lora -> a·(nope + rope), kv_lora -> a·(nope + v)).
      const auto& ml = *m_.mla;
      const double a = m_.heads;
      const double latent = static_cast<double>(ml.q_lora_rank) + ml.kv_lora_rank;
      const double up = static_cast<double>(ml.q_lora_rank) * a * (ml.qk_nope_head_dim + ml.qk_rope_head_dim) +
                        static_cast<double>(ml.kv_lora_rank) * a * (ml.qk_nope_head_dim + ml.v_head_dim);
      c = gemm(Pass::Recompute, "mla-up-proj", tokens, up / latent / t, latent, 1, up * e_ / t, mb, l, {c});
    }
    std::vector<std::uint32_t> after{attention(Pass::Backward, tokens, context, 0, mb, l, {c})};
    if (s_.cp > 1) {
      // CP backward: K/V blocks go around the ring again and their gradients come back.
      const double kv_heads_local = m_.mla ? m_.heads / static_cast<double>(t) : std::max(1.0, static_cast<double>(m_.kv_heads) / t);
      const double kv_block = 2.0 * tokens * kv_heads_local * d_qk() * e_;
      after.push_back(comm(ParallelDim::CP, Collective::SendRecv, pass, "cp-kv-ring", 2.0 * (s_.cp - 1) * kv_block, mb, l, {c}));
    }
    const auto [wg, red] = column_backward(qkv(), tokens, mb, l, after, true);
    std::vector<std::uint32_t> fin{wg};
    if (red != ~0U) fin.push_back(red);
    if (recomputes("layernorm")) fin = {norm_recompute(fin)};
    return compute(ProgramOpKind::Memory, pass, "norm", 0, kElementwiseBackwardFactor * kElementwisePerHidden / 2 * act / sp_, mb, l,
                   fin);
  }

  Program& p_;
  const TransformerConfig& m_;
  const WorkloadSpec& w_;
  const StrategySpec& s_;
  int stage_;
  double e_ = 2;
  int sp_ = 1;
  bool ub_ = false;
};

/// A DP bucket of one model chunk's gradient buffer (dense or expert), Megatron-Core's
/// _ParamAndGradBuffer: parameters in reverse order (the buffer is filled from the last layer,
/// "to roughly follow backprop order"), closed when it holds at least bucket_size elements.
struct DpBucket {
  double numel = 0;           ///< local elements, unpadded
  std::vector<int> members;   ///< layers; kOutput (LM head + final norm) and kEmbedding
  bool expert = false;        ///< expert buffer: reduced over the expert-data-parallel group
  int chunk = 0;              ///< local model chunk (0 ≤ chunk < v)
};
constexpr int kOutput = -1, kEmbedding = -2;

/// The DP buckets of one stage, per local model chunk in creation order (the order gradients
/// become ready). Megatron-Core rules (distributed_data_parallel.py, DistributedDataParallel
/// .__init__): bucket_size defaults to max(40M, 1M·dp) parameters; it is None (one bucket per
/// buffer) when overlap_grad_reduce is False, on pipeline stages other than the first
/// ("data-parallel communication on these stages is not on the critical path"), and for model
/// chunks after the first (megatron/training/training.py, get_model: disable_bucketing =
/// model_chunk_idx > 0). Buckets hold whole layers here (Megatron closes them at parameter
/// granularity).
std::vector<DpBucket> dp_buckets(const TransformerConfig& m, const StrategySpec& s, const std::vector<std::pair<int, int>>& chunks,
                                 int stage) {
  const int pp = s.pp, v = s.virtual_stages;
  const double limit_default = static_cast<double>(s.bucket_params > 0 ? s.bucket_params : default_bucket(s.dp));
  std::vector<DpBucket> out;
  for (int vc = 0; vc < v; ++vc) {
    const int c = vc * pp + stage;
    const bool bucketing = s.overlap_grad_reduce && stage == 0 && vc == 0;
    const double limit = bucketing ? limit_default : std::numeric_limits<double>::infinity();
    DpBucket dense{0, {}, false, vc}, expert{0, {}, true, vc};
    const auto add = [&](DpBucket& b, int member, double numel) {
      if (numel <= 0) return;
      b.numel += numel;
      b.members.push_back(member);
      if (b.numel >= limit) {
        out.push_back(b);
        b.numel = 0;
        b.members.clear();
      }
    };
    if (c == pp * v - 1) add(dense, kOutput, static_cast<double>(m.output_params()) / s.tp);
    const auto [first, count] = chunks[static_cast<std::size_t>(c)];
    for (int l = first + count - 1; l >= first; --l) {
      double lp = static_cast<double>(m.layer_params(l));
      if (m.is_moe_layer(l) && s.ep > 1) {
        const double experts = static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params());
        lp -= experts;
        add(expert, l, experts / s.ep / s.tp);
      }
      add(dense, l, lp / s.tp);
    }
    if (c == 0) add(dense, kEmbedding, static_cast<double>(m.embedding_params()) / s.tp);
    if (dense.numel > 0) out.push_back(dense);
    if (expert.numel > 0) out.push_back(expert);
  }
  return out;
}

void build_training(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const int pp = s.pp, v = s.virtual_stages, mbs = micro_batches(w, s);
  const auto chunks = chunk_layers(m.layers, pp * v);
  const auto plan = recompute_plan(m, w, s);
  const double e = dtype_bytes(w.dtype);
  const double e_grad = s.grad_reduce_dtype == "fp32" ? 4.0 : 2.0;
  const double seq = static_cast<double>(w.sequence_length);
  const double tokens = static_cast<double>(w.micro_batch_size) * seq / s.cp;  // per micro-batch per CP rank
  const double h = static_cast<double>(m.hidden);
  const double act = tokens * h * e;
  const int sp = s.sequence_parallel ? s.tp : 1;
  const int dp_group = s.dp * s.cp, edp_group = s.dp * s.cp / s.ep;
  const bool dist_opt = s.zero_stage >= 1;  // Megatron's distributed optimizer (ZeRO-1/2; ZeRO-3 shards too)
  const auto padded = [&](const DpBucket& b) { return pad_bucket(b.numel, b.expert ? edp_group : dp_group, dist_opt); };
  const auto group_comm = [&](const DpBucket& b) { return (b.expert ? edp_group : dp_group) > 1; };
  // Ops other stages wait for: the PP send of (model chunk, micro-batch, forward/backward).
  const auto key = [&](int chunk, int mb, bool fwd) { return (static_cast<std::size_t>(chunk) * mbs + mb) * 2 + (fwd ? 0 : 1); };
  std::vector<std::uint32_t> sent(static_cast<std::size_t>(pp * v) * mbs * 2, ~0U);
  std::vector<std::vector<PipelineSlot>> orders;
  for (int stage = 0; stage < pp; ++stage) orders.push_back(pipeline_order(stage, pp, mbs, v, s.microbatch_group_size_per_vp_stage));
  // Stages are built slot by slot in a global order that respects cross-stage dependencies:
  // repeatedly advance any stage whose next slot's input has been sent.
  std::vector<std::size_t> next_slot(static_cast<std::size_t>(pp), 0);
  std::vector<StageBuilder> builders;
  for (int stage = 0; stage < pp; ++stage) builders.emplace_back(p, m, w, s, stage);
  std::vector<std::vector<DpBucket>> buckets;
  for (int stage = 0; stage < pp; ++stage) buckets.push_back(dp_buckets(m, s, chunks, stage));
  // Gradient-ready ops of the last micro-batch's backward: per layer (its input norm's
  // backward), the LM head's wgrad and the embedding's backward (per stage).
  std::vector<std::uint32_t> last_bwd(static_cast<std::size_t>(m.layers), ~0U);
  std::vector<std::uint32_t> output_ready(static_cast<std::size_t>(pp), ~0U), embedding_ready(static_cast<std::size_t>(pp), ~0U);
  std::vector<std::uint32_t> stage_tail(static_cast<std::size_t>(pp), ~0U);

  // ZeRO-1/2 with overlap_param_gather (Megatron --overlap-param-gather), in steady state: the
  // previous step's optimizer left the parameter AllGathers to this step. The first bucket of
  // each buffer is dispatched at the step's start (distrib_optimizer.py: with
  // overlap_param_gather the first all-gather is launched in zero_grad); the forward pre-hook
  // of a bucket's first parameter waits for its gather and dispatches the next bucket's
  // (param_and_grad_buffer.py, _ParamAndGradBucketGroup.finish_param_sync and
  // next_param_gather_bucket_group; distributed_data_parallel.py, _make_forward_pre_hook).
  // Forward order is the reverse of the buckets' creation order, per buffer.
  const bool overlapped_gather = s.overlap_param_gather && (s.zero_stage == 1 || s.zero_stage == 2);
  struct GatherChain {
    std::vector<std::size_t> order;      // bucket indices in forward order
    std::vector<std::uint32_t> gather;   // their AllGather op (~0U until dispatched)
  };
  std::vector<std::vector<GatherChain>> chains(static_cast<std::size_t>(pp));
  // (stage, member, expert) -> (chain, position)
  std::map<std::tuple<int, int, bool>, std::pair<std::size_t, std::size_t>> member_chain;
  if (overlapped_gather) {
    for (int stage = 0; stage < pp; ++stage) {
      auto& b = builders[static_cast<std::size_t>(stage)];
      const auto& bs = buckets[static_cast<std::size_t>(stage)];
      for (int vc = 0; vc < v; ++vc)
        for (bool expert : {false, true}) {
          GatherChain ch;
          for (std::size_t i = bs.size(); i-- > 0;)
            if (bs[i].chunk == vc && bs[i].expert == expert && group_comm(bs[i])) ch.order.push_back(i);
          if (ch.order.empty()) continue;
          ch.gather.assign(ch.order.size(), ~0U);
          const std::size_t idx = chains[static_cast<std::size_t>(stage)].size();
          for (std::size_t k = 0; k < ch.order.size(); ++k)
            for (int mem : bs[ch.order[k]].members) member_chain[{stage, mem, expert}] = {idx, k};
          const DpBucket& first = bs[ch.order[0]];
          ch.gather[0] = b.comm(ParallelDim::DP, Collective::AllGather, Pass::Optimizer,
                                fmt::format("dp-{}param-allgather b{}", expert ? "expert-" : "", ch.order[0]), padded(first) * e, -1, -1, {});
          p.ops[ch.gather[0]].expert = expert;
          chains[static_cast<std::size_t>(stage)].push_back(std::move(ch));
        }
    }
  }
  // The gathers micro-batch 0's forward of `member` waits for (dispatching the next bucket's).
  const auto wait_gathers = [&](int stage, int member, std::uint32_t now) {
    std::vector<std::uint32_t> out;
    for (bool expert : {false, true}) {
      const auto it = member_chain.find({stage, member, expert});
      if (it == member_chain.end()) continue;
      auto& ch = chains[static_cast<std::size_t>(stage)][it->second.first];
      const std::size_t k = it->second.second;
      out.push_back(ch.gather[k]);
      if (k + 1 < ch.order.size() && ch.gather[k + 1] == ~0U) {
        const DpBucket& nb = buckets[static_cast<std::size_t>(stage)][ch.order[k + 1]];
        ch.gather[k + 1] = builders[static_cast<std::size_t>(stage)].comm(
            ParallelDim::DP, Collective::AllGather, Pass::Optimizer,
            fmt::format("dp-{}param-allgather b{}", expert ? "expert-" : "", ch.order[k + 1]), padded(nb) * e, -1, -1, {ch.gather[k], now});
        p.ops[ch.gather[k + 1]].expert = expert;
      }
    }
    return out;
  };

  // Stages are built slot by slot in a global order that respects cross-stage dependencies:
  // repeatedly advance any stage whose next slot's input has been sent.
  std::size_t remaining = 0;
  for (const auto& o : orders) remaining += o.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int stage = 0; stage < pp; ++stage) {
      auto& b = builders[static_cast<std::size_t>(stage)];
      while (next_slot[static_cast<std::size_t>(stage)] < orders[static_cast<std::size_t>(stage)].size()) {
        const PipelineSlot slot = orders[static_cast<std::size_t>(stage)][next_slot[static_cast<std::size_t>(stage)]];
        const int chunk = slot.chunk * pp + stage;  // model chunk index
        // Input: the previous chunk's forward send, or the next chunk's backward send.
        std::vector<std::uint32_t> in;
        if (slot.forward && chunk > 0) {
          const std::uint32_t id = sent[key(chunk - 1, slot.micro_batch, true)];
          if (id == ~0U) break;
          in.push_back(id);
        }
        if (!slot.forward && chunk < pp * v - 1) {
          const std::uint32_t id = sent[key(chunk + 1, slot.micro_batch, false)];
          if (id == ~0U) break;
          in.push_back(id);
        }
        const auto [first, count] = chunks[static_cast<std::size_t>(chunk)];
        const int mb = slot.micro_batch;
        const bool last_mb = mb == mbs - 1;
        const Pass pass = slot.forward ? Pass::Forward : Pass::Backward;
        const std::uint32_t start = stage_tail[static_cast<std::size_t>(stage)];
        std::vector<std::uint32_t> deps = in;
        if (start != ~0U) deps.push_back(start);
        std::uint32_t cur = b.compute(ProgramOpKind::Memory, pass, slot.forward ? "recv" : "recv-grad", 0, 0, mb, -1, deps);
        const StageBuilder::Linear head{"lm-head", h, static_cast<double>(m.vocab) / s.tp};
        if (slot.forward && chunk == 0) {
          std::vector<std::uint32_t> d{cur};
          if (overlapped_gather && mb == 0) {
            const auto g = wait_gathers(stage, kEmbedding, cur);
            d.insert(d.end(), g.begin(), g.end());
          }
          cur = b.compute(ProgramOpKind::Memory, pass, "embedding", 0, act, mb, -1, d);
          // Vocab-parallel embedding: AllReduce of its output (ReduceScatter with SP).
          if (s.tp > 1) cur = b.tp(s.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, -1, {cur});
        }
        if (!slot.forward && chunk == pp * v - 1) {
          // LM head (a ColumnParallelLinear, not overlapped by TE's userbuffers): dgrad and
          // wgrad, its input gradient AllReduced (or the input re-gathered and the gradient
          // reduce-scattered with SP) beside the wgrad GEMM.
          const auto [wg, red] = b.column_backward(head, tokens, mb, -1, {cur}, false);
          if (last_mb) output_ready[static_cast<std::size_t>(stage)] = wg;
          cur = red == ~0U ? wg : b.compute(ProgramOpKind::Memory, pass, "lm-head-grad", 0, 0, mb, -1, {wg, red});
        }
        for (int i = 0; i < count; ++i) {
          const int l = slot.forward ? first + i : first + count - 1 - i;
          std::vector<std::uint32_t> extra;
          if (slot.forward && mb == 0 && overlapped_gather) extra = wait_gathers(stage, l, cur);
          if (s.zero_stage >= 3 && dp_group > 1) {
            // FSDP: gather this layer's parameters (prefetched on the DP stream), padded like
            // the distributed optimizer's buckets.
            double layer = static_cast<double>(m.layer_params(l));
            if (m.is_moe_layer(l) && s.ep > 1) {
              layer -= static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params()) * (1.0 - 1.0 / s.ep);
            }
            const double bytes = pad_bucket(layer / s.tp, dp_group, true) * e;
            extra.push_back(b.comm(ParallelDim::DP, Collective::AllGather, pass, "dp-param-allgather", bytes, mb, l,
                                   {start != ~0U ? start : cur}));
          }
          const LayerRecompute rc = plan[static_cast<std::size_t>(l)];
          if (slot.forward) {
            cur = b.layer(pass, mb, l, tokens, seq, 0, cur, extra);
          } else {
            if (rc == LayerRecompute::Full) {
              cur = b.layer(Pass::Recompute, mb, l, tokens, seq, 0, cur, extra);
              extra.clear();
            }
            cur = b.layer_backward(mb, l, tokens, seq, cur, extra, rc);
            if (last_mb) last_bwd[static_cast<std::size_t>(l)] = cur;
          }
        }
        if (slot.forward && chunk == pp * v - 1) {
          std::vector<std::uint32_t> d{cur};
          if (overlapped_gather && mb == 0) {
            const auto g = wait_gathers(stage, kOutput, cur);
            d.insert(d.end(), g.begin(), g.end());
          }
          cur = b.column_forward(pass, head, tokens, mb, -1, d, false);
          // Vocab-parallel cross entropy: AllReduce of max, sum and target logit per token (fp32).
          if (s.tp > 1) cur = b.tp(Collective::AllReduce, pass, 3.0 * tokens * 4.0, mb, -1, {cur});
        }
        if (!slot.forward && chunk == 0) {
          // With SP the embedding's output gradient is sequence-sharded: gather it first (the
          // forward ReduceScatter's backward); without SP the AllReduce's backward is the identity.
          if (s.sequence_parallel && s.tp > 1) cur = b.tp(Collective::AllGather, pass, act, mb, -1, {cur});
          cur = b.compute(ProgramOpKind::Memory, pass, "embedding", 0, act, mb, -1, {cur});
          if (last_mb) embedding_ready[static_cast<std::size_t>(stage)] = cur;
        }
        cur = b.compute(ProgramOpKind::Memory, pass, slot.forward ? "send" : "send-grad", 0, 0, mb, -1, {cur});
        stage_tail[static_cast<std::size_t>(stage)] = cur;
        // PP: hand the activation (or its gradient) to the neighbouring stage.
        const bool has_next = slot.forward ? chunk < pp * v - 1 : chunk > 0;
        if (has_next && pp > 1) {
          ProgramOp op;
          op.kind = ProgramOpKind::SendRecv;
          op.stream = Stream::PpComm;
          op.pass = pass;
          op.dim = ParallelDim::PP;
          op.collective = Collective::SendRecv;
          op.name = slot.forward ? "pp-send" : "pp-send-grad";
          op.peer = slot.forward ? (stage + 1) % pp : (stage + pp - 1) % pp;
          op.bytes = std::round(act / sp);
          op.micro_batch = mb;
          op.deps = {cur};
          sent[key(chunk, mb, slot.forward)] = b.add(std::move(op));
        } else if (has_next) {
          sent[key(chunk, mb, slot.forward)] = cur;  // pp = 1 with chunks: same rank
        }
        ++next_slot[static_cast<std::size_t>(stage)];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocks while building the program");
  }
  // DP gradient reduction (Megatron-Core DistributedDataParallel):
  //  * overlap_grad_reduce true: gradients of all micro-batches but the last accumulate under
  //    no_sync; in the last micro-batch's backward a bucket's reduction is launched as soon as
  //    all its parameters' gradients are ready (param_and_grad_buffer.py,
  //    _ParamAndGradBucketGroup.register_grad_ready -> start_grad_sync).
  //  * false (Megatron's default, DistributedDataParallelConfig.overlap_grad_reduce = False):
  //    every bucket is reduced after the whole backward, in finalize_model_grads
  //    (finalize_model_grads.py -> DistributedDataParallel.finish_grad_sync).
  // AllReduce without the distributed optimizer, ReduceScatter with it (ZeRO ≥ 1); bucket
  // sizes padded (pad_bucket). Then the optimizer step on this rank's shard, and for ZeRO-1/2
  // without overlap_param_gather the parameter AllGathers, bucket by bucket, right after it
  // (distrib_optimizer.py, step: start_param_sync of every model chunk).
  for (int stage = 0; stage < pp; ++stage) {
    auto& b = builders[static_cast<std::size_t>(stage)];
    const std::uint32_t tail = stage_tail[static_cast<std::size_t>(stage)];
    const auto& bs = buckets[static_cast<std::size_t>(stage)];
    std::vector<std::uint32_t> reductions;
    double dense_local = 0, expert_local = 0;
    const Collective c = s.zero_stage == 0 ? Collective::AllReduce : Collective::ReduceScatter;
    for (std::size_t i = 0; i < bs.size(); ++i) {
      const DpBucket& bk = bs[i];
      (bk.expert ? expert_local : dense_local) += padded(bk);
      if (!group_comm(bk)) continue;
      std::vector<std::uint32_t> deps;
      if (s.overlap_grad_reduce) {
        for (int mem : bk.members) {
          const std::uint32_t ready = mem == kOutput      ? output_ready[static_cast<std::size_t>(stage)]
                                      : mem == kEmbedding ? embedding_ready[static_cast<std::size_t>(stage)]
                                                          : last_bwd[static_cast<std::size_t>(mem)];
          if (ready != ~0U && std::find(deps.begin(), deps.end(), ready) == deps.end()) deps.push_back(ready);
        }
      }
      if (deps.empty()) deps.push_back(tail);
      const std::uint32_t id = b.comm(ParallelDim::DP, c, Pass::Backward,
                                      fmt::format("dp-{}{} b{}", bk.expert ? "expert-" : "", StageBuilder::to_lower(c), i),
                                      padded(bk) * e_grad, -1, -1, deps);
      p.ops[id].expert = bk.expert;
      reductions.push_back(id);
    }
    std::vector<std::uint32_t> deps = reductions;
    deps.push_back(tail);
    const double shard = dist_opt ? dp_group : 1;
    const double expert_shard = dist_opt ? edp_group : 1;
    const std::uint32_t opt = b.compute(ProgramOpKind::Memory, Pass::Optimizer, "optimizer", 0,
                                        (dense_local / shard + expert_local / expert_shard) * kOptimizerBytesPerParam, -1, -1, deps);
    if ((s.zero_stage == 1 || s.zero_stage == 2) && !overlapped_gather) {
      for (std::size_t i = bs.size(); i-- > 0;) {
        if (!group_comm(bs[i])) continue;
        const std::uint32_t id = b.comm(ParallelDim::DP, Collective::AllGather, Pass::Optimizer,
                                        fmt::format("dp-{}param-allgather b{}", bs[i].expert ? "expert-" : "", i), padded(bs[i]) * e, -1,
                                        -1, {opt});
        p.ops[id].expert = bs[i].expert;
      }
    }
  }
  // Model FLOPs of the step (all GPUs): 6 · active non-embedding parameters per token + the
  // attention core 3 × forward (Megatron-LM / PaLM MFU convention), no recomputation.
  const double global_tokens = static_cast<double>(mbs) * w.micro_batch_size * s.dp * seq;
  double per_token = 0;
  for (int l = 0; l < m.layers; ++l) {
    per_token += 3.0 * (m.attention_projection_flops() + m.mlp_flops(l) + m.attention_score_flops(seq));
  }
  per_token += 3.0 * m.logits_flops();
  p.model_flops = per_token * global_tokens;
  p.tokens = global_tokens;
}

void build_inference(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const bool decode = w.phase == WorkloadPhase::Decode;
  const double e = dtype_bytes(w.dtype);
  const double h = static_cast<double>(m.hidden);
  const double seqs = decode ? static_cast<double>(w.batch_size) : static_cast<double>(w.micro_batch_size);
  const double tokens = decode ? seqs : seqs * static_cast<double>(w.sequence_length);
  // Decode: one token per sequence attending over the cache at its mean length during generation.
  const double context = decode ? static_cast<double>(w.context_length) + static_cast<double>(w.generated_tokens) / 2.0
                                : static_cast<double>(w.sequence_length);
  // MLA's latent cache is replicated on every TP rank (vLLM), which reads all of it.
  const double kv_share = m.mla ? 1.0 : std::max(1.0, static_cast<double>(m.kv_heads) / s.tp) / m.kv_heads;
  const double kv_read = decode ? seqs * context * m.kv_cache_bytes_per_token(e) * kv_share : 0.0;
  const auto chunks = chunk_layers(m.layers, s.pp);
  std::uint32_t prev = ~0U;
  for (int stage = 0; stage < s.pp; ++stage) {
    StageBuilder b(p, m, w, s, stage);
    std::vector<std::uint32_t> deps;
    if (prev != ~0U) deps.push_back(prev);
    std::uint32_t cur = b.compute(ProgramOpKind::Memory, Pass::Forward, "recv", 0, 0, 0, -1, deps);
    if (stage == 0) {
      cur = b.compute(ProgramOpKind::Memory, Pass::Forward, "embedding", 0, tokens * h * e, 0, -1, {cur});
      // vLLM's VocabParallelEmbedding: each TP rank looks up its vocabulary shard, AllReduce.
      if (s.tp > 1) cur = b.comm(ParallelDim::TP, Collective::AllReduce, Pass::Forward, "tp-allreduce", tokens * h * e, 0, -1, {cur});
    }
    const auto [first, count] = chunks[static_cast<std::size_t>(stage)];
    for (int l = first; l < first + count; ++l) cur = b.layer(Pass::Forward, 0, l, tokens, context, kv_read, cur, {});
    if (stage == s.pp - 1) {
      // Logits of the last position of every sequence, gathered to TP rank 0 (vLLM
      // LogitsProcessor): modelled as an AllGather of N_seq · V · e in total (each rank
      // contributes N_seq · (V/t) · e, the same bytes per rank as the gather).
      cur = b.compute(ProgramOpKind::Gemm, Pass::Forward, "lm-head", seqs * m.logits_flops() / s.tp,
                      static_cast<double>(m.vocab) * h * e / s.tp, 0, -1, b.flush(cur));
      b.shape(cur, seqs, static_cast<double>(m.vocab) / s.tp, h);
      // vLLM's ParallelLMHead pads the vocabulary to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE,
      // vocab_parallel_embedding.py) and gives each TP rank an equal shard; ccsim rounds the shard
      // up so that any vocabulary and TP size gather equal parts (e.g. Llama fine-tunes with
      // 32,001 tokens, TP 6).
      const double padded = std::ceil(static_cast<double>(m.vocab) / 64.0) * 64.0;
      const double shard = std::ceil(padded / s.tp);
      if (s.tp > 1) cur = b.comm(ParallelDim::TP, Collective::AllGather, Pass::Forward, "tp-gather-logits", seqs * shard * s.tp * e, 0, -1, {cur});
    } else {
      cur = b.compute(ProgramOpKind::Memory, Pass::Forward, "send", 0, 0, 0, -1, b.flush(cur));
      ProgramOp op;
      op.kind = ProgramOpKind::SendRecv;
      op.stream = Stream::PpComm;
      op.dim = ParallelDim::PP;
      op.collective = Collective::SendRecv;
      op.name = "pp-send";
      op.peer = stage + 1;
      op.bytes = std::round(2.0 * tokens * h * e);  // hidden states and residual
      op.micro_batch = 0;
      op.deps = {cur};
      cur = b.add(std::move(op));
    }
    prev = cur;
  }
  double per_token = 0;
  for (int l = 0; l < m.layers; ++l) per_token += m.attention_projection_flops() + m.mlp_flops(l) + m.attention_score_flops(context);
  // Every DP replica serves its own batch at the same time.
  p.model_flops = (per_token * tokens + m.logits_flops() * seqs) * s.dp;
  p.tokens = tokens * s.dp;
}

}  // namespace

Program build_program(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  Program p;
  for (int stage = 0; stage < s.pp; ++stage) p.ranks.push_back({stage, {}});
  if (w.phase == WorkloadPhase::TrainingStep) {
    // About 32 ops per (micro-batch, layer) pass forward and backward, 96 with TP overlap's
    // chunked GEMMs (Llama-3-70B); reserving them saves the reallocations that were a large
    // part of building a big step.
    const double passes = static_cast<double>(micro_batches(w, s)) * m.layers;
    p.ops.reserve(static_cast<std::size_t>(std::min(passes * (s.tp_comm_overlap ? 100.0 : 34.0) + 4096.0, 5e7)));
    p.op_rank.reserve(p.ops.capacity());
    build_training(p, m, w, s);
  } else {
    build_inference(p, m, w, s);
  }
  return p;
}

}  // namespace ccsim::models
