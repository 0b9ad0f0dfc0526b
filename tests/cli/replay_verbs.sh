#!/usr/bin/env bash
# ccsim replay --backend verbs under mpirun. On a host with an RDMA device (a NIC, or soft-RoCE:
# rdma link add rxe0 type rxe netdev eth0): ring and tree AllReduce, a ring AllGather, a direct
# AlltoAll and a ReduceScatter on 2 and 4 ranks replay with no wrong element (DGX H100's ranks on
# 8 rails share the one device through --nics NAME; the CPU cluster's ranks are all on rail 0),
# and an NVLS schedule is refused by every rank. On a host without one: every rank exits 3 naming the missing device
# and the soft-RoCE fix. Both hosts: without mpirun the backend exits 3 asking for it.
# Exit 77 (ctest SKIP_RETURN_CODE) when ccsim was built without the verbs backend or mpirun
# cannot start local ranks here.
# With FAKE_LIB (tests/fake_verbs/fake_ibverbs.cpp built), the ranks run with that libibverbs test
# double preloaded, as on a host with a device.
# Usage: replay_verbs.sh CCSIM SOURCE_DIR WORK_DIR [FAKE_LIB]
set -u
ccsim=$1; src=$2; work=$3; fake=${4:-}
. "$(dirname "$0")/../mpi_local.sh"  # skips without mpirun; OpenMPI for local ranks
rm -rf "$work"; mkdir -p "$work"; cd "$src" || exit 1
scenario=scenarios/dgx-h100-1node.yaml
base=(replay "$scenario" --backend verbs -n 3 -w 1)
if [ -n "$fake" ]; then nic=(--nics fake0); else nic=(--nics "$(ls /sys/class/infiniband 2>/dev/null | head -1)"); fi

# Without a launcher.
"$ccsim" "${base[@]}" --op allreduce -b 1K -e 1K >"$work/alone.stdout" 2>"$work/alone.stderr"
rc=$?
if grep -q "verbs backend is not built" "$work/alone.stderr"; then echo "ccsim built without the verbs backend: skipped"; exit 77; fi
[ $rc -eq 3 ] || { echo "verbs without mpirun: expected exit 3, got $rc"; cat "$work/alone.stderr"; exit 1; }
grep -q "under an MPI launcher: mpirun -n <ranks>" "$work/alone.stderr" || { echo "verbs without mpirun: message lacks the launcher"; cat "$work/alone.stderr"; exit 1; }

if ! mpirun -n 2 --oversubscribe true >"$work/probe.log" 2>&1; then
  echo "mpirun cannot start 2 local ranks here: skipped"; cat "$work/probe.log"; exit 77
fi

launch=(mpirun --oversubscribe)
if [ -n "$fake" ]; then
  shm=/ccsim-fake-ibv-$$
  trap 'rm -f /dev/shm$shm' EXIT
  # ASan (CCSIM_SANITIZE builds) wants its runtime first; the double is not instrumented.
  export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0"
  launch=(mpirun --oversubscribe -x LD_PRELOAD="$fake" -x CCSIM_FAKE_IBV_SHM="$shm")
elif ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
  mpirun -n 2 --oversubscribe "$ccsim" "${base[@]}" --op allreduce -b 1K -e 1K >"$work/none.stdout" 2>"$work/none.stderr"
  rc=$?
  [ $rc -ne 0 ] || { echo "verbs without an RDMA device: expected a failure"; exit 1; }
  n=$(grep -o "this host has no RDMA device" "$work/none.stderr" | wc -l)
  [ "$n" -ge 2 ] || { echo "verbs without an RDMA device: expected every rank to say so, found $n"; cat "$work/none.stderr"; exit 1; }
  grep -q "rdma link add rxe0 type rxe netdev" "$work/none.stderr" || { echo "the message lacks the soft-RoCE fix"; exit 1; }
  echo "no RDMA device on this host: the verbs backend refuses with the fix (the replay itself needs a device)"
  exit 0
fi

ok=0
run() {  # run NAME RANKS ARGS...: a replay that must succeed with 0 wrong elements
  local name=$1 n=$2; shift 2
  rm -f "/dev/shm${shm:-/none}"
  "${launch[@]}" -n "$n" "$ccsim" "${base[@]}" "${nic[@]}" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr"
  local rc=$?
  [ $rc -eq 0 ] || { echo "$name: exit $rc"; cat "$work/$name.stderr"; exit 1; }
  grep -q "^# Out of bounds values : 0 OK" "$work/$name.stdout" || { echo "$name: wrong elements"; cat "$work/$name.stdout"; exit 1; }
  ok=$((ok + 1))
}
run ring2 2 --op allreduce --algo ring -b 1K -e 4M -f 64
run ring4 4 --op allreduce --algo ring --channels 2 -b 4K -e 4M -f 32 -d double
run tree4 4 --op allreduce --algo tree -b 64K -e 64K
run gather4 4 --op allgather --algo ring -b 4K -e 1M -f 16 -d int8
run a2a4 4 --op alltoall --algo direct -b 4K -e 1M -f 16 -d int32
# A CPU cluster's ranks all on rail 0: the host's first device, no --nics.
rm -f "/dev/shm${shm:-/none}"
"${launch[@]}" -n 4 "$ccsim" replay scenarios/cpu-cluster-2x4.yaml --backend verbs -n 3 -w 1 --op reducescatter -b 4K -e 256K -f 8 \
  >"$work/cpu4.stdout" 2>"$work/cpu4.stderr" || { echo "cpu4: failed"; cat "$work/cpu4.stderr"; exit 1; }
grep -q "^# Out of bounds values : 0 OK" "$work/cpu4.stdout" || { echo "cpu4: wrong elements"; cat "$work/cpu4.stdout"; exit 1; }
ok=$((ok + 1))
rm -f "/dev/shm${shm:-/none}"
"${launch[@]}" -n 4 "$ccsim" "${base[@]}" "${nic[@]}" --op allreduce --algo nvls -b 64K -e 64K >"$work/nvls.stdout" 2>"$work/nvls.stderr"
rc=$?
[ $rc -ne 0 ] || { echo "nvls: expected a refusal"; exit 1; }
grep -q "no in-switch reduction: use --algo other than nvls" "$work/nvls.stderr" || { echo "nvls: message"; cat "$work/nvls.stderr"; exit 1; }
echo "$ok verbs replays exact; nvls refused"
