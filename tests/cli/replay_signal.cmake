# `ccsim replay --out DIR` ended by Ctrl-C (SIGINT), made deterministic with a FIFO as in
# run_signal.cmake: DIR/trace.json is a named pipe nobody reads, so ccsim blocks opening it after
# the replay ran; DIR also holds the log of an earlier run. ccsim removes that stale log before
# writing the new set (trace.json, ops.csv, replay.json, the log last), so once it is gone the
# test sends SIGINT: ccsim must end of the signal (exit status 128 + 2 from the shell), leaving
# no temporary file and no log (a log in DIR means a complete set).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/out")
file(WRITE "${WORK}/out/all_reduce_perf.log" "stale log of an earlier run\n")
execute_process(COMMAND sh -c [[
d=$1; ccsim=$2
mkfifo "$d/trace.json" || exit 90
# A background job of a non-interactive shell starts with SIGINT ignored: restore its default
# (GNU env ≥ 8.31) so that ccsim installs its handler, as under a terminal's Ctrl-C.
env --default-signal=INT "$ccsim" replay scenarios/dgx-h100-1node.yaml --op allreduce --ranks 2 -b 1K -e 4K -n 1 -w 0 --out "$d" >/dev/null 2>"$d.err" &
pid=$!
i=0
while [ -e "$d/all_reduce_perf.log" ]; do
  sleep 0.05; i=$((i+1))
  if [ $i -gt 1200 ]; then kill -KILL $pid; exit 91; fi
done
sleep 0.2
kill -INT $pid
wait $pid
echo $?
]] sh "${WORK}/out" "${CCSIM}"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT status STREQUAL "130")
  message(FATAL_ERROR "ccsim replay interrupted by SIGINT: script exit ${rc}, ccsim status '${status}' (expected 130)")
endif()
file(GLOB left RELATIVE "${WORK}/out" "${WORK}/out/*" "${WORK}/out/.*")
list(SORT left)
if(NOT left STREQUAL "trace.json")
  message(FATAL_ERROR "after SIGINT, --out holds: ${left} (expected only the FIFO trace.json)")
endif()
file(REMOVE_RECURSE "${WORK}")
