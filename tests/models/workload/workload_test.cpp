// Workload Programs (models/workload/program_builder.hpp) against the closed forms of
// shared/reference/models.md, "Communication per step": message counts and sizes of TP, PP,
// DP and EP communication for inference and training, the pipeline schedules, the layer split
// and the memory footprint. Expected values are computed by hand in the comments (b
// micro-batch, s sequence, h hidden, e bytes per element, t = TP, L layers, V vocabulary).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/workload/program_builder.hpp"
#include "models/workload/program.hpp"
#include "models/workload/transformer.hpp"
#include "workload_support.hpp"

using namespace ccsim::models;

using namespace ccsim::test::workload;

// ---------------------------------------------------------------------------------------------
// Inference

TEST_CASE("decode and prefill: 2L + 1 TP AllReduces and one logits AllGather, every shipped model", "[workload]") {
  const auto names = shipped_models();
  REQUIRE(names.size() >= 9);
  for (const auto& name : names) {
    const TransformerConfig m = load_transformer(name);
    for (int t : {2, 4, 8}) {
      if (!tp_fits(m, t)) continue;
      for (int pp : {1, 2}) {
        for (std::int64_t batch : {1, 16}) {
          INFO(name << " tp " << t << " pp " << pp << " batch " << batch);
          // Decode: B sequences, one token each: N_tok = N_seq = B.
          check_inference(m, decode(name, batch), strategy(t, pp, 1), static_cast<double>(batch), static_cast<double>(batch));
          // Prefill of B prompts of S = 512 tokens: N_tok = B·S, N_seq = B.
          check_inference(m, prefill(name, batch, 512), strategy(t, pp, 1), static_cast<double>(batch) * 512,
                          static_cast<double>(batch));
        }
      }
    }
  }
}

TEST_CASE("decode: Llama-3.1-8B at B = 1, TP 2: 65 AllReduces of 8 KiB per token (models.md)", "[workload]") {
  const TransformerConfig m = load_transformer("llama-3.1-8b");
  const Program p = build(m, decode("llama-3.1-8b", 1), strategy(2, 1, 1));
  // 2·32 + 1 = 65 AllReduces of B·h·e = 1·4096·2 = 8192 bytes.
  const auto allreduce = select(p, collective(ParallelDim::TP, Collective::AllReduce));
  CHECK(allreduce.size() == 65);
  CHECK(sizes(p, allreduce) == std::set<double>{8192});
  // Logits: B·V·e = 1·128256·2 = 256,512 bytes in all (128,256 per rank at t = 2).
  const auto gather = select(p, collective(ParallelDim::TP, Collective::AllGather));
  REQUIRE(gather.size() == 1);
  CHECK(p.ops[gather[0]].bytes == 256'512);
  CHECK(p.tokens == 1);
}

TEST_CASE("decode: PP 2 sends hidden states and residual, 2·B·h·e", "[workload]") {
  const TransformerConfig m = load_transformer("llama-3-70b");
  const Program p = build(m, decode("llama-3-70b", 8), strategy(4, 2, 1));
  // 2·8·8192·2 = 262,144 bytes from stage 0 to stage 1, once per token step.
  const auto sends = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::SendRecv; });
  REQUIRE(sends.size() == 1);
  CHECK(p.op_rank[sends[0]] == 0);
  CHECK(p.ops[sends[0]].peer == 1);
  CHECK(p.ops[sends[0]].bytes == 262'144);
  // 80 layers split 40 + 40: stage 0 has 2·40 + 1 = 81 AllReduces, stage 1 has 80.
  CHECK(select(p, collective(ParallelDim::TP, Collective::AllReduce), 0).size() == 81);
  CHECK(select(p, collective(ParallelDim::TP, Collective::AllReduce), 1).size() == 80);
}

TEST_CASE("inference with TP 1 has no TP communication", "[workload]") {
  const TransformerConfig m = load_transformer("llama-3-8b");
  const Program p = build(m, decode("llama-3-8b", 4), strategy(1, 1, 1));
  CHECK(select(p, [](const ProgramOp& op) { return is_comm(op); }).empty());
}

