#!/usr/bin/env bash
# The `ccsim plan` benchmark: how fast the layout search simulates candidates, run by hand
# (scripts/bench does not run it; ctest's bench_smoke.plan runs --smoke, which times nothing).
# Each configuration is one process under `timeout`; wall time from bash's EPOCHREALTIME around
# it, and ccsim's own figures from its stderr line "ccsim plan: N candidates simulated in S s
# (R/s, F full runs); ...". Reported: the median of --runs runs (wall, ccsim's search seconds,
# candidates/s) and the ratios between configurations, as results.md (markdown) and results.csv.
#
# Usage: tests/bench/plan_bench.sh --bin DIR [--out DIR] [--quick | --smoke] [--runs N] [--timeout S]
#   --bin DIR      build tree holding cli/ccsim (required)
#   --out DIR      where results.csv and results.md go (default DIR/bench-plan)
#   --runs N       runs per configuration, their median reported (default 3; a configuration
#                  whose first run takes over 120 s runs once)
#   --timeout S    per-run limit in seconds (default 1800; --quick 120). The whole default space
#                  of the 16,384-GPU Llama-3.1-405B scenario takes minutes: past the limit it is
#                  recorded as "timeout" and printed "> S s"
#   --quick        the 70B search narrowed to PP 2 (--fix pp=2), the 405B one under a 120 s limit
#   --smoke        a 16-GPU Llama-3-8B search with a narrow space (ok) and the 405B search
#                  under a 1 s limit (timeout): proves the harness works, times nothing
# Configurations (full run):
#   70b-jobs1     scenarios/workloads/llama3-70b-train-64xh100.yaml, default space, --jobs 1:
#                 candidates per second of one thread
#   70b-jobsN     the same with the default --jobs (the machine's hardware threads)
#   405b-jobsN    scenarios/workloads/llama3-405b-train-16kxh100.yaml, default space, default jobs
set -euo pipefail
export LC_ALL=C
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="" out="" mode=full runs=3 limit=""
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --runs) runs=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --quick) mode=quick ;;
    --smoke) mode=smoke ;;
    *) echo "plan_bench.sh: error: unknown option '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$bin" ] || { echo "plan_bench.sh: error: --bin: expected a build directory, found none" >&2; exit 2; }
case $runs in '' | *[!0-9]* | 0) echo "plan_bench.sh: error: --runs: expected a positive integer, found '$runs'" >&2; exit 2 ;; esac
if [ -z "$limit" ]; then case $mode in quick) limit=120 ;; smoke) limit=1 ;; *) limit=1800 ;; esac; fi
bin="$(cd "$bin" && pwd)"
ccsim="$bin/cli/ccsim"
[ -x "$ccsim" ] || { echo "plan_bench.sh: error: --bin: expected $ccsim to be built, found no such executable" >&2; exit 2; }
out="${out:-$bin/bench-plan}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
csv="$out/results.csv"
echo "config,status,runs,wall_s,search_s,candidates,candidates_per_s,full_runs,timeout_s,command" >"$csv"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# measure NAME LIMIT ARGS...: runs `ccsim plan ARGS` up to $runs times; appends one CSV row.
measure() {
  local name=$1 lim=$2
  shift 2
  local walls=() searches=() rates=() n="" full="" status=ok rc i t0 t1 wall line
  for ((i = 0; i < runs; ++i)); do
    rc=0
    t0=$EPOCHREALTIME
    timeout -k 5 "$lim" "$ccsim" plan "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
    t1=$EPOCHREALTIME
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status=timeout; break; fi
    if [ "$rc" -ne 0 ]; then status="failed (exit $rc: $(grep -m1 -v '^\s*$' "$tmp/stderr" | tr ',\n' '; ' | cut -c1-120))"; break; fi
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    line=$(grep -m1 "candidates simulated in" "$tmp/stderr" || true)
    [ -n "$line" ] || { status="failed (no 'candidates simulated' line on stderr)"; break; }
    # "ccsim plan: 1281 candidates simulated in 38.67 s (33/s, 274 full runs); ..."
    read -r n s r full < <(sed -E 's/^ccsim plan: ([0-9]+) candidates simulated in ([0-9.]+) s \(([0-9.]+)\/s, ([0-9]+) full runs\).*/\1 \2 \3 \4/' <<<"$line")
    walls+=("$wall") searches+=("$s")
    # ccsim prints the rate rounded to a whole number; recompute it from N and S.
    rates+=("$(awk -v n="$n" -v s="$s" 'BEGIN { printf "%.2f", (s > 0 ? n / s : 0) }')")
    awk -v w="$wall" 'BEGIN { exit !(w > 120) }' && break
  done
  local cmd="ccsim plan $*"
  if [ "$status" = ok ]; then
    echo "$name,ok,${#walls[@]},$(printf '%s\n' "${walls[@]}" | median),$(printf '%s\n' "${searches[@]}" | median),$n,$(printf '%s\n' "${rates[@]}" | median),$full,$lim,$cmd" >>"$csv"
  else
    echo "$name,$status,${#walls[@]},,,,,,$lim,$cmd" >>"$csv"
  fi
  echo "plan_bench: $name: $status" >&2
}

