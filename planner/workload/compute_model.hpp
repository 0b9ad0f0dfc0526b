#pragma once
// The compute model of `ccsim run`: the time of one compute op (GEMM tile and wave
// quantization, split-K, FlashAttention efficiency, HBM roofline) on one GPU, with the
// constants of scenarios/calibration/compute.yaml.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "models/workload/program.hpp"

namespace ccsim::planner {

/// Constants of the compute model (planner::estimate_compute), from
/// scenarios/calibration/compute.yaml: `defaults`, overridden per GPU catalog name under `gpus`.
/// Every field is a named, overridable number so that a later calibration can fit it; the
/// table's comments give the public source of each default.
struct ComputeCalibration {
  /// Fraction of the dense peak that one SM reaches inside a full tile of a large GEMM
  /// (the "maximum achievable matmul FLOPS" of the GPU over its peak), in [0.01, 1].
  double gemm_efficiency = 0.7;
  /// Output tile of one GEMM thread block (CTA), elements: the GEMM is cut into
  /// ceil(m/tile_m)·ceil(n/tile_n) tiles (or the transposed tile, whichever is faster), in [8, 1024].
  int gemm_tile_m = 128;
  int gemm_tile_n = 128;
  /// k-loop overhead, elements of k: a tile's main loop runs at k / (k + gemm_k_overhead) of
  /// its full rate (pipeline prologue and epilogue), in [0, 65536].
  double gemm_k_overhead = 0.0;
  /// Smallest k slice of a split-K GEMM, elements, in [0, 65536]: a GEMM with fewer tiles than
  /// SMs splits its k loop into 1 to floor(k / gemm_split_k_min) slices (at most 256), the fastest.
  double gemm_split_k_min = 256.0;
  /// FlashAttention forward (also Recompute) and backward: fraction of the dense peak for long
  /// sequences, in [0.01, 1]; falls as n / (n + seq_half) with n key tokens per sequence.
  double attention_efficiency = 0.5;
  double attention_backward_efficiency = 0.5;
  double attention_seq_half = 0.0;           ///< tokens, in [0, 1e6]
  double attention_backward_seq_half = 0.0;  ///< tokens, in [0, 1e6]
  /// Query rows per attention thread block: ceil(m / tile)·batch blocks fill waves of SMs, in [8, 1024].
  int attention_tile_m = 128;
  /// Fraction of the HBM bandwidth that streaming kernels reach, in [0.01, 1].
  double memory_efficiency = 0.8;
  /// Seconds added to every compute op that does work (launch gap + prologue), in [0, 1 ms].
  double kernel_overhead = 0.0;
  std::string source;
  /// Per GPU model (models::GpuSpec::name): the constants of each model of a mixed cluster
  /// (load_for_cluster), used for that model's GPUs instead of the fields above; null: the
  /// fields above for every GPU. A calibration fit (validate::calibrate_compute) sets none.
  std::shared_ptr<const std::map<std::string, ComputeCalibration>> per_gpu;
  /// The constants of `gpu`'s model: its per_gpu entry, else these.
  const ComputeCalibration& for_gpu(const models::GpuSpec& gpu) const;
  /// Throws support::InputError (file:line:col, key, expected, found) on a bad table: unknown
  /// keys, values outside the ranges above, a missing `defaults` map. An optional `provenance`
  /// map (written by validate::calibrate_compute) is accepted with the keys tool, date, gpu,
  /// inputs, holdout, fit_rows, holdout_rows, gemm_rows, fitted, not_fitted, mape.
  /// The `defaults`, overridden by the `gpus:` entry of the first of `gpu_names` that has one
  /// (models::GpuSpec::kind_names(): the GPU's name, then the entries it derives from).
  static ComputeCalibration load(const std::string& path, const std::vector<std::string>& gpu_names);
  /// load(path, {gpu}).
  static ComputeCalibration load(const std::string& path, const std::string& gpu);
  /// load(path, gpu.kind_names()) for the first node group's GPU model, with a per_gpu entry
  /// for every GPU model of `c` (each loaded with its own kind_names()).
  static ComputeCalibration load_for_cluster(const std::string& path, const models::Cluster& c);
  static std::string default_path();
};

/// What limited a compute op: math (tensor-core time), memory (HBM traffic), overhead (the
/// per-kernel term exceeded both), none (an op with no work).
enum class ComputeBound : std::uint8_t { None, Math, Memory, Overhead };
std::string_view to_string(ComputeBound b);

/// The compute model's result for one op. time = max(math, memory) + overhead, seconds.
struct ComputeEstimate {
  double time = 0;        ///< seconds
  double math = 0;        ///< seconds of tensor-core work, with tile, wave and k-loop losses
  double memory = 0;      ///< seconds of HBM traffic at memory_efficiency
  double overhead = 0;    ///< seconds, kernel_overhead
  double bytes = 0;       ///< HBM bytes the model charged
  double waves = 0;       ///< thread-block waves (GEMM, attention with a shape); 0 otherwise
  int split_k = 1;        ///< GEMM: k-loop splits (1 = none)
  double efficiency = 0;  ///< op FLOPs / (time × dense peak); 0 for ops without FLOPs
  ComputeBound bound = ComputeBound::None;
};

/// Time of one compute op (Gemm, Attention, Memory) on `gpu`:
/// * Gemm with a shape (m, n, k, batch): tiles = ceil(m/tile_m)·ceil(n/tile_n)·batch (the
///   tile's transpose too; the faster is taken, as cuBLAS's heuristic picks a kernel), waves =
///   ceil(tiles·split / (sms − comm_sms)); math = waves · 2·tile_m·tile_n·(k/split +
///   gemm_k_overhead) / (peak/sms · gemm_efficiency), i.e. k/(k + gemm_k_overhead) is the k-loop
///   efficiency; split = 1, or when tiles < SMs the fastest of 1 .. floor(k/gemm_split_k_min)
///   (at most 256) with k/split rounded up (split-K); bytes = (m·k + k·n + m·n)·e·batch with e the dtype's
///   bytes (fp8 1, bf16/fp16 2, fp32 4), plus the fp32 partials m·n·4·2·(split − 1)·batch. This is the tile and wave quantization of
///   NVIDIA's "Matrix Multiplication Background User's Guide". Without sms (0) tiles are not
///   grouped into waves.
/// * Attention with a shape (m queries, n keys, k head dim, batch = sequences × heads):
///   efficiency = a · n/(n + seq_half) · wave fill of ceil(m/attention_tile_m)·batch blocks,
///   with (a, seq_half) the forward or backward constants (Pass::Backward); math = flops /
///   (peak · efficiency); memory = op.bytes (Q, K, V, O and the KV-cache read).
/// * Gemm / Attention without a shape: flops / (peak · a) and op.bytes.
/// * Memory: op.bytes at memory_efficiency.
/// memory = bytes / (hbm_bandwidth · memory_efficiency); time = max(math, memory) + kernel_overhead;
/// an op with neither FLOPs nor bytes takes 0. `dtype` is the workload's ("fp8" uses the FP8
/// peak where the GPU has one). Throws std::invalid_argument for a communication op.
ComputeEstimate estimate_compute(const models::ProgramOp& op, const models::GpuSpec& gpu, const ComputeCalibration& c,
                                 const std::string& dtype);

/// `e` (estimate_compute of `op`) on a GPU running at `speed` × nominal (what-if perturbations,
/// models::ComputeSpeed): the math part of a GEMM divided by speed.gemm, of attention by
/// speed.attention, the HBM part of every op by speed.memory; time, bound and efficiency then
/// follow as in estimate_compute (the kernel overhead is host launch time and does not change).
/// A nominal speed returns `e` unchanged.
ComputeEstimate at_speed(ComputeEstimate e, const models::ProgramOp& op, const models::ComputeSpeed& speed);

}  // namespace ccsim::planner