// ---------------------------------------------------------------------------------------------
// Training: TP, PP and DP traffic of Llama-2-7B

namespace {

// Llama-2-7B by hand (models.md): L = 32, h = 4096, a = kv = 32, d = 128, I = 11008, V = 32000.
//   layer: attention 4·h² + h = 67,108,864 + 4,096; MLP 3·h·I + h = 135,266,304 + 4,096;
//          in all 202,383,360
//   embedding V·h = 131,072,000; output V·h + h = 131,076,096
constexpr double kLlama2Layer = 202'383'360;
constexpr double kLlama2Embedding = 131'072'000;
constexpr double kLlama2Output = 131'076'096;

struct TrainingCase {
  bool sequence_parallel = false;
  int zero_stage = 0;
  std::string grad_dtype = "fp32";
  std::int64_t bucket_params = 0;
  bool tp_comm_overlap = false;
  std::string recompute = "none";
};

}  // namespace

TEST_CASE("training: TP, PP and DP messages of Llama-2-7B match the closed forms", "[workload]") {
  // b = 2, s = 1024, t = 2, p = 2, dp = 2, global batch 16: m = 16 / (2·2) = 4 micro-batches.
  // Per micro-batch, b·s·h·e = 2·1024·4096·2 = 16,777,216 bytes.
  const TransformerConfig m = load_transformer("llama-2-7b");
  const int t = 2, pp = 2, dp = 2, mbs = 4;
  const double act = 16'777'216;
  std::vector<TrainingCase> cases;
  for (bool sp : {false, true})
    for (int zero : {0, 1, 2})
      for (const char* g : {"fp32", "bf16"}) cases.push_back({sp, zero, g, 0, false, "none"});
  cases.push_back({false, 0, "fp32", 300'000'000, false, "none"});  // several layers per DP bucket
  cases.push_back({true, 1, "fp32", 150'000'000, false, "none"});   // (TP overlap: training_structure_test.cpp)
  cases.push_back({true, 1, "fp32", 0, false, "selective"});        // selective: no TP traffic added
  for (const auto& c : cases) {
    INFO("sp " << c.sequence_parallel << " zero " << c.zero_stage << " grads " << c.grad_dtype << " bucket "
               << c.bucket_params << " overlap " << c.tp_comm_overlap << " recompute " << c.recompute);
    WorkloadSpec w = training("llama-2-7b", 2, 1024, 16);
    w.recompute = c.recompute;
    StrategySpec s = strategy(t, pp, dp);
    s.sequence_parallel = c.sequence_parallel;
    s.zero_stage = c.zero_stage;
    s.grad_reduce_dtype = c.grad_dtype;
    s.bucket_params = c.bucket_params;
    s.tp_comm_overlap = c.tp_comm_overlap;
    s.overlap_grad_reduce = true;  // Megatron buckets only when it overlaps the reduction
    REQUIRE(micro_batches(w, s) == mbs);
    const Program p = build(m, w, s);

    // TP per stage, per micro-batch, per pass, inside layers (layer ≥ 0): 16 layers a stage,
    // 2 AllReduces per layer (2·16 = 32), or with SP 2 ReduceScatters + 2 AllGathers (32 each)
    // forward; backward the same plus, with SP, the column-parallel input re-gathered for the
    // weight gradient (Megatron's LinearWithGradAccumulationAndAsyncCommunication.backward):
    // 4 AllGathers a layer (64); all of b·s·h·e.
    std::map<std::string, int> tp;  // (stage, mb, pass, collective) -> count
    for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
      const ProgramOp& op = p.ops[i];
      if (op.kind != ProgramOpKind::Collective || op.dim != ParallelDim::TP || op.layer < 0) continue;
      CHECK(op.bytes == act);
      ++tp[key(p.op_rank[i], op.pass, op.collective, op.micro_batch)];
    }
    std::map<std::string, int> expected;
    for (int stage = 0; stage < pp; ++stage)
      for (int mb = 0; mb < mbs; ++mb)
        for (Pass pass : {Pass::Forward, Pass::Backward}) {
          if (c.sequence_parallel) {
            expected[key(stage, pass, Collective::ReduceScatter, mb)] = 32;
            expected[key(stage, pass, Collective::AllGather, mb)] = pass == Pass::Backward ? 64 : 32;
          } else {
            expected[key(stage, pass, Collective::AllReduce, mb)] = 32;
          }
        }
    CHECK(text(tp) == text(expected));

    // PP: per micro-batch per boundary, b·s·h·e (÷ t with SP) forward from stage 0 to 1 and
    // backward from stage 1 to 0: 16,777,216 (8,388,608 with SP), m = 4 each way.
    const double pp_bytes = c.sequence_parallel ? act / t : act;
    for (int stage = 0; stage < pp; ++stage) {
      INFO("stage " << stage);
      const auto sends = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::SendRecv; }, stage);
      CHECK(sends.size() == static_cast<std::size_t>(mbs));
      std::set<int> micro;
      for (std::uint32_t i : sends) {
        const ProgramOp& op = p.ops[i];
        CHECK(op.dim == ParallelDim::PP);
        CHECK(op.bytes == pp_bytes);
        CHECK(op.pass == (stage == 0 ? Pass::Forward : Pass::Backward));
        CHECK(op.peer == 1 - stage);
        micro.insert(op.micro_batch);
      }
      CHECK(micro == std::set<int>{0, 1, 2, 3});
    }

    // DP: the stage's gradient buckets sum to (stage parameters / t)·e_grad.
    //   stage 0: (16·202,383,360 + 131,072,000) / 2 = 1,684,602,880 parameters per GPU
    //   stage 1: (16·202,383,360 + 131,076,096) / 2 = 1,684,604,928
    const double e_grad = c.grad_dtype == "fp32" ? 4 : 2;
    const std::vector<double> stage_params{(16 * kLlama2Layer + kLlama2Embedding) / t, (16 * kLlama2Layer + kLlama2Output) / t};
    const Collective reduce = c.zero_stage == 0 ? Collective::AllReduce : Collective::ReduceScatter;
    for (int stage = 0; stage < pp; ++stage) {
      INFO("stage " << stage);
      const auto buckets = select(
          p, [&](const ProgramOp& op) { return collective(ParallelDim::DP, reduce)(op) && op.pass == Pass::Backward; }, stage);
      REQUIRE_FALSE(buckets.empty());
      // Each bucket's size is rounded to whole bytes: at most half a byte off each.
      CHECK(total_bytes(p, buckets) == Approx(stage_params[static_cast<std::size_t>(stage)] * e_grad).margin(0.5 * buckets.size()));
      // Buckets close once they reach the bucket size (Megatron's default max(40M, 1M·dp) =
      // 40M params; a layer is 101,191,680 params per GPU here), whole layers each: ⌈limit /
      // 101,191,680⌉ layers per bucket, 16 / that many full buckets, and a last one with the
      // remaining layers and the embedding or LM head (default: 16 + 1 = 17; 300M: 3 layers a
      // bucket, 5 + 1 = 6; 150M: 2 layers a bucket, 8 + 1 = 9).
      const double limit = c.bucket_params > 0 ? static_cast<double>(c.bucket_params) : 40e6;
      const std::size_t layers_per_bucket = static_cast<std::size_t>(std::ceil(limit / (kLlama2Layer / t)));
      // Stage 1 (pipeline rank > 0): Megatron turns bucketing off, one bucket.
      CHECK(buckets.size() == (stage == 0 ? 16 / layers_per_bucket + 1 : 1));
      // No DP AllReduce with ZeRO, no ReduceScatter without.
      const Collective other = c.zero_stage == 0 ? Collective::ReduceScatter : Collective::AllReduce;
      CHECK(select(p, collective(ParallelDim::DP, other), stage).empty());
      // ZeRO-1/2: one parameter AllGather per bucket after the optimizer, (stage parameters /
      // t)·e in all (the buckets need no padding here: every one is a multiple of 128 elements).
      const auto gather = select(p, collective(ParallelDim::DP, Collective::AllGather), stage);
      if (c.zero_stage == 0) {
        CHECK(gather.empty());
      } else {
        REQUIRE(gather.size() == buckets.size());
        for (auto id : gather) CHECK(p.ops[id].pass == Pass::Optimizer);
        CHECK(total_bytes(p, gather) == Approx(stage_params[static_cast<std::size_t>(stage)] * 2).margin(0.5 * gather.size()));
      }
    }
  }
}

