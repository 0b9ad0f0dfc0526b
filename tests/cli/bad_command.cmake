# Bad-command test: runs `CCSIM ARGS` from SOURCE_DIR (ARGS one string, split like a Unix
# shell) and checks that it exits with code 2, prints nothing on stdout, and that stderr
# contains EXPECT. Registered per case in tests/CMakeLists.txt (cli_bad_command.*).
if(NOT DEFINED EXPECT OR EXPECT STREQUAL "")
  message(FATAL_ERROR "bad_command.cmake needs -DEXPECT=<substring of the expected message>")
endif()
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${CCSIM}" ${args}
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "ccsim ${ARGS}: expected exit code 2, got ${rc}\nstderr: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "ccsim ${ARGS}: expected nothing on stdout, got:\n${out}")
endif()
string(FIND "${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "ccsim ${ARGS}: stderr lacks '${EXPECT}'\nstderr was: ${err}")
endif()
# Optional ABSENT: a message stderr must not contain (e.g. a note that does not apply).
if(DEFINED ABSENT AND NOT ABSENT STREQUAL "")
  string(FIND "${err}" "${ABSENT}" absent_pos)
  if(NOT absent_pos EQUAL -1)
    message(FATAL_ERROR "ccsim ${ARGS}: stderr has '${ABSENT}', which does not apply here\nstderr was: ${err}")
  endif()
endif()
