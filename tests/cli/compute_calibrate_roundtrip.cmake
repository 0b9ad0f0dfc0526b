# Round trip of the compute calibration: `ccsim calibrate --step-times --gemm` fits the synthetic
# example data and writes a table; `ccsim run --compute-calibration` loads it
# and reports the fitted GEMM efficiency (75 %, the value the synthetic GEMM table was made with,
# fitted within 1 % per tests/validate/calibrate/compute_calibration_test.cpp).
set(dir "${WORK_DIR}")
file(REMOVE_RECURSE "${dir}")
file(MAKE_DIRECTORY "${dir}")
set(data tests/data/calibration)
execute_process(COMMAND "${CCSIM}" calibrate --scenario ${data}/train-llama31-8b-h100.yaml --step-times ${data}/steps-h100-synthetic.csv
                        --gemm ${data}/gemm-h100-synthetic.csv --out "${dir}/fitted.yaml"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE report ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccsim calibrate --step-times failed (${rc}): ${err}")
endif()
foreach(expect "MAPE fitted rows: " "held-out rows: " "wrote ${dir}/fitted.yaml")
  string(FIND "${report}" "${expect}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "the report lacks '${expect}':\n${report}")
  endif()
endforeach()
execute_process(COMMAND "${CCSIM}" run ${data}/train-llama31-8b-h100.yaml --compute-calibration "${dir}/fitted.yaml"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccsim run --compute-calibration failed (${rc}): ${err}")
endif()
string(FIND "${out}" "compute model: GEMM 75 % of peak" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "ccsim run does not report the fitted GEMM efficiency:\n${out}")
endif()
