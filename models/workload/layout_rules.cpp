#include "models/workload/layout_rules.hpp"

#include <algorithm>

#include <fmt/format.h>

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

namespace {

/// The rules of pipeline_layers and Megatron-Core's decoder_first/last_pipeline_num_layers.
std::optional<LayoutProblem> check_uneven_layers(const TransformerConfig& m, const StrategySpec& s) {
  const int first = s.decoder_first_pipeline_num_layers;
  const int last = s.decoder_last_pipeline_num_layers;
  if (!s.pipeline_layers.empty()) {
    const int chunks = s.pp * s.virtual_stages;
    if (first > 0 || last > 0) {
      return LayoutProblem{"strategy", "pipeline_layers", "either pipeline_layers or decoder_first/last_pipeline_num_layers, not both"};
    }
    if (static_cast<int>(s.pipeline_layers.size()) != chunks) {
      return LayoutProblem{"strategy", "pipeline_layers",
                           fmt::format("one layer count per model chunk: pp·virtual_stages = {} entries (found {})", chunks, s.pipeline_layers.size())};
    }
    std::int64_t sum = 0;
    for (int c : s.pipeline_layers) sum += c;
    if (sum != m.layers) {
      return LayoutProblem{"strategy", "pipeline_layers", fmt::format("layer counts summing to the {} layers of {} (they sum to {})", m.layers, m.name, sum)};
    }
    return std::nullopt;
  }
  if (first == 0 && last == 0) return std::nullopt;
  const char* key = first > 0 ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers";
  if (s.virtual_stages > 1) {
    return LayoutProblem{"strategy", key, "the 1f1b schedule (uneven first and last stages are modelled without virtual stages; use pipeline_layers)"};
  }
  const int ends = (first > 0) + (last > 0);
  if (s.pp < 2 || s.pp < ends) return LayoutProblem{"strategy", key, "pp of at least 2 (the first and last stages are different stages)"};
  const int middle = s.pp - ends;
  const int rest = m.layers - first - last;
  if (middle == 0 && rest != 0) {
    return LayoutProblem{"strategy", key,
                         fmt::format("first and last stage layers adding up to the {} layers of {} when pp = 2 (they add up to {})", m.layers,
                                     m.name, first + last)};
  }
  if (middle > 0 && (rest < middle || rest % middle != 0)) {
    // Megatron-Core asserts the remaining layers divide evenly among the other stages.
    return LayoutProblem{"strategy", key,
                         fmt::format("first/last stage layers leaving the other {} stage{} an equal share of at least 1 of the {} "
                                     "layers of {} (left: {})",
                                     middle, middle == 1 ? "" : "s", m.layers, m.name, rest)};
  }
  return std::nullopt;
}

}  // namespace

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
  if (const auto problem = check_uneven_layers(m, s)) return problem;
  // Megatron-Core TransformerConfig: recompute_num_layers between 1 and the layers per pipeline rank.
  if (w.recompute == "full") {
    int per_stage = (m.layers + s.pp - 1) / s.pp;
    if (!s.pipeline_layers.empty() || s.decoder_first_pipeline_num_layers > 0 || s.decoder_last_pipeline_num_layers > 0) {
      per_stage = 0;
      for (const auto& [first, count] : model_chunks(m, s)) per_stage = std::max(per_stage, count);
    }
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
  for (const auto& [first, count] : model_chunks(m, s)) {
    for (int i = 0; i < count; ++i) {
      if (!block || i < w.recompute_num_layers) plan[static_cast<std::size_t>(first + i)] = LayerRecompute::Full;
    }
  }
  return plan;
}

std::vector<std::pair<int, int>> model_chunks(const TransformerConfig& m, const StrategySpec& s) {
  std::vector<int> count = s.pipeline_layers;
  if (count.empty() && (s.decoder_first_pipeline_num_layers > 0 || s.decoder_last_pipeline_num_layers > 0)) {
    const int first = s.decoder_first_pipeline_num_layers;
    const int last = s.decoder_last_pipeline_num_layers;
    const int middle = s.pp - (first > 0) - (last > 0);
    const int rest = m.layers - first - last;
    count.assign(static_cast<std::size_t>(s.pp), middle > 0 ? rest / middle : 0);
    if (first > 0) count.front() = first;
    if (last > 0) count.back() = last;
  }
  if (count.empty()) return chunk_layers(m.layers, s.pp * s.virtual_stages);
  std::vector<std::pair<int, int>> out;
  int at = 0;
  for (int c : count) {
    out.emplace_back(at, c);
    at += c;
  }
  return out;
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

}  // namespace ccsim::models
