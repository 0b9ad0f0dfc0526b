// Megatron-LM's argument names in the strategy and workload sections, and the "did you mean"
// suggestions that find them (support::suggestion_rank).

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"
#include "support/input_error.hpp"
#include "test_support.hpp"

using namespace ccsim::models;
using ccsim::test::shipped_catalog;
using ccsim::test::TempDir;
using Catch::Matchers::Contains;

namespace {

/// Two DGX H100 (16 GPUs) with `workload` and `strategy` section bodies (indented 2 spaces).
std::string scenario_text(const std::string& workload, const std::string& strategy) {
  return "cluster:\n  nodes:\n    - {node: dgx-h100, count: 2}\n  fabric: {kind: single-switch}\n"
         "workload:\n  model: llama-3-8b\n" + workload + "strategy:\n" + strategy;
}

std::string error_of(const std::string& text) {
  TempDir dir;
  const std::string file = dir.write("s.yaml", text);
  try {
    load_scenario(file, shipped_catalog());
  } catch (const ccsim::support::InputError& e) {
    return e.what();
  }
  FAIL("no InputError for\n" << text);
  return {};
}

}  // namespace

TEST_CASE("Megatron-LM argument names read as ccsim's keys", "[scenario][aliases]") {
  TempDir dir;
  const std::string megatron = dir.write("m.yaml", scenario_text(
      "  seq_length: 4096\n  micro_batch_size: 1\n  global_batch_size: 64\n  recompute_granularity: selective\n",
      "  tensor_model_parallel_size: 4\n  pipeline_model_parallel_size: 2\n  context_parallel_size: 1\n"
      "  expert_model_parallel_size: 1\n  virtual_pipeline_model_parallel_size: 2\n  use_distributed_optimizer: true\n"
      "  sequence_parallel: true\n"));
  const std::string ccsim = dir.write("c.yaml", scenario_text(
      "  sequence_length: 4096\n  micro_batch_size: 1\n  global_batch_size: 64\n  recompute: selective\n",
      "  tp: 4\n  pp: 2\n  cp: 1\n  ep: 1\n  pipeline_schedule: interleaved\n  virtual_stages: 2\n  zero_stage: 1\n"
      "  sequence_parallel: true\n"));
  const Scenario m = load_scenario(megatron, shipped_catalog());
  const Scenario c = load_scenario(ccsim, shipped_catalog());
  REQUIRE(m.strategy);
  REQUIRE(m.workload);
  CHECK(m.strategy->tp == 4);
  CHECK(m.strategy->pp == 2);
  CHECK(m.strategy->dp == 2);  // 16 / (4·2)
  CHECK(m.strategy->pipeline_schedule == "interleaved");  // implied by virtual_pipeline_model_parallel_size > 1
  CHECK(m.strategy->virtual_stages == 2);
  CHECK(m.strategy->zero_stage == 1);  // the distributed optimizer: ZeRO-1
  CHECK(m.workload->sequence_length == 4096);
  CHECK(m.workload->recompute == "selective");
  // The same scenario as ccsim's spelling, field by field.
  CHECK(m.strategy->tp == c.strategy->tp);
  CHECK(m.strategy->pp == c.strategy->pp);
  CHECK(m.strategy->dp == c.strategy->dp);
  CHECK(m.strategy->pipeline_schedule == c.strategy->pipeline_schedule);
  CHECK(m.strategy->virtual_stages == c.strategy->virtual_stages);
  CHECK(m.strategy->zero_stage == c.strategy->zero_stage);
  CHECK(m.strategy->sequence_parallel == c.strategy->sequence_parallel);
  CHECK(m.workload->sequence_length == c.workload->sequence_length);
  CHECK(m.workload->recompute == c.workload->recompute);
  // use_distributed_optimizer: false is ZeRO 0; a virtual pipeline size of 1 keeps 1F1B.
  const Scenario off = load_scenario(dir.write("off.yaml", scenario_text("  seq_length: 2048\n",
      "  use_distributed_optimizer: false\n  virtual_pipeline_model_parallel_size: 1\n  pipeline_model_parallel_size: 2\n")),
      shipped_catalog());
  CHECK(off.strategy->zero_stage == 0);
  CHECK(off.strategy->pipeline_schedule == "1f1b");
  CHECK(off.strategy->virtual_stages == 1);
}

