# `ccsim run --out DIR` ended by SIGTERM, made deterministic with a FIFO:
# DIR/trace.json is a named pipe nobody reads, so ccsim blocks opening it, after ops.csv and
# links.csv are in place (they are written before trace.json). The test then sends SIGTERM:
# ccsim must end of the signal (exit status 128 + 15 from the shell), leave no temporary file
# and no report.json. The temporary-file removal itself, with a temporary file present when the
# signal arrives, is tested in tests/support/atomic_file_test.cpp (a forked child).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/out")
execute_process(COMMAND sh -c [[
d=$1; ccsim=$2
mkfifo "$d/trace.json" || exit 90
"$ccsim" run scenarios/workloads/llama31-8b-decode-tp4.yaml --out "$d" >/dev/null 2>"$d.err" &
pid=$!
i=0
while [ ! -e "$d/links.csv" ]; do
  sleep 0.05; i=$((i+1))
  if [ $i -gt 1200 ]; then kill -KILL $pid; exit 91; fi
done
kill -TERM $pid
wait $pid
echo $?
]] sh "${WORK}/out" "${CCSIM}"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT status STREQUAL "143")
  message(FATAL_ERROR "ccsim run killed by SIGTERM: script exit ${rc}, ccsim status '${status}' (expected 143)")
endif()
file(GLOB left RELATIVE "${WORK}/out" "${WORK}/out/*" "${WORK}/out/.*")
list(SORT left)
if(NOT left STREQUAL "effective.yaml;links.csv;ops.csv;trace.json")
  message(FATAL_ERROR "after SIGTERM, --out holds: ${left}")
endif()
file(REMOVE_RECURSE "${WORK}")