TEST_CASE("training: full recomputation repeats the forward TP collectives", "[workload]") {
  // Llama-2-7B, t = 2, p = 1, dp = 4, b = 1, s = 2048, global 8: m = 2. Full recomputation
  // re-runs each layer's forward before its backward: 2 AllReduces per layer per micro-batch
  // again, 2·32·2 = 128, of b·s·h·e = 1·2048·4096·2 = 16,777,216 bytes.
  const TransformerConfig m = load_transformer("llama-2-7b");
  WorkloadSpec w = training("llama-2-7b", 1, 2048, 8);
  w.recompute = "full";
  const Program p = build(m, w, strategy(2, 1, 4));
  const auto recompute = select(p, [](const ProgramOp& op) {
    return collective(ParallelDim::TP, Collective::AllReduce)(op) && op.pass == Pass::Recompute;
  });
  CHECK(recompute.size() == 128);
  CHECK(sizes(p, recompute) == std::set<double>{16'777'216});
  // Backward: the same 128 plus the LM head's input-gradient AllReduce, one per micro-batch.
  const auto backward = select(p, [](const ProgramOp& op) {
    return collective(ParallelDim::TP, Collective::AllReduce)(op) && op.pass == Pass::Backward;
  });
  CHECK(backward.size() == 128 + 2);
}

