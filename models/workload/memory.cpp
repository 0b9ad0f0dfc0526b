#include "models/workload/memory.hpp"

#include <algorithm>
#include <string>

namespace ccsim::models {

double layer_input_bytes(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const double tokens = static_cast<double>(w.sequence_length) / s.cp * static_cast<double>(w.micro_batch_size);
  return tokens * static_cast<double>(m.hidden) / (s.sequence_parallel ? s.tp : 1) * dtype_bytes(w.dtype);
}

double layer_activation_bytes(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int layer, LayerRecompute r) {
  if (r == LayerRecompute::Full) return layer_input_bytes(m, w, s);
  const double e = dtype_bytes(w.dtype);
  const double T = static_cast<double>(w.sequence_length) / s.cp * static_cast<double>(w.micro_batch_size);
  const double t = s.tp;
  const double sp = s.sequence_parallel ? s.tp : 1;
  const double h = static_cast<double>(m.hidden);
  const auto has = [&](const char* mod) {
    return r == LayerRecompute::Selective &&
           std::find(w.recompute_modules.begin(), w.recompute_modules.end(), std::string(mod)) != w.recompute_modules.end();
  };
  // Dropout: GPT-style (GELU) models train with Megatron's default hidden dropout 0.1 (one
  // 1-byte mask after attention and after the MLP); Llama-style (SwiGLU) recipes set it to 0.
  // Attention dropout inside FlashAttention keeps only its RNG state.
  const bool dropout = !m.gated_mlp;
  double elements = 0;  // per token, in the compute dtype
  double bytes = 0;     // per token, other precisions
  // Attention block.
  elements += h / sp;                           // input norm's input (the residual stream)
  if (!has("layernorm")) elements += h / sp;    // its output = the QKV GEMM input (re-gathered in backward with SP)
  const double heads = static_cast<double>(m.heads) / t;
  double q = 0, k = 0, v = 0, o = 0;
  if (m.mla) {
    const double qk = m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim;
    q = heads * qk;
    k = heads * qk;
    v = heads * m.mla->v_head_dim;
    o = heads * m.mla->v_head_dim;
    // Latent vectors, the inputs of the up-projections (the down-projections are not TP-split).
    if (!has("mla_up_proj")) elements += m.mla->q_lora_rank + m.mla->kv_lora_rank + m.mla->qk_rope_head_dim;
    if (has("mla_up_proj")) q = k = v = 0;      // up-projections and RoPE recomputed from the latents
  } else {
    const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t);  // GQA: K and V of kv_heads/t heads
    q = heads * m.head_dim;
    k = kv * m.head_dim;
    v = kv * m.head_dim;
    o = heads * m.head_dim;
  }
  elements += q + k + v + o;                    // FlashAttention's saved Q, K, V and output (= the output projection's input)
  if (!has("core_attn")) bytes += heads * 4.0;  // its fp32 softmax log-sum-exp per head per token
  if (dropout) bytes += h / sp;                 // dropout mask after the output projection
  // MLP block.
  elements += h / sp;                           // pre-MLP norm's input
  if (!has("layernorm")) elements += h / sp;    // its output = fc1 / router input
  const double act = m.gated_mlp ? 2.0 : 1.0;   // activation input: gate and up (SwiGLU) or fc1 output (GELU)
  if (m.is_moe_layer(layer)) {
    // Routed experts (expert tensor parallelism = tp): k copies of each token, each storing the
    // expert fc1 input h (dispatched), activation input act·I_e/t and fc2 input I_e/t.
    const double ie = static_cast<double>(m.moe->expert_intermediate);
    const double kk = m.moe->experts_per_token;
    if (!has("moe")) {
      elements += kk * (h / sp + act * ie / t + (has("moe_act") ? 0.0 : ie / t));
      const double shared = static_cast<double>(m.moe->shared_experts) * ie;
      if (!has("shared_experts")) elements += act * shared / t + shared / t;
    }
  } else if (!has("mlp")) {
    const double ff = static_cast<double>(m.intermediate);
    elements += act * ff / t + ff / t;          // activation input, fc2 input
  }
  if (dropout) bytes += h / sp;                 // dropout mask after the MLP
  return T * (elements * e + bytes);
}

