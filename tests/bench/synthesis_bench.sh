#!/usr/bin/env bash
# Schedule synthesis (`ccsim synthesize`, planner/synthesis/forest.hpp): the time to find
# ForestColl's AllGather trees, from the command's own note ("trees synthesized in S s": graph,
# optimum, switch removal and packing; not the simulation of the sizes after it), median of 3 runs,
# and the command's peak memory. Rail-optimized DGX A100 fabrics (tests/data/synthesis and
# generated ones) from 16 to 128 GPUs with packed trees; the 1,024- and 16,384-H100 scenarios with
# the node-level aggregated trees (above --max-tree-ranks: the exact optimum, the trees and their
# loads on the engines' routes; planner/synthesis/aggregated.hpp), and packed trees on 1,024 H100
# (--max-tree-ranks 2048) under the time limit, for comparison.
# Targets: ForestColl's 32-GPU case <= 1 s (its Python reference: about 257 s); 1,024 H100
# <= 10 s and 16,384 <= 60 s.
#
# Usage: tests/bench/synthesis_bench.sh CCSIM_BINARY [LIMIT_S]   (LIMIT_S: per run, default 120)
set -euo pipefail
export LC_ALL=C
[ $# -ge 1 ] || { echo "usage: tests/bench/synthesis_bench.sh CCSIM_BINARY [LIMIT_S]" >&2; exit 2; }
ccsim=$(realpath "$1")
limit=${2:-120}
root="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rail() {  # nodes -> a scenario file of that many DGX A100, rail-optimized
  cat > "$work/a100-$1.yaml" <<YAML
name: dgx-a100-$1node-rail
cluster:
  nodes:
    - node: dgx-a100
      count: $1
  fabric: {kind: fat-tree, wiring: rail-optimized}
YAML
  echo "$work/a100-$1.yaml"
}
one() {  # scenario [args...] -> "synthesis_s peak_mb" of one run, or "timeout"
  local scenario=$1; shift
  if ! /usr/bin/time -f "%M" -o "$work/mem" timeout "$limit" "$ccsim" synthesize "$scenario" --op allgather -b 64M -e 64M "$@" \
       > /dev/null 2> "$work/err"; then
    echo "timeout"; return
  fi
  local s; s=$(sed -n 's/^ccsim: note: .* in \([0-9.]*\) s$/\1/p' "$work/err")
  echo "$s $(( $(tail -1 "$work/mem") / 1024 ))"
}
median() {  # scenario -> "synthesis_s peak_mb" (median of 3), or "timeout"
  local runs=() i r
  for ((i = 0; i < 3; i++)); do
    r=$(one "$1"); [ "$r" != timeout ] || { echo timeout; return; }
    runs+=("$r")
  done
  printf '%s\n' "${runs[@]}" | sort -g | sed -n 2p
}
echo "| fabric | GPUs | synthesis (s) | peak RSS (MB) |"
echo "|---|---|---|---|"
for nodes in 2 4 8 16; do
  read -r s m < <(median "$(rail $nodes)") || true
  echo "| $nodes × DGX A100, rail-optimized | $((nodes * 8)) | ${s:-timeout} | ${m:-} |"
done
read -r s m < <(median "$root/scenarios/h100-1024gpu-2to1.yaml") || true
echo "| 128 × DGX H100, 2:1 rail-optimized, node-level trees | 1024 | ${s:-timeout} (target 10) | ${m:-} |"
read -r s m < <(median "$root/scenarios/h100-16k-rail.yaml") || true
echo "| 2,048 × DGX H100, rail-optimized, node-level trees | 16384 | ${s:-timeout} (target 60) | ${m:-} |"
r=$(one "$root/scenarios/h100-1024gpu-2to1.yaml" --max-tree-ranks 2048 --method forest)
if [ "$r" = timeout ]; then
  echo "| 128 × DGX H100, 2:1 rail-optimized, packed trees | 1024 | over $limit | |"
else
  read -r s m <<< "$r"; echo "| 128 × DGX H100, 2:1 rail-optimized, packed trees | 1024 | $s | $m |"
fi
