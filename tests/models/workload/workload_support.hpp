#pragma once
// Helpers shared by the workload Program tests (workload_test.cpp, pipeline_memory_test.cpp):
// op selection, message sizes, and small workload / strategy specs.

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

namespace ccsim::test::workload {

using namespace ccsim::models;


using OpFilter = std::function<bool(const ProgramOp&)>;

inline bool is_comm(const ProgramOp& op) { return op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv; }

/// Ids of the ops of `p` (on stage `stage`, or on every stage when -1) that pass `f`.
inline std::vector<std::uint32_t> select(const Program& p, const OpFilter& f, int stage = -1) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    if (stage >= 0 && p.op_rank[i] != stage) continue;
    if (f(p.ops[i])) out.push_back(i);
  }
  return out;
}

/// A collective of `dim` and kind `c`.
inline OpFilter collective(ParallelDim dim, Collective c) {
  return [=](const ProgramOp& op) { return op.kind == ProgramOpKind::Collective && op.dim == dim && op.collective == c; };
}

/// The distinct message sizes of `ids`.
inline std::set<double> sizes(const Program& p, const std::vector<std::uint32_t>& ids) {
  std::set<double> out;
  for (std::uint32_t i : ids) out.insert(p.ops[i].bytes);
  return out;
}

inline double total_bytes(const Program& p, const std::vector<std::uint32_t>& ids) {
  double sum = 0;
  for (std::uint32_t i : ids) sum += p.ops[i].bytes;
  return sum;
}

/// Whether the TP size is allowed for the model (heads, and KV heads: divisor or multiple).
inline bool tp_fits(const TransformerConfig& m, int t) {
  if (m.heads % t != 0) return false;
  return m.mla || m.kv_heads % t == 0 || t % m.kv_heads == 0;
}

/// A readable map key for counts: "stage 1 backward AllReduce [mb 3]".
inline std::string key(int stage, Pass pass, Collective c, int mb = -1) {
  std::string k = "stage " + std::to_string(stage) + " " + std::string(to_string(pass)) + " " + std::string(to_string(c));
  if (mb >= 0) k += " mb " + std::to_string(mb);
  return k;
}

/// A count map as text, so that a failed comparison shows what differs.
inline std::string text(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [k, n] : counts) out += k + ": " + std::to_string(n) + "\n";
  return out;
}

inline WorkloadSpec decode(const std::string& model, std::int64_t batch) {
  WorkloadSpec w;
  w.model = model;
  w.phase = WorkloadPhase::Decode;
  w.batch_size = batch;
  w.context_length = 1000;
  w.generated_tokens = 48;
  return w;
}

inline WorkloadSpec prefill(const std::string& model, std::int64_t batch, std::int64_t seq) {
  WorkloadSpec w;
  w.model = model;
  w.phase = WorkloadPhase::Prefill;
  w.micro_batch_size = batch;
  w.sequence_length = seq;
  return w;
}

inline WorkloadSpec training(const std::string& model, std::int64_t b, std::int64_t s, std::int64_t global) {
  WorkloadSpec w;
  w.model = model;
  w.phase = WorkloadPhase::TrainingStep;
  w.micro_batch_size = b;
  w.sequence_length = s;
  w.global_batch_size = global;
  return w;
}

inline StrategySpec strategy(int tp, int pp, int dp) {
  StrategySpec s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  return s;
}

/// Builds the Program after checking the layout is accepted (build_program assumes it).
inline Program build(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s) {
  const auto problem = check_layout(m, w, s);
  INFO((problem ? problem->key + ": " + problem->expected : std::string("layout ok")));
  REQUIRE_FALSE(problem);
  return build_program(m, w, s);
}

/// Inference: every check of the TP / PP closed forms for one layout.
///   TP AllReduces: 2·L + 1 of N_tok·h·e; logits: one TP AllGather of N_seq·V·e;
///   PP: pp − 1 sends of 2·N_tok·h·e (hidden states and residual); nothing else communicates.
inline void check_inference(const TransformerConfig& m, const WorkloadSpec& w, const StrategySpec& s, double n_tok,
                     double n_seq) {
  const Program p = build(m, w, s);
  const double e = 2;  // bf16
  const double h = static_cast<double>(m.hidden);
  const auto allreduce = select(p, collective(ParallelDim::TP, Collective::AllReduce));
  CHECK(allreduce.size() == static_cast<std::size_t>(2 * m.layers + 1));
  CHECK(sizes(p, allreduce) == std::set<double>{n_tok * h * e});
  const auto gather = select(p, collective(ParallelDim::TP, Collective::AllGather));
  REQUIRE(gather.size() == 1);
  CHECK(p.ops[gather[0]].bytes == n_seq * static_cast<double>(m.vocab) * e);
  CHECK(p.op_rank[gather[0]] == s.pp - 1);  // the logits are computed on the last stage
  // The embedding's AllReduce is on stage 0; each stage has 2 per layer of its share.
  const auto layers = chunk_layers(m.layers, s.pp);
  for (int stage = 0; stage < s.pp; ++stage) {
    INFO("stage " << stage);
    const int expected = 2 * layers[static_cast<std::size_t>(stage)].second + (stage == 0 ? 1 : 0);
    CHECK(select(p, collective(ParallelDim::TP, Collective::AllReduce), stage).size() == static_cast<std::size_t>(expected));
  }
  const auto sends = select(p, [](const ProgramOp& op) { return op.kind == ProgramOpKind::SendRecv; });
  CHECK(sends.size() == static_cast<std::size_t>(s.pp - 1));
  for (std::uint32_t i : sends) {
    CHECK(p.ops[i].dim == ParallelDim::PP);
    CHECK(p.ops[i].bytes == 2.0 * n_tok * h * e);
    CHECK(p.ops[i].peer == p.op_rank[i] + 1);
  }
  // No other communication: 2L + 1 AllReduces + 1 AllGather + (pp − 1) sends.
  CHECK(select(p, [](const ProgramOp& op) { return is_comm(op); }).size() == allreduce.size() + 1 + sends.size());
}

}  // namespace ccsim::test::workload
