# Output paths that are not regular files, through `ccsim topo --dot`:
#  * /dev/stdout: the DOT text comes first on standard output, then the summary (ccsim must
#    not create a temporary file in /dev/ and, as root, rename it over the device);
#  * a FIFO: written through to its reader, and still a FIFO afterwards;
#  * /dev/null: accepted, and still a character device afterwards;
#  * a symbolic link to a regular file: the file is replaced, the link stays.
# Directories and sockets are refused (cli_bad_command.topo_dot_directory).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(scenario scenarios/dgx-h100-1node.yaml)
execute_process(COMMAND "${CCSIM}" topo ${scenario} WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE summary RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccsim topo exited ${rc}")
endif()
execute_process(COMMAND "${CCSIM}" topo ${scenario} --dot "${WORK}/plain.dot" WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc)
file(READ "${WORK}/plain.dot" dot)
if(NOT rc EQUAL 0 OR NOT dot MATCHES "^graph \"dgx-h100-1node\" {")
  message(FATAL_ERROR "ccsim topo --dot FILE exited ${rc}, wrote:\n${dot}")
endif()

# /dev/stdout, on a pipe.
execute_process(COMMAND "${CCSIM}" topo ${scenario} --dot /dev/stdout
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "${dot}${summary}")
  message(FATAL_ERROR "ccsim topo --dot /dev/stdout exited ${rc} (${err}); expected the DOT text then the summary, got:\n${out}")
endif()

# A FIFO, read by a second process of the same pipeline (which then drains ccsim's stdout).
execute_process(COMMAND mkfifo "${WORK}/pipe" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mkfifo failed")
endif()
execute_process(COMMAND "${CCSIM}" topo ${scenario} --dot "${WORK}/pipe"
                COMMAND sh -c "cat \"$0\"; cat >/dev/null" "${WORK}/pipe"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULTS_VARIABLE rcs TIMEOUT 60)
execute_process(COMMAND test -p "${WORK}/pipe" RESULT_VARIABLE still_fifo)
if(NOT rcs STREQUAL "0;0" OR NOT out STREQUAL dot OR NOT still_fifo EQUAL 0)
  message(FATAL_ERROR "ccsim topo --dot FIFO: exits ${rcs} (${err}), FIFO kept: ${still_fifo}, read:\n${out}")
endif()

# /dev/null.
execute_process(COMMAND "${CCSIM}" topo ${scenario} --dot /dev/null
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
execute_process(COMMAND test -c /dev/null RESULT_VARIABLE still_device)
if(NOT rc EQUAL 0 OR NOT out STREQUAL summary OR NOT still_device EQUAL 0)
  message(FATAL_ERROR "ccsim topo --dot /dev/null exited ${rc} (${err}); /dev/null a character device: ${still_device}")
endif()

# A symbolic link to a regular file.
file(WRITE "${WORK}/target.dot" "old\n")
file(CREATE_LINK target.dot "${WORK}/link.dot" SYMBOLIC)
execute_process(COMMAND "${CCSIM}" topo ${scenario} --dot "${WORK}/link.dot"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
file(READ "${WORK}/target.dot" through_link)
if(NOT rc EQUAL 0 OR NOT IS_SYMLINK "${WORK}/link.dot" OR NOT through_link STREQUAL dot)
  message(FATAL_ERROR "ccsim topo --dot LINK exited ${rc} (${err}); link kept, target rewritten: see ${WORK}")
endif()
file(GLOB left RELATIVE "${WORK}" "${WORK}/.*")
if(left)
  message(FATAL_ERROR "temporary files left: ${left}")
endif()
# `ccsim run --out DIR` where DIR/trace.json is a directory: exit 2 naming it, no report.json
# (written last), no temporary file, the directory untouched.
file(MAKE_DIRECTORY "${WORK}/run/trace.json")
execute_process(COMMAND "${CCSIM}" run scenarios/workloads/llama31-8b-decode-tp4.yaml --out "${WORK}/run"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(FIND "${err}" "ccsim: error: cannot write ${WORK}/run/trace.json: it is a directory" pos)
file(GLOB written RELATIVE "${WORK}/run" "${WORK}/run/*" "${WORK}/run/.*")
list(SORT written)
if(NOT rc EQUAL 2 OR pos EQUAL -1 OR NOT out STREQUAL "" OR NOT written STREQUAL "effective.yaml;links.csv;ops.csv;trace.json"
   OR NOT IS_DIRECTORY "${WORK}/run/trace.json")
  message(FATAL_ERROR "ccsim run --out with a directory trace.json: exit ${rc}, stderr ${err}, files ${written}")
endif()
# `ccsim run --out DIR` where DIR/report.json is a symbolic link: the link stays, its target
# gets the report.
file(WRITE "${WORK}/run2/real.json" "old\n")
file(CREATE_LINK real.json "${WORK}/run2/report.json" SYMBOLIC)
execute_process(COMMAND "${CCSIM}" run scenarios/workloads/llama31-8b-decode-tp4.yaml --out "${WORK}/run2"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
file(READ "${WORK}/run2/real.json" report)
string(FIND "${report}" "\"schema\": \"ccsim.run/1\"" pos)
if(NOT rc EQUAL 0 OR NOT IS_SYMLINK "${WORK}/run2/report.json" OR pos EQUAL -1)
  message(FATAL_ERROR "ccsim run --out with a linked report.json: exit ${rc} (${err}), report:\n${report}")
endif()
file(REMOVE_RECURSE "${WORK}")
