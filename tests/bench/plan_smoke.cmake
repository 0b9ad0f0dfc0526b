# ctest bench_smoke.plan: runs tests/bench/plan_bench.sh --smoke on this build's ccsim and checks
# what it recorded, not how fast: the narrow 16-GPU search measured twice (status ok, its
# candidate count and ccsim's candidates/s parsed from stderr), the 405B search past a 1 s
# limit (timeout, printed "> 1 s"), and the report's table.
# Inputs: -DSCRIPT=<tests/bench/plan_bench.sh> -DBIN=<build dir> -DWORK=<scratch dir>
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${SCRIPT} --smoke --bin ${BIN} --out ${WORK} --runs 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plan_bench.sh --smoke exited ${rc}:\n${err}\n${out}")
endif()
file(READ ${WORK}/results.csv csv)
# The candidate count and the rate come from ccsim's stderr line: positive numbers.
foreach(expect
    "8b-narrow,ok,2,[0-9]+\\.[0-9]+,[0-9.]+,[1-9][0-9]*,[0-9]+\\.[0-9][0-9],[0-9]+,60,ccsim plan tests/data/plan/"
    "405b-jobsN,timeout,0,,,,,,1,ccsim plan scenarios/workloads/llama3-405b-train-16kxh100.yaml")
  if(NOT csv MATCHES "${expect}")
    message(FATAL_ERROR "results.csv lacks a row matching '${expect}':\n${csv}")
  endif()
endforeach()
foreach(expect
    "### ccsim plan: candidates simulated per second \\(smoke,"
    "\\| 8b-narrow \\| ok \\| 2 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9]+ \\| [0-9.]+ \\| [0-9]+ \\|"
    "\\| 405b-jobsN \\| timeout \\| 0 \\| > 1 s \\|"
    "- 8b-narrow: `ccsim plan tests/data/plan/llama3-8b-train-16xh100.yaml --space tp=1,2 --space pp=1,2 ")
  if(NOT out MATCHES "${expect}")
    message(FATAL_ERROR "the report lacks '${expect}':\n${out}")
  endif()
endforeach()
# Bad options exit 2.
execute_process(COMMAND ${SCRIPT} --bin ${BIN} --runs 0 RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--runs: expected a positive integer, found '0'")
  message(FATAL_ERROR "plan_bench.sh --runs 0: exit ${rc}: ${err}")
endif()
