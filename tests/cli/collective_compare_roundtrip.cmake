# `ccsim collective ... > x.log && ccsim compare x.log`: the text table is nccl-tests' layout, so
# ccsim's own log reader (compare, calibrate) reads it back, names the collective and the rank
# count from its header, and finds every size at 0.0 % error (the same model on both sides).
# Covers every collective (nccl-tests' binary names as --op), -d/-o/-g, the NCCL_ALGO
# environment variable (the header says so and the choice follows it), and a --skew table.
# Args: CCSIM, SOURCE_DIR, WORK (a scratch directory).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
unset(ENV{NCCL_ALGO})
unset(ENV{NCCL_PROTO})

# name | scenario | collective arguments | rows expected [| compare arguments]
set(cases
  "allreduce|scenarios/dgx-h100-1node.yaml|--op all_reduce_perf -b 8 -e 1G -f 8|10"
  "reducescatter|scenarios/h100-2x8-200g.yaml|--op reduce_scatter_perf -b 1M -e 64M -f 8 -d bfloat16|3"
  "allgather|scenarios/h100-2x8-200g.yaml|--op all_gather_perf -b 1M -e 64M -f 8 -g 8 -t 2|3"
  "alltoall|scenarios/h100-2x8-200g.yaml|--op alltoall_perf -b 1M -e 16M -f 16|2"
  "sendrecv|scenarios/dgx-a100-1node.yaml|--op sendrecv_perf -b 128M -e 1G|4"
  "broadcast|scenarios/mi300x-1node.yaml|--op broadcast_perf -b 64K -e 64M -f 32 --root 3|3"
  "reduce|scenarios/mi300x-1node.yaml|--op reduce -b 64K -e 64M -f 32 -o max -d int64|3"
  "skew|scenarios/dgx-h100-1node.yaml|--op allreduce -b 1M -e 16M -f 16 --algo ring --skew 3:50us|2|--algo ring"
  "types|scenarios/dgx-h100-1node.yaml|--op allreduce -b 1M -e 1M -d all -o all|72")
foreach(c ${cases})
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 name)
  list(GET parts 1 scenario)
  list(GET parts 2 args)
  list(GET parts 3 expected_rows)
  set(compare_args "")
  list(LENGTH parts fields)
  if(fields GREATER 4)
    list(GET parts 4 compare_args)
    separate_arguments(compare_args UNIX_COMMAND "${compare_args}")
  endif()
  separate_arguments(args UNIX_COMMAND "${args}")
  execute_process(COMMAND "${CCSIM}" collective ${scenario} ${args} WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_FILE "${WORK}/${name}.log" ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: collective ${args} exited with ${rc}: ${err}")
  endif()
  execute_process(COMMAND "${CCSIM}" compare "${WORK}/${name}.log" --scenario ${scenario} ${compare_args} WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE compared ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: compare of ccsim's own table exited with ${rc}: ${err}")
  endif()
  # Data rows: "size measured simulated error algorithm protocol".
  string(REGEX MATCHALL "\n +[0-9]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+ " rows "${compared}")
  list(LENGTH rows n)
  if(NOT n EQUAL expected_rows)
    message(FATAL_ERROR "${name}: expected ${expected_rows} compared rows, got ${n}\n${compared}")
  endif()
  foreach(row ${rows})
    if(NOT row MATCHES "[-+]0\\.0 $")
      message(FATAL_ERROR "${name}: ccsim's own table compared with a nonzero error: '${row}'\n${compared}")
    endif()
  endforeach()
endforeach()

# NCCL_ALGO / NCCL_PROTO from the environment when --algo / --protocol are absent.
execute_process(COMMAND ${CMAKE_COMMAND} -E env NCCL_ALGO=Tree NCCL_PROTO=^LL
                        "${CCSIM}" collective scenarios/dgx-h100-1node.yaml --op allreduce -b 64K -e 64M -f 32
                WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "NCCL_ALGO=Tree: exited with ${rc}: ${err}")
endif()
if(NOT out MATCHES "# algorithm NCCL_ALGO=Tree \\(environment\\), protocol NCCL_PROTO=\\^LL \\(environment\\) \\(LL128, Simple\\)")
  message(FATAL_ERROR "NCCL_ALGO / NCCL_PROTO not named in the header:\n${out}")
endif()
string(REGEX MATCHALL "\n# +[0-9]+ +float  [a-z-]+ +[A-Za-z0-9]+ " chosen "${out}")
list(LENGTH chosen n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "expected 3 rows of ccsim's table, got ${n}:\n${out}")
endif()
foreach(row ${chosen})
  if(NOT row MATCHES "  tree +(LL128|Simple) $")
    message(FATAL_ERROR "NCCL_ALGO=Tree NCCL_PROTO=^LL chose '${row}'\n${out}")
  endif()
endforeach()
# A flag wins over the environment.
execute_process(COMMAND ${CMAKE_COMMAND} -E env NCCL_ALGO=Tree
                        "${CCSIM}" collective scenarios/dgx-h100-1node.yaml --op allreduce -b 64K -e 64K --algo Ring
                WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "# algorithm Ring, protocol auto" OR NOT out MATCHES "\n# +65536 +float  ring ")
  message(FATAL_ERROR "--algo Ring under NCCL_ALGO=Tree: rc ${rc}: ${err}\n${out}")
endif()
# A value NCCL refuses is refused, naming the variable.
execute_process(COMMAND ${CMAKE_COMMAND} -E env NCCL_ALGO=alltoall:ring
                        "${CCSIM}" collective scenarios/dgx-h100-1node.yaml --op allreduce
                WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "NCCL_ALGO: expected an NCCL_ALGO value NCCL accepts" OR NOT out STREQUAL "")
  message(FATAL_ERROR "NCCL_ALGO=alltoall:ring: expected exit 2 naming NCCL_ALGO, got ${rc}: ${err}\n${out}")
endif()
