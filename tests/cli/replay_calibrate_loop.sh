#!/usr/bin/env bash
# The calibration loop on this machine (docs/replay.md): replay an AllReduce on the
# host backend, fit the host model to that log with ccsim calibrate (every other size held
# out), predict every size with ccsim collective and the fitted table, and check the held-out
# sizes against the replay's own measurements. Error budget: mean absolute percentage error
# over the held-out sizes at most $CCSIM_LOOP_MAPE (default 15 %; see docs/replay.md for what was
# measured). The replay measures a shared, noisy 2-core machine: the test runs alone (ctest
# RUN_SERIAL) and replays up to three times, passing at the first within budget.
# Usage: replay_calibrate_loop.sh CCSIM SOURCE_DIR WORK_DIR
set -u
ccsim=$1; src=$2; work=$3
budget=${CCSIM_LOOP_MAPE:-15}
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
# A measurement needs the cores: when other work keeps them busy (runnable threads, from
# /proc/loadavg, at least the core count in every one of 5 samples over a second) the replay
# would measure that work — skipped (exit 77, ctest SKIP_RETURN_CODE), saying so.
busy=1000000
for _ in 1 2 3 4 5; do
  r=$(awk '{ split($4, a, "/"); print a[1] - 1 }' /proc/loadavg 2>/dev/null || echo 0)
  [ "$r" -lt "$busy" ] && busy=$r
  sleep 0.2
done
if [ "$busy" -ge "$(nproc)" ]; then
  echo "other work keeps $busy threads runnable on $(nproc) cores: the replay would measure it; skipped"; exit 77
fi
scenario=scenarios/host-replay.yaml
sizes=(-b 8 -e 2M -f 2)
# One algorithm throughout, named to calibrate as NCCL_ALGO would be: with NCCL's choice the
# replayed algorithm (ring or tree per size) and the one calibrate simulates could differ.
algo=(--algo ring --protocol Simple)
best=""
for attempt in 1 2 3; do
  d="$work/try$attempt"
  "$ccsim" replay $scenario --op allreduce --ranks 2 "${algo[@]}" "${sizes[@]}" -n 20 -w 5 --top 0 --out "$d/replay" >"$d.replay.out" 2>&1 \
    || { echo "replay failed"; cat "$d.replay.out"; exit 1; }
  grep -q "# Out of bounds values : 0 OK" "$d/replay/all_reduce_perf.log" || { echo "replay results wrong"; cat "$d/replay/all_reduce_perf.log"; exit 1; }
  "$ccsim" calibrate --scenario $scenario "${algo[@]}" "$d/replay/all_reduce_perf.log" --out "$d/fit.yaml" >"$d.calibrate.out" 2>&1 \
    || { echo "calibrate failed"; cat "$d.calibrate.out"; exit 1; }
  "$ccsim" collective $scenario --op allreduce --ranks 2 "${algo[@]}" "${sizes[@]}" --calibration "$d/fit.yaml" --format csv >"$d.predicted.csv" \
    || { echo "collective with the fitted table failed"; exit 1; }
  # Held-out sizes: calibrate's default holds out every other size, starting with the second.
  mape=$(awk -F'[ ,]+' '
    FNR == NR { if ($0 !~ /^#/ && NF >= 8) { sub(/^ +/, ""); split($0, f, / +/); measured[f[1]] = f[6]; order[++n] = f[1] } next }
    FNR > 1 { predicted[$1] = $6 }
    END {
      for (i = 2; i <= n; i += 2) { s = order[i]; if (!(s in predicted)) { print "missing " s; exit 1 }
        e = (predicted[s] - measured[s]) / measured[s]; if (e < 0) e = -e; sum += e; k++ }
      printf "%.1f\n", 100 * sum / k }' "$d/replay/all_reduce_perf.log" "$d.predicted.csv")
  echo "attempt $attempt: held-out MAPE $mape %"
  cat "$d.calibrate.out" | grep -E "MAPE|held-out|fit  " | head -20
  if [ -z "$best" ] || awk -v a="$mape" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$mape; fi
  awk -v a="$best" -v b="$budget" 'BEGIN { exit !(a <= b) }' && break
done
echo "best held-out MAPE: $best % (budget $budget %)"
awk -v a="$best" -v b="$budget" 'BEGIN { exit !(a <= b) }' || { echo "the fitted host model misses the held-out sizes"; exit 1; }