namespace {

/// Peak bytes of activations on one GPU of `stage` over Megatron's schedule: the stored
/// activations of every (micro-batch, model chunk) whose forward ran and whose backward did
/// not, plus, during a backward, the working memory of its largest recomputed group (full
/// activations of the group being recomputed, one micro-batch). The last model chunk also
/// keeps the final norm's and the LM head's inputs and the fp32 logits 4·T·V/t of the
/// vocab-parallel cross entropy (Korthikanti et al. 2022, section 4.3).
double stage_activation_peak(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int stage, int mbs) {
  const int v = s.virtual_stages;
  const auto chunks = model_chunks(m, s);
  const auto plan = recompute_plan(m, w, s);
  const double input = layer_input_bytes(m, w, s);
  const bool uniform = w.recompute == "full" && w.recompute_method == "uniform";
  const int n = std::max(1, w.recompute_num_layers);
  std::vector<double> stored(static_cast<std::size_t>(v), 0.0), work(static_cast<std::size_t>(v), 0.0);
  for (int c = 0; c < v; ++c) {
    const auto [first, count] = chunks[static_cast<std::size_t>(c * s.pp + stage)];
    double& st = stored[static_cast<std::size_t>(c)];
    double& wk = work[static_cast<std::size_t>(c)];
    if (uniform) {
      // One stored input per group of n layers from the chunk's first layer; the backward
      // recomputes one group at a time.
      for (int g = 0; g < count; g += n) {
        st += input;
        double group = 0;
        for (int l = first + g; l < first + std::min(count, g + n); ++l) group += layer_activation_bytes(m, w, s, l, LayerRecompute::None);
        wk = std::max(wk, group);
      }
    } else {
      for (int l = first; l < first + count; ++l) {
        const LayerRecompute r = plan[static_cast<std::size_t>(l)];
        st += layer_activation_bytes(m, w, s, l, r);
        if (r == LayerRecompute::Full) wk = std::max(wk, layer_activation_bytes(m, w, s, l, LayerRecompute::None));
      }
    }
    if (c * s.pp + stage == s.pp * v - 1) {
      const double tokens = static_cast<double>(w.sequence_length) / s.cp * static_cast<double>(w.micro_batch_size);
      st += 2.0 * input + 4.0 * tokens * static_cast<double>(m.vocab) / s.tp;
    }
  }
  double current = 0, peak = 0;
  for (const PipelineSlot& slot : pipeline_order(stage, s.pp, mbs, v, s.microbatch_group_size_per_vp_stage)) {
    const auto c = static_cast<std::size_t>(slot.chunk);
    if (slot.forward) {
      current += stored[c];
      peak = std::max(peak, current);
    } else {
      peak = std::max(peak, current + work[c]);
      current -= stored[c];
    }
  }
  return peak;
}

}  // namespace

std::vector<MemoryFootprint> memory_footprint(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const double e = dtype_bytes(w.dtype);
  const double e_grad = s.grad_reduce_dtype == "fp32" ? 4.0 : 2.0;
  const auto layers = model_chunks(m, s);
  const bool training = w.phase == WorkloadPhase::TrainingStep;
  const int mb = micro_batches(w, s);
  std::vector<MemoryFootprint> out;
  for (int stage = 0; stage < s.pp; ++stage) {
    MemoryFootprint f;
    f.stage = stage;
    double params = 0;      // this GPU's parameters (TP-sharded; experts sharded by EP)
    double expert_params = 0;  // of which expert parameters (their replicas: dp·cp/ep)
    int stage_layers = 0;
    for (int v = 0; v < s.virtual_stages; ++v) {
      const auto [first, count] = layers[static_cast<std::size_t>(v * s.pp + stage)];
      stage_layers += count;
      for (int l = first; l < first + count; ++l) {
        double p = static_cast<double>(m.layer_params(l));
        if (m.is_moe_layer(l) && s.ep > 1) {
          const double experts = static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params());
          p = p - experts + experts / s.ep;
          expert_params += experts / s.ep / s.tp;
        }
        params += p / s.tp;
      }
    }
    if (stage == 0) params += static_cast<double>(m.embedding_params()) / s.tp;
    if (stage == s.pp - 1) params += static_cast<double>(m.output_params()) / s.tp;
    f.weights = params * e;
    if (training) {
      // The distributed optimizer shards dense parameters over DP × CP and expert parameters
      // over the expert-data-parallel group, DP × CP / EP (Megatron-Core).
      const double dp = static_cast<double>(s.dp) * s.cp;
      const double edp = dp / s.ep;
      const double dense = params - expert_params;
      const auto sharded = [&](int from_stage) {
        return s.zero_stage >= from_stage ? dense / dp + expert_params / edp : params;
      };
      f.gradients = sharded(2) * e_grad;
      f.optimizer = sharded(1) * 12.0;
      if (s.zero_stage >= 3) f.weights = sharded(3) * e;
      f.activations = stage_activation_peak(m, w, s, stage, mb);
    } else {
      // KV cache of every sequence at its final length, for this stage's layers; a GPU holds
      // kv_heads / t heads (at least one: vLLM replicates KV heads when t > kv_heads).
      const double tokens = w.phase == WorkloadPhase::Decode ? static_cast<double>(w.context_length + w.generated_tokens)
                                                : static_cast<double>(w.sequence_length);
      const double share = m.mla ? 1.0 : std::max(1.0, static_cast<double>(m.kv_heads) / s.tp) / m.kv_heads;
      const double batch = w.phase == WorkloadPhase::Decode ? static_cast<double>(w.batch_size) : static_cast<double>(w.micro_batch_size);
      f.kv_cache = batch * tokens * m.kv_cache_bytes_per_token(e) * share * stage_layers;
      // Working activations of one forward pass: a few b·s·h buffers (small next to weights).
      f.activations = 4.0 * batch * (w.phase == WorkloadPhase::Decode ? 1.0 : tokens) * static_cast<double>(m.hidden) * e;
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace ccsim::models
