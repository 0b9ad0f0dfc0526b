#!/usr/bin/env bash
# The scaling benchmark: wall time and peak memory of every configuration, each in
# its own process under a timeout, written to a CSV and reported by ccsim_bench_report as
# markdown tables with the growth exponent of every series. scripts/bench builds a Release tree
# and runs this; run it directly to use other binaries.
#
# Usage: tests/bench/scaling.sh --bin DIR [--out DIR] [--quick | --smoke] [--flow]
#                               [--timeout S] [--flow-timeout S] [--runs N] [--repeat-under S]
#   --bin DIR          build tree holding cli/ccsim and tests/bench/ccsim_bench_* (required)
#   --out DIR          where results.csv, results.md and the generated scenarios go
#                      (default DIR/bench)
#   --quick            a subset for CI-like checks (about 2 minutes on 2 idle cores)
#   --smoke            three tiny configurations (ok, timeout, refused) and the report: proves
#                      the harness works (ctest bench-smoke); no timing is asserted
#   --flow             adds the flow engine to the workload tables and the fabric variants
#                      (slow: --flow-timeout per configuration)
#   --sections LIST    the full run's sections to run, comma-separated (default all:
#                      cases,collective,variants,step,workloads,scaled)
#   --timeout S        per-configuration limit, seconds (default 60, --quick 30: the full run
#                      then takes about 20 minutes on 2 loaded cores, most of it in the
#                      configurations that reach the limit)
#   --flow-timeout S   the limit for flow-engine workload runs (default 600)
#   --runs N           runs of a fast configuration; wall is their median (default 3)
#   --repeat-under S   a configuration whose first run took under S seconds is run N times,
#                      a slower one once (default 2)
# Each configuration is one process under `timeout` (TERM, then KILL 5 s later; the flow
# engine's SimGrid child is in the same process group): wall time from bash's EPOCHREALTIME
# around it (microseconds; /usr/bin/time's %e has 10 ms steps), peak resident set of the
# process and its children from /usr/bin/time (%M, KiB). A run past the limit is
# recorded as "timeout" (the table prints "> S s"); once a size of a series times out, its
# larger sizes are recorded as "skipped" (printed "> S s (not run)") instead of spending the
# limit again (except direct AlltoAll, which runs at every size to show the planner's refusal
# above its schedule limit). Exit code 2 with "refused" on stderr (a schedule over the planner's size limit)
# is recorded as "refused".
set -euo pipefail
export LC_ALL=C   # decimal points in EPOCHREALTIME, awk and sort
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="" out="" mode=full flow=0 sections=cases,collective,variants,step,workloads,scaled limit="" flow_limit=600 runs=3 repeat_under=2
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --quick) mode=quick ;;
    --smoke) mode=smoke ;;
    --flow) flow=1 ;;
    --sections) sections=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --flow-timeout) flow_limit=$2; shift ;;
    --runs) runs=$2; shift ;;
    --repeat-under) repeat_under=$2; shift ;;
    *) echo "scaling.sh: error: unknown option '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$limit" ]; then case $mode in quick) limit=30 ;; *) limit=60 ;; esac; fi
[ -n "$bin" ] || { echo "scaling.sh: error: --bin: expected a build directory, found none" >&2; exit 2; }
bin="$(cd "$bin" && pwd)"
ccsim="$bin/cli/ccsim" bench="$bin/tests/bench"
for f in "$ccsim" "$bench/ccsim_bench_collective" "$bench/ccsim_bench_topology" "$bench/ccsim_bench_report"; do
  [ -x "$f" ] || { echo "scaling.sh: error: --bin: expected $f to be built, found no such executable" >&2; exit 2; }
done
out="${out:-$bin/bench}"
mkdir -p "$out/scenarios"
out="$(cd "$out" && pwd)"
csv="$out/results.csv"
echo "table,xname,x,n,column,status,runs,wall_s,rss_kib,run_s,transfers,timeout_s,note" >"$csv"
cd "$root"   # scenario paths below are relative to the checkout
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

declare -A timed_out   # "table|column" -> the size that ran past the limit
declare -A cache       # command line -> its measured fields (a configuration shared by tables)

clean() { printf '%s' "$1" | tr ',\n\r' ';  ' | cut -c1-160; }

