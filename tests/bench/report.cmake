# ctest bench_smoke.report: ccsim_bench_report on a synthetic CSV whose series follow exact power
# laws (wall = 0.01·n^1.5 at n = 64, 256, 1,024; run = wall/10; transfers = n², so run ∝
# transfers^0.75; a linear series 0.001·n), compared with the expected markdown byte for byte
# (tests/bench/data/report-synthetic.md; regenerate on purpose with -DREGENERATE=1), and on a
# malformed CSV, which must exit 2 naming the line.
# Inputs: -DREPORT=<ccsim_bench_report> -DDATA=<tests/bench/data> [-DREGENERATE=1]
execute_process(COMMAND ${REPORT} ${DATA}/report-synthetic.csv RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccsim_bench_report exited ${rc}: ${err}")
endif()
if(REGENERATE)
  file(WRITE ${DATA}/report-synthetic.md "${out}")
  return()
endif()
file(READ ${DATA}/report-synthetic.md expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "ccsim_bench_report output differs from report-synthetic.md; got:\n${out}")
endif()
execute_process(COMMAND ${REPORT} ${DATA}/report-malformed.csv RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "report-malformed.csv:2: error: expected n a number" OR NOT out STREQUAL "")
  message(FATAL_ERROR "malformed CSV: expected exit 2, the line named on stderr and nothing on stdout; got ${rc}, '${err}', '${out}'")
endif()
