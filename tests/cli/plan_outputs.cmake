# `ccsim plan --out DIR` (tests/CMakeLists.txt, cli_plan_outputs): writes plan.json and
# best.yaml and nothing else; `ccsim run DIR/best.yaml --out R` reproduces the figures of
# plan.json's first candidate exactly (step_time_s, tokens_per_s, mfu compared as the JSON
# numbers' text). Bad input writes nothing (exit 2); a space where nothing fits exits 3 with
# the message and a plan.json saying so, without best.yaml.
# Inputs: -DCCSIM=<ccsim> -DSOURCE_DIR=<source tree> -DWORK=<scratch dir>
include(${CMAKE_CURRENT_LIST_DIR}/ccsim_run.cmake)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(scenario tests/data/plan/llama3-8b-train-16xh100.yaml)
set(space --space tp=1,2,4 --space pp=1,2 --space mbs=1,2 --fix zero=1 --fix recompute=selective --fix tp_overlap=false)
ccsim(summary plan ${scenario} ${space} --top 3 --out "${WORK}/p")
file(GLOB written RELATIVE "${WORK}/p" "${WORK}/p/*" "${WORK}/p/.*")
list(SORT written)
if(NOT written STREQUAL "best.yaml;plan.json")
  message(FATAL_ERROR "unexpected files in --out: ${written}")
endif()
# --format json prints the same plan.json on stdout.
ccsim(json plan ${scenario} ${space} --top 3 --format json)
file(READ "${WORK}/p/plan.json" plan)
if(NOT json STREQUAL plan)
  message(FATAL_ERROR "--format json differs from --out's plan.json:\n${json}\n---\n${plan}")
endif()
string(JSON n LENGTH "${plan}" candidates)
string(JSON full GET "${plan}" candidates 0 simulated_in_full)
string(JSON layout GET "${plan}" candidates 0 layout)
if(NOT n EQUAL 3 OR NOT full STREQUAL "ON" AND NOT full STREQUAL "true")
  message(FATAL_ERROR "plan.json: ${n} candidates, the first simulated in full: ${full}")
endif()
string(FIND "${summary}" "   1  ${layout}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the summary's rank 1 is not plan.json's first candidate '${layout}':\n${summary}")
endif()
# best.yaml through ccsim run: the same figures, to the last bit.
ccsim(run_summary run "${WORK}/p/best.yaml" --out "${WORK}/r")
file(READ "${WORK}/r/report.json" report)
foreach(key step_time_s tokens_per_s mfu)
  string(JSON planned GET "${plan}" candidates 0 ${key})
  string(JSON ran GET "${report}" ${key})
  # The numbers' text as the two files write it (nlohmann::json: shortest round-trip form).
  string(REGEX MATCH "\"${key}\": ([^,\n]+)" m "${plan}")
  set(planned_text "${CMAKE_MATCH_1}")
  string(REGEX MATCH "\"${key}\": ([^,\n]+)" m "${report}")
  set(ran_text "${CMAKE_MATCH_1}")
  if(NOT planned STREQUAL ran OR NOT planned_text STREQUAL ran_text OR planned_text STREQUAL "")
    message(FATAL_ERROR "${key}: plan.json says ${planned} (${planned_text}), ccsim run of best.yaml ${ran} (${ran_text})")
  endif()
endforeach()
string(JSON tp GET "${plan}" candidates 0 strategy tp)
string(JSON pp GET "${plan}" candidates 0 strategy pp)
if(NOT run_summary MATCHES "# layout: TP${tp} PP${pp} ")
  message(FATAL_ERROR "ccsim run best.yaml does not run TP${tp} PP${pp}:\n${run_summary}")
endif()

# Bad input: exit 2, nothing on stdout, nothing written under --out.
set(out_file "${WORK}/a-file")
file(WRITE "${out_file}" "keep me\n")
foreach(bad "--space;tpp=2" "--space;tp=4..2" "--objective;cost" "--max-tpot;0" "--fix;tp=1,2" "--objective;fastest")
  execute_process(COMMAND "${CCSIM}" plan ${scenario} ${bad} --out "${WORK}/bad"
    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 2 OR NOT out STREQUAL "" OR EXISTS "${WORK}/bad")
    message(FATAL_ERROR "ccsim plan ${bad}: exit ${rc} (expected 2), stdout '${out}', --out created: ${err}")
  endif()
