# `ccsim run SCENARIO --out A` then `ccsim run A/effective.yaml --out B`:
# the second run succeeds with the same exit code and the same stdout, and writes the same
# files byte for byte (report.json, ops.csv, links.csv, trace.json, and effective.yaml itself:
# a fixed point). Registered once per shipped workload scenario in tests/CMakeLists.txt.
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CCSIM}" run "${SCENARIO}" --out "${WORK}/a"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE first ERROR_VARIABLE err RESULT_VARIABLE rc_first)
if(NOT rc_first EQUAL 0 AND NOT rc_first EQUAL 3)
  message(FATAL_ERROR "ccsim run ${SCENARIO} exited ${rc_first}: ${err}")
endif()
execute_process(COMMAND "${CCSIM}" run "${WORK}/a/effective.yaml" --out "${WORK}/b"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE second ERROR_VARIABLE err RESULT_VARIABLE rc_second)
if(NOT rc_second EQUAL rc_first)
  message(FATAL_ERROR "ccsim run ${WORK}/a/effective.yaml exited ${rc_second} (the original run: ${rc_first}): ${err}")
endif()
if(NOT first STREQUAL second)
  message(FATAL_ERROR "ccsim run effective.yaml prints differently from ccsim run ${SCENARIO}:\n${first}\n---\n${second}")
endif()
foreach(f report.json ops.csv links.csv trace.json effective.yaml)
  if(NOT EXISTS "${WORK}/b/${f}")
    message(FATAL_ERROR "the run of effective.yaml wrote no ${f}")
  endif()
  file(SHA256 "${WORK}/a/${f}" ha)
  file(SHA256 "${WORK}/b/${f}" hb)
  if(NOT ha STREQUAL hb)
    message(FATAL_ERROR "${f} differs between the run of ${SCENARIO} and the run of its effective.yaml (${WORK}/a, ${WORK}/b)")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