# measure TABLE XNAME X N COLUMN LIMIT COMMAND...: runs COMMAND and appends one CSV row.
measure() {
  local table=$1 xname=$2 x=$3 n=$4 column=$5 lim=$6
  shift 6
  local key="$lim" fields a
  for a in "$@"; do  # files by content: a generated variant equal to another file is measured once
    if [ -f "$a" ]; then key+=" $(md5sum <"$a" | cut -c1-32)"; else key+=" $a"; fi
  done
  if [ -n "${cache["$key"]:-}" ]; then
    fields=${cache["$key"]}
  elif [ -n "$n" ] && [ -z "${NOSKIP:-}" ] && [ -n "${timed_out["$table|$column"]:-}" ]; then
    fields="skipped,0,,,,,$lim,$(clean "${timed_out["$table|$column"]} timed out")"
  else
    local walls=() run_all=() rss=0 rc status="" note="" run_s="" transfers="" i wall m t0 t1
    for ((i = 0; i < runs; ++i)); do
      rc=0
      t0=$EPOCHREALTIME
      /usr/bin/time -f "%M" -o "$tmp/time" timeout -k 5 "$lim" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
      t1=$EPOCHREALTIME
      if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status=timeout; break; fi
      if [ "$rc" -ne 0 ]; then
        if [ "$rc" -eq 2 ] && grep -qE "^refused|expected a schedule of at most" "$tmp/stderr"; then
          status=refused note="$(grep -m1 -E "^refused|schedule" "$tmp/stderr")"
        else
          status=failed note="exit $rc: $(grep -m1 -v '^\s*$' "$tmp/stderr" || true)"
        fi
        break
      fi
      wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
      m=$(tail -n1 "$tmp/time")
      walls+=("$wall")
      [ "$m" -gt "$rss" ] && rss=$m
      # ccsim_bench_collective: "... N transfers ... wall median T s ..."; ccsim_bench_topology:
      # "build median T s"
      read -r run_s transfers < <(awk '{ for (i = 1; i < NF; ++i) { if ($(i + 1) == "transfers") tr = $i
                                          if ($i == "median" && ($(i - 1) == "wall" || $(i - 1) == "build")) rs = $(i + 1) } }
                                        END { print (rs == "" ? "-" : rs), (tr == "" ? "-" : tr) }' "$tmp/stdout")
      [ "$run_s" != - ] && run_all+=("$run_s")
      [ "$transfers" = - ] && transfers=""
      awk -v w="$wall" -v u="$repeat_under" 'BEGIN { exit !(w >= u) }' && break
    done
    if [ -z "$status" ]; then
      status=ok
      wall=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
      run_s=""
      [ ${#run_all[@]} -gt 0 ] && run_s=$(printf '%s\n' "${run_all[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
      fields="ok,${#walls[@]},$wall,$rss,$run_s,$transfers,$lim,"
    else
      # a series (rows with a size) skips its larger sizes after a timeout; single cases do not
      [ "$status" = timeout ] && [ -n "$n" ] && timed_out["$table|$column"]="$x"
      fields="$status,0,,,,,$lim,$(clean "$note")"
    fi
    cache["$key"]=$fields
  fi
  echo "$(clean "$table"),$xname,$(clean "$x"),$n,$(clean "$column"),$fields" >>"$csv"
  printf '%-48s %-28s %-8s %s\n' "$(cut -c1-48 <<<"$table")" "$column" "$x" "$(cut -d, -f1-4 <<<"$fields")" >&2
}

# na TABLE XNAME X N COLUMN NOTE: a cell that does not apply (no fabric to vary, ...).
na() { echo "$(clean "$1"),$2,$(clean "$3"),$4,$(clean "$5"),na,0,,,,,,$(clean "$6")" >>"$csv"; }

gpus_of() { "$bench/ccsim_bench_topology" "$1" 1 | awk '$1 == "gpus" { print $2 }'; }
fabric_kind() { awk '/^  fabric:/ { f = 1; next } f && /^    kind:/ { print $2; exit } f && /^[^ ]/ { exit }' "$1"; }

variants=(rail tor 2to1 3tier)
declare -A variant_name=([rail]="rail-optimized" [tor]="ToR (2 nodes/leaf)" [2to1]="2:1 rail-optimized" [3tier]="3-tier ToR (pods 7:1)")

# --- collective series: algorithm x engine x ranks on the 16,384-GPU cluster and its variants
collective_table() {  # collective_table FABRIC ENGINES RANKS...
  local fabric=$1 engines=$2
  shift 2
  local scenario="$out/scenarios/h100-16k-$fabric.yaml"
  tests/bench/make_variant.sh scenarios/h100-16k-rail.yaml "$scenario" "$fabric"
  local table="collective 1 GiB on h100-16k ${variant_name[$fabric]} (first n GPUs; one channel; phase granularity where the algorithm has it)"
  local n algo engine label noskip
  for n in "$@"; do
    for engine in $engines; do
      for algo in ring tree hierarchical direct; do
        label="$algo" noskip=""
        # direct AlltoAll: the planner refuses it above its schedule limit; run every size, so
        # that a refusal shows as one (it takes a second) rather than as not run
        [ "$algo" = direct ] && label="alltoall (direct)" noskip=1
        NOSKIP=$noskip measure "$table" ranks "$n" "$n" "$label · $engine" "$limit" \
          "$bench/ccsim_bench_collective" "$scenario" "$engine" "$algo" phase "$n" 1073741824 1
      done
    done
  done
}

# --- step granularity (ring AllReduce chunk by chunk; ranks² transfers)
step_table() {  # step_table ANALYTIC_MAX FLOW_MAX
  local table="ring AllReduce 1 GiB at step granularity on h100-16k rail-optimized (one channel)" n
  for n in 64 256 1024; do
    [ "$n" -le "$1" ] && measure "$table" ranks "$n" "$n" "analytic" "$limit" \
      "$bench/ccsim_bench_collective" scenarios/h100-16k-rail.yaml analytic ring step "$n" 1073741824 1
    [ "$n" -le "$2" ] && measure "$table" ranks "$n" "$n" "flow" "$limit" \
      "$bench/ccsim_bench_collective" scenarios/h100-16k-rail.yaml flow ring step "$n" 1073741824 1
  done
  return 0
}

# --- ccsim run of every shipped workload scenario on each fabric variant
workload_table() {  # workload_table ENGINE LIMIT VARIANTS...
  local engine=$1 lim=$2
  shift 2
  local table="ccsim run of the shipped workloads ($engine)" file name gpus kind v variant
  for file in scenarios/workloads/*.yaml; do
    name=$(basename "$file" .yaml)
    gpus=$(gpus_of "$file")
    kind=$(fabric_kind "$file")
    for v in "$@"; do
      if [ -z "$kind" ] || { [ "$kind" != fat-tree ] && [ "$v" != rail ]; }; then
        if [ "$v" = "$1" ]; then
          measure "$table" GPUs "$name" "$gpus" "${variant_name[rail]}" "$lim" "$ccsim" run "$file" --engine "$engine"
        else
          na "$table" GPUs "$name" "$gpus" "${variant_name[$v]}" "$([ -z "$kind" ] && echo "no fabric" || echo "$kind fabric")"
        fi
        continue
      fi
      variant="$out/scenarios/$name-$v.yaml"
      if ! tests/bench/make_variant.sh "$file" "$variant" "$v" 2>"$tmp/variant"; then
        na "$table" GPUs "$name" "$gpus" "${variant_name[$v]}" "$(cat "$tmp/variant")"
        continue
      fi
      measure "$table" GPUs "$name" "$gpus" "${variant_name[$v]}" "$lim" "$ccsim" run "$variant" --engine "$engine"
    done
  done
}

# --- one workload scaled: Llama-3.1-405B, TP 8 x PP 16 x DP d (128·d GPUs), 16 micro-batches
scaled_table() {  # scaled_table ENGINE LIMIT "DPS" VARIANTS...
  local engine=$1 lim=$2 dps=$3
  shift 3
  local table="ccsim run of Llama-3.1-405B TP8 PP16 DP d with 16 micro-batches ($engine)" d v variant
  for d in $dps; do
    for v in "$@"; do
      variant="$out/scenarios/llama3-405b-dp$d-$v.yaml"
      tests/bench/make_variant.sh scenarios/workloads/llama3-405b-train-16kxh100.yaml "$variant" "$v" \
        nodes.count=$((16 * d)) strategy.dp="$d" workload.global_batch_size=$((16 * d))
      # every size runs: this series is not monotone (DP 64 has taken longer than DP 128)
      NOSKIP=1 measure "$table" GPUs "$((128 * d))" "$((128 * d))" "${variant_name[$v]}" "$lim" "$ccsim" run "$variant" --engine "$engine"
    done
  done
}

# --- single cases: the rows of docs/performance.md's large-cases table
cases_table() {  # cases_table quick|full
  local t="single cases (the large cases of docs/performance.md)" c="time · memory"
  measure "$t" case "topology build 16384 GPUs" "" "$c" "$limit" "$bench/ccsim_bench_topology" scenarios/h100-16k-rail.yaml 1
  measure "$t" case "ccsim topo 16384 GPUs (bisection max-flow)" "" "$c" "$limit" "$ccsim" topo scenarios/h100-16k-rail.yaml
  measure "$t" case "8-GPU AllReduce 1 GiB (dgx-h100-1node; auto)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/dgx-h100-1node.yaml --op allreduce -b 1G -e 1G
  measure "$t" case "64-rank ring AllReduce 1 GiB (h100-1024gpu-2to1)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/h100-1024gpu-2to1.yaml --ranks 64 --op allreduce --algo ring -b 1G -e 1G
  [ "$1" = quick ] && return 0
  measure "$t" case "ccsim topo 262144 GPUs (cluster cap)" "" "$c" "$limit" "$ccsim" topo tests/bench/cluster-at-cap.yaml
  measure "$t" case "sweep 8 B - 8 GiB auto 1024 ranks (h100-1024gpu-2to1)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/h100-1024gpu-2to1.yaml --op allreduce -b 8 -e 8G -f 2
  measure "$t" case "AlltoAll 1 MiB 288 GPUs (nvl72-4rack)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/nvl72-4rack.yaml --op alltoall -b 1M -e 1M
  measure "$t" case "AlltoAll 1 MiB 1024 GPUs (h100-1024gpu-2to1)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/h100-1024gpu-2to1.yaml --op alltoall -b 1M -e 1M
  measure "$t" case "AlltoAll 1 MiB 16384 GPUs (h100-16k-rail)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/h100-16k-rail.yaml --op alltoall -b 1M -e 1M
  measure "$t" case "AlltoAll 256 MiB 256 ranks analytic-reference sharing" "" "$c" "$limit" \
    "$bench/ccsim_bench_collective" scenarios/h100-1024gpu-2to1.yaml analytic-reference direct phase 256 268435456 1
  measure "$t" case "flow hierarchical AllReduce 1 GiB 1024 ranks (h100-1024gpu-2to1)" "" "$c" "$limit" \
    "$bench/ccsim_bench_collective" scenarios/h100-1024gpu-2to1.yaml flow hierarchical phase 1024 1073741824 1
  measure "$t" case "flow ring AllReduce 1 GiB 4096 ranks (auto channels)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/h100-16k-rail.yaml --ranks 4096 --op allreduce --algo ring -b 1G -e 1G --engine flow
  measure "$t" case "flow ring AllReduce 1 GiB 16384 ranks (auto channels)" "" "$c" "$limit" \
    "$ccsim" collective scenarios/h100-16k-rail.yaml --op allreduce --algo ring -b 1G -e 1G --engine flow
}

case $mode in
  smoke)
    # ok (two sizes, so the fit runs), timeout (a step ring of 1,024 ranks: minutes), refused
    # (direct AlltoAll on 4,096 ranks: over the schedule limit)
    t="smoke: ring AllReduce 1 MiB (dgx-h100-1node)"
    measure "$t" ranks 4 4 "ring · analytic" "$limit" "$bench/ccsim_bench_collective" scenarios/dgx-h100-1node.yaml analytic ring phase 4 1048576 1
    measure "$t" ranks 8 8 "ring · analytic" "$limit" "$bench/ccsim_bench_collective" scenarios/dgx-h100-1node.yaml analytic ring phase 8 1048576 1
    t="smoke: limits (h100-16k-rail)"
    measure "$t" ranks 1024 1024 "ring step · analytic" 2 "$bench/ccsim_bench_collective" scenarios/h100-16k-rail.yaml analytic ring step 1024 1073741824 1
    measure "$t" ranks 4096 4096 "ring step · analytic" 2 "$bench/ccsim_bench_collective" scenarios/h100-16k-rail.yaml analytic ring step 4096 1073741824 1
    measure "$t" ranks 4096 4096 "alltoall (direct) · analytic" "$limit" "$bench/ccsim_bench_collective" scenarios/h100-16k-rail.yaml analytic direct phase 4096 1048576 1
    ;;
  quick)
    cases_table quick
    collective_table rail "analytic flow" 64 256 1024
    workload_table analytic "$limit" rail
    for v in "${variants[@]}"; do
      tests/bench/make_variant.sh scenarios/workloads/llama3-70b-train-64xh100.yaml "$out/scenarios/llama3-70b-$v.yaml" "$v"
      measure "ccsim run of Llama-3-70B on 64 H100 by fabric (analytic)" GPUs llama3-70b-train-64xh100 64 "${variant_name[$v]}" \
        "$limit" "$ccsim" run "$out/scenarios/llama3-70b-$v.yaml" --engine analytic
    done
    ;;
  full)
    on() { [[ ",$sections," == *",$1,"* ]]; }
    if on cases; then cases_table full; fi
    if on collective; then collective_table rail "analytic flow" 64 256 1024 4096 16384; fi
    if on variants; then
      for v in tor 2to1 3tier; do
        if [ "$flow" = 1 ]; then collective_table "$v" "analytic flow" 64 256 1024 4096 16384
        else collective_table "$v" analytic 64 256 1024 4096 16384; fi
      done
    fi
    if on step; then step_table 1024 256; fi
    if on workloads; then
      workload_table analytic "$limit" "${variants[@]}"
      if [ "$flow" = 1 ]; then workload_table flow "$flow_limit" "${variants[@]}"; fi
    fi
    if on scaled; then
      scaled_table analytic "$limit" "1 4 16 64 128" "${variants[@]}"
      if [ "$flow" = 1 ]; then scaled_table flow "$flow_limit" "1 4 16 64 128" rail; fi
    fi
    ;;
esac

"$bench/ccsim_bench_report" "$csv" >"$out/results.md"
cat "$out/results.md"
echo "CSV: $csv" >&2
echo "markdown: $out/results.md" >&2
