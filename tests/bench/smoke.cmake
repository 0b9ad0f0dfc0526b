# ctest bench_smoke.harness: runs tests/bench/scaling.sh --smoke on this build's binaries and
# checks what it recorded, not how fast: a 4- and an 8-rank ring measured (status ok, so the fit
# runs over 2 points), a 1,024-rank step ring past a 2 s limit (timeout, printed "> 2 s"), the
# 4,096-rank one after it skipped, direct AlltoAll on 4,096 ranks refused (exit 2).
# Inputs: -DSCRIPT=<tests/bench/scaling.sh> -DBIN=<build dir> -DWORK=<scratch dir>
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${SCRIPT} --smoke --bin ${BIN} --out ${WORK} --runs 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scaling.sh --smoke exited ${rc}:\n${err}\n${out}")
endif()
file(READ ${WORK}/results.csv csv)
foreach(expect
    "ranks,4,4,ring · analytic,ok,2,"
    "ranks,8,8,ring · analytic,ok,2,"
    "ranks,1024,1024,ring step · analytic,timeout,0,,,,,2,"
    "ranks,4096,4096,ring step · analytic,skipped,0,,,,,2,1024 timed out"
    "ranks,4096,4096,alltoall \\(direct\\) · analytic,refused,0,")
  if(NOT csv MATCHES "${expect}")
    message(FATAL_ERROR "results.csv lacks a row matching '${expect}':\n${csv}")
  endif()
endforeach()
foreach(expect
    "### smoke: ring AllReduce 1 MiB \\(dgx-h100-1node\\)"
    "\\| 4 \\| [0-9.]+ s, [0-9,]+ MiB \\|"
    "\\| growth b \\(wall\\) \\| -?[0-9]+\\.[0-9][0-9] \\|"
    "- ring · analytic: wall ∝ ranks\\^-?[0-9]+\\.[0-9][0-9] \\(2 points\\); run ∝ ranks\\^-?[0-9.]+; run ∝ transfers\\^-?[0-9.]+ — points: 4: "
    "\\| 1,024 \\| > 2 s \\| \\|"
    "\\| 4,096 \\| > 2 s \\(not run ‡\\) \\| refused \\|")
  if(NOT out MATCHES "${expect}")
    message(FATAL_ERROR "the report lacks '${expect}':\n${out}")
  endif()
endforeach()
