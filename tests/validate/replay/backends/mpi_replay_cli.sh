#!/usr/bin/env bash
# `ccsim replay --backend mpi` end to end under mpirun (ctest label mpi): 3 ranks (an odd count)
# replay ring AllReduce, nvls ReduceScatter on int8 (wrapping sums through the emulated
# switch) and a synthesized ReduceScatter read from MSCCL XML with every row's #wrong 0 and the log's "Out of bounds values : 0 OK"; the log header
# names the MPI processes; without a launcher the backend refuses with its message. Exit 77
# (ctest SKIP_RETURN_CODE) when mpirun is missing or cannot start 3 local ranks here.
# Usage: mpi_replay_cli.sh CCSIM SOURCE_DIR WORK_DIR
set -u
ccsim=$1; src=$2; work=$3
. "$(dirname "$0")/../../../mpi_local.sh"  # skips without mpirun; OpenMPI for local ranks
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
if ! mpirun -n 3 --oversubscribe true >"$work/probe.log" 2>&1; then
  echo "mpirun cannot start 3 local ranks here: skipped"; cat "$work/probe.log"; exit 77
fi
run() {  # name, then ccsim replay's arguments
  local name=$1; shift
  timeout 120 mpirun -n 3 --oversubscribe "$ccsim" replay scenarios/dgx-h100-1node.yaml --backend mpi -n 2 -w 1 "$@" \
    >"$work/$name.stdout" 2>"$work/$name.stderr" || { echo "$name: mpirun failed"; cat "$work/$name.stderr"; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$work/$name.stdout" || { echo "$name: wrong elements"; cat "$work/$name.stdout"; exit 1; }
  grep -q "Ranks run as 3 MPI processes on 1 host" "$work/$name.stdout" || { echo "$name: no MPI description"; cat "$work/$name.stdout"; exit 1; }
  # One table row per size (-b 3K -e 48K -f 4: 3 sizes), printed once (rank 0 reports).
  rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +(float|int8)' "$work/$name.stdout")
  [ "$rows" -eq 3 ] || { echo "$name: expected 3 rows, found $rows"; cat "$work/$name.stdout"; exit 1; }
}
run ring-allreduce --op allreduce --algo ring -b 3K -e 48K -f 4
run nvls-reducescatter-int8 --op reducescatter --algo nvls -d int8 -b 3K -e 48K -f 4
# A synthesized schedule (ForestColl trees written as MSCCL XML by ccsim synthesize --out).
run synth-reducescatter --op reducescatter --algo synth:tests/data/synthesis/dgx-h100-3ranks-reducescatter.msccl.xml -b 3K -e 48K -f 4
# --out that rank 0 cannot use (a regular file): every rank stops with exit 2, none waits for it.
touch "$work/afile"
timeout 120 mpirun -n 3 --oversubscribe "$ccsim" replay scenarios/dgx-h100-1node.yaml --backend mpi --op allreduce -b 8 -e 1K -n 1 -w 0 \
  --out "$work/afile" >"$work/outfile.stdout" 2>"$work/outfile.stderr"
rc=$?
[ $rc -ne 124 ] || { echo "--out a file under mpirun: the ranks hung (timeout)"; exit 1; }
[ $rc -ne 0 ] || { echo "--out a file under mpirun: expected a failure, got exit 0"; exit 1; }
grep -q "exists and is not a directory" "$work/outfile.stderr" || { echo "--out a file: message missing"; cat "$work/outfile.stderr"; exit 1; }
# Without a launcher: refused, naming mpirun.
"$ccsim" replay scenarios/dgx-h100-1node.yaml --op allreduce --backend mpi >"$work/alone.stdout" 2>"$work/alone.stderr"
rc=$?
[ $rc -ne 0 ] || { echo "no launcher: expected a failure, got exit 0"; exit 1; }
grep -q "the mpi backend runs under mpirun: mpirun -n N ccsim replay" "$work/alone.stderr" || { echo "no launcher: message missing"; cat "$work/alone.stderr"; exit 1; }
echo "ccsim replay --backend mpi: correct on 3 ranks, refused without mpirun"