TEST_CASE("training: DP buckets with ZeRO-3 and FSDP parameter gathers per layer", "[workload]") {
  // Llama-2-7B, t = 2, p = 1, dp = 4, b = 1, s = 1024, global 8: m = 2. ZeRO-3 gathers each
  // layer's parameters (202,383,360 / 2 · 2 B = 202,383,360 bytes) before its forward and its
  // backward, per micro-batch: 32·2·2 = 128 gathers; gradients are reduce-scattered.
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(2, 1, 4);
  s.zero_stage = 3;
  const Program p = build(m, training("llama-2-7b", 1, 1024, 8), s);
  const auto gathers = select(p, collective(ParallelDim::DP, Collective::AllGather));
  CHECK(gathers.size() == 128);
  CHECK(sizes(p, gathers) == std::set<double>{202'383'360});
  // Buckets: (32·202,383,360 + 131,072,000 + 131,076,096) / 2 · 4 B = 6,738,415,616 / 2 · 4 =
  // 13,476,831,232 bytes.
  const auto buckets = select(p, collective(ParallelDim::DP, Collective::ReduceScatter));
  CHECK(total_bytes(p, buckets) == Approx(13'476'831'232.0).margin(0.5 * buckets.size()));
  CHECK(select(p, collective(ParallelDim::DP, Collective::AllReduce)).empty());
}

TEST_CASE("training: DP buckets cover the stage's layers under the interleaved schedule", "[workload]") {
  // Llama-2-7B, t = 2, p = 2, v = 2, dp = 2, b = 1, s = 1024, global 8: m = 4. Chunks of
  // 8 layers; stage 0 holds chunks 0 and 2 (layers 0-7, 16-23) and the embedding, stage 1
  // chunks 1 and 3 and the LM head: the same parameters per stage as with 1F1B.
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(2, 2, 2);
  s.pipeline_schedule = "interleaved";
  s.virtual_stages = 2;
  const Program p = build(m, training("llama-2-7b", 1, 1024, 8), s);
  const std::vector<double> stage_params{(16 * kLlama2Layer + kLlama2Embedding) / 2, (16 * kLlama2Layer + kLlama2Output) / 2};
  for (int stage = 0; stage < 2; ++stage) {
    INFO("stage " << stage);
    const auto buckets = select(p, collective(ParallelDim::DP, Collective::AllReduce), stage);
    CHECK(total_bytes(p, buckets) == Approx(stage_params[static_cast<std::size_t>(stage)] * 4).margin(0.5 * buckets.size()));
    // PP sends: every chunk but the last sends forward (stage 0: chunks 0, 2; stage 1: chunk 1),
    // every chunk but the first sends backward (stage 0: chunk 2; stage 1: chunks 1, 3); 4
    // micro-batches each: stage 0 8 forward + 4 backward, stage 1 4 forward + 8 backward.
    const auto fwd = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::SendRecv && op.pass == Pass::Forward; }, stage);
    const auto bwd = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::SendRecv && op.pass == Pass::Backward; }, stage);
    CHECK(fwd.size() == (stage == 0 ? 8U : 4U));
    CHECK(bwd.size() == (stage == 0 ? 4U : 8U));
    for (std::uint32_t i : fwd) CHECK(p.ops[i].peer == 1 - stage);
    for (std::uint32_t i : bwd) CHECK(p.ops[i].peer == 1 - stage);
  }
  // TP: 2 AllReduces per layer per micro-batch per direction on both stages: 2·32·4·2 = 512.
  const auto tp = select(p, [](const ProgramOp& op) {
    return collective(ParallelDim::TP, Collective::AllReduce)(op) && op.layer >= 0;
  });
  CHECK(tp.size() == 512);
}

