#!/usr/bin/env bash
# scripts/plot on small sweeps: one key (a line, log2 axis), two keys with few values (lines) and
# with many (a heat map), infeasible points included; each must write a non-empty PNG and SVG;
# and what a figure says (title, axis labels, caption, ties, infeasible points) via --describe.
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
# A sweep over perturbations (what_if keys): a failed NIC (fail=false,true) and a slow node
# (speed 1, 0.5) on 2 × DGX H100, Llama-3-8B TP8 DP2. Each perturbation can only lengthen the
# step: a failure at equal speed, and a slower node at equal failure.
printf 'include: %s/tests/data/what-if/dgx-h100-2node-slow-node.yaml\nwhat_if: {links: [{device: node0/nic0, fail: false}]}\n' \
  "$PWD" > "$work/whatif.yaml"
"$ccsim" sweep "$work/whatif.yaml" --set 'what_if.links[0].fail=false,true' --set 'what_if.compute[0].speed=1,0.5' \
  --out "$work/whatif" >/dev/null || exit 1
awk -F, 'NR > 1 { t[$2 "," $3] = $8 } END {
  if (!(t["true,1"] > t["false,1"] && t["true,0.5"] > t["false,0.5"] && t["false,0.5"] > t["false,1"] && t["true,0.5"] > t["true,1"])) {
    print "perturbations did not lengthen the step:"; for (k in t) print k, t[k]; exit 1 } }' "$work/whatif/sweep.csv" || exit 1
scripts/plot "$work/whatif/sweep.csv" --out "$work/whatif-lines" || exit 1
check "$work/whatif-lines"
# What the figure says (--describe reads it back from the figure): NDR vs XDR on 4 x HGX H200 (a
# tie: PCIe Gen5 binds both), swept with the node count. The title names the scenario, the node
# count is drawn as GPUs (2, 4, 8 nodes x 8 = 16, 32, 64), the y axis has its unit and starts at
# 0, the caption names model, cluster, calibration and ccsim's version, the legend says
# "ib-ndr = ib-xdr" and the caption says why; an out-of-memory point (TP2 on two nodes) is marked.
h200=tests/data/sweep/h200-4node-llama3-70b.yaml
"$ccsim" sweep $h200 --set 'cluster.nodes[0].count=2,4,8' --set 'cluster.nodes[0].node.nics.link=ib-ndr,ib-xdr' \
  --set strategy.dp=auto --price-per-gpu-hour 3 --out "$work/ndr-xdr" >/dev/null || exit 1
scripts/plot "$work/ndr-xdr/sweep.csv" --y cost_per_step --describe > "$work/ndr-xdr.json" || exit 1
check "$work/ndr-xdr/sweep"
"$ccsim" sweep $h200 --set 'strategy.tp=2,8' --set 'cluster.nodes[0].count=2' --set strategy.dp=auto \
  --out "$work/oom" >/dev/null || exit 1
scripts/plot "$work/oom/sweep.csv" --describe > "$work/oom.json" || exit 1
/usr/bin/python3 - "$work/ndr-xdr.json" "$work/oom.json" "$($ccsim --version | cut -d' ' -f2)" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
o = json.load(open(sys.argv[2]))
version = sys.argv[3]
checks = [
    (d["title"] == "llama3-70b-train-32xh200: cost per step by GPUs and NIC link", d["title"]),
    (d["xlabel"] == "GPUs (8 x H200-SXM per hgx-h200 node)", d["xlabel"]),
    (d["xticks"] == ["16", "32", "64"], d["xticks"]),
    (d["ylabel"] == "cost (USD per step)", d["ylabel"]),
    (d["ylim"][0] == 0, d["ylim"]),
    ("model llama-3-70b" in d["caption"] and "hgx-h200" in d["caption"] and "calibration nccl.yaml (default)" in d["caption"]
     and f"ccsim {version}" in d["caption"] and "price 3 USD/GPU-h" in d["caption"], d["caption"]),
    (d["legend"] == ["ib-ndr = ib-xdr", "ib-xdr (= ib-ndr)"], d["legend"]),
    (len(d["ties"]) == 1 and "pcie-gen5" in d["ties"][0] and "48 GB/s" in d["ties"][0], d["ties"]),
    (o["xlabel"] == "tensor parallel size (TP) (GPUs)", o["xlabel"]),
    (o["infeasible"] == ["infeasible: out of memory"], o["infeasible"]),
]
bad = [str(found) for ok, found in checks if not ok]
if bad:
    print("plot --describe: unexpected", *bad, sep="\n  ")
    sys.exit(1)
PY
# Bad input: not a sweep file, exit 2.
scripts/plot "$scen" --out "$work/bad" 2>"$work/bad.err"; rc=$?
[ $rc -eq 2 ] || { echo "expected exit 2 for a non-sweep file, got $rc"; exit 1; }
grep -q "expected a sweep.csv" "$work/bad.err" || { echo "message missing"; cat "$work/bad.err"; exit 1; }
echo "plots written"
