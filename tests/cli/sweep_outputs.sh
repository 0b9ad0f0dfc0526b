#!/usr/bin/env bash
# ccsim sweep's files and exit codes: --out writes sweep.csv and sweep.json, equal to what
# --format csv / json print and the same bytes on a second run; a sweep whose every point is
# infeasible exits 3 with its rows printed and written; bad input exits 2 and creates nothing;
# --out naming a file exits 2 before any point runs.
# Usage: sweep_outputs.sh CCSIM SOURCE_DIR WORK_DIR
set -u
ccsim=$1; src=$2; work=$3
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
fail() { echo "$*"; exit 1; }
scen=scenarios/workloads/llama31-8b-decode-tp2.yaml
args=(sweep $scen --set strategy.tp=1,2,4 --set strategy.dp=auto --set workload.context_length=1024,8192)
"$ccsim" "${args[@]}" --out "$work/a" >"$work/a.txt" || fail "sweep failed"
"$ccsim" "${args[@]}" --out "$work/b" --format csv >"$work/b.csv" || fail "sweep --format csv failed"
"$ccsim" "${args[@]}" --format json >"$work/c.json" || fail "sweep --format json failed"
cmp "$work/a/sweep.csv" "$work/b/sweep.csv" || fail "sweep.csv differs between two runs"
cmp "$work/a/sweep.json" "$work/b/sweep.json" || fail "sweep.json differs between two runs"
cmp "$work/a/sweep.csv" "$work/b.csv" || fail "--format csv differs from sweep.csv"
cmp "$work/a/sweep.json" "$work/c.json" || fail "--format json differs from sweep.json"
[ "$(wc -l <"$work/a/sweep.csv")" -eq 7 ] || fail "expected 6 points and a header in sweep.csv"
grep -q '"schema": "ccsim.sweep/1"' "$work/a/sweep.json" || fail "sweep.json lacks its schema"
ls -A "$work/a" | grep -q '\.tmp' && fail "a temporary file was left in --out"

# Every point infeasible (tp 3 divides neither the 4 GPUs nor the 32 heads): exit 3, rows kept.
"$ccsim" sweep $scen --set strategy.tp=3 --set strategy.dp=auto --out "$work/none" >"$work/none.txt"
rc=$?
[ $rc -eq 3 ] || fail "all points infeasible: expected exit 3, got $rc"
grep -q "no" "$work/none.txt" || fail "the infeasible row is not printed"
grep -q "strategy.tp: expected tp·pp·cp dividing the cluster's 4 GPUs" "$work/none/sweep.csv" || fail "the reason is not in sweep.csv"

# A swept node count against the scenario's own dp: an infeasible row that says how to derive dp.
"$ccsim" sweep scenarios/workloads/llama3-70b-train-64xh100.yaml --set cluster.nodes[0].count=4,8 >"$work/dp.txt" || fail "dp sweep failed"
grep -q "found '4' (--set strategy.dp=auto derives dp from the GPUs)" "$work/dp.txt" || fail "no dp hint: $(cat "$work/dp.txt")"

# Bad input in the last point: exit 2 before anything runs, --out not created.
"$ccsim" sweep $scen --set strategy.tp=2,4,four --out "$work/bad" >"$work/bad.txt" 2>"$work/bad.err"
rc=$?
[ $rc -eq 2 ] || fail "bad value: expected exit 2, got $rc"
[ ! -e "$work/bad" ] || fail "--out created despite bad input"
[ ! -s "$work/bad.txt" ] || fail "stdout not empty on bad input"
grep -q -- "--set strategy.tp" "$work/bad.err" || fail "the error does not name --set strategy.tp: $(cat "$work/bad.err")"

# --out naming a regular file: exit 2, before any point.
touch "$work/file"
"$ccsim" sweep $scen --set workload.batch_size=1 --out "$work/file" >/dev/null 2>"$work/file.err"
rc=$?
[ $rc -eq 2 ] || fail "--out FILE: expected exit 2, got $rc"
grep -q "exists and is not a directory" "$work/file.err" || fail "--out FILE: message missing"
echo "sweep outputs ok"