TEST_CASE("training: embedding and LM head TP collectives, forward and backward (Megatron-LM)", "[workload]") {
  // Megatron-LM, per micro-batch, besides the layers' 2 + 2 per layer:
  //   without SP: the vocab-parallel embedding AllReduces its output (forward, stage 0); the
  //     LM head is a ColumnParallelLinear whose input gradient is AllReduced (backward, last
  //     stage: copy_to_tensor_model_parallel_region / allreduce_dgrad); both b·s·h·e.
  //   with SP: the embedding reduce-scatters its output (forward) and all-gathers its gradient
  //     (backward); the LM head all-gathers its sequence-parallel input (forward) and
  //     reduce-scatters the input gradient (backward); all b·s·h·e in total.
  // Llama-2-7B, t = 2, p = 2, dp = 2, b = 1, s = 1024, global 8: m = 4, b·s·h·e = 8,388,608.
  const TransformerConfig m = load_transformer("llama-2-7b");
  const double act = 8'388'608;
  for (bool sp : {false, true}) {
    INFO("sequence_parallel " << sp);
    StrategySpec s = strategy(2, 2, 2);
    s.sequence_parallel = sp;
    const Program p = build(m, training("llama-2-7b", 1, 1024, 8), s);
    // Outside layers, large (b·s·h·e) TP collectives per (stage, pass, collective), over 4 micro-batches.
    std::map<std::string, int> edge;
    for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
      const ProgramOp& op = p.ops[i];
      if (op.kind != ProgramOpKind::Collective || op.dim != ParallelDim::TP || op.layer >= 0 || op.bytes != act) continue;
      ++edge[key(p.op_rank[i], op.pass, op.collective)];
    }
    std::map<std::string, int> expected;
    if (sp) {
      expected[key(0, Pass::Forward, Collective::ReduceScatter)] = 4;
      expected[key(0, Pass::Backward, Collective::AllGather)] = 4;
      expected[key(1, Pass::Forward, Collective::AllGather)] = 4;
      expected[key(1, Pass::Backward, Collective::AllGather)] = 4;  // input re-gathered for the wgrad
      expected[key(1, Pass::Backward, Collective::ReduceScatter)] = 4;
    } else {
      expected[key(0, Pass::Forward, Collective::AllReduce)] = 4;
      expected[key(1, Pass::Backward, Collective::AllReduce)] = 4;
    }
    CHECK(text(edge) == text(expected));
    // Vocab-parallel cross entropy: max, sum and target logit per token in fp32, modelled as
    // one AllReduce of 3·b·s·4 = 12,288 bytes per micro-batch on the last stage.
    const auto ce = select(p, [](const ProgramOp& op) {
      return collective(ParallelDim::TP, Collective::AllReduce)(op) && op.layer < 0 && op.bytes == 12'288;
    }, 1);
    CHECK(ce.size() == 4);
  }
}

