#!/usr/bin/env bash
# What-if scaling: the 16,384-H100 Llama-3.1-405B training step (scenarios/workloads/
# llama3-405b-train-16kxh100.yaml) symmetric, with one straggler GPU, and with 1 % of the GPUs
# (164) drawn as stragglers, each `ccsim run` in its own process. Prints a markdown table: wall
# time (median of 3 runs under 5 s, else 1 run) and peak resident memory, and their ratios to
# the symmetric run. The perturbed runs include the unperturbed rerun the report compares with.
# Two more rows: the same step with cross-dimension contention (simulation.contention: true) and
# with a spine link flapping (leaf0's uplinks at 0.1× for 50 ms every 500 ms from 1 s).
# Targets (the runtime-adaptation issue): one straggler ≤ 3× the time and ≤ 2× the memory of the
# symmetric run; 1 % perturbed ≤ 60 s.
#
# Usage: tests/bench/what_if_bench.sh CCSIM_BINARY
set -euo pipefail
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: tests/bench/what_if_bench.sh CCSIM_BINARY" >&2; exit 2; }
ccsim=$(realpath "$1")
root="$(cd "$(dirname "$0")/../.." && pwd)"
base="$root/scenarios/workloads/llama3-405b-train-16kxh100.yaml"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
printf 'include: %s\nname: straggler-1\nwhat_if: {stragglers: {count: 1, slowdown: 1.5, seed: 1}}\n' "$base" > "$work/one.yaml"
printf 'include: %s\nname: stragglers-1pct\nwhat_if: {stragglers: {count: 164, slowdown: 1.5, seed: 1}}\n' "$base" > "$work/pct.yaml"
printf 'include: %s\nname: contention\nsimulation: {contention: true}\n' "$base" > "$work/contention.yaml"
printf 'include: %s\nname: spine-flap\nwhat_if: {links: [{link: "leaf0 <-> spine*", factor: 0.1, at: 1s, for: 50ms, every: 500ms}]}\n' "$base" > "$work/flap.yaml"
measure() {  # file -> "wall_s rss_kib"
  local walls=() rss=0 n=1 i
  for ((i = 0; i < n; i++)); do
    local t0=$EPOCHREALTIME
    /usr/bin/time -f %M -o "$work/rss" "$ccsim" run "$1" > /dev/null
    local t1=$EPOCHREALTIME
    walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
    rss=$(cat "$work/rss")
    if ((i == 0)) && awk -v w="${walls[0]}" 'BEGIN { exit !(w < 5) }'; then n=3; fi
  done
  printf '%s\n' "${walls[@]}" | sort -g | awk -v rss="$rss" '{ w[NR] = $1 } END { printf "%s %s\n", w[int((NR + 1) / 2)], rss }'
}
read -r w0 m0 < <(measure "$base")
read -r w1 m1 < <(measure "$work/one.yaml")
read -r w2 m2 < <(measure "$work/pct.yaml")
read -r w3 m3 < <(measure "$work/contention.yaml")
read -r w4 m4 < <(measure "$work/flap.yaml")
echo "| 16,384 H100, Llama-3.1-405B step | wall | peak memory | time × symmetric | memory × symmetric |"
echo "|---|---|---|---|---|"
awk -v w="$w0" -v m="$m0" 'BEGIN { printf "| symmetric | %.2f s | %.0f MB | 1 | 1 |\n", w, m / 1024 }'
awk -v w="$w1" -v m="$m1" -v w0="$w0" -v m0="$m0" 'BEGIN { printf "| one straggler (1.5×) | %.2f s | %.0f MB | %.2f | %.2f |\n", w, m / 1024, w / w0, m / m0 }'
awk -v w="$w2" -v m="$m2" -v w0="$w0" -v m0="$m0" 'BEGIN { printf "| 164 stragglers (1 %%, 1.5×) | %.2f s | %.0f MB | %.1f | %.1f |\n", w, m / 1024, w / w0, m / m0 }'
awk -v w="$w3" -v m="$m3" -v w0="$w0" -v m0="$m0" 'BEGIN { printf "| cross-dimension contention | %.2f s | %.0f MB | %.2f | %.2f |\n", w, m / 1024, w / w0, m / m0 }'
awk -v w="$w4" -v m="$m4" -v w0="$w0" -v m0="$m0" 'BEGIN { printf "| spine link flapping (0.1×, 50 ms every 500 ms) | %.2f s | %.0f MB | %.2f | %.2f |\n", w, m / 1024, w / w0, m / m0 }'
