#!/usr/bin/env bash
# Schedule synthesis (`ccsim synthesize`, planner/synthesis/forest.hpp): the time to find
# ForestColl's AllGather trees, from the command's own note ("trees synthesized in S s": graph,
# optimum, switch removal and packing; not the simulation of the sizes after it), median of 3 runs,
# and the command's peak memory. Rail-optimized DGX A100 fabrics (tests/data/synthesis and
# generated ones) from 16 to 128 GPUs, and the 1,024-H100 scenario under a time limit.
# Targets: ForestColl's 32-GPU case <= 1 s (its Python reference: about 257 s); 1,024 H100
# <= 10 s and 16,384 <= 60 s (not met: see docs/commands/synthesize.md, Limits).
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
one() {  # scenario -> "synthesis_s peak_mb" of one run, or "timeout"
  if ! /usr/bin/time -f "%M" -o "$work/mem" timeout "$limit" "$ccsim" synthesize "$1" --op allgather -b 64M -e 64M \
       > /dev/null 2> "$work/err"; then
    echo "timeout"; return
  fi
  local s; s=$(sed -n 's/^ccsim: note: trees synthesized in \([0-9.]*\) s$/\1/p' "$work/err")
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
r=$(one "$root/scenarios/h100-1024gpu-2to1.yaml")
if [ "$r" = timeout ]; then
  echo "| 128 × DGX H100, 2:1 rail-optimized | 1024 | over $limit (target 10) | |"
else
  read -r s m <<< "$r"; echo "| 128 × DGX H100, 2:1 rail-optimized | 1024 | $s | $m |"
fi
