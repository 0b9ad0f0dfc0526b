#!/usr/bin/env bash
# scripts/plot on small sweeps: one key (a line, log2 axis), two keys with few values (lines) and
# with many (a heat map), infeasible points included; each must write a non-empty PNG and SVG.
# Exit 77 (ctest SKIP_RETURN_CODE) when Debian's python3 (/usr/bin/python3) or its matplotlib is missing.
# Usage: sweep_plot.sh CCSIM SOURCE_DIR WORK_DIR
set -u
ccsim=$1; src=$2; work=$3
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "python3-matplotlib missing: skipped"; exit 77; }
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
scen=scenarios/workloads/llama31-8b-decode-tp2.yaml
check() {  # check PREFIX
  for ext in png svg; do
    [ -s "$1.$ext" ] || { echo "$1.$ext missing or empty"; exit 1; }
  done
}
"$ccsim" sweep $scen --set workload.batch_size=1,2,4,8 --out "$work/one" >/dev/null || exit 1
scripts/plot "$work/one/sweep.csv" || exit 1
check "$work/one/sweep"
"$ccsim" sweep $scen --set strategy.tp=1,2,3,4 --set strategy.dp=auto --set workload.batch_size=1,64 \
  --price-per-gpu-hour 2 --out "$work/two" >/dev/null || exit 1
scripts/plot "$work/two/sweep.csv" --y cost_per_mtok --out "$work/lines" || exit 1
check "$work/lines"
scripts/plot "$work/two/sweep.csv" --y tokens_per_s --kind heatmap --out "$work/heat" || exit 1
check "$work/heat"
# Bad input: not a sweep file, exit 2.
scripts/plot "$scen" --out "$work/bad" 2>"$work/bad.err"; rc=$?
[ $rc -eq 2 ] || { echo "expected exit 2 for a non-sweep file, got $rc"; exit 1; }
grep -q "expected a sweep.csv" "$work/bad.err" || { echo "message missing"; cat "$work/bad.err"; exit 1; }
echo "plots written"
