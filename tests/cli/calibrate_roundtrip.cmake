# `ccsim calibrate LOG --out F` then `ccsim compare LOG --calibration F`: the table written is
# the one the report describes — compare's simulated time of every size equals calibrate's
# "after" column (both printed by the same formatter) — and a failing calibrate writes nothing.
# Args: CCSIM, SOURCE_DIR, WORK (a scratch directory), LOG, SCENARIO.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(table "${WORK}/fitted.yaml")
execute_process(COMMAND "${CCSIM}" calibrate ${LOG} --scenario ${SCENARIO} --out ${table}
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE calibrated ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "calibrate exited with ${rc}: ${err}")
endif()
execute_process(COMMAND "${CCSIM}" compare ${LOG} --scenario ${SCENARIO} --calibration ${table}
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE compared ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compare --calibration ${table} exited with ${rc}: ${err}")
endif()
# Data rows: "size measured before after error set ..." and "size measured simulated error ...".
string(REGEX MATCHALL "\n +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+ +(fit|held-out)" cal_rows "${calibrated}")
string(REGEX MATCHALL "\n +[0-9]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+ " cmp_rows "${compared}")
list(LENGTH cal_rows n)
list(LENGTH cmp_rows m)
if(n EQUAL 0 OR NOT n EQUAL m)
  message(FATAL_ERROR "expected one compare row per calibrate row, got ${n} and ${m}\n${calibrated}\n${compared}")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  list(GET cal_rows ${i} c)
  list(GET cmp_rows ${i} d)
  string(REGEX REPLACE "^\n +" "" c "${c}")
  string(REGEX REPLACE "^\n +" "" d "${d}")
  string(REGEX REPLACE " +" ";" c "${c}")
  string(REGEX REPLACE " +" ";" d "${d}")
  list(GET c 0 size)
  list(GET c 3 after)
  list(GET d 2 simulated)
  if(NOT after STREQUAL simulated)
    message(FATAL_ERROR "size ${size}: calibrate reported ${after} us after the fit, compare with the written table gives ${simulated} us")
  endif()
endforeach()
# The provenance block names the log by its SHA-256.
file(READ "${table}" written)
file(SHA256 "${SOURCE_DIR}/${LOG}" digest)
string(FIND "${written}" "sha256: ${digest}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the written table does not give the log's SHA-256 ${digest}")
endif()
# Bad input after the logs were read (a holdout size the log lacks): exit 2, no file.
set(second "${WORK}/not-written.yaml")
execute_process(COMMAND "${CCSIM}" calibrate ${LOG} --scenario ${SCENARIO} --out ${second} --holdout 3M
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR EXISTS "${second}")
  message(FATAL_ERROR "calibrate --holdout 3M (a size the log lacks): expected exit 2 and no ${second}, got ${rc}")
endif()
