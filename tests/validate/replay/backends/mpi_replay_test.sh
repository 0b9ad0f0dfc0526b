#!/usr/bin/env bash
# The mpi replay backend under mpirun (ctest label mpi): tests/validate/replay/backends/mpi_replay_driver.cpp
# with N local ranks replays every algorithm of every collective and checks the results, a
# corrupted schedule and the rank-count error. Exit 77 (ctest SKIP_RETURN_CODE) when mpirun is
# missing or cannot start N local ranks here (a sandbox without a usable launcher).
# Usage: mpi_replay_test.sh DRIVER N [--small]
set -u
driver=$1; n=$2; shift 2
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
# Local ranks only, shared memory and self transports (no network), root allowed (containers),
# more ranks than cores allowed (CI has 2).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_plm_rsh_agent=false
# Under AddressSanitizer (CCSIM_SANITIZE builds) OpenMPI's own allocations still held at exit
# would be reported as leaks; ccsim's code is leak-checked by every other test.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
probe=$(mktemp)
if ! mpirun -n "$n" --oversubscribe true >"$probe" 2>&1; then
  echo "mpirun cannot start $n local ranks here: skipped"; cat "$probe"; rm -f "$probe"; exit 77
fi
rm -f "$probe"
exec timeout 300 mpirun -n "$n" --oversubscribe "$driver" "$@"
