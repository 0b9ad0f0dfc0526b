# The end-to-end validation table: every row of tests/data/e2e/results.csv is
#   e2e.run.ID     `ccsim run SCENARIO --out build/tests/e2e/ID --report-only` (fixture e2e.ID)
#   e2e.row.ID     |simulated/published - 1| <= the row's budget            (ccsim_e2e check)
# and every family of tests/data/e2e/families.csv is
#   e2e.family.F   Spearman's rho of per-GPU throughput over its rows >= floor (ccsim_e2e family)
# scripts/e2e-table prints the same comparison as a markdown table.
add_executable(ccsim_e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/e2e_main.cpp)
target_link_libraries(ccsim_e2e PRIVATE fmt::fmt nlohmann_json::nlohmann_json)
target_include_directories(ccsim_e2e PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

set(e2e_data ${PROJECT_SOURCE_DIR}/tests/data/e2e)
set(e2e_out ${CMAKE_CURRENT_BINARY_DIR}/e2e)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${e2e_data}/results.csv ${e2e_data}/families.csv)
file(STRINGS ${e2e_data}/results.csv e2e_lines)
set(e2e_families)
foreach(line ${e2e_lines})
  if(line MATCHES "^#" OR line MATCHES "^id,")
    continue()
  endif()
  string(REPLACE "," ";" fields "${line}")
  list(GET fields 0 id)
  list(GET fields 1 family)
  list(GET fields 2 scenario)
  add_test(NAME e2e.run.${id}
    COMMAND ccsim run ${e2e_data}/${scenario} --out ${e2e_out}/${id} --report-only
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(e2e.run.${id} PROPERTIES FIXTURES_SETUP e2e.${id} LABELS e2e TIMEOUT 600)
  add_test(NAME e2e.row.${id} COMMAND ccsim_e2e check ${e2e_data}/results.csv ${e2e_out} ${id})
  set_tests_properties(e2e.row.${id} PROPERTIES FIXTURES_REQUIRED e2e.${id} LABELS e2e)
  list(APPEND e2e_fixtures_${family} e2e.${id})
  list(APPEND e2e_families ${family})
endforeach()
list(REMOVE_DUPLICATES e2e_families)
foreach(family ${e2e_families})
  add_test(NAME e2e.family.${family}
    COMMAND ccsim_e2e family ${e2e_data}/results.csv ${e2e_data}/families.csv ${e2e_out} ${family})
  set_tests_properties(e2e.family.${family} PROPERTIES FIXTURES_REQUIRED "${e2e_fixtures_${family}}" LABELS e2e)
endforeach()

# `ccsim run --report-only`: only report.json and effective.yaml, the same report.json as a full
# --out run (without --out: tests/cli/cases/bad_command/run_report_only_without_out.case).
add_test(NAME cli_run_report_only
  COMMAND ${CMAKE_COMMAND} -DCCSIM=$<TARGET_FILE:ccsim> -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DWORK=${CMAKE_CURRENT_BINARY_DIR}/run-report-only -P ${CMAKE_CURRENT_SOURCE_DIR}/e2e/report_only.cmake)
