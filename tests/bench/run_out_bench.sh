#!/usr/bin/env bash
# `ccsim run --out` on a large step: Llama-3-70B on 256 H100 (32 × DGX H100, rail-optimized
# NDR fat tree; TP8 PP8 DP4, global batch 1,024: 256 micro-batches per pipeline, about 650,000
# ops), the simulation alone against writing its files. Prints a markdown table: wall time and
# peak memory (median of 3 runs), and the size of what --out writes, for
#   no --out | --out --report-only | --out (trace.json) | --out --trace-format perfetto
# Target: --out within 5 × the simulation alone (it was 18 × with a JSON document tree).
#
# Usage: tests/bench/run_out_bench.sh CCSIM_BINARY
set -euo pipefail
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: tests/bench/run_out_bench.sh CCSIM_BINARY" >&2; exit 2; }
ccsim=$(realpath "$1")
root="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cat > "$work/l70-256.yaml" <<YAML
name: llama3-70b-train-256xh100
cluster:
  nodes:
    - node: dgx-h100
      count: 32
  fabric: {kind: fat-tree, wiring: rail-optimized, oversubscription: 1}
workload: {model: llama-3-70b, phase: training_step, sequence_length: 8192, micro_batch_size: 1, global_batch_size: 1024, dtype: bf16, recompute: selective}
strategy: {tp: 8, pp: 8, dp: 4, sequence_parallel: true, zero_stage: 1, overlap_grad_reduce: true}
YAML
median() {  # command... -> "wall_s peak_kb", medians of 3 runs
  local walls=() mems=() i
  for ((i = 0; i < 3; i++)); do
    rm -rf "$work/out"
    /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
    read -r w m < "$work/t"
    walls+=("$w"); mems+=("$m")
  done
  echo "$(printf '%s\n' "${walls[@]}" | sort -g | sed -n 2p) $(printf '%s\n' "${mems[@]}" | sort -g | sed -n 2p)"
}
size_mb() { [ -d "$work/out" ] && du -sb "$work/out" | awk '{printf "%.1f", $1 / 1e6}' || echo "-"; }
cd "$root"
echo "| 256 H100, Llama-3-70B TP8 PP8 DP4 | wall (s) | peak RSS (MB) | written (MB) |"
echo "|---|---|---|---|"
row() {  # label, ccsim arguments...
  local label=$1; shift
  read -r w m < <(median "$ccsim" run "$work/l70-256.yaml" "$@")
  echo "| $label | $w | $((m / 1024)) | $(size_mb) |"
}
row "no --out" --quiet
rm -rf "$work/out"
row "--out --report-only" --quiet --out "$work/out" --report-only
row "--out (trace.json)" --quiet --out "$work/out"
row "--out --trace-format perfetto" --quiet --out "$work/out" --trace-format perfetto