TEST_CASE("errors: both spellings of one key, values checked at the Megatron key", "[scenario][aliases]") {
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  tp: 2\n  tensor_model_parallel_size: 4\n")),
             Contains("strategy.tensor_model_parallel_size: expected one spelling of tp: 'tp' and 'tensor_model_parallel_size' name the same setting") &&
                 Contains("found both 'tp' (line 9) and 'tensor_model_parallel_size'"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n  seq_length: 2048\n", "  tp: 2\n")),
             Contains("workload.seq_length: expected one spelling of sequence_length") && Contains("found both 'sequence_length'"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  zero_stage: 1\n  use_distributed_optimizer: true\n")),
             Contains("'zero_stage' and 'use_distributed_optimizer' name the same setting"));
  // A bad value is reported at the key the user wrote.
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  tensor_model_parallel_size: 0\n")),
             Contains("s.yaml:9:31: error: strategy.tensor_model_parallel_size: expected an integer from 1 to"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  tensor_model_parallel_size: 3\n")),
             Contains("strategy.tensor_model_parallel_size: expected tp·pp·cp dividing the cluster's 16 GPUs"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n  recompute_granularity: partial\n", "  tp: 2\n")),
             Contains("workload.recompute_granularity: expected one of none selective full") && Contains("found 'partial'"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  use_distributed_optimizer: 1\n")),
             Contains("strategy.use_distributed_optimizer"));
  // Megatron's layers-per-chunk form needs the model: the error says what to write instead.
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  pp: 2\n  num_layers_per_virtual_pipeline_stage: 4\n")),
             Contains("strategy.num_layers_per_virtual_pipeline_stage: expected virtual_pipeline_model_parallel_size (or virtual_stages)"));
}

TEST_CASE("errors: a key in the wrong section names the section it belongs to", "[scenario][aliases]") {
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n  tensor_model_parallel_size: 8\n", "  pp: 1\n")),
             Contains("workload.tensor_model_parallel_size: expected one of the keys model phase") &&
                 Contains("found 'tensor_model_parallel_size', a key of the strategy section; move 'tensor_model_parallel_size' under strategy:"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  tp: 2\n  seq_length: 4096\n")),
             Contains("strategy.seq_length: expected one of the keys tp pp") && Contains("a key of the workload section"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  tp: 2\n  micro_batch_size: 2\n")),
             Contains("move 'micro_batch_size' under workload:"));
}

TEST_CASE("did you mean: Megatron and vLLM spellings, catalog names, case", "[scenario][aliases][suggestion]") {
  // vLLM's tensor_parallel_size shares three words with Megatron's name.
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  tensor_parallel_size: 2\n")),
             Contains("did you mean 'tensor_model_parallel_size'?"));
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n", "  pipeline_parallel_size: 2\n")),
             Contains("did you mean 'pipeline_model_parallel_size'?"));
  CHECK_THAT(error_of(scenario_text("  seq_len: 4096\n", "  tp: 2\n")), Contains("did you mean 'seq_length'?"));
  // A near miss of the other section's key is suggested with its section.
  CHECK_THAT(error_of(scenario_text("  sequence_length: 4096\n  tensor_parallel_size: 2\n", "  tp: 1\n")),
             Contains("workload.tensor_parallel_size") &&
                 Contains("did you mean 'tensor_model_parallel_size' (a key of the strategy section)?"));
  // The catalog's H200-SXM, not B200 (one edit from H200).
  const std::string h200 = "cluster:\n  nodes:\n    - node: {base: dgx-h100, gpu: H200}\n      count: 1\n  fabric: {kind: single-switch}\n";
  CHECK_THAT(error_of(h200), Contains("found 'H200'; did you mean 'H200-SXM'?"));
  const std::string lower = "cluster:\n  nodes:\n    - node: {base: dgx-h100, gpu: mi300x}\n      count: 1\n  fabric: {kind: single-switch}\n";
  CHECK_THAT(error_of(lower), Contains("did you mean 'MI300X'?"));
}

TEST_CASE("suggestion_rank: tiers before edit distance", "[support][suggestion]") {
  using ccsim::support::closest_match;
  using ccsim::support::suggestion_rank;
  const std::vector<std::string> gpus{"A100-SXM4-80GB", "B200", "GB200", "H100-PCIe", "H100-SXM5", "H200-SXM", "MI300X"};
  CHECK(closest_match("H200", gpus) == "H200-SXM");      // prefix, over B200 at edit distance 1
  CHECK(closest_match("h200_sxm", gpus) == "H200-SXM");  // case and '-'/'_' ignored: equal
  CHECK(closest_match("SXM5", gpus) == "H100-SXM5");     // contained
  CHECK(closest_match("B20", gpus) == "B200");           // prefix
  CHECK(closest_match("Z999", gpus).empty());
  CHECK(suggestion_rank("H200", "H200-SXM").first == 1);
  CHECK(suggestion_rank("H200", "B200").first == 4);
  CHECK(suggestion_rank("tensor_parallel_size", "tensor_model_parallel_size").first == 3);
  CHECK(suggestion_rank("cuont", "count").first == 4);
  CHECK(suggestion_rank("no-such-model-at-all", "llama-3-8b").first == -1);
  // Short words never match by prefix or containment ("tp" is no prefix suggestion for tp_comm_overlap).
  CHECK(suggestion_rank("tp", "tp_comm_overlap").first == -1);
  // Among shared-word matches, the one with fewer extra words wins.
  const std::vector<std::string> keys{"pipeline_model_parallel_size", "tensor_model_parallel_size", "context_parallel_size"};
  CHECK(closest_match("tensor_parallel_size", keys) == "tensor_model_parallel_size");
  CHECK(closest_match("context_parallel", keys) == "context_parallel_size");
}

TEST_CASE("strategy.algorithms takes NCCL's spellings of algorithm names", "[scenario][aliases]") {
  const std::string kWorkload = "  sequence_length: 4096\n  micro_batch_size: 1\n  global_batch_size: 64\n";
  TempDir dir;
  const std::vector<std::string_view> names{"ring", "tree", "nvls", "nvls-tree", "pat"};
  const std::string file = dir.write("s.yaml", scenario_text(kWorkload, "  tp: 8\n  dp: 2\n  algorithms: {allreduce: Ring, dp: {allreduce: NVLSTree, allgather: PAT}}\n"));
  const Scenario sc = load_scenario(file, shipped_catalog(), {.algorithm_names = names});
  CHECK(sc.strategy->algorithms.at("allreduce") == "ring");
  CHECK(sc.strategy->algorithms.at("dp.allreduce") == "nvls-tree");
  CHECK(sc.strategy->algorithms.at("dp.allgather") == "pat");
  const std::string bad = dir.write("b.yaml", scenario_text(kWorkload, "  tp: 8\n  dp: 2\n  algorithms: {allreduce: CollnetDirect}\n"));
  CHECK_THROWS_WITH(load_scenario(bad, shipped_catalog(), {.algorithm_names = names}), Contains("CollnetDirect"));
}
