#include "models/workload/program_builder/stage_builder.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace ccsim::models::detail {
namespace {

/// Bytes of HBM traffic per element of b·s·h for a layer's norms, residual adds, dropout and
/// activation function, forward (a documented default: two norms and two residual adds read
/// and write the hidden state, ~4 reads + 4 writes; the MLP activation is counted on the MLP
/// width separately).
constexpr double kElementwisePerHidden = 8.0;

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

}  // namespace

StageBuilder::StageBuilder(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int stage)
    : p_(p), m_(m), w_(w), s_(s), stage_(stage) {
  e_ = dtype_bytes(w.dtype);
  sp_ = s.sequence_parallel ? s.tp : 1;
  // TE userbuffers overlap exists only with sequence parallelism (check_layout).
  ub_ = s.tp_comm_overlap && s.sequence_parallel && s.tp > 1;
}

std::uint32_t StageBuilder::compute(ProgramOpKind kind, Pass pass, std::string name, double flops, double bytes, int mb, int layer,
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

void StageBuilder::shape(std::uint32_t id, double m, double n, double k, double batch) {
  ProgramOp& op = p_.ops[id];
  op.m = static_cast<std::int64_t>(std::llround(m));
  op.n = static_cast<std::int64_t>(std::llround(n));
  op.k = static_cast<std::int64_t>(std::llround(k));
  op.batch = static_cast<std::int64_t>(std::llround(batch));
}

std::uint32_t StageBuilder::gemm(Pass pass, std::string name, double m, double n, double k, double batch, double weight_bytes, int mb,
                                 int layer, std::vector<std::uint32_t> deps, int comm_sms) {
  const std::uint32_t id =
      compute(ProgramOpKind::Gemm, pass, std::move(name), 2.0 * m * n * k * batch, weight_bytes, mb, layer, std::move(deps));
  shape(id, m, n, k, batch);
  p_.ops[id].comm_sms = comm_sms;
  return id;
}

std::uint32_t StageBuilder::comm(ParallelDim dim, Collective c, Pass pass, std::string name, double bytes, int mb, int layer,
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

std::uint32_t StageBuilder::tp(Collective c, Pass pass, double bytes, int mb, int layer, std::vector<std::uint32_t> deps) {
  return comm(ParallelDim::TP, c, pass, fmt::format("tp-{}", to_lower(c)), bytes, mb, layer, std::move(deps));
}

std::string StageBuilder::to_lower(Collective c) {
  std::string s(models::to_string(c));
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::uint32_t StageBuilder::column_forward(Pass pass, const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps,
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

std::uint32_t StageBuilder::row_forward(Pass pass, const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps) {
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

std::uint32_t StageBuilder::row_backward(const Linear& lin, double tokens, int mb, int l, std::vector<std::uint32_t> deps) {
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

std::pair<std::uint32_t, std::uint32_t> StageBuilder::column_backward(const Linear& lin, double tokens, int mb, int l,
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

StageBuilder::Linear StageBuilder::qkv() const {
  const double h = static_cast<double>(m_.hidden);
  return {"qkv", h, (attn_params() - out_params()) / h / s_.tp};
}

StageBuilder::Linear StageBuilder::attn_out() const {
  const double h = static_cast<double>(m_.hidden);
  return {"attn-out", out_params() / h / s_.tp, h};
}

StageBuilder::Linear StageBuilder::mlp_up() const {
  const double h = static_cast<double>(m_.hidden);
  return {"mlp-up", h, (m_.gated_mlp ? 2.0 : 1.0) * static_cast<double>(m_.intermediate) / s_.tp};
}

StageBuilder::Linear StageBuilder::mlp_down() const {
  return {"mlp-down", static_cast<double>(m_.intermediate) / s_.tp, static_cast<double>(m_.hidden)};
}

double StageBuilder::out_params() const {
  const int d_v = m_.mla ? m_.mla->v_head_dim : m_.head_dim;
  return static_cast<double>(m_.heads) * d_v * static_cast<double>(m_.hidden);
}

std::uint32_t StageBuilder::attention(Pass pass, double tokens, double context, double kv_read, int mb, int l, std::vector<std::uint32_t> deps) {
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

std::uint32_t StageBuilder::layer(Pass pass, int mb, int l, double tokens, double context, double kv_read, std::uint32_t dep,
                                  const std::vector<std::uint32_t>& extra_deps) {
  const int t = s_.tp;
  const double h = static_cast<double>(m_.hidden);
  const double act = tokens * h * e_;  // b·s·h·e of this TP group
  const bool decode = w_.phase == WorkloadPhase::Decode;
  std::vector<std::uint32_t> d{dep};
  d.insert(d.end(), extra_deps.begin(), extra_deps.end());
  std::uint32_t cur = compute(ProgramOpKind::Memory, pass, "norm", 0, kElementwisePerHidden / 2 * act / sp_, mb, l, d);
  const std::uint32_t qkv_op = cur = column_forward(pass, qkv(), tokens, mb, l, {cur}, true);
  if (w_.phase == WorkloadPhase::Prefill || w_.phase == WorkloadPhase::Decode) {
    // vLLM writes the new tokens' keys and values into the paged KV cache in a kernel of its own
    // before the attention (csrc/cache_kernels.cu, reshape_and_cache / reshape_and_cache_flash,
    // called by the attention backend's forward): it reads them from the QKV output and writes
    // them into their cache slots (this rank's KV heads; MLA: the latent cache).
    const double kv_share = m_.mla ? 1.0 : std::max(1.0, static_cast<double>(m_.kv_heads) / t) / m_.kv_heads;
    cur = compute(ProgramOpKind::Memory, pass, "kv-cache-write", 0, 2.0 * tokens * m_.kv_cache_bytes_per_token(e_) * kv_share, mb, l,
                  {qkv_op});
  }
  cur = attention(pass, tokens, context, kv_read, mb, l, {cur});
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

std::uint32_t StageBuilder::layer_backward(int mb, int l, double tokens, double context, std::uint32_t dep,
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

}  // namespace ccsim::models::detail
