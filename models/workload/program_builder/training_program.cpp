#include "models/workload/program_builder/training_program.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "models/workload/layout_rules.hpp"
#include "models/workload/program_builder/dp_buckets.hpp"
#include "models/workload/program_builder/stage_builder.hpp"

namespace ccsim::models::detail {
namespace {

/// Adam optimizer step traffic per local parameter: read fp32 master, m, v and the fp32 grad,
/// write master, m, v and the bf16 copy: 4·4 + 3·4 + 2 = 30 bytes.
constexpr double kOptimizerBytesPerParam = 30.0;

/// Vocabulary-parallel cross entropy as Megatron-Core runs it on each TP rank's logits shard
/// (megatron/core/tensor_parallel/cross_entropy.py, VocabParallelCrossEntropy, PyTorch
/// element-wise kernels, no fusion), HBM bytes per logit. Forward: cast to fp32 (read 2, write
/// 4), max over the shard (read 4), subtract the max in place (read 4, write 4), exp in place
/// (read 4, write 4), sum (read 4), divide in place to the softmax kept for the backward (read 4,
/// write 4): 38 bytes, six kernels. Backward: the softmax minus the one-hot target scaled by the
/// loss gradient in place (read 4, write 4), then the autograd of the fp32 cast back to the
/// logits' dtype (read 4, write 2): 14 bytes. The small per-token reductions (AllReduce of max,
/// sum and target logit) are the TP collective beside it. Derived from the code, not measured.
constexpr double kCrossEntropyForwardBytesPerLogit = 38.0;
constexpr double kCrossEntropyBackwardBytesPerLogit = 14.0;

/// The word embedding's weight gradient per micro-batch, HBM bytes per element of its
/// (vocab/tp) × h shard: PyTorch's dense embedding backward zero-fills a gradient of the
/// weight's dtype (write e) and scatters the tokens' gradients into it; Megatron's DDP
/// backward hook then adds it to the fp32 main gradient (param.main_grad.add_(param.grad):
/// read e_grad and e, write e_grad), as the embedding has no fused gradient-accumulating GEMM
/// (megatron/core/distributed/distributed_data_parallel.py, _make_backward_post_hook).
/// Per element: e + (e_grad + e + e_grad).
double embedding_wgrad_bytes_per_element(double e, double e_grad) { return e + e_grad + e + e_grad; }

/// Per step and local gradient element, outside the optimizer kernel: the gradient buffer is
/// zeroed before the first micro-batch (DistributedDataParallel.zero_grad_buffer: write e_grad)
/// and the gradient norm for clipping reads the main gradients of this rank's shard once
/// (clip_grad_norm -> get_grad_norm_fp32, multi_tensor_l2norm: read 4 of fp32).
constexpr double kGradNormBytesPerParam = 4.0;

/// The parameter AllGathers of one gradient buffer with overlap_param_gather, in forward order.
struct GatherChain {
  std::vector<std::size_t> order;      // bucket indices in forward order
  std::vector<std::uint32_t> gather;   // their AllGather op (~0U until dispatched)
};

/// A pipeline slot of one stage: the model chunk it runs (slot.chunk · pp + stage), its
/// micro-batch and pass, and the chunk's layers [first, first + count).
struct SlotAt {
  int stage = 0;
  PipelineSlot slot;
  int chunk = 0;
  int mb = 0;
  bool last_mb = false;
  Pass pass = Pass::Forward;
  int first = 0;
  int count = 0;
};

/// One training step's Program under construction: every pipeline stage's StageBuilder, the
/// PP sends other stages wait for, the DP buckets and the gradient-ready ops they wait for.
/// The stages are built slot by slot (build_slots), then each stage's DP reduction and
/// optimizer step (reduce_gradients).
struct TrainingStep {
  TrainingStep(Program& program, const TransformerConfig& model, const WorkloadSpec& workload, const StrategySpec& strategy);

