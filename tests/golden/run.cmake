# Golden test runner: runs `CCSIM <args>` from SOURCE_DIR, where <args> is the first line of
# CASE (a .cmd file), and compares stdout byte for byte with CASE's .out file.
# With -DREGENERATE=1 it rewrites the .out file instead (review the diff before committing).
file(STRINGS "${CASE}" args LIMIT_COUNT 1)
separate_arguments(args UNIX_COMMAND "${args}")
string(REGEX REPLACE "\\.cmd$" ".out" expected_file "${CASE}")
# ccsim collective reads NCCL_ALGO / NCCL_PROTO when --algo / --protocol are absent: a golden
# output must not depend on the caller's environment.
unset(ENV{NCCL_ALGO})
unset(ENV{NCCL_PROTO})
execute_process(COMMAND "${CCSIM}" ${args}
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE actual ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccsim ${args} exited with ${rc}:\n${err}")
endif()
if(REGENERATE)
  file(WRITE "${expected_file}" "${actual}")
  message(STATUS "rewrote ${expected_file}")
  return()
endif()
file(READ "${expected_file}" expected)
if(NOT actual STREQUAL expected)
  string(REGEX REPLACE "\\.out$" ".actual" actual_file "${expected_file}")
  get_filename_component(actual_name "${actual_file}" NAME)
  set(actual_path "${CMAKE_CURRENT_BINARY_DIR}/${actual_name}")
  file(WRITE "${actual_path}" "${actual}")
  message(FATAL_ERROR "output of 'ccsim ${args}' differs from ${expected_file}\n"
                      "actual output written to ${actual_path}; diff them to review")
endif()
