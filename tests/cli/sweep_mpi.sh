#!/usr/bin/env bash
# ccsim sweep under mpirun: the same small sweep serially and with `mpirun -n 2` on this machine
# must print and write the same bytes; a bad --set under mpirun exits 2 with the message printed
# once and nothing written. Exit 77 (ctest SKIP_RETURN_CODE) when mpirun is missing or cannot
# start two local ranks here (a sandbox without a usable launcher).
# Usage: sweep_mpi.sh CCSIM SOURCE_DIR WORK_DIR
set -u
ccsim=$1; src=$2; work=$3
. "$(dirname "$0")/../mpi_local.sh"  # skips without mpirun; OpenMPI for local ranks
mpi=(mpirun -n 2 --oversubscribe)
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
if ! "${mpi[@]}" true >"$work/probe.log" 2>&1; then
  echo "mpirun cannot start 2 local ranks here: skipped"; cat "$work/probe.log"; exit 77
fi
args=(sweep scenarios/workloads/llama31-8b-decode-tp2.yaml --set strategy.tp=1,2,3,4 --set strategy.dp=auto
      --set workload.batch_size=1,16,64 --price-per-gpu-hour 2.5)
"$ccsim" "${args[@]}" --out "$work/serial" >"$work/serial.stdout" || { echo "serial run failed"; exit 1; }
"${mpi[@]}" "$ccsim" "${args[@]}" --out "$work/mpi" >"$work/mpi.stdout" 2>"$work/mpi.stderr" || { echo "mpirun run failed"; cat "$work/mpi.stderr"; exit 1; }
for f in sweep.csv sweep.json; do
  cmp "$work/serial/$f" "$work/mpi/$f" || { echo "$f differs between the serial and the 2-rank run"; exit 1; }
done
cmp "$work/serial.stdout" "$work/mpi.stdout" || { echo "stdout differs"; diff "$work/serial.stdout" "$work/mpi.stdout"; exit 1; }
[ "$(wc -l <"$work/serial/sweep.csv")" -eq 13 ] || { echo "expected 12 rows and a header"; exit 1; }
# 5 ranks, 12 points: uneven shares (3, 3, 2, 2, 2) give the same bytes.
mpirun -n 5 --oversubscribe "$ccsim" "${args[@]}" --out "$work/mpi5" >"$work/mpi5.stdout" 2>"$work/mpi5.stderr" || { echo "5-rank run failed"; cat "$work/mpi5.stderr"; exit 1; }
cmp "$work/serial/sweep.csv" "$work/mpi5/sweep.csv" && cmp "$work/serial/sweep.json" "$work/mpi5/sweep.json" || { echo "5-rank files differ"; exit 1; }

# Bad input on every rank: exit 2, the message once, nothing written.
"${mpi[@]}" "$ccsim" sweep scenarios/workloads/llama31-8b-decode-tp2.yaml --set cluster.nodes[3].count=1,2 --out "$work/bad" \
  >"$work/bad.stdout" 2>"$work/bad.stderr"
rc=$?
[ $rc -eq 2 ] || { echo "bad --set under mpirun: expected exit 2, got $rc"; cat "$work/bad.stderr"; exit 1; }
n=$(grep -c -- "--set cluster.nodes\[3\].count" "$work/bad.stderr")
[ "$n" -eq 1 ] || { echo "the message should be printed once, found $n times:"; cat "$work/bad.stderr"; exit 1; }
[ ! -e "$work/bad" ] || { echo "--out written despite the error"; exit 1; }
[ ! -s "$work/bad.stdout" ] || { echo "stdout not empty"; exit 1; }
# An error while the points run (a collective table that is not one, read by every rank):
# exit 2, printed once, nothing written.
"${mpi[@]}" "$ccsim" sweep scenarios/workloads/llama31-8b-decode-tp2.yaml --set workload.batch_size=1,2,4 --calibration README.md \
  --out "$work/bad2" >"$work/bad2.stdout" 2>"$work/bad2.stderr"
rc=$?
[ $rc -eq 2 ] || { echo "bad table under mpirun: expected exit 2, got $rc"; cat "$work/bad2.stderr"; exit 1; }
n=$(grep -c "README.md" "$work/bad2.stderr")
[ "$n" -eq 1 ] || { echo "the table error should be printed once, found $n times:"; cat "$work/bad2.stderr"; exit 1; }
[ ! -e "$work/bad2" ] || { echo "--out written despite the error"; exit 1; }
# A command-line error (found before MPI starts): exit 2, printed by rank 0 only.
"${mpi[@]}" "$ccsim" sweep scenarios/workloads/llama31-8b-decode-tp2.yaml --set workload.batch_size=1 --no-such-flag \
  >"$work/bad3.stdout" 2>"$work/bad3.stderr"
rc=$?
[ $rc -eq 2 ] || { echo "bad flag under mpirun: expected exit 2, got $rc"; cat "$work/bad3.stderr"; exit 1; }
n=$(grep -c -- "--no-such-flag" "$work/bad3.stderr")
[ "$n" -eq 1 ] || { echo "the flag error should be printed once, found $n times:"; cat "$work/bad3.stderr"; exit 1; }
echo "serial and mpirun outputs identical"