// ---------------------------------------------------------------------------------------------
// Training: MoE

TEST_CASE("training: Mixtral EP AlltoAlls, dispatch and combine of T·k·h·e / t each way", "[workload]") {
  // Mixtral-8x7B: 32 MoE layers, h = 4096, top-2 of 8 experts. b = 1, s = 4096.
  //   tp 2, dp 4, ep 4, cp 1: T = b·s = 4096 tokens, T·k·h·e / t = 4096·2·4096·2 / 2 = 33,554,432
  //   tp 2, dp 2, cp 2, ep 4: T = b·s / cp = 2048,                                  16,777,216
  // global 8: m = 8 / (1·dp) = 2 (dp 4) or 4 (dp 2).
  const TransformerConfig m = load_transformer("mixtral-8x7b");
  struct Case {
    int dp, cp, ep, mbs;
    double bytes;
  };
  for (const Case c : {Case{4, 1, 4, 2, 33'554'432}, Case{2, 2, 4, 4, 16'777'216}, Case{4, 1, 2, 2, 33'554'432}}) {
    INFO("dp " << c.dp << " cp " << c.cp << " ep " << c.ep);
    StrategySpec s = strategy(2, 1, c.dp);
    s.cp = c.cp;
    s.ep = c.ep;
    s.sequence_parallel = true;
    const WorkloadSpec w = training("mixtral-8x7b", 1, 4096, 8);
    REQUIRE(micro_batches(w, s) == c.mbs);
    const Program p = build(m, w, s);
    const auto ep_key = [](int layer, int mb, Pass pass, const std::string& name) {
      return "layer " + std::to_string(layer) + " mb " + std::to_string(mb) + " " + std::string(to_string(pass)) + " " + name;
    };
    std::map<std::string, int> count;
    for (const auto& op : p.ops) {
      if (op.kind != ProgramOpKind::Collective || op.dim != ParallelDim::EP) continue;
      CHECK(op.collective == Collective::AlltoAll);
      CHECK(op.bytes == c.bytes);
      ++count[ep_key(op.layer, op.micro_batch, op.pass, op.name)];
    }
    std::map<std::string, int> expected;
    for (int l = 0; l < 32; ++l)
      for (int mb = 0; mb < c.mbs; ++mb)
        for (Pass pass : {Pass::Forward, Pass::Backward})
          for (const char* name : {"ep-dispatch", "ep-combine"}) expected[ep_key(l, mb, pass, name)] = 1;
    CHECK(text(count) == text(expected));
  }
  // EP 1: no AlltoAll.
  const Program p = build(m, training("mixtral-8x7b", 1, 4096, 8), strategy(2, 1, 4));
  CHECK(select(p, [](const ProgramOp& op) { return op.dim == ParallelDim::EP && is_comm(op); }).empty());
}

