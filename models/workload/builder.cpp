#include "models/workload/builder.hpp"

#include <algorithm>
#include <cmath>
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

double dtype_bytes(const std::string& dtype) {
  if (dtype == "fp8") return 1.0;
  if (dtype == "fp32") return 4.0;
  return 2.0;  // bf16, fp16
}

int micro_batches(const WorkloadSpec& w, const StrategySpec& s) {
  if (w.phase != "training_step" || w.global_batch_size <= 0) return 1;
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
  if (w.phase != "decode") {
    if (w.sequence_length <= 0) return LayoutProblem{"workload", "sequence_length", "a sequence length of at least 1 token"};
    if (w.sequence_length % s.cp != 0) {
      return LayoutProblem{"workload", "sequence_length", fmt::format("a sequence length divisible by cp = {}", s.cp)};
    }
  }
  if (w.phase != "training_step") {
    if (s.cp > 1) return LayoutProblem{"strategy", "cp", "cp 1 for inference (context parallelism is modelled for training)"};
    if (s.zero_stage > 0) return LayoutProblem{"strategy", "zero_stage", "zero_stage 0 for inference"};
    if (s.ep > 1) return LayoutProblem{"strategy", "ep", "ep 1 for inference (expert parallelism is modelled for training)"};
    if (s.pipeline_schedule == "interleaved") return LayoutProblem{"strategy", "pipeline_schedule", "1f1b for inference"};
    if (s.sequence_parallel) {
      return LayoutProblem{"strategy", "sequence_parallel", "false for inference (vLLM's scheme has no sequence parallelism)"};
    }
  }
  if (m.layers > 4096) {
    return LayoutProblem{"workload", "model", fmt::format("a model of at most 4,096 layers ({} has {})", m.name, m.layers)};
  }
  if (w.phase == "training_step") {
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
  // Megatron-Core forward_backward_pipelining_with_interleaving (pipeline_parallel/schedules.py):
  // the group size N (microbatch_group_size_per_vp_stage, default pp) must lie in [pp, M]
  // (ValueError), and the last group, M mod N, must be 0 or at least pp (RuntimeError: it would
  // leave dependency bubbles). With the default N = pp this is "M divisible by pp".
  if (s.pipeline_schedule == "interleaved" && w.phase == "training_step") {
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
  const bool training = w.phase == "training_step";
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
      const double tokens = w.phase == "decode" ? static_cast<double>(w.context_length + w.generated_tokens)
                                                : static_cast<double>(w.sequence_length);
      const double share = m.mla ? 1.0 : std::max(1.0, static_cast<double>(m.kv_heads) / s.tp) / m.kv_heads;
      const double batch = w.phase == "decode" ? static_cast<double>(w.batch_size) : static_cast<double>(w.micro_batch_size);
      f.kv_cache = batch * tokens * m.kv_cache_bytes_per_token(e) * share * stage_layers;
      // Working activations of one forward pass: a few b·s·h buffers (small next to weights).
      f.activations = 4.0 * batch * (w.phase == "decode" ? 1.0 : tokens) * static_cast<double>(m.hidden) * e;
    }
    out.push_back(f);
  }
  return out;
}

