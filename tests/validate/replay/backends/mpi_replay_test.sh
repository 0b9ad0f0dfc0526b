#!/usr/bin/env bash
# The mpi replay backend under mpirun (ctest label mpi): tests/validate/replay/backends/mpi_replay_driver.cpp
# with N local ranks replays every algorithm of every collective and checks the results, a
# corrupted schedule and the rank-count error. Exit 77 (ctest SKIP_RETURN_CODE) when mpirun is
# missing or cannot start N local ranks here (a sandbox without a usable launcher).
# Usage: mpi_replay_test.sh DRIVER N [--small]
set -u
driver=$1; n=$2; shift 2
. "$(dirname "$0")/../../../mpi_local.sh"  # skips without mpirun; OpenMPI for local ranks
# More ranks than cores are allowed (CI has 2).
probe=$(mktemp)
if ! mpirun -n "$n" --oversubscribe true >"$probe" 2>&1; then
  echo "mpirun cannot start $n local ranks here: skipped"; cat "$probe"; rm -f "$probe"; exit 77
fi
rm -f "$probe"
exec timeout 300 mpirun -n "$n" --oversubscribe "$driver" "$@"