TEST_CASE("training: Mixtral expert gradients reduce over the expert-data-parallel group", "[workload]") {
  // tp 2, dp 4, ep 2: expert-DP group dp·cp/ep = 2 ranks. Per MoE layer this GPU holds 8/2 = 4
  // experts of 3·4096·14336 = 176,160,768 parameters, / t = 2: 352,321,536, reduced in fp32:
  // 1,409,286,144 bytes per layer, one ReduceScatter per layer (ZeRO-1), 32 layers.
  const TransformerConfig m = load_transformer("mixtral-8x7b");
  StrategySpec s = strategy(2, 1, 4);
  s.ep = 2;
  s.zero_stage = 1;
  s.overlap_grad_reduce = true;  // bucketed: 352M ≥ the 40M default, one bucket per layer
  const Program p = build(m, training("mixtral-8x7b", 1, 1024, 8), s);
  std::vector<std::uint32_t> expert;
  for (auto id : select(p, collective(ParallelDim::DP, Collective::ReduceScatter)))
    if (p.ops[id].expert) expert.push_back(id);
  CHECK(expert.size() == 32);
  CHECK(sizes(p, expert) == std::set<double>{1'409'286'144.0});
  // The expert parameter AllGathers after the optimizer, one per bucket: 32·352,321,536·2 B =
  // 22,548,578,304 in all.
  std::vector<std::uint32_t> gathers;
  for (auto id : select(p, collective(ParallelDim::DP, Collective::AllGather)))
    if (p.ops[id].expert) gathers.push_back(id);
  REQUIRE(gathers.size() == 32);
  CHECK(total_bytes(p, gathers) == Approx(22'548'578'304.0));
}

TEST_CASE("training: Mixtral with EP, DP buckets and ZeRO-3 gathers hold this rank's experts only", "[workload]") {
  // Mixtral-8x7B by hand: attention 4096·4096·2 + 2·4096·1024 + 4096 = 41,947,136; MoE MLP:
  // norm 4096 + router 4096·8 = 32,768 + 8 experts of 3·4096·14336 = 176,160,768 each.
  // With ep = 4 a GPU holds 2 experts: 41,947,136 + 4,096 + 32,768 + 2·176,160,768 =
  // 394,305,536 parameters of a layer, / t = 2: 197,152,768 per GPU.
  // Embedding 32000·4096 = 131,072,000, LM head + final norm 131,076,096.
  // tp 2, dp 4, ep 4, b = 1, s = 1024, global 8: m = 2.
  const TransformerConfig m = load_transformer("mixtral-8x7b");
  const double layer_local = 197'152'768;
  for (int zero : {0, 3}) {
    INFO("zero " << zero);
    StrategySpec s = strategy(2, 1, 4);
    s.ep = 4;
    s.sequence_parallel = true;
    s.zero_stage = zero;
    const Program p = build(m, training("mixtral-8x7b", 1, 1024, 8), s);
    // Dense buckets over DP: (32·(41,947,136 + 4,096 + 32,768)/2 + (131,072,000 + 131,076,096)/2)
    // ·4 B = (671,744,000 + 131,074,048)·4 = 3,211,272,192 bytes. Expert gradients reduce over
    // the expert-DP group, dp·cp/ep = 4/4 = 1 rank: every expert has one replica, nothing to
    // reduce.
    const auto all = select(p, collective(ParallelDim::DP, zero == 0 ? Collective::AllReduce : Collective::ReduceScatter));
    std::vector<std::uint32_t> buckets, expert;
    for (auto id : all) (p.ops[id].expert ? expert : buckets).push_back(id);
    CHECK(total_bytes(p, buckets) == Approx(3'211'272'192.0).margin(0.5 * buckets.size()));
    CHECK(expert.empty());
    if (zero == 3) {
      // FSDP gathers, per layer per micro-batch per direction, the parameters the GPU computes
      // with: 197,152,768·2 B = 394,305,536 bytes (not all 8 experts: 1,451,270,144 bytes).
      const auto gathers = select(p, collective(ParallelDim::DP, Collective::AllGather));
      CHECK(gathers.size() == 32U * 2 * 2);
      CHECK(sizes(p, gathers) == std::set<double>{layer_local * 2});
    }
  }
}

TEST_CASE("decode: the attention reads the KV cache the memory footprint holds", "[workload]") {
  // Per layer, a decode step's attention reads every cached token of the batch once at the
  // mean context ctx + gen/2, from the KV cache memory_footprint() counts at ctx + gen:
  //   attention bytes − attention I/O = (kv_cache / layers) · (ctx + gen/2) / (ctx + gen)
  // with the attention I/O B·(a/t)·(2·d_qk + 2·d_v)·e (Q, K, V, O of the new tokens).
  // B = 4, ctx = 1000, gen = 48: ratio 1024 / 1048.
  for (const auto& name : shipped_models()) {
    const TransformerConfig m = load_transformer(name);
    for (int t : {1, 2, 8}) {
      if (!tp_fits(m, t)) continue;
      INFO(name << " tp " << t);
      const WorkloadSpec w = decode(name, 4);
      const StrategySpec s = strategy(t, 1, 1);
      const Program p = build(m, w, s);
      const auto f = memory_footprint(m, w, s);
      const double per_layer_cache = f[0].kv_cache / m.layers;
      const double d_qk = m.mla ? m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim : m.head_dim;
      const double d_v = m.mla ? m.mla->v_head_dim : m.head_dim;
      const double io = 4.0 * m.heads / t * (2 * d_qk + 2 * d_v) * 2;
      const auto attention = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::Attention && op.layer == 0; });
      REQUIRE(attention.size() == 1);
      CHECK(p.ops[attention[0]].bytes - io == Approx(per_layer_cache * 1024.0 / 1048.0));
    }
  }
  // DeepSeek-V3 by hand (MLA): every TP rank caches the whole latent, (512 + 64)·2 B per token
  // per layer (vLLM replicates it over TP), and reads it all for its 128/t heads: at t = 8,
  // 4·1024·576·2 = 4,718,592 bytes read per layer, plus I/O 4·16·(2·192 + 2·128)·2 = 81,920.
  const TransformerConfig ds = load_transformer("deepseek-v3");
  const Program p = build(ds, decode("deepseek-v3", 4), strategy(8, 1, 1));
  const auto f = memory_footprint(ds, decode("deepseek-v3", 4), strategy(8, 1, 1));
  CHECK(f[0].kv_cache == 4.0 * 1048 * 576 * 2 * 61);  // 294,649,856 bytes
  const auto attention = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::Attention && op.layer == 0; });
  REQUIRE(attention.size() == 1);
  CHECK(p.ops[attention[0]].bytes == 4'718'592 + 81'920);
}

// ---------------------------------------------------------------------------------------------
// Pipeline schedules and the layer split

TEST_CASE("training: overlapped parameter gathers move the ZeRO-1 AllGather to the step's start", "[workload]") {
  // Llama-2-7B, t = 2, p = 1, dp = 4, ZeRO-1, overlap_grad_reduce (40M buckets: the LM head,
  // each of the 32 layers and the embedding a bucket each, 34). Without overlap_param_gather:
  // one parameter AllGather per bucket after the optimizer, the stage's params / t · 2 B in
  // all. With it: the same bytes, the first bucket's gather with no dependency (the step's
  // start), each later one dispatched when the previous bucket is first used; the first
  // micro-batch's forward waits for them: the embedding, 32 layers and the LM head, 34 ops.
  const TransformerConfig m = load_transformer("llama-2-7b");
  StrategySpec s = strategy(2, 1, 4);
  s.zero_stage = 1;
  s.overlap_grad_reduce = true;
  const WorkloadSpec w = training("llama-2-7b", 1, 2048, 8);
  const Program plain = build(m, w, s);
  s.overlap_param_gather = true;
  const Program overlapped = build(m, w, s);
  const auto gathers = [](const Program& p) { return select(p, collective(ParallelDim::DP, Collective::AllGather)); };
  REQUIRE(gathers(plain).size() == 34);
  const double total = total_bytes(plain, gathers(plain));
  // 6,738,415,616 params / 2 · 2 B = 6,738,415,616 bytes.
  CHECK(total == Approx(6'738'415'616.0));
  const auto buckets = gathers(overlapped);
  CHECK(buckets.size() == 34);
  CHECK(total_bytes(overlapped, buckets) == Approx(total).margin(0.5 * buckets.size()));
  CHECK(overlapped.ops[buckets[0]].deps.empty());
  for (std::size_t k = 1; k < buckets.size(); ++k) CHECK(overlapped.ops[buckets[k]].deps.front() == buckets[k - 1]);
  // Every layer's micro-batch-0 forward QKV GEMM waits (through its norm) on a gather.
  std::size_t waiting = 0;
  for (const auto& op : overlapped.ops)
    for (auto d : op.deps)
      if (op.kind != ProgramOpKind::Collective && std::find(buckets.begin(), buckets.end(), d) != buckets.end()) ++waiting;
  CHECK(waiting == 34);
}