s70=scenarios/workloads/llama3-70b-train-64xh100.yaml
s405=scenarios/workloads/llama3-405b-train-16kxh100.yaml
case $mode in
  smoke)
    measure 8b-narrow 60 tests/data/plan/llama3-8b-train-16xh100.yaml --space tp=1,2 --space pp=1,2 --fix zero=1 --fix mbs=1 \
      --fix recompute=selective --fix tp_overlap=false --jobs 1
    measure 405b-jobsN "$limit" $s405 ;;
  quick)
    measure 70b-jobs1 "$limit" $s70 --fix pp=2 --jobs 1
    measure 70b-jobsN "$limit" $s70 --fix pp=2
    measure 405b-jobsN "$limit" $s405 ;;
  full)
    measure 70b-jobs1 "$limit" $s70 --jobs 1
    measure 70b-jobsN "$limit" $s70
    measure 405b-jobsN "$limit" $s405 ;;
esac

# The report: one row per configuration, then the ratios that can be formed.
{
  echo "### ccsim plan: candidates simulated per second ($mode, $(nproc) hardware threads, median of up to $runs runs)"
  echo
  echo "| configuration | status | runs | wall (s) | search (s) | candidates | candidates/s | full runs |"
  echo "|---|---|---|---|---|---|---|---|"
  awk -F, 'NR > 1 { if ($2 == "ok") printf "| %s | ok | %s | %s | %s | %s | %s | %s |\n", $1, $3, $4, $5, $6, $7, $8
                    else if ($2 == "timeout") printf "| %s | timeout | %s | > %s s | | | | |\n", $1, $3, $9
                    else printf "| %s | %s | %s | | | | | |\n", $1, $2, $3 }' "$csv"
  echo
  awk -F, 'NR > 1 && $2 == "ok" { rate[$1] = $7; wall[$1] = $4 }
           END { if (("70b-jobs1" in rate) && ("70b-jobsN" in rate) && rate["70b-jobs1"] > 0)
                   printf "- 70B search, default jobs vs --jobs 1: %.2f× the candidates per second\n", rate["70b-jobsN"] / rate["70b-jobs1"]
                 if (("405b-jobsN" in wall) && ("70b-jobsN" in wall) && wall["70b-jobsN"] > 0)
                   printf "- 405B (16,384 GPUs) vs 70B (64 GPUs) whole search, default jobs: %.2f× the wall time\n", wall["405b-jobsN"] / wall["70b-jobsN"] }' "$csv"
  echo
  echo "Commands (from the source tree):"
  echo
  awk -F, 'NR > 1 { c = $10; for (i = 11; i <= NF; ++i) c = c "," $i; printf "- %s: `%s`\n", $1, c }' "$csv"
} >"$out/results.md"
cat "$out/results.md"
