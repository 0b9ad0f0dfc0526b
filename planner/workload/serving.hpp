#pragma once
// Serving-engine figures for inference phases (`ccsim run` with phase prefill, decode or
// serving), from scenarios/calibration/serving.yaml: the engine's per-step host overhead and
// the latency constants of vLLM's custom all-reduce kernels. Defaults, overridden per GPU
// catalog name; every value in the file names its source.

#include <string>
#include <vector>

#include "models/scenario/scenario.hpp"

namespace ccsim::planner {

struct ServingCalibration {
  /// Seconds added to every prefill step: scheduler, input preparation, sampler, output
  /// processing on the host, not overlapped with the GPU (vLLM runs them between steps).
  double prefill_step_overhead = 0.0;
  /// Seconds added to every decode step (same parts, plus the CUDA graph launch).
  double decode_step_overhead = 0.0;
  /// vLLM custom all-reduce: kernel launch and start barrier, seconds, once per all-reduce
  /// (sim::CostParams::base_latency of its Schedules).
  double custom_allreduce_launch = 3e-6;
  /// vLLM custom all-reduce: cross-GPU flag barrier of one stage, seconds (one stage for the
  /// one-shot kernel, two for the two-shot; sim::CostParams::step_latency).
  double custom_allreduce_stage = 2.5e-6;
  std::string source;

  /// Throws support::InputError on a bad table (unknown keys, times that are negative, over
  /// 1 s for step overheads or over 1 ms for the all-reduce constants).
  /// The `defaults`, overridden by the `gpus:` entry of the first of `gpu_names` that has one
  /// (models::GpuSpec::kind_names(): the GPU's name, then the entries it derives from).
  static ServingCalibration load(const std::string& path, const std::vector<std::string>& gpu_names);
  /// load(path, {gpu}).
  static ServingCalibration load(const std::string& path, const std::string& gpu);
  /// $CCSIM_DATA_DIR/calibration/serving.yaml, or the source tree's.
  static std::string default_path();
};

/// A request-level result (phase: serving), as vLLM's benchmarks report it for a batch of
/// `batch` requests of `input_len` prompt tokens generating `output_len` tokens each, all
/// admitted together (benchmarks/benchmark_latency.py): one prefill step, which samples the
/// first token, then output_len − 1 decode steps.
struct ServingResult {
  struct DecodePoint {
    double context = 0;  ///< tokens attended by each sequence in this step
    double step = 0;     ///< seconds, engine overhead included
  };
  double ttft = 0;               ///< seconds: the prefill step, overhead included
  double tpot = 0;               ///< seconds: (e2e − ttft) / (output_len − 1), vLLM's TPOT
  double e2e = 0;                ///< seconds: ttft + Σ decode steps
  double output_tokens_per_s = 0;///< batch · output_len / e2e
  double total_tokens_per_s = 0; ///< batch · (input_len + output_len) / e2e
  double prefill_compute = 0;    ///< seconds, prefill step's compute per GPU (mean over stages)
  double prefill_comm = 0;       ///< seconds, prefill step's exposed communication per GPU
  std::vector<DecodePoint> decode;  ///< the simulated decode steps (first, middle, last)
};

/// Σ over decode steps k = 1 .. n of T(c_k), c_k evenly spaced, from T at k = 1 (`first`), at
/// the middle context (`middle`) and at k = n (`last`): n·(first + 2·middle + last)/4, the
/// composite trapezoid rule on the two halves — exact when T is linear in the context, as
/// the roofline makes a decode step (KV-cache reads and attention FLOPs grow linearly).
double sum_decode_steps(double first, double middle, double last, double n);

/// The steps a serving run simulates for a phase-serving workload `w`, each a workload of its
/// own: one prefill step of every prompt (no chunked prefill), which samples the first token,
/// and decode steps k = 1, the middle one and k = n = output_len − 1. Decode step k attends
/// over input_len + k tokens; the Program builder costs attention at context_length +
/// generated_tokens / 2, so a whole context c is context_length c − 1 with 2 generated tokens,
/// a half-integer one context_length floor(c) with 1.
struct ServingSteps {
  models::WorkloadSpec prefill;      ///< phase prefill, micro_batch_size = batch_size, sequence_length = input_len
  models::WorkloadSpec decode_first;
  models::WorkloadSpec decode_middle;
  models::WorkloadSpec decode_last;
  double first = 0;                  ///< tokens attended in decode step 1: input_len + 1
  double middle = 0;                 ///< (first + last) / 2
  double last = 0;                   ///< input_len + n
  double decode_steps = 0;           ///< n = output_len − 1
};
ServingSteps serving_steps(const models::WorkloadSpec& w);

/// What the simulated serving steps took, seconds.
struct ServingStepTimes {
  double prefill = 0;          ///< the prefill step, engine overhead included
  double decode_first = 0;     ///< the decode steps, engine overhead included
  double decode_middle = 0;
  double decode_last = 0;
  double prefill_compute = 0;  ///< the prefill step's compute per GPU (mean over stages)
  double prefill_comm = 0;     ///< the prefill step's exposed communication per GPU (mean over stages)
};

/// The request-level result of `w` from its steps' times: ttft = the prefill step, e2e = ttft +
/// sum_decode_steps, tpot = (e2e − ttft) / n, tokens per second from batch_size, input_len and
/// output_len.
ServingResult serving_result(const models::WorkloadSpec& w, const ServingSteps& steps, const ServingStepTimes& t);

}  // namespace ccsim::planner
