#!/usr/bin/env bash
# support/mpi/session.hpp under mpirun -n 1 (ctest label mpi): one process per scenario of
# tests/support/mpi/session_driver.cpp. Funneled and Single start MPI at their thread level;
# finish() finalises once and a later start() is refused; without finish() the session
# finalises at exit; after abort_at_exit(5) the process ends by MPI_Abort with status 5 and
# is never finalised; after leave_unfinalised() it exits without MPI_Finalize. Exit 77 (ctest
# SKIP_RETURN_CODE) when mpirun is missing or cannot start a local rank here.
# Usage: session_test.sh DRIVER WORK_DIR
set -u
driver=$1; work=$2
. "$(dirname "$0")/../../mpi_local.sh"  # skips without mpirun; OpenMPI for local ranks
unset OMPI_MPI_THREAD_LEVEL
rm -rf "$work"; mkdir -p "$work"
if ! mpirun -n 1 true >"$work/probe.log" 2>&1; then
  echo "mpirun cannot start a local rank here: skipped"; cat "$work/probe.log"; exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run MODE: the driver's stdout in $work/MODE.out, its exit status in $rc
  timeout 60 mpirun -n 1 "$driver" "$1" >"$work/$1.out" 2>"$work/$1.err"
  rc=$?
  [ $rc -ne 124 ] || fail "$1: timed out (a rank waiting in MPI)"
}
for mode in funneled single finish at-exit; do
  run $mode
  [ $rc -eq 0 ] || fail "$mode: exit $rc: $(cat "$work/$mode.out" "$work/$mode.err")"
  grep -qx "ok $mode" "$work/$mode.out" || fail "$mode: $(cat "$work/$mode.out")"
  grep -qx "at exit: MPI finalised" "$work/$mode.out" || fail "$mode: MPI not finalised at exit: $(cat "$work/$mode.out")"
done
run abort
grep -qx "ok abort" "$work/abort.out" || fail "abort: $(cat "$work/abort.out")"
[ $rc -eq 5 ] || fail "abort: expected exit 5 (MPI_Abort's code), got $rc: $(cat "$work/abort.err")"
grep -q "at exit: MPI finalised" "$work/abort.out" && fail "abort: MPI was finalised"
run unfinalised
grep -qx "ok unfinalised" "$work/unfinalised.out" || fail "unfinalised: $(cat "$work/unfinalised.out")"
grep -qx "at exit: MPI not finalised" "$work/unfinalised.out" || fail "unfinalised: $(cat "$work/unfinalised.out")"
echo "MPI session: thread levels, finish, finalise at exit, abort and unfinalised exits as documented"