  void build();
  /// ZeRO-1/2 with overlap_param_gather: the first AllGather of every buffer (see overlapped_gather).
  void dispatch_first_gathers();
  /// The gathers micro-batch 0's forward of `member` waits for (dispatching the next bucket's).
  std::vector<std::uint32_t> wait_gathers(int stage, int member, std::uint32_t now);
  /// Stages are built slot by slot in a global order that respects cross-stage dependencies:
  /// repeatedly advance any stage whose next slot's input has been sent.
  void build_slots();
  /// Input of a slot: the previous chunk's forward send, or the next chunk's backward send.
  /// False while that send is not built yet.
  bool slot_input(const PipelineSlot& slot, int chunk, std::vector<std::uint32_t>& in) const;
  SlotAt slot_at(int stage, const PipelineSlot& slot, int chunk) const;
  /// One slot: receive, the embedding or LM head of the first / last chunk, the chunk's
  /// layers (slot_layers), the PP send (send).
  void build_slot(const SlotAt& at, const std::vector<std::uint32_t>& in);
  /// The chunk's layers in the slot's pass, after `cur`; `start` is the stage's previous tail.
  std::uint32_t slot_layers(const SlotAt& at, std::uint32_t start, std::uint32_t cur);
  /// PP: hands the activation (or its gradient) after `cur` to the neighbouring stage.
  void send(const SlotAt& at, std::uint32_t cur);
  /// The DP gradient reduction and optimizer step of one stage (see the definition).
  void reduce_gradients(int stage);
  void count_model_flops();

  double padded(const DpBucket& b) const { return pad_bucket(b.numel, b.expert ? edp_group : dp_group, dist_opt); }
  bool group_comm(const DpBucket& b) const { return (b.expert ? edp_group : dp_group) > 1; }
  /// Ops other stages wait for: the PP send of (model chunk, micro-batch, forward/backward).
  std::size_t key(int chunk, int mb, bool fwd) const { return (static_cast<std::size_t>(chunk) * mbs + mb) * 2 + (fwd ? 0 : 1); }

