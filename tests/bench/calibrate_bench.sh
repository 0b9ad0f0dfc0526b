#!/usr/bin/env bash
# `ccsim calibrate` wall time on the shipped public nccl-tests logs (tests/data/nccl-tests/), each
# fitted on alternate sizes with the default options, in its own process: median of 3 runs (1 run
# when the first takes over 60 s), and the held-out MAPE after the fit (the last column, so a
# faster fit that fits worse shows). Target (issue 30): ≤ 10 s for a 30-row log on the 2-core
# development machine.
#
# Usage: tests/bench/calibrate_bench.sh CCSIM_BINARY [EXTRA_CALIBRATE_OPTIONS...]
set -euo pipefail
export LC_ALL=C
[ $# -ge 1 ] || { echo "usage: tests/bench/calibrate_bench.sh CCSIM_BINARY [OPTIONS...]" >&2; exit 2; }
ccsim=$(realpath "$1")
shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
logs=(
  "h100-2x8-ethernet-gpudirect-all_reduce.log h100-2x8-200g.yaml"
  "mi300x-1x8-xgmi-all_reduce.log mi300x-1node.yaml"
  "rtx2080ti-1x2-pcie3-nop2p-all_reduce.log pcie-2gpu-nop2p.yaml"
  "a100-1x8-nvswitch-sendrecv.log dgx-a100-1node.yaml"
)
echo "| log | rows | wall (median of 3) | held-out MAPE after |"
echo "|---|---|---|---|"
for entry in "${logs[@]}"; do
  read -r log scenario <<< "$entry"
  walls=()
  n=1
  for ((i = 0; i < n; i++)); do
    t0=$EPOCHREALTIME
    "$ccsim" calibrate "$root/tests/data/nccl-tests/$log" --scenario "$root/scenarios/$scenario" "$@" > "$work/out.txt" 2> /dev/null
    t1=$EPOCHREALTIME
    walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')")
    if ((i == 0)) && awk -v w="${walls[0]}" 'BEGIN { exit !(w < 60) }'; then n=3; fi
  done
  wall=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ w[NR] = $1 } END { print w[int((NR + 1) / 2)] }')
  rows=$(sed -n 's/^# ccsim calibrate: .*, \([0-9]*\) rows .*/\1/p' "$work/out.txt")
  mape=$(sed -n 's/^# MAPE .*held-out sizes .* -> \(.*\)$/\1/p' "$work/out.txt")
  echo "| $log | $rows | $wall s | $mape |"
done
