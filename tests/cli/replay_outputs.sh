#!/usr/bin/env bash
# ccsim replay's files and exit codes (measured times vary, so the structure is pinned, not the
# text): --out writes the log, trace.json, ops.csv and replay.json; the log's table has the
# sizes of -b/-e/-f rounded to whole elements, #wrong 0, and is what stdout starts with; ccsim
# compare and ccsim calibrate --holdout none read it; trace.json's simulated process is the
# timeline ccsim collective computes for the same Schedule (same makespan) with the same
# (rank, op) ids as the measured process and ops.csv; a 1-rank replay works (nccl-tests runs on
# one GPU); backends not built or without a device exit 3 naming the backend; --out naming a
# file exits 2 and leaves it unchanged; a stale log in --out is replaced.
# Usage: replay_outputs.sh CCSIM SOURCE_DIR WORK_DIR
set -u
ccsim=$1; src=$2; work=$3
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
scen=scenarios/dgx-h100-1node.yaml

# --- a 4-rank AllReduce, 1K to 1M by 4 -------------------------------------------------------
out=$work/ar
mkdir -p "$out"; echo "stale log of an earlier run" >"$out/all_reduce_perf.log"
"$ccsim" replay $scen --op allreduce --ranks 4 -b 1K -e 1M -f 4 -n 2 -w 1 --top 3 --out "$out" >"$work/ar.txt" 2>"$work/ar.err"
rc=$?
[ $rc -eq 0 ] || fail "replay exited $rc: $(cat "$work/ar.err")"
for f in all_reduce_perf.log trace.json ops.csv replay.json; do [ -s "$out/$f" ] || fail "--out lacks $f"; done
[ "$(ls -A "$out" | wc -l)" -eq 4 ] || fail "--out holds other files: $(ls -A "$out")"
grep -q stale "$out/all_reduce_perf.log" && fail "the stale log was not replaced"
log=$out/all_reduce_perf.log
# stdout is the log, then the per-op comparison.
head -c "$(wc -c <"$log")" "$work/ar.txt" | cmp -s - "$log" || fail "stdout does not start with the log"
grep -q "^# Per-op comparison at 1048576 bytes" "$work/ar.txt" || fail "no per-op comparison of the largest size"
[ "$(grep -Ec '^# +[0-9]+ +[0-9]+  [a-z-]+ ' "$work/ar.txt")" -eq 3 ] || fail "--top 3: expected 3 comparison rows"
# The table: sizes 1K·4^k, count = size / 4, type float, #wrong 0.
table=$(grep -v '^#' "$log" | awk '{print $1, $2, $3, $4, $5, $NF}' | tr '\n' ';')
expect="1024 256 float sum -1 0;4096 1024 float sum -1 0;16384 4096 float sum -1 0;65536 16384 float sum -1 0;262144 65536 float sum -1 0;1048576 262144 float sum -1 0;"
[ "$table" = "$expect" ] || fail "log table: expected '$expect', found '$table'"
grep -q "^# Out of bounds values : 0 OK" "$log" || fail "log lacks '# Out of bounds values : 0 OK'"
grep -q "^#  Rank  3 Group  0 on host backend rank  3" "$log" || fail "log lacks the rank lines"

# The log is read by ccsim compare and ccsim calibrate.
"$ccsim" compare "$log" --scenario $scen >"$work/compare.txt" 2>&1 || fail "ccsim compare failed: $(cat "$work/compare.txt")"
grep -q "all_reduce_perf (AllReduce) over 4 ranks" "$work/compare.txt" || fail "compare did not read 4 ranks of AllReduce"
[ "$(grep -c '^  *[0-9]' "$work/compare.txt")" -eq 6 ] || fail "compare did not read 6 rows"
# calibrate reads all 6 rows; whether they determine a fit depends on the measured times (the
# protocols NCCL's choice gives them): a fit, or the error that counts the rows it read.
"$ccsim" calibrate "$log" --scenario $scen --holdout none >"$work/calibrate.txt" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
  grep -q "6 rows (6 fitted, 0 held out" "$work/calibrate.txt" || fail "calibrate did not fit the 6 rows: $(cat "$work/calibrate.txt")"
else
  [ $rc -eq 2 ] && grep -q "found too few rows; 6 fitted rows cannot determine" "$work/calibrate.txt" ||
    fail "ccsim calibrate exited $rc: $(cat "$work/calibrate.txt")"
