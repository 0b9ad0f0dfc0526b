# Bad-command test: reads CASE (tests/cli/cases/<kind>/<name>.case), runs `CCSIM <args>` from
# SOURCE_DIR and checks that it exits with code 2, prints nothing on stdout, that stderr holds
# the `expect:` text and, where the case has one, lacks the `absent:` text.
#
# A case file is lines of `key: value` (args, expect, absent) and `#` comments. args is split
# like a Unix shell command line; expect and absent are plain substrings (no patterns), taken
# byte for byte to the end of the line, so they may hold ';', brackets and any UTF-8.
# Registered per file in tests/cli/CMakeLists.txt (cli_bad_command.*, cli_bad_calibration.*).
if(NOT DEFINED CASE OR NOT EXISTS "${CASE}")
  message(FATAL_ERROR "bad_command.cmake needs -DCASE=<a .case file>, found '${CASE}'")
endif()
file(READ "${CASE}" text)
# A CMake list would split on ';' and treat brackets specially: hide both before splitting
# the file into lines, and restore them in each value.
string(REPLACE ";" "<semicolon>" text "${text}")
string(REPLACE "[" "<lbracket>" text "${text}")
string(REPLACE "]" "<rbracket>" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(args_text "")
set(expect "")
set(absent "")
set(line_no 0)
foreach(line IN LISTS lines)
  math(EXPR line_no "${line_no} + 1")
  if(line STREQUAL "" OR line MATCHES "^#")
    continue()
  endif()
  if(NOT line MATCHES "^(args|expect|absent): (.*)$")
    message(FATAL_ERROR "${CASE}:${line_no}: expected 'args: ...', 'expect: ...', 'absent: ...' or a # comment, found '${line}'")
  endif()
  set(key "${CMAKE_MATCH_1}")
  set(value "${CMAKE_MATCH_2}")
  string(REPLACE "<semicolon>" ";" value "${value}")
  string(REPLACE "<lbracket>" "[" value "${value}")
  string(REPLACE "<rbracket>" "]" value "${value}")
  if(key STREQUAL "args")
    set(args_text "${value}")
  else()
    set(${key} "${value}")
  endif()
endforeach()
if(args_text STREQUAL "" OR expect STREQUAL "")
  message(FATAL_ERROR "${CASE}: expected both an args: and an expect: line")
endif()

separate_arguments(args UNIX_COMMAND "${args_text}")
execute_process(COMMAND "${CCSIM}" ${args}
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "ccsim ${args_text}: expected exit code 2, got ${rc}\nstderr: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "ccsim ${args_text}: expected nothing on stdout, got:\n${out}")
endif()
string(FIND "${err}" "${expect}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "ccsim ${args_text}: stderr lacks '${expect}'\nstderr was: ${err}")
endif()
if(NOT absent STREQUAL "")
  string(FIND "${err}" "${absent}" absent_pos)
  if(NOT absent_pos EQUAL -1)
    message(FATAL_ERROR "ccsim ${args_text}: stderr has '${absent}', which does not apply here\nstderr was: ${err}")
  endif()
endif()
