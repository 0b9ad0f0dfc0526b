// ComputeCalibration (scenarios/calibration/compute.yaml) and estimate_compute: see
// planner/workload/compute_model.hpp.

#include "planner/workload/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "support/data_dir.hpp"
#include "support/yaml_fields.hpp"
#include "models/workload/program_builder.hpp"

namespace ccsim::planner {

using models::ProgramOp;
using models::ProgramOpKind;

std::string ComputeCalibration::default_path() {
  const std::filesystem::path base = support::data_dir();
  return (base / "calibration" / "compute.yaml").string();
}

ComputeCalibration ComputeCalibration::load(const std::string& path, const std::string& gpu) {
  return load(path, std::vector<std::string>{gpu});
}

ComputeCalibration ComputeCalibration::load(const std::string& path, const std::vector<std::string>& gpu_names) {
  const support::YamlSource doc = support::load_yaml_map_file(path, {"a compute calibration table (like scenarios/calibration/compute.yaml)"});
  const support::Fields root({doc}, "");
  root.reject_unknown({"source", "defaults", "gpus", "provenance"});
  // A fitted table (`ccsim calibrate`, validate/calibrate/compute_calibration.hpp) says where its numbers
  // come from; the block is informational, but its keys are checked like the rest.
  if (const auto provenance = root.optional_map("provenance")) {
    provenance->reject_unknown({"tool", "date", "gpu", "inputs", "holdout", "fit_rows", "holdout_rows", "fitted", "not_fitted",
                                "mape", "gemm_rows"});
  }
  ComputeCalibration c;
  c.source = root.optional_string("source").value_or("");
  // Bounds: efficiencies of at least 1 % and launch overheads of at most 1 ms keep times sane;
  // tiles of 8 to 1024 elements cover every tensor-core kernel (mma 16x8 ... 2-SM 256x256).
  // `defaults` must give every constant (a missing one would silently fall back to a built-in
  // value unlike the shipped table's); per-GPU entries override any of them.
  const auto read = [&](const support::Fields& f, bool required) {
    f.reject_unknown({"gemm_efficiency", "gemm_tile_m", "gemm_tile_n", "gemm_k_overhead", "attention_efficiency",
                      "attention_backward_efficiency", "attention_seq_half", "attention_backward_seq_half", "attention_tile_m",
                      "gemm_split_k_min",
                      "memory_efficiency", "kernel_overhead"});
    for (auto [key, slot] : {std::pair{"gemm_efficiency", &c.gemm_efficiency}, std::pair{"attention_efficiency", &c.attention_efficiency},
                             std::pair{"attention_backward_efficiency", &c.attention_backward_efficiency},
                             std::pair{"memory_efficiency", &c.memory_efficiency}}) {
      if (!required && !f.has(key)) continue;
      *slot = f.number(key, 0.0);
      if (*slot > 1.0 || *slot < 0.01) throw f.error(key, "a fraction of the peak in [0.01, 1]");
    }
    for (auto [key, slot] : {std::pair{"gemm_tile_m", &c.gemm_tile_m}, std::pair{"gemm_tile_n", &c.gemm_tile_n},
                             std::pair{"attention_tile_m", &c.attention_tile_m}}) {
      if (required || f.has(key)) *slot = f.count(key, 8, 1024);
    }
    for (auto [key, slot, max, what] :
         {std::tuple{"gemm_k_overhead", &c.gemm_k_overhead, 65536.0, "elements of k"},
          std::tuple{"gemm_split_k_min", &c.gemm_split_k_min, 65536.0, "elements of k"},
          std::tuple{"attention_seq_half", &c.attention_seq_half, 1e6, "tokens"},
          std::tuple{"attention_backward_seq_half", &c.attention_backward_seq_half, 1e6, "tokens"}}) {
      if (!required && !f.has(key)) continue;
      *slot = f.number(key, std::numeric_limits<double>::lowest());
      if (*slot < 0 || *slot > max) throw f.error(key, fmt::format("a number of {} in [0, {:g}]", what, max));
    }
    if (required || f.has("kernel_overhead")) {
      c.kernel_overhead = f.quantity("kernel_overhead", support::Quantity::Time, false);
      if (c.kernel_overhead > 1e-3) throw f.error("kernel_overhead", "a launch overhead of at most 1ms");
    }
  };
  read(root.map("defaults"), true);
  if (const auto gpus = root.optional_map("gpus")) {
    for (const std::string& gpu : gpu_names) {
      if (const auto mine = gpus->optional_map(gpu)) {
        read(*mine, false);
        break;
      }
    }
  }
  return c;
}

std::string_view to_string(ComputeBound b) {
  switch (b) {
    case ComputeBound::Math: return "math";
    case ComputeBound::Memory: return "memory";
    case ComputeBound::Overhead: return "overhead";
    case ComputeBound::None: break;
  }
  return "none";
}

ComputeEstimate estimate_compute(const ProgramOp& op, const models::GpuSpec& gpu, const ComputeCalibration& c, const std::string& dtype) {
  if (op.kind == ProgramOpKind::Collective || op.kind == ProgramOpKind::SendRecv) {
    throw std::invalid_argument("estimate_compute: '" + op.name + "' is a communication op");
  }
  ComputeEstimate r;
  if (op.flops <= 0 && op.bytes <= 0) return r;
  const bool fp8 = dtype == "fp8" && gpu.fp8_flops > 0;
  // FP8 training and serving with Transformer Engine run the linear layers' GEMMs in FP8 but the
  // attention core in BF16: FP8 dot-product attention is off by default (TE recipe
  // DelayedScaling(fp8_dpa=False); NeMo / Megatron-Core `fp8_dot_product_attention` False).
  // MFU's denominator stays the FP8 peak, as NeMo reports it.
  const double peak = fp8 && op.kind != ProgramOpKind::Attention ? gpu.fp8_flops : gpu.bf16_flops;
  // SMs left to this kernel when communication kernels run beside it (TE userbuffers).
  const int usable = gpu.sms > 0 ? std::max(1, gpu.sms - std::max(0, op.comm_sms)) : 0;
  const bool shaped = op.m > 0 && op.n > 0 && op.k > 0 && op.batch > 0;
  const auto ceil_div = [](double a, double b) { return std::ceil(a / b); };
  r.bytes = op.bytes;
  if (op.kind == ProgramOpKind::Gemm && shaped) {
    const auto m = static_cast<double>(op.m), n = static_cast<double>(op.n), k = static_cast<double>(op.k);
    const auto batch = static_cast<double>(op.batch);
    // One tile: 2·tile_m·tile_n·k FLOPs on one SM at peak/sms × gemm_efficiency × the k-loop
    // efficiency k/(k + k0); every wave of tiles takes one tile's time (NVIDIA, "Matrix
    // Multiplication Background User's Guide": tile and wave quantization). When the tiles
    // cannot fill the SMs (decode, narrow shards), the k loop is split into slices of at least
    // gemm_split_k_min (cuBLAS / CUTLASS split-K), the split count being the fastest one; the
    // fp32 partial tiles are written and read once more.
    double best = std::numeric_limits<double>::infinity(), best_waves = 0, best_split = 1;
    for (const auto& [tm, tn] : {std::pair{c.gemm_tile_m, c.gemm_tile_n}, std::pair{c.gemm_tile_n, c.gemm_tile_m}}) {
      const double tiles = ceil_div(m, tm) * ceil_div(n, tn) * batch;
      const double max_split =
          usable > 0 && tiles < usable ? std::clamp(std::floor(k / std::max(1.0, c.gemm_split_k_min)), 1.0, 256.0) : 1.0;
      const double rate = usable > 0 ? peak / gpu.sms : peak;  // per SM, or the whole GPU per tile
      for (double split = 1; split <= max_split; ++split) {
        const double k_split = std::ceil(k / split);
        const double waves = usable > 0 ? ceil_div(tiles * split, usable) : tiles;
        // k_split / (rate · eff · k_split/(k_split + k0)) = (k_split + k0) / (rate · eff)
        const double t = waves * 2.0 * tm * tn * (k_split + c.gemm_k_overhead) / (rate * c.gemm_efficiency);
        if (t < best) {
          best = t;
          best_waves = usable > 0 ? waves : 0;
          best_split = split;
        }
      }
    }
    r.math = best;
    r.waves = best_waves;
    r.bytes = (m * k + k * n + m * n) * models::dtype_bytes(dtype) * batch + m * n * 4.0 * 2.0 * (best_split - 1) * batch;
    r.split_k = static_cast<int>(best_split);
  } else if (op.kind == ProgramOpKind::Attention && op.flops > 0) {
    const bool bwd = op.pass == models::Pass::Backward;
    const double a = bwd ? c.attention_backward_efficiency : c.attention_efficiency;
    double eff = a;
    if (shaped) {
      // FlashAttention's measured TFLOP/s rise with the key length n (Dao 2023 Fig. 4-5; Shah
      // et al. 2024 Fig. 5-6): a · n/(n + seq_half). Thread blocks of attention_tile_m queries
      // per (sequence, head) fill waves of SMs like GEMM tiles.
      const double half = bwd ? c.attention_backward_seq_half : c.attention_seq_half;
      const auto n = static_cast<double>(op.n);
      eff *= n / (n + half);
      if (usable > 0) {
        const double blocks = ceil_div(static_cast<double>(op.m), c.attention_tile_m) * static_cast<double>(op.batch);
        r.waves = ceil_div(blocks, usable);
        eff *= blocks / (r.waves * usable);
      }
    }
    r.math = op.flops / (peak * eff);
  } else if (op.kind == ProgramOpKind::Gemm && op.flops > 0) {
    r.math = op.flops / (peak * c.gemm_efficiency);
  }
  r.memory = r.bytes / (gpu.hbm_bandwidth * c.memory_efficiency);
  r.overhead = c.kernel_overhead;
  r.time = std::max(r.math, r.memory) + r.overhead;
  r.bound = r.overhead > std::max(r.math, r.memory) ? ComputeBound::Overhead
            : r.math >= r.memory                   ? ComputeBound::Math
                                                   : ComputeBound::Memory;
  if (op.flops > 0 && r.time > 0) r.efficiency = op.flops / (r.time * peak);
  return r;
}

ComputeCalibration ComputeCalibration::load_for_cluster(const std::string& path, const models::Cluster& c) {
  ComputeCalibration out = load(path, c.spec.groups.front().node.gpu.kind_names());
  auto table = std::make_shared<std::map<std::string, ComputeCalibration>>();
  for (const auto& g : c.spec.groups)
    if (table->count(g.node.gpu.name) == 0) table->emplace(g.node.gpu.name, load(path, g.node.gpu.kind_names()));
  out.per_gpu = std::move(table);
  return out;
}

const ComputeCalibration& ComputeCalibration::for_gpu(const models::GpuSpec& gpu) const {
  if (!per_gpu) return *this;
  const auto it = per_gpu->find(gpu.name);
  return it == per_gpu->end() ? *this : it->second;
}

ComputeEstimate at_speed(ComputeEstimate e, const models::ProgramOp& op, const models::ComputeSpeed& speed) {
  if (speed.nominal()) return e;
  const double math_speed = op.kind == ProgramOpKind::Gemm ? speed.gemm : op.kind == ProgramOpKind::Attention ? speed.attention : 1.0;
  const double old_time = e.time;
  e.math /= math_speed;
  e.memory /= speed.memory;
  e.time = std::max(e.math, e.memory) + e.overhead;
  e.bound = e.overhead > std::max(e.math, e.memory) ? ComputeBound::Overhead
            : e.math >= e.memory                   ? ComputeBound::Math
                                                   : ComputeBound::Memory;
  if (e.time > 0) e.efficiency *= old_time / e.time;
  return e;
}

}  // namespace ccsim::planner
