# `ccsim run --out DIR`: writes report.json, ops.csv, links.csv, trace.json and effective.yaml,
# leaves no temporary files, and `ccsim run DIR/effective.yaml` reproduces the summary byte for
# byte. A layout that does not fit exits 3 with the numbers and writes a report saying so.
file(REMOVE_RECURSE "${WORK}")
set(scenario scenarios/workloads/llama3-70b-train-64xh100.yaml)
execute_process(COMMAND "${CCSIM}" run ${scenario} --out "${WORK}/a"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE first ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ccsim run exited ${rc}: ${err}")
endif()
file(GLOB written RELATIVE "${WORK}/a" "${WORK}/a/*" "${WORK}/a/.*")
list(SORT written)
if(NOT written STREQUAL "effective.yaml;links.csv;ops.csv;report.json;trace.json")
  message(FATAL_ERROR "unexpected files in --out: ${written}")
endif()
# report.json: the schema's main keys.
file(READ "${WORK}/a/report.json" report)
string(JSON schema GET "${report}" schema)
string(JSON step GET "${report}" step_time_s)
string(JSON mfu GET "${report}" mfu)
string(JSON tp_time GET "${report}" communication TP time_s)
string(JSON links LENGTH "${report}" busiest_links)
if(NOT schema STREQUAL "ccsim.run/1" OR step LESS_EQUAL 0 OR mfu LESS_EQUAL 0 OR mfu GREATER_EQUAL 1 OR tp_time LESS_EQUAL 0
   OR NOT links EQUAL 5)
  message(FATAL_ERROR "report.json: schema ${schema}, step ${step}, mfu ${mfu}, TP ${tp_time}, links ${links}")
endif()
# trace.json: Chrome trace events with process and thread names and complete ('X') events.
file(READ "${WORK}/a/trace.json" trace)
string(JSON n LENGTH "${trace}" traceEvents)
string(JSON first_name GET "${trace}" traceEvents 0 name)
string(JSON unit GET "${trace}" displayTimeUnit)
string(FIND "${trace}" "\"ph\":\"X\"" complete)
if(n LESS 1000 OR NOT first_name STREQUAL "process_name" OR NOT unit STREQUAL "ms" OR complete EQUAL -1)
  message(FATAL_ERROR "trace.json: ${n} events, first ${first_name}, unit ${unit}")
endif()
# CSV headers.
file(STRINGS "${WORK}/a/ops.csv" ops_head LIMIT_COUNT 1)
file(STRINGS "${WORK}/a/links.csv" links_head LIMIT_COUNT 1)
if(NOT ops_head MATCHES "^op,stage,gpu,node,stream,pass,name,kind,dim,collective," OR NOT links_head MATCHES "^link,from,to,class,")
  message(FATAL_ERROR "csv headers: ${ops_head} / ${links_head}")
endif()
# effective.yaml reproduces the run.
execute_process(COMMAND "${CCSIM}" run "${WORK}/a/effective.yaml"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE second ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT first STREQUAL second)
  message(FATAL_ERROR "ccsim run effective.yaml (exit ${rc}) differs from the original run:\n${second}\n${err}")
endif()
# Infeasible: Llama-3-70B on 8 GPUs with TP8 and no sharding does not fit in 80 GB.
file(WRITE "${WORK}/oom.yaml" "cluster: {nodes: [{node: dgx-h100}]}\nworkload: {model: llama-3-70b, sequence_length: 8192, micro_batch_size: 1}\nstrategy: {tp: 8}\n")
execute_process(COMMAND "${CCSIM}" run "${WORK}/oom.yaml" --out "${WORK}/b"
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(FIND "${out}" "INFEASIBLE: stage 0 needs" pos)
if(NOT rc EQUAL 3 OR pos EQUAL -1)
  message(FATAL_ERROR "infeasible layout: exit ${rc}, output:\n${out}\n${err}")
endif()
file(READ "${WORK}/b/report.json" report)
string(JSON feasible GET "${report}" feasible)
if(NOT feasible STREQUAL "OFF" AND NOT feasible STREQUAL "false")
  message(FATAL_ERROR "report.json of an infeasible layout says feasible = ${feasible}")
endif()