  Program& p;
  const TransformerConfig& m;
  const WorkloadSpec& w;
  const StrategySpec& s;
  const int pp, v, mbs;
  const std::vector<std::pair<int, int>> chunks;
  const std::vector<LayerRecompute> plan;
  const double e;
  const double e_grad;
  const double seq;
  const double tokens;  // per micro-batch per CP rank
  const double h;
  const double act;
  const int sp;
  const int dp_group, edp_group;
  const bool dist_opt;  // Megatron's distributed optimizer (ZeRO-1/2; ZeRO-3 shards too)
  std::vector<std::uint32_t> sent;
  std::vector<std::vector<PipelineSlot>> orders;
  std::vector<std::size_t> next_slot;
  std::vector<StageBuilder> builders;
  std::vector<std::vector<DpBucket>> buckets;
  // Gradient-ready ops of the last micro-batch's backward: per layer (its input norm's
  // backward), the LM head's wgrad and the embedding's backward (per stage).
  std::vector<std::uint32_t> last_bwd;
  std::vector<std::uint32_t> output_ready, embedding_ready;
  std::vector<std::uint32_t> stage_tail;
  // ZeRO-1/2 with overlap_param_gather (Megatron --overlap-param-gather), in steady state: the
  // previous step's optimizer left the parameter AllGathers to this step. The first bucket of
  // each buffer is dispatched at the step's start (distrib_optimizer.py: with
  // overlap_param_gather the first all-gather is launched in zero_grad); the forward pre-hook
  // of a bucket's first parameter waits for its gather and dispatches the next bucket's
  // (param_and_grad_buffer.py, _ParamAndGradBucketGroup.finish_param_sync and
  // next_param_gather_bucket_group; distributed_data_parallel.py, _make_forward_pre_hook).
  // Forward order is the reverse of the buckets' creation order, per buffer.
  const bool overlapped_gather;
  std::vector<std::vector<GatherChain>> chains;
  // (stage, member, expert) -> (chain, position)
  std::map<std::tuple<int, int, bool>, std::pair<std::size_t, std::size_t>> member_chain;
};

TrainingStep::TrainingStep(Program& program, const TransformerConfig& model, const WorkloadSpec& workload,
                           const StrategySpec& strategy)
    : p(program),
      m(model),
      w(workload),
      s(strategy),
      pp(s.pp),
      v(s.virtual_stages),
      mbs(micro_batches(w, s)),
      chunks(model_chunks(m, s)),
      plan(recompute_plan(m, w, s)),
      e(dtype_bytes(w.dtype)),
      e_grad(s.grad_reduce_dtype == "fp32" ? 4.0 : 2.0),
      seq(static_cast<double>(w.sequence_length)),
      tokens(static_cast<double>(w.micro_batch_size) * seq / s.cp),
      h(static_cast<double>(m.hidden)),
      act(tokens * h * e),
      sp(s.sequence_parallel ? s.tp : 1),
      dp_group(s.dp * s.cp),
      edp_group(s.dp * s.cp / s.ep),
      dist_opt(s.zero_stage >= 1),
      sent(static_cast<std::size_t>(pp * v) * mbs * 2, ~0U),
      next_slot(static_cast<std::size_t>(pp), 0),
      last_bwd(static_cast<std::size_t>(m.layers), ~0U),
      output_ready(static_cast<std::size_t>(pp), ~0U),
      embedding_ready(static_cast<std::size_t>(pp), ~0U),
      stage_tail(static_cast<std::size_t>(pp), ~0U),
      overlapped_gather(s.overlap_param_gather && (s.zero_stage == 1 || s.zero_stage == 2)),
      chains(static_cast<std::size_t>(pp)) {
  for (int stage = 0; stage < pp; ++stage) orders.push_back(pipeline_order(stage, pp, mbs, v, s.microbatch_group_size_per_vp_stage));
  for (int stage = 0; stage < pp; ++stage) builders.emplace_back(p, m, w, s, stage);
  for (int stage = 0; stage < pp; ++stage) buckets.push_back(dp_buckets(m, s, chunks, stage));
}

void TrainingStep::build() {
  dispatch_first_gathers();
  build_slots();
  for (int stage = 0; stage < pp; ++stage) reduce_gradients(stage);
  count_model_flops();
}

void TrainingStep::dispatch_first_gathers() {
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
}

std::vector<std::uint32_t> TrainingStep::wait_gathers(int stage, int member, std::uint32_t now) {
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
}

void TrainingStep::build_slots() {
  std::size_t remaining = 0;
  for (const auto& o : orders) remaining += o.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int stage = 0; stage < pp; ++stage) {
      while (next_slot[static_cast<std::size_t>(stage)] < orders[static_cast<std::size_t>(stage)].size()) {
        const PipelineSlot slot = orders[static_cast<std::size_t>(stage)][next_slot[static_cast<std::size_t>(stage)]];
        const int chunk = slot.chunk * pp + stage;  // model chunk index
        std::vector<std::uint32_t> in;
        if (!slot_input(slot, chunk, in)) break;
        build_slot(slot_at(stage, slot, chunk), in);
        ++next_slot[static_cast<std::size_t>(stage)];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocks while building the program");
  }
}

bool TrainingStep::slot_input(const PipelineSlot& slot, int chunk, std::vector<std::uint32_t>& in) const {
  if (slot.forward && chunk > 0) {
    const std::uint32_t id = sent[key(chunk - 1, slot.micro_batch, true)];
    if (id == ~0U) return false;
    in.push_back(id);
  }
  if (!slot.forward && chunk < pp * v - 1) {
    const std::uint32_t id = sent[key(chunk + 1, slot.micro_batch, false)];
    if (id == ~0U) return false;
    in.push_back(id);
  }
  return true;
}

SlotAt TrainingStep::slot_at(int stage, const PipelineSlot& slot, int chunk) const {
  const auto [first, count] = chunks[static_cast<std::size_t>(chunk)];
  const int mb = slot.micro_batch;
  return {stage, slot, chunk, mb, mb == mbs - 1, slot.forward ? Pass::Forward : Pass::Backward, first, count};
}

void TrainingStep::build_slot(const SlotAt& at, const std::vector<std::uint32_t>& in) {
  const auto& [stage, slot, chunk, mb, last_mb, pass, first, count] = at;
  auto& b = builders[static_cast<std::size_t>(stage)];
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
    // The cross entropy's backward (kCrossEntropyBackwardBytesPerLogit) gives the logits' gradient.
    cur = b.compute(ProgramOpKind::Memory, pass, "cross-entropy", 0, kCrossEntropyBackwardBytesPerLogit * tokens * head.out, mb, -1, {cur});
    const auto [wg, red] = b.column_backward(head, tokens, mb, -1, {cur}, false);
    if (last_mb) output_ready[static_cast<std::size_t>(stage)] = wg;
    cur = red == ~0U ? wg : b.compute(ProgramOpKind::Memory, pass, "lm-head-grad", 0, 0, mb, -1, {wg, red});
  }
  cur = slot_layers(at, start, cur);
  if (slot.forward && chunk == pp * v - 1) {
    std::vector<std::uint32_t> d{cur};
    if (overlapped_gather && mb == 0) {
      const auto g = wait_gathers(stage, kOutput, cur);
      d.insert(d.end(), g.begin(), g.end());
    }
    cur = b.column_forward(pass, head, tokens, mb, -1, d, false);
    // Vocab-parallel cross entropy: the element-wise passes over this rank's logits
    // (kCrossEntropyForwardBytesPerLogit), and the AllReduce of max, sum and target logit per
    // token (fp32) between them (modelled after them).
    cur = b.compute(ProgramOpKind::Memory, pass, "cross-entropy", 0, kCrossEntropyForwardBytesPerLogit * tokens * head.out, mb, -1, {cur});
    if (s.tp > 1) cur = b.tp(Collective::AllReduce, pass, 3.0 * tokens * 4.0, mb, -1, {cur});
  }
  if (!slot.forward && chunk == 0) {
    // With SP the embedding's output gradient is sequence-sharded: gather it first (the
    // forward ReduceScatter's backward); without SP the AllReduce's backward is the identity.
    if (s.sequence_parallel && s.tp > 1) cur = b.tp(Collective::AllGather, pass, act, mb, -1, {cur});
    // Its weight gradient: the dense (vocab/tp) × h gradient and its accumulation into the
    // fp32 main gradient (embedding_wgrad_bytes_per_element), besides reading the output gradient.
    cur = b.compute(ProgramOpKind::Memory, pass, "embedding", 0,
                    act + static_cast<double>(m.vocab) / s.tp * h * embedding_wgrad_bytes_per_element(e, e_grad), mb, -1, {cur});
    if (last_mb) embedding_ready[static_cast<std::size_t>(stage)] = cur;
  }
  cur = b.compute(ProgramOpKind::Memory, pass, slot.forward ? "send" : "send-grad", 0, 0, mb, -1, {cur});
  stage_tail[static_cast<std::size_t>(stage)] = cur;
  send(at, cur);
}

std::uint32_t TrainingStep::slot_layers(const SlotAt& at, std::uint32_t start, std::uint32_t cur) {
  const auto& [stage, slot, chunk, mb, last_mb, pass, first, count] = at;
  auto& b = builders[static_cast<std::size_t>(stage)];
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
  return cur;
}

void TrainingStep::send(const SlotAt& at, std::uint32_t cur) {
  const auto& [stage, slot, chunk, mb, last_mb, pass, first, count] = at;
  auto& b = builders[static_cast<std::size_t>(stage)];
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
void TrainingStep::reduce_gradients(int stage) {
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
  // Before the Adam step: the gradient norm over this rank's shard (clipping), and the zeroing
  // of the whole local gradient buffer that the next step needs (kGradNormBytesPerParam, e_grad).
  const double shard_params = dense_local / shard + expert_local / expert_shard;
  const std::uint32_t norm = b.compute(ProgramOpKind::Memory, Pass::Optimizer, "grad-norm", 0, shard_params * kGradNormBytesPerParam, -1, -1, deps);
  const std::uint32_t opt =
      b.compute(ProgramOpKind::Memory, Pass::Optimizer, "optimizer", 0, shard_params * kOptimizerBytesPerParam, -1, -1, {norm});
  b.compute(ProgramOpKind::Memory, Pass::Optimizer, "zero-grad", 0, (dense_local + expert_local) * e_grad, -1, -1, {opt});
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

void TrainingStep::count_model_flops() {
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

}  // namespace

void build_training(Program& p, const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  TrainingStep(p, m, w, s).build();
}

}  // namespace ccsim::models::detail
