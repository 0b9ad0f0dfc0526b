#!/usr/bin/env bash
# Failure simulation speed: `ccsim run --horizon` on the 16,384-H100 Llama-3.1-405B job
# (scenarios/workloads/llama3-405b-train-16kxh100.yaml) with the default 1,000 samples and the
# checkpoint-interval search (17 × 1,000 runs), over 30 days, against the same `ccsim run` without
# it; and the shrink policy with no spare (the step rerun by the engine at each DP size reached).
# Prints a markdown table: wall time (median of 3 runs) and the ratio to the plain run.
# Target: a 30-day failure simulation of a 16,384-GPU job with
# 1,000 samples ≤ 60 s.
#
# Usage: tests/bench/reliability_bench.sh CCSIM_BINARY
set -euo pipefail
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: tests/bench/reliability_bench.sh CCSIM_BINARY" >&2; exit 2; }
ccsim=$(realpath "$1")
root="$(cd "$(dirname "$0")/../.." && pwd)"
base="$root/scenarios/workloads/llama3-405b-train-16kxh100.yaml"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
printf 'include: %s\nreliability: {duration: 30d, policy: shrink, spare_nodes: 0, repair: 2d}\n' "$base" > "$work/shrink.yaml"
median() {  # command... -> median wall seconds of 3 runs
  local walls=() i
  for ((i = 0; i < 3; i++)); do
    local t0=$EPOCHREALTIME
    "$@" > /dev/null
    local t1=$EPOCHREALTIME
    walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
  done
  printf '%s\n' "${walls[@]}" | sort -g | sed -n 2p
}
w0=$(median "$ccsim" run "$base")
w1=$(median "$ccsim" run "$base" --horizon 30d)
w2=$(median "$ccsim" run "$work/shrink.yaml")
echo "| 16,384 H100, Llama-3.1-405B | wall (s) | × plain run |"
echo "|---|---|---|"
awk -v w="$w0" 'BEGIN { printf "| step only | %.2f | 1.00 |\n", w }'
awk -v w="$w1" -v b="$w0" 'BEGIN { printf "| --horizon 30d: restart, 1,000 samples, interval search | %.2f | %.2f |\n", w, w / b }'
awk -v w="$w2" -v b="$w0" 'BEGIN { printf "| 30 d, shrink, no spare, 2-day repair | %.2f | %.2f |\n", w, w / b }'
