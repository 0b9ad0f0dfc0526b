# Included by CLI test scripts: ccsim(OUT ARGS...) runs `CCSIM ARGS` from SOURCE_DIR, fails the
# test (with stderr) on a non-zero exit, and sets OUT to its stdout.
function(ccsim out)
  execute_process(COMMAND "${CCSIM}" ${ARGN} WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(JOIN " " args ${ARGN})
    message(FATAL_ERROR "ccsim ${args} exited with ${rc}:\n${stderr}")
  endif()
  set(${out} "${stdout}" PARENT_SCOPE)
endfunction()
