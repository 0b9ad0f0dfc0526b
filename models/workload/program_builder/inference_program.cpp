#include "models/workload/program_builder/inference_program.hpp"

#include <algorithm>
#include <cmath>

#include "models/workload/layout_rules.hpp"
#include "models/workload/program_builder/stage_builder.hpp"

namespace ccsim::models::detail {

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
  const auto chunks = model_chunks(m, s);
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

}  // namespace ccsim::models::detail
