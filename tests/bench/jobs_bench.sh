#!/usr/bin/env bash
# Several jobs on one fabric: `ccsim run` on two 8,192-GPU Llama-3-70B jobs sharing a
# 16,384-H100 rail-optimized fat tree at 2:1 (tests/bench/data/jobs-2x8192-h100.yaml: one job
# spread over every leaf group, the other on the GPUs left), against the same two jobs each run
# alone (`ccsim run` of the one-job shorthand, twice). Prints a markdown table: wall time and peak
# memory (median of 3 runs) and the ratio to the two runs alone.
# Target: two 8,192-GPU jobs on one fabric ≤ 30 s analytic.
#
# Usage: tests/bench/jobs_bench.sh CCSIM_BINARY
set -euo pipefail
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: tests/bench/jobs_bench.sh CCSIM_BINARY" >&2; exit 2; }
ccsim=$(realpath "$1")
root="$(cd "$(dirname "$0")/../.." && pwd)"
jobs="$root/tests/bench/data/jobs-2x8192-h100.yaml"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# One job alone, as the shorthand: the same cluster and workload over 8,192 GPUs of 1,024 nodes.
cat > "$work/alone.yaml" <<YAML
name: one-8192-job
cluster:
  nodes:
    - node: dgx-h100
      count: 1024
  fabric: {kind: fat-tree, wiring: rail-optimized, nodes_per_leaf: 32, oversubscription: 2}
workload: {model: llama-3-70b, phase: training_step, sequence_length: 8192, micro_batch_size: 1, global_batch_size: 1024, dtype: bf16, recompute: selective}
strategy: {tp: 8, pp: 4, dp: 256, sequence_parallel: true, zero_stage: 1, overlap_grad_reduce: true}
YAML
median() {  # command... -> "wall_s peak_kb", medians of 3 runs
  local walls=() mems=() i
  for ((i = 0; i < 3; i++)); do
    /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2> "$work/err"
    read -r w m < "$work/t"
    walls+=("$w"); mems+=("$m")
  done
  echo "$(printf '%s\n' "${walls[@]}" | sort -g | sed -n 2p) $(printf '%s\n' "${mems[@]}" | sort -g | sed -n 2p)"
}
read -r w0 m0 < <(median "$ccsim" run "$work/alone.yaml")
read -r w1 m1 < <(median "$ccsim" run "$jobs")
echo "| 2 × 8,192 H100, Llama-3-70B | wall (s) | peak RSS (MB) | × two runs alone |"
echo "|---|---|---|---|"
awk -v w="$w0" -v m="$m0" 'BEGIN { printf "| one job alone (shorthand), twice | %.2f | %.0f | 1.00 |\n", 2 * w, m / 1024 }'
awk -v w="$w1" -v m="$m1" -v b="$w0" 'BEGIN { printf "| both together (jobs:, 4 steps) | %.2f | %.0f | %.2f |\n", w, m / 1024, w / (2 * b) }'