namespace {

/// Builds the ops of one rank (pipeline stage); see build_program.
class StageBuilder {
 public:
  StageBuilder(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, int stage)
      : p_(p), m_(m), w_(w), s_(s), stage_(stage) {
    e_ = dtype_bytes(w.dtype);
    sp_ = s.sequence_parallel ? s.tp : 1;
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

  /// A TP collective after a row-parallel GEMM (AllReduce, or ReduceScatter with SP) or
  /// before a column-parallel one (AllGather with SP). Returns what the next op waits for:
  /// the collective (exposed), or with tp_comm_overlap only the GEMM that produced its input
  /// — the collective then runs beside the next op, and `pending_` makes the op after that wait.
  std::uint32_t tp_comm(Collective c, Pass pass, double bytes, int mb, int layer, std::uint32_t after) {
    if (s_.tp == 1) return after;
    const std::string name = fmt::format("tp-{}", to_lower(c));
    const std::uint32_t id = comm(ParallelDim::TP, c, pass, name, bytes, mb, layer, {after});
    if (!s_.tp_comm_overlap) return id;
    pending_.push_back(id);
    return after;
  }
  /// Dependencies for the next compute op: `dep` plus any overlapped TP collectives due.
  std::vector<std::uint32_t> next(std::uint32_t dep) {
    std::vector<std::uint32_t> d{dep};
    if (!pending_.empty() && ++pending_age_ >= 2) {
      d.insert(d.end(), pending_.begin(), pending_.end());
      pending_.clear();
      pending_age_ = 0;
    }
    return d;
  }
  std::vector<std::uint32_t> flush(std::uint32_t dep) {
    std::vector<std::uint32_t> d{dep};
    d.insert(d.end(), pending_.begin(), pending_.end());
    pending_.clear();
    pending_age_ = 0;
    return d;
  }

  static std::string to_lower(Collective c) {
    std::string s(models::to_string(c));
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }

  /// One transformer layer's forward (or its backward: FLOPs ×2, collectives mirrored) for
  /// `tokens` tokens of this rank's TP group, attending over `context` tokens. Returns the
  /// last op. `kv_read` is the KV-cache bytes the attention reads (inference).
  std::uint32_t layer(Pass pass, int mb, int l, double tokens, double context, double kv_read, std::uint32_t dep,
                      const std::vector<std::uint32_t>& extra_deps) {
    const bool bwd = pass == Pass::Backward;
    const double mult = bwd ? 2.0 : 1.0;
    const int t = s_.tp;
    const double h = static_cast<double>(m_.hidden);
    const double act = tokens * h * e_;  // b·s·h·e of this TP group
    const bool decode = w_.phase == "decode";
    // Weight bytes read per GEMM (matter when few tokens: decode).
    const double attn_params = static_cast<double>(m_.attention_params() - m_.hidden);
    const int d_v = m_.mla ? m_.mla->v_head_dim : m_.head_dim;
    const double out_params = static_cast<double>(m_.heads) * d_v * h;
    const double qkv_params = attn_params - out_params;
    std::vector<std::uint32_t> d{dep};
    d.insert(d.end(), extra_deps.begin(), extra_deps.end());
    std::uint32_t cur = compute(ProgramOpKind::Memory, pass, "norm", 0, mult * kElementwisePerHidden / 2 * act / sp_, mb, l, d);
    if (s_.sequence_parallel) cur = tp_comm(Collective::AllGather, pass, act, mb, l, cur);
    cur = compute(ProgramOpKind::Gemm, pass, "qkv", mult * 2.0 * tokens * qkv_params / t, qkv_params * e_ / t, mb, l, next(cur));
    shape(cur, tokens, qkv_params / h / t, h, mult);
    // Attention core; with CP, K/V blocks travel around the CP ring beside it.
    const std::uint32_t qkv = cur;
    const double d_qk = m_.mla ? m_.mla->qk_nope_head_dim + m_.mla->qk_rope_head_dim : m_.head_dim;
    const double kv_heads_local = m_.mla ? m_.heads / static_cast<double>(t) : std::max(1.0, static_cast<double>(m_.kv_heads) / t);
    const double attn_io = tokens * (static_cast<double>(m_.heads) / t) * (2 * d_qk + 2 * d_v) * e_;
    cur = compute(ProgramOpKind::Attention, pass, "attention", mult * tokens * m_.attention_score_flops(context) / t,
                  attn_io + kv_read, mb, l, next(qkv));
    {
      // Per sequence: m query tokens against n = context keys; batch = sequences × local heads.
      const double seqs = decode ? tokens : std::max(1.0, tokens / context);
      shape(cur, tokens / seqs, context, d_qk, seqs * std::max(1.0, static_cast<double>(m_.heads) / t) * mult);
    }
    std::vector<std::uint32_t> after_attn{cur};
    if (s_.cp > 1) {
      const double kv_block = 2.0 * tokens * kv_heads_local * d_qk * e_;  // K and V of this rank's tokens
      after_attn.push_back(comm(ParallelDim::CP, Collective::SendRecv, pass, "cp-kv-ring", mult * (s_.cp - 1) * kv_block, mb, l,
                                {qkv}));
    }
    cur = compute(ProgramOpKind::Gemm, pass, "attn-out", mult * 2.0 * tokens * out_params / t, out_params * e_ / t, mb, l,
                  after_attn);
    shape(cur, tokens, h, out_params / h / t, mult);
    cur = tp_comm(s_.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, l, cur);
    cur = compute(ProgramOpKind::Memory, pass, "norm", 0, mult * kElementwisePerHidden / 2 * act / sp_, mb, l, next(cur));
    if (s_.sequence_parallel) cur = tp_comm(Collective::AllGather, pass, act, mb, l, cur);
    if (m_.is_moe_layer(l)) {
      const auto& moe = *m_.moe;
      const double expert_params = static_cast<double>(m_.expert_params());
      const double k = moe.experts_per_token;
      cur = compute(ProgramOpKind::Gemm, pass, "router", mult * 2.0 * tokens * h * moe.experts / t,
                    h * moe.experts * e_, mb, l, next(cur));
      shape(cur, tokens, moe.experts, h, mult);
      const double routed = tokens * k * h * e_ / t;  // this rank's share of T·k·h·e
      if (s_.ep > 1) cur = comm(ParallelDim::EP, Collective::AlltoAll, pass, "ep-dispatch", routed, mb, l, {cur});
      // Experts: this rank computes T·k tokens' worth of expert FFNs (balanced routing) over
      // its experts/ep experts; in decode only the experts some token picks are read.
      double touched = static_cast<double>(moe.experts) / s_.ep;
      if (decode) touched *= 1.0 - std::pow(1.0 - k / moe.experts, tokens);
      const double shared = moe.shared_experts;
      cur = compute(ProgramOpKind::Gemm, pass, "experts", mult * 2.0 * tokens * (k + shared) * expert_params / t,
                    (touched + shared) * expert_params * e_ / t, mb, l, {cur});
      {
        // Balanced routing: each of this rank's experts sees tokens·(k + shared)/local experts.
        const double local = std::max(1.0, static_cast<double>(moe.experts) / s_.ep);
        shape(cur, tokens * (k + shared) / local, expert_params / h / t, h, local * mult);
      }
      if (s_.ep > 1) cur = comm(ParallelDim::EP, Collective::AlltoAll, pass, "ep-combine", routed, mb, l, {cur});
    } else {
      const double i = static_cast<double>(m_.intermediate);
      const double up = (m_.gated_mlp ? 2.0 : 1.0) * h * i;
      cur = compute(ProgramOpKind::Gemm, pass, "mlp-up", mult * 2.0 * tokens * up / t, up * e_ / t, mb, l, next(cur));
      shape(cur, tokens, up / h / t, h, mult);
      cur = compute(ProgramOpKind::Memory, pass, "activation", 0, mult * 3.0 * tokens * i * e_ / t, mb, l, next(cur));
      cur = compute(ProgramOpKind::Gemm, pass, "mlp-down", mult * 2.0 * tokens * h * i / t, h * i * e_ / t, mb, l, next(cur));
      shape(cur, tokens, h, i / t, mult);
    }
    cur = tp_comm(s_.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, l, cur);
    return cur;
  }

  Program& p_;
  const TransformerConfig& m_;
  const WorkloadSpec& w_;
  const StrategySpec& s_;
  int stage_;
  double e_ = 2;
  int sp_ = 1;
  std::vector<std::uint32_t> pending_;
  int pending_age_ = 0;
};

void build_training(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const int pp = s.pp, v = s.virtual_stages, mbs = micro_batches(w, s);
  const auto chunks = chunk_layers(m.layers, pp * v);
  const double e = dtype_bytes(w.dtype);
  const double e_grad = s.grad_reduce_dtype == "fp32" ? 4.0 : 2.0;
  const double seq = static_cast<double>(w.sequence_length);
  const double tokens = static_cast<double>(w.micro_batch_size) * seq / s.cp;  // per micro-batch per CP rank
  const double h = static_cast<double>(m.hidden);
  const double act = tokens * h * e;
  const int sp = s.sequence_parallel ? s.tp : 1;
  // Ops other stages wait for: the PP send of (model chunk, micro-batch, forward/backward).
  const auto key = [&](int chunk, int mb, bool fwd) { return (static_cast<std::size_t>(chunk) * mbs + mb) * 2 + (fwd ? 0 : 1); };
  std::vector<std::uint32_t> sent(static_cast<std::size_t>(pp * v) * mbs * 2, ~0U);
  std::vector<std::vector<PipelineSlot>> orders;
  for (int stage = 0; stage < pp; ++stage) orders.push_back(pipeline_order(stage, pp, mbs, v, s.microbatch_group_size_per_vp_stage));
  const std::vector<LayerRecompute> plan = recompute_plan(m, w, s);
  // Stages are built slot by slot in a global order that respects cross-stage dependencies:
  // repeatedly advance any stage whose next slot's input has been sent.
  std::vector<std::size_t> next_slot(static_cast<std::size_t>(pp), 0);
  std::vector<StageBuilder> builders;
  for (int stage = 0; stage < pp; ++stage) builders.emplace_back(p, m, w, s, stage);
  // Last backward op of each layer in the last micro-batch (DP buckets wait for them).
  std::vector<std::uint32_t> last_bwd(static_cast<std::size_t>(m.layers), ~0U);
  std::vector<std::uint32_t> stage_tail(static_cast<std::size_t>(pp), ~0U);
  // ZeRO-1/2 with overlap_param_gather (Megatron --overlap-param-gather), in steady state: the
  // parameter AllGathers of the previous step's update run at the start of this one, bucket by
  // bucket on the DP stream, and each layer's first forward waits for its bucket.
  std::vector<std::uint32_t> param_gather(static_cast<std::size_t>(m.layers), ~0U);
  const bool overlapped_gather = s.overlap_param_gather && (s.zero_stage == 1 || s.zero_stage == 2) && s.dp * s.cp > 1;
  if (overlapped_gather) {
    const std::int64_t limit = s.bucket_params > 0 ? s.bucket_params : default_bucket(s.dp);
    for (int stage = 0; stage < pp; ++stage) {
      auto& b = builders[static_cast<std::size_t>(stage)];
      std::vector<int> order;  // forward order of this stage's layers
      for (int vc = 0; vc < v; ++vc) {
        const auto [first, count] = chunks[static_cast<std::size_t>(vc * pp + stage)];
        for (int l = first; l < first + count; ++l) order.push_back(l);
      }
      double bucket = stage == 0 ? static_cast<double>(m.embedding_params()) / s.tp : 0.0;
      std::vector<int> members;
      int index = 0;
      const auto emit = [&]() {
        if (members.empty() && bucket <= 0) return;
        const std::uint32_t id = b.comm(ParallelDim::DP, Collective::AllGather, Pass::Optimizer,
                                        fmt::format("dp-param-allgather b{}", index++), bucket * e, -1, -1, {});
        for (int l : members) param_gather[static_cast<std::size_t>(l)] = id;
        members.clear();
        bucket = 0;
      };
      for (std::size_t i = 0; i < order.size(); ++i) {
        const int l = order[i];
        double lp = static_cast<double>(m.layer_params(l));
        if (m.is_moe_layer(l) && s.ep > 1) lp -= static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params());
        bucket += lp / s.tp;
        members.push_back(l);
        if (i + 1 == order.size() && stage == pp - 1) bucket += static_cast<double>(m.output_params()) / s.tp;
        if (bucket >= static_cast<double>(limit) || i + 1 == order.size()) emit();
      }
    }
  }
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
        const Pass pass = slot.forward ? Pass::Forward : Pass::Backward;
        const std::uint32_t start = stage_tail[static_cast<std::size_t>(stage)];
        std::vector<std::uint32_t> deps = in;
        if (start != ~0U) deps.push_back(start);
        std::uint32_t cur = b.compute(ProgramOpKind::Memory, pass, slot.forward ? "recv" : "recv-grad", 0, 0, mb, -1, deps);
        const double mult = slot.forward ? 1.0 : 2.0;
        if (slot.forward && chunk == 0) {
          cur = b.compute(ProgramOpKind::Memory, pass, "embedding", 0, act, mb, -1, {cur});
          cur = b.tp_comm(s.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, -1, cur);
        }
        if (!slot.forward && chunk == pp * v - 1) {
          // LM head backward (and forward loss already done): 2 × 2·T·h·V/t.
          cur = b.compute(ProgramOpKind::Gemm, pass, "lm-head", mult * tokens * m.logits_flops() / s.tp,
                          static_cast<double>(m.vocab) * h * e / s.tp, mb, -1, b.flush(cur));
          b.shape(cur, tokens, static_cast<double>(m.vocab) / s.tp, h, mult);
          // The column-parallel LM head's input gradient is summed over TP (ReduceScatter with SP).
          cur = b.tp_comm(s.sequence_parallel ? Collective::ReduceScatter : Collective::AllReduce, pass, act, mb, -1, cur);
        }
        for (int i = 0; i < count; ++i) {
          const int l = slot.forward ? first + i : first + count - 1 - i;
          std::vector<std::uint32_t> extra;
          if (slot.forward && mb == 0 && param_gather[static_cast<std::size_t>(l)] != ~0U) {
            extra.push_back(param_gather[static_cast<std::size_t>(l)]);
          }
          if (s.zero_stage >= 3) {
            // FSDP: gather this layer's parameters (prefetched on the DP stream).
            double layer = static_cast<double>(m.layer_params(l));
            if (m.is_moe_layer(l) && s.ep > 1) {
              layer -= static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params()) * (1.0 - 1.0 / s.ep);
            }
            const double bytes = layer / s.tp * e;
            extra.push_back(b.comm(ParallelDim::DP, Collective::AllGather, pass, "dp-param-allgather", bytes, mb, l,
                                   {start != ~0U ? start : cur}));
          }
          if (!slot.forward && plan[static_cast<std::size_t>(l)] != LayerRecompute::None) {
            if (plan[static_cast<std::size_t>(l)] == LayerRecompute::Full) {
              cur = b.layer(Pass::Recompute, mb, l, tokens, seq, 0, cur, extra);
              extra.clear();
            } else {  // selective: the attention core again
              cur = b.compute(ProgramOpKind::Attention, Pass::Recompute, "attention", tokens * m.attention_score_flops(seq) / s.tp,
                              0, mb, l, {cur});
            }
          }
          cur = b.layer(pass, mb, l, tokens, seq, 0, cur, extra);
          if (!slot.forward && mb == mbs - 1) last_bwd[static_cast<std::size_t>(l)] = cur;
        }
        if (slot.forward && chunk == pp * v - 1) {
          if (s.sequence_parallel) cur = b.tp_comm(Collective::AllGather, pass, act, mb, -1, cur);
          cur = b.compute(ProgramOpKind::Gemm, pass, "lm-head", tokens * m.logits_flops() / s.tp,
                          static_cast<double>(m.vocab) * h * e / s.tp, mb, -1, b.flush(cur));
          b.shape(cur, tokens, static_cast<double>(m.vocab) / s.tp, h);
          // Vocab-parallel cross entropy: AllReduce of max, sum and target logit per token (fp32).
          if (s.tp > 1) cur = b.comm(ParallelDim::TP, Collective::AllReduce, pass, "tp-allreduce", 3.0 * tokens * 4.0, mb, -1, {cur});
        }
        if (!slot.forward && chunk == 0) {
          // With SP the embedding's output gradient is sequence-sharded: gather it first.
          if (s.sequence_parallel) cur = b.tp_comm(Collective::AllGather, pass, act, mb, -1, cur);
          cur = b.compute(ProgramOpKind::Memory, pass, "embedding", 0, act, mb, -1, b.flush(cur));
        }
        cur = b.compute(ProgramOpKind::Memory, pass, slot.forward ? "send" : "send-grad", 0, 0, mb, -1, b.flush(cur));
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
  // DP: gradient buckets in the order backward finishes them, then the optimizer step.
  const std::int64_t bucket_limit = s.bucket_params > 0 ? s.bucket_params : default_bucket(s.dp);
  const bool dp_comm = s.dp * s.cp > 1;
  for (int stage = 0; stage < pp; ++stage) {
    auto& b = builders[static_cast<std::size_t>(stage)];
    std::vector<int> order;  // layers of this stage in backward completion order
    for (int vc = s.virtual_stages - 1; vc >= 0; --vc) {
      const auto [first, count] = chunks[static_cast<std::size_t>(vc * pp + stage)];
      for (int l = first + count - 1; l >= first; --l) order.push_back(l);
    }
    double params_local = 0, bucket = 0, expert_local = 0;
    std::vector<std::uint32_t> buckets;
    int index = 0;
    const bool edp_comm = s.dp * s.cp / s.ep > 1;
    const auto emit = [&](std::uint32_t after) {
      if (bucket <= 0) return;
      if (dp_comm) {
        const Collective c = s.zero_stage == 0 ? Collective::AllReduce : Collective::ReduceScatter;
        buckets.push_back(b.comm(ParallelDim::DP, c, Pass::Backward, fmt::format("dp-{} b{}", StageBuilder::to_lower(c), index++),
                                 bucket * e_grad, -1, -1, {after}));
      }
      bucket = 0;
    };
    for (int l : order) {
      double lp = static_cast<double>(m.layer_params(l));
      if (m.is_moe_layer(l) && s.ep > 1) {
        // Expert gradients reduce over the expert-data-parallel group, one bucket per layer.
        const double experts = static_cast<double>(m.moe->experts) * static_cast<double>(m.expert_params());
        lp -= experts;
        const double mine = experts / s.ep / s.tp;
        expert_local += mine;
        if (edp_comm) {
          const Collective c = s.zero_stage == 0 ? Collective::AllReduce : Collective::ReduceScatter;
          const std::uint32_t id = b.comm(ParallelDim::DP, c, Pass::Backward, fmt::format("dp-expert-{} l{}", StageBuilder::to_lower(c), l),
                                          mine * e_grad, -1, l, {last_bwd[static_cast<std::size_t>(l)]});
          p.ops[id].expert = true;
          buckets.push_back(id);
        }
      }
      bucket += lp / s.tp;
      params_local += lp / s.tp;
      if (bucket >= static_cast<double>(bucket_limit)) emit(last_bwd[static_cast<std::size_t>(l)]);
    }
    double edge = 0;
    if (stage == 0) edge += static_cast<double>(m.embedding_params()) / s.tp;
    if (stage == pp - 1) edge += static_cast<double>(m.output_params()) / s.tp;
    bucket += edge;
    params_local += edge;
    emit(stage_tail[static_cast<std::size_t>(stage)]);
    std::vector<std::uint32_t> deps = buckets;
    deps.push_back(stage_tail[static_cast<std::size_t>(stage)]);
    const double shard = s.zero_stage >= 1 ? s.dp * s.cp : 1;
    const double expert_shard = s.zero_stage >= 1 ? s.dp * s.cp / s.ep : 1;
    std::uint32_t opt = b.compute(ProgramOpKind::Memory, Pass::Optimizer, "optimizer", 0,
                                  (params_local / shard + expert_local / expert_shard) * kOptimizerBytesPerParam, -1, -1, deps);
    if (s.zero_stage == 1 || s.zero_stage == 2) {
      if (dp_comm && !overlapped_gather) {
        b.comm(ParallelDim::DP, Collective::AllGather, Pass::Optimizer, "dp-param-allgather", params_local * e, -1, -1, {opt});
      }
      if (edp_comm && expert_local > 0) {
        const std::uint32_t id = b.comm(ParallelDim::DP, Collective::AllGather, Pass::Optimizer, "dp-expert-param-allgather",
                                        expert_local * e, -1, -1, {opt});
        p.ops[id].expert = true;
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
  const bool decode = w.phase == "decode";
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
      if (s.tp > 1) cur = b.comm(ParallelDim::TP, Collective::AllGather, Pass::Forward, "tp-gather-logits", seqs * m.vocab * e, 0, -1, {cur});
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
  if (w.phase == "training_step") {
    build_training(p, m, w, s);
  } else {
    build_inference(p, m, w, s);
  }
  return p;
}

}  // namespace ccsim::models