fi

# trace.json: "X" events as "pid tid op ts dur" (nlohmann writes keys sorted, on one line).
grep -o '"op":[0-9]*,"peer":-*[0-9]*},"dur":[^,]*,"name":"[^"]*","ph":"X","pid":[12],"tid":[0-9]*,"ts":[-0-9.e+]*' "$out/trace.json" |
  sed -E 's/"op":([0-9]+),.*"dur":([^,]+),.*"pid":([12]),"tid":([0-9]+),"ts":(.*)/\3 \4 \1 \5 \2/' >"$work/events.txt"
[ -s "$work/events.txt" ] || fail "no X events in trace.json"
awk '$1 == 1 {print $2, $3}' "$work/events.txt" | sort >"$work/measured.ids"
awk '$1 == 2 {print $2, $3}' "$work/events.txt" | sort >"$work/simulated.ids"
cmp -s "$work/measured.ids" "$work/simulated.ids" || fail "measured and simulated processes have different (rank, op) ids"
[ "$(sort -u "$work/measured.ids" | wc -l)" -eq "$(wc -l <"$work/measured.ids")" ] || fail "an op appears twice in trace.json"
# ops.csv: one row per op of the traced size, the same ids, and the op count of the log's schedule line.
tail -n +2 "$out/ops.csv" | awk -F, '$1 == 1048576 {print $2, $3}' | sort >"$work/csv.ids"
cmp -s "$work/csv.ids" "$work/measured.ids" || fail "ops.csv's (rank, op) at 1M differ from trace.json's"
ops=$(awk '/^# *1048576  [a-z-]*\// {print $4; exit}' "$log")
[ -n "$ops" ] && [ "$(wc -l <"$work/csv.ids")" -eq "$ops" ] || fail "trace has $(wc -l <"$work/csv.ids") ops, the log's schedule line says '$ops'"
# Every size's ops are in ops.csv: as many rows as the log's schedule line says.
for size in 1024 4096 16384 65536 262144 1048576; do
  n=$(awk -v s=$size '$2 == s && $3 ~ /\// {print $4; exit}' "$log")
  rows=$(awk -F, -v s=$size '$1 == s' "$out/ops.csv" | wc -l)
  [ -n "$n" ] && [ "$rows" -eq "$n" ] || fail "ops.csv has $rows rows at $size B, the log's schedule line says '$n' ops"
done
for r in 0 1 2 3; do
  [ "$(awk -v r=$r '$1 == r' "$work/csv.ids" | wc -l)" -gt 0 ] || fail "rank $r has no ops in ops.csv"
done
# The simulated makespan (last end of process 2) is ccsim collective's time for the same Schedule.
algo=$(awk '/^# *1048576  [a-z-]*\// {split($3, a, "/"); print a[1], a[2]; exit}' "$log")
set -- $algo
[ $# -eq 2 ] || fail "no schedule line for 1048576 in the log"
sim_end=$(awk '$1 == 2 {e = $4 + $5; if (e > m) m = e} END {printf "%.6f", m}' "$work/events.txt")
"$ccsim" collective $scen --op allreduce --ranks 4 -b 1M -e 1M --algo "$1" --protocol "$2" --granularity step --format csv >"$work/collective.csv" ||
  fail "ccsim collective failed"
col_time=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; ++i) if ($i == "time_us") c = i} NR == 2 {print $c}' "$work/collective.csv")
[ -n "$col_time" ] || fail "no time_us in ccsim collective's csv: $(cat "$work/collective.csv")"
awk -v a="$sim_end" -v b="$col_time" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= 1e-3 * b + 1e-3)}' ||
  fail "simulated makespan in trace.json $sim_end us differs from ccsim collective's $col_time us"
grep -q '"wrong": 0' "$out/replay.json" || fail "replay.json lacks wrong: 0"
[ "$(grep -c '"size_B"' "$out/replay.json")" -eq 6 ] || fail "replay.json does not list 6 sizes"

