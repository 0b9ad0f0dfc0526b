// The layout rules and memory model of models/workload/program_builder.hpp: check_layout, the
// recomputation plan, chunk_layers, Megatron-Core's pipeline order, activation bytes per layer
// and the per-stage memory footprint (split from builder.cpp, which builds the Program).

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <stdexcept>

#include <fmt/format.h>

#include "models/workload/program_builder.hpp"

namespace ccsim::models {
double dtype_bytes(const std::string& dtype) {
  if (dtype == "fp8") return 1.0;
  if (dtype == "fp32") return 4.0;
  return 2.0;  // bf16, fp16
}

int micro_batches(const WorkloadSpec& w, const StrategySpec& s) {
  if (w.phase != WorkloadPhase::TrainingStep || w.global_batch_size <= 0) return 1;
  return static_cast<int>(w.global_batch_size / (w.micro_batch_size * s.dp));
}

std::optional<LayoutProblem> check_layout(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  if (m.heads % s.tp != 0) {
    return LayoutProblem{"strategy", "tp", fmt::format("a TP size dividing the {} attention heads of {}", m.heads, m.name)};
  }
  if (!m.mla && m.kv_heads % s.tp != 0 && s.tp % m.kv_heads != 0) {
    return LayoutProblem{"strategy", "tp",
                         fmt::format("a TP size dividing the {} KV heads of {}, or a multiple of it", m.kv_heads, m.name)};
  }
  if (s.pp * s.virtual_stages > m.layers) {
    return LayoutProblem{"strategy", "pp",
                         fmt::format("pp·virtual_stages at most the {} layers of {} (pp·virtual_stages = {}·{})", m.layers,
                                     m.name, s.pp, s.virtual_stages)};
  }
  if (s.ep > 1 && !m.moe) {
    return LayoutProblem{"strategy", "ep", fmt::format("ep 1 ({} has no MoE layers)", m.name)};
  }
  if (m.moe && m.moe->experts % s.ep != 0) {
    return LayoutProblem{"strategy", "ep", fmt::format("an EP size dividing the {} experts of {}", m.moe->experts, m.name)};
  }
  if (w.phase != WorkloadPhase::TrainingStep) {
    if (w.recompute != "none") {
      return LayoutProblem{"workload", "recompute", "none for inference (activation recomputation is a training-step setting)"};
    }
    if (s.cp > 1) return LayoutProblem{"strategy", "cp", "cp 1 for inference (context parallelism is modelled for training)"};
    if (s.zero_stage > 0) return LayoutProblem{"strategy", "zero_stage", "zero_stage 0 for inference"};
    if (s.ep > 1) return LayoutProblem{"strategy", "ep", "ep 1 for inference (expert parallelism is modelled for training)"};
    if (s.pipeline_schedule == "interleaved") return LayoutProblem{"strategy", "pipeline_schedule", "1f1b for inference"};
    if (s.sequence_parallel) {
      return LayoutProblem{"strategy", "sequence_parallel", "false for inference (vLLM's scheme has no sequence parallelism)"};
    }
  }
  if (w.phase != WorkloadPhase::Decode) {
    if (w.sequence_length <= 0) return LayoutProblem{"workload", "sequence_length", "a sequence length of at least 1 token"};
    if (w.sequence_length % s.cp != 0) {
      return LayoutProblem{"workload", "sequence_length", fmt::format("a sequence length divisible by cp = {}", s.cp)};
    }
  }
  if (m.layers > 4096) {
    return LayoutProblem{"workload", "model", fmt::format("a model of at most 4,096 layers ({} has {})", m.name, m.layers)};
  }
  if (w.phase == WorkloadPhase::TrainingStep) {
    constexpr double kMaxPasses = 4'194'304;  // (micro-batch, layer) passes per stage: bounds the Program's size
    const double passes = static_cast<double>(micro_batches(w, s)) * m.layers / s.pp;
    if (micro_batches(w, s) > 65536 || passes > kMaxPasses) {
      return LayoutProblem{"workload", "global_batch_size",
                           fmt::format("at most 65,536 micro-batches per step and 4,194,304 (micro-batch, layer) passes per "
                                       "pipeline stage (global_batch_size / (micro_batch_size·dp) = {} micro-batches, {:.0f} passes)",
                                       micro_batches(w, s), passes)};
    }
    if (s.sequence_parallel && w.sequence_length / s.cp % s.tp != 0) {
      return LayoutProblem{"workload", "sequence_length",
                           fmt::format("a sequence length whose CP shard divides by tp = {} (sequence parallelism splits it)", s.tp)};
    }
  }
  if (w.phase == WorkloadPhase::TrainingStep && s.disable_custom_all_reduce) {
    return LayoutProblem{"strategy", "disable_custom_all_reduce",
                         "false for a training step (vLLM's custom all-reduce is an inference path; training uses NCCL)"};
  }
  if (s.tp_comm_overlap && !s.sequence_parallel) {
    // Megatron-LM asserts it (megatron/training/arguments.py, validate_args: "Tensor parallel
    // communication/GEMM overlap can happen only when sequence parallelism is enabled").
    return LayoutProblem{"strategy", "tp_comm_overlap", "false unless sequence_parallel is true (TE userbuffers overlap needs sequence parallelism)"};
  }
  // Megatron-Core forward_backward_pipelining_with_interleaving (pipeline_parallel/schedules.py):
  // the group size N (microbatch_group_size_per_vp_stage, default pp) must lie in [pp, M]
  // (ValueError), and the last group, M mod N, must be 0 or at least pp (RuntimeError: it would
  // leave dependency bubbles). With the default N = pp this is "M divisible by pp".
  if (s.pipeline_schedule == "interleaved" && w.phase == WorkloadPhase::TrainingStep) {
    const int mbs = micro_batches(w, s);
    const int group = s.microbatch_group_size_per_vp_stage > 0 ? s.microbatch_group_size_per_vp_stage : s.pp;
    if (group < s.pp) {
      return LayoutProblem{"strategy", "microbatch_group_size_per_vp_stage",
                           fmt::format("a micro-batch group of at least pp = {} (Megatron-Core's interleaved schedule)", s.pp)};
    }
    if (group > mbs) {
      return LayoutProblem{mbs < s.pp ? "workload" : "strategy", mbs < s.pp ? "global_batch_size" : "microbatch_group_size_per_vp_stage",
                           fmt::format("at least microbatch_group_size_per_vp_stage = {} micro-batches per step for the interleaved "
                                       "schedule (global_batch_size / (micro_batch_size·dp) = {}), as Megatron-Core requires",
                                       group, mbs)};
    }
    if (mbs % group != 0 && mbs % group < s.pp) {
      return LayoutProblem{"workload", "global_batch_size",
                           fmt::format("micro-batches per step (global_batch_size / (micro_batch_size·dp) = {}) whose remainder "
                                       "modulo microbatch_group_size_per_vp_stage = {} is 0 or at least pp = {}, as Megatron-Core's "
                                       "interleaved schedule requires (set microbatch_group_size_per_vp_stage to {} to run them "
                                       "as one group)",
                                       mbs, group, s.pp, mbs)};
    }
  }
  // Megatron-Core TransformerConfig: recompute_num_layers between 1 and the layers per pipeline rank.
  if (w.recompute == "full") {
    const int per_stage = (m.layers + s.pp - 1) / s.pp;
    if (w.recompute_num_layers > per_stage) {
      return LayoutProblem{"workload", "recompute_num_layers",
                           fmt::format("a recompute_num_layers from 1 to the {} layers per pipeline stage of {} over pp = {}",
                                       per_stage, m.name, s.pp)};
    }
  }
  // Modules that exist only in some models (Megatron-Core builds these checkpoints only where the
  // submodule is present; here an absent one is a likely mistake).
  if (w.recompute == "selective") {
    for (const auto& mod : w.recompute_modules) {
      if ((mod == "moe_act" || mod == "moe") && !m.moe) {
        return LayoutProblem{"workload", "recompute_modules", fmt::format("no '{}' for {} (it has no MoE layers)", mod, m.name)};
      }
      if (mod == "shared_experts" && (!m.moe || m.moe->shared_experts == 0)) {
        return LayoutProblem{"workload", "recompute_modules", fmt::format("no 'shared_experts' for {} (it has no shared experts)", m.name)};
      }
      if (mod == "mla_up_proj" && !m.mla) {
        return LayoutProblem{"workload", "recompute_modules", fmt::format("no 'mla_up_proj' for {} (it has no multi-head latent attention)", m.name)};
      }
      if (mod == "mlp" && m.moe && m.moe_layers() == m.layers) {
        return LayoutProblem{"workload", "recompute_modules", fmt::format("no 'mlp' for {} (every layer is MoE: use moe)", m.name)};
      }
    }
  }
  return std::nullopt;
}

std::vector<LayerRecompute> recompute_plan(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  if (w.recompute == "selective") return std::vector<LayerRecompute>(static_cast<std::size_t>(m.layers), LayerRecompute::Selective);
  std::vector<LayerRecompute> plan(static_cast<std::size_t>(m.layers), LayerRecompute::None);
  if (w.recompute != "full") return plan;
  // Megatron-Core TransformerBlock._checkpointed_forward, per model chunk: uniform recomputes
  // every layer (checkpointing groups of recompute_num_layers); block recomputes the first
  // recompute_num_layers layers of the chunk and runs the rest normally.
  const bool block = w.recompute_method == "block";
  for (const auto& [first, count] : chunk_layers(m.layers, s.pp * s.virtual_stages)) {
    for (int i = 0; i < count; ++i) {
      if (!block || i < w.recompute_num_layers) plan[static_cast<std::size_t>(first + i)] = LayerRecompute::Full;
    }
  }
  return plan;
}

std::vector<std::pair<int, int>> chunk_layers(int layers, int chunks) {
  std::vector<int> count(static_cast<std::size_t>(chunks), layers / chunks);
  int extra = layers % chunks;
  // Extra layers go to the middle chunks first (the first and last also hold embedding / head).
  for (int i = 1; i < chunks - 1 && extra > 0; ++i, --extra) ++count[static_cast<std::size_t>(i)];
  for (int i : {chunks - 1, 0})
    if (extra > 0 && i >= 0) {
      ++count[static_cast<std::size_t>(i)];
      --extra;
    }
  std::vector<std::pair<int, int>> out;
  int first = 0;
  for (int c : count) {
    out.emplace_back(first, c);
    first += c;
  }
  return out;
}

std::vector<PipelineSlot> pipeline_order(int stage, int stages, int m, int v, int group) {
  if (group <= 0) group = stages;
  // Megatron-Core schedules.py get_schedule_table: micro-batches in groups of `group`; within
  // a group every model chunk runs the group's micro-batches before the next chunk; the last
  // group takes all the micro-batches left (min_id + group >= m). Forward k runs table[k];
  // backward k runs table[k]'s micro-batch on chunk v − 1 − table[k].chunk (get_model_chunk_id).
  std::vector<PipelineSlot> table;
  table.reserve(static_cast<std::size_t>(m) * v);
  for (int lo = 0; lo < m; lo += group) {
    const int hi = lo + group >= m ? m : lo + group;
    for (int c = 0; c < v; ++c)
      for (int mb = lo; mb < hi; ++mb) table.push_back(PipelineSlot{true, mb, c});
    if (hi == m) break;
  }
  const int total = m * v;
  const auto forward = [&](int k) { return table[static_cast<std::size_t>(k)]; };
  const auto backward = [&](int k) {
    PipelineSlot slot = table[static_cast<std::size_t>(k)];
    slot.forward = false;
    slot.chunk = v - 1 - slot.chunk;
    return slot;
  };
  // get_pp_rank_microbatches: 1F1B warms up with p − i − 1 forwards; interleaved with
  // (p − i − 1)·2 + (v − 1)·group, at most every (micro-batch, chunk).
  int warmup = v == 1 ? stages - stage - 1 : (stages - stage - 1) * 2 + (v - 1) * group;
  warmup = std::min(warmup, total);
  const int steady = total - warmup;
  std::vector<PipelineSlot> out;
  out.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) out.push_back(forward(k));
  for (int i = 0; i < steady; ++i) {
    out.push_back(forward(warmup + i));
    out.push_back(backward(i));
  }
  for (int i = steady; i < total; ++i) out.push_back(backward(i));
  return out;
}

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
  const auto chunks = chunk_layers(m.layers, s.pp * v);
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
  const int chunks = s.pp * s.virtual_stages;
  const auto layers = chunk_layers(m.layers, chunks);
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