endforeach()
execute_process(COMMAND "${CCSIM}" plan ${scenario} ${space} --out "${out_file}"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
file(READ "${out_file}" kept)
string(FIND "${err}" "--out ${out_file}: exists and is not a directory" pos)
if(NOT rc EQUAL 2 OR NOT out STREQUAL "" OR NOT kept STREQUAL "keep me\n" OR pos EQUAL -1)
  message(FATAL_ERROR "ccsim plan --out FILE: exit ${rc}, stdout '${out}', file now '${kept}', stderr: ${err}")
endif()

# Nothing fits: Llama-3-70B on 8 GPUs without TP or PP. Exit 3, the reason on stdout, plan.json
# with no candidates, no best.yaml.
execute_process(COMMAND "${CCSIM}" plan tests/data/plan/llama3-70b-train-8xh100.yaml --fix tp=1 --fix pp=1 --out "${WORK}/none"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(FIND "${out}" "no layout is feasible: every candidate was pruned" pos)
string(FIND "${out}" "does not fit in GPU memory" mem)
if(NOT rc EQUAL 3 OR pos EQUAL -1 OR mem EQUAL -1)
  message(FATAL_ERROR "nothing fits: exit ${rc} (expected 3), stdout:\n${out}\n${err}")
endif()
file(READ "${WORK}/none/plan.json" none)
string(JSON n LENGTH "${none}" candidates)
if(NOT n EQUAL 0 OR EXISTS "${WORK}/none/best.yaml")
  message(FATAL_ERROR "nothing fits: plan.json lists ${n} candidates; best.yaml written: ${none}")
endif()

# A stale best.yaml goes: plan into the directory of a feasible plan, with nothing feasible.
execute_process(COMMAND "${CCSIM}" plan ${scenario} ${space} --out "${WORK}/stale"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
execute_process(COMMAND "${CCSIM}" plan ${scenario} --fix tp=3 --out "${WORK}/stale"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc2)
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 3 OR EXISTS "${WORK}/stale/best.yaml" OR NOT EXISTS "${WORK}/stale/plan.json")
  message(FATAL_ERROR "stale best.yaml: exits ${rc}, ${rc2}; best.yaml should be gone and plan.json written")
endif()
# plan.json a directory: exit 2 before the search, nothing written.
file(MAKE_DIRECTORY "${WORK}/pdir/plan.json")
execute_process(COMMAND "${CCSIM}" plan ${scenario} ${space} --out "${WORK}/pdir"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR EXISTS "${WORK}/pdir/best.yaml")
  message(FATAL_ERROR "--out with plan.json a directory: exit ${rc} (expected 2), best.yaml written: ${err}")
endif()

# Serving: the KV cache of the last decode step counts. The best layout of the shipped 70B
# serving scenario runs (exit 0) with the figures plan.json gives; no zero-time layout ranks.
execute_process(COMMAND "${CCSIM}" plan scenarios/workloads/llama2-70b-serving-tp4-a100.yaml --objective tokens-per-s --out "${WORK}/serving"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "serving plan: exit ${rc}: ${err}")
endif()
file(READ "${WORK}/serving/plan.json" sp)
string(JSON sn LENGTH "${sp}" candidates)
math(EXPR last "${sn} - 1")
foreach(i RANGE ${last})
  string(JSON st GET "${sp}" candidates ${i} step_time_s)
  if(st EQUAL 0 OR st STREQUAL "0.0")
    message(FATAL_ERROR "serving plan ranks a zero step time (candidate ${i})")
  endif()
endforeach()
execute_process(COMMAND "${CCSIM}" run "${WORK}/serving/best.yaml" --out "${WORK}/serving-run"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
file(READ "${WORK}/serving-run/report.json" rep)
string(JSON a GET "${sp}" candidates 0 tpot_s)
string(JSON b GET "${rep}" serving tpot_s)
if(NOT rc EQUAL 0 OR NOT a STREQUAL b)
  message(FATAL_ERROR "serving best.yaml: run exit ${rc} (expected 0), TPOT plan ${a} vs run ${b}: ${err}")
endif()