# --- 1 rank, 3 ranks, -n 1 -w 0 ----------------------------------------------------------------
for r in 1 3; do
  "$ccsim" replay $scen --op allreduce --ranks $r -b 8 -e 64K -f 8 -n 1 -w 0 --top 0 >"$work/r$r.txt" 2>&1 || fail "$r-rank replay failed: $(cat "$work/r$r.txt")"
  [ "$(grep -v '^#' "$work/r$r.txt" | awk '$NF != 0' | wc -l)" -eq 0 ] || fail "$r ranks: a wrong count is not 0"
  [ "$(grep -vc '^#' "$work/r$r.txt")" -eq 5 ] || fail "$r ranks: expected 5 sizes (8 B to 32 KiB by 8)"
done
grep -q "nGpus 1 " "$work/r1.txt" || fail "1-rank log header lacks nGpus 1"
# --top 0: the comparison title and column header, no rows.
[ "$(grep -A5 '^# Per-op comparison' "$work/r3.txt" | wc -l)" -eq 2 ] || fail "--top 0 printed comparison rows"

# --- backends this build may lack: exit 3 naming the backend (or 0 where it runs) ----------------
for b in cuda verbs mpi; do
  "$ccsim" replay $scen --op allreduce -b 1K -e 1K -n 1 -w 0 --backend $b >"$work/$b.txt" 2>"$work/$b.err"
  rc=$?
  if [ $rc -eq 3 ]; then
    grep -q "$b" "$work/$b.err" || fail "--backend $b: exit 3 without naming the backend: $(cat "$work/$b.err")"
    [ ! -s "$work/$b.txt" ] || fail "--backend $b: exit 3 with output on stdout"
  elif [ $rc -ne 0 ]; then
    fail "--backend $b: expected exit 3 (cannot run here) or 0, got $rc: $(cat "$work/$b.err")"
  fi
done

# --- --out naming a regular file: exit 2, the file untouched, nothing on stdout ------------------
printf 'keep me\n' >"$work/file"
"$ccsim" replay $scen --op allreduce --ranks 2 -b 1K -e 1K -n 1 -w 0 --out "$work/file" >"$work/file.txt" 2>"$work/file.err"
rc=$?
[ $rc -eq 2 ] || fail "--out a file: expected exit 2, got $rc"
[ "$(cat "$work/file")" = "keep me" ] || fail "--out a file: the file was changed"
[ ! -s "$work/file.txt" ] || fail "--out a file: output on stdout"
grep -q -- "--out $work/file: exists and is not a directory" "$work/file.err" || fail "--out a file: message $(cat "$work/file.err")"
# Bad input with --out: the directory is not created.
"$ccsim" replay $scen --op allreduce -b 0 --out "$work/bad" >/dev/null 2>&1
[ $? -eq 2 ] || fail "-b 0: expected exit 2"
[ ! -e "$work/bad" ] || fail "bad input created --out"
# A size the planner refuses (ring on 1024 ranks at step granularity: too many ops) stops with
# exit 2 after --out was created: the directory is removed again.
"$ccsim" replay scenarios/h100-1024gpu-2to1.yaml --op allreduce --algo ring -b 1G -e 1G -n 1 -w 0 --out "$work/big" >/dev/null 2>"$work/big.err"
rc=$?
[ $rc -eq 2 ] || fail "schedule too large: expected exit 2, got $rc: $(cat "$work/big.err")"
grep -q "expected a schedule of at most" "$work/big.err" || fail "schedule too large: message $(cat "$work/big.err")"
[ ! -e "$work/big" ] || fail "schedule too large: --out left behind"
# Buffers beyond the host's memory (8 ranks × 32 GiB at -e 16G): exit 3 before allocating, where
# the host has less than 256 GiB available (elsewhere the replay would run: not tried).
avail_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null)
if [ -n "$avail_kib" ] && [ "$avail_kib" -lt $((200 * 1024 * 1024)) ]; then
  "$ccsim" replay $scen --op allreduce -b 16G -e 16G -n 1 -w 0 --out "$work/huge" >/dev/null 2>"$work/huge.err"
  rc=$?
  [ $rc -eq 3 ] || fail "-e 16G on 8 ranks: expected exit 3, got $rc: $(cat "$work/huge.err")"
  grep -q "the host backend needs 256.00 GiB of host memory for 8 ranks" "$work/huge.err" || fail "-e 16G: message $(cat "$work/huge.err")"
  [ ! -e "$work/huge" ] || fail "-e 16G: --out left behind"
fi
ls -A "$out" | grep -q '\.tmp' && fail "a temporary file was left in --out"
echo "ok"
