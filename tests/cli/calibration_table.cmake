# Calibration tables named by a scenario (simulation.calibration, simulation.compute_calibration;
# in that order): the command line's --calibration / --compute-calibration first, then the scenario's
# key (relative to the file that writes it), then the shipped default (cli/options.hpp
# choose_table). Runs from SOURCE_DIR; CASE picks the check:
#   shift    ccsim collective on tests/data/calibration/h100-plus100us.yaml (ring and tree
#            base_latency + 100 us) takes exactly 100 us longer than on the shipped table, and
#            the header names the table and where it came from
#   override --calibration scenarios/calibration/nccl.yaml on that scenario gives the shipped time
#   include  nested/includes-plus100us.yaml, which only includes ../h100-plus100us.yaml, gets
#            its table (resolved against tests/data/calibration/, not nested/)
#   compare  ccsim compare on h100-2x8-plus100us.yaml: the simulated time is 100 us longer
#   compute  ccsim run on decode-tp2-compute.yaml uses its compute table (kernel_overhead 7 us),
#            and --compute-calibration overrides it
set(h100 scenarios/dgx-h100-1node.yaml)
set(dir tests/data/calibration)
# Ring LL AllReduce of 8 bytes over the 8 GPUs of one DGX H100 (NVSwitch), shipped table:
#   base_latency 6.6 us + 2(n-1) = 14 steps x (0.6 us NVLink wire latency + 0 us LL step
#   overhead) = 15.0 us, plus the transfer of 2 bytes per step (LL: x2 on the wire) at
#   hundreds of GB/s, well under 0.001 us. The + 100 us table: 115.0 us.
# One channel: the 8 bytes then cost the latency alone (on NCCL's 12 channels each channel carries
# at least one element at 1/12 of the per-rank LL cap: 5 ns above the closed form).
set(ring_ll --op allreduce --algo ring --protocol LL --channels 1 -b 8 -e 8)

include(${CMAKE_CURRENT_LIST_DIR}/ccsim_run.cmake)

# The time of the first row of `ccsim collective ... --format json`, microseconds, as printed.
function(collective_us out)
  ccsim(json collective ${ARGN} --format json)
  string(JSON us GET "${json}" rows 0 time_us)
  set(${out} "${us}" PARENT_SCOPE)
endfunction()

# Fails unless |b - a - diff| <= tolerance (awk: CMake has no floating-point arithmetic).
function(expect_difference a b diff tolerance what)
  execute_process(COMMAND awk "BEGIN { d = (${b}) - (${a}) - (${diff}); if (d < 0) d = -d; exit !(d <= ${tolerance}) }"
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: expected ${b} - ${a} = ${diff} (within ${tolerance})")
  endif()
endfunction()

function(expect_in text needle)
  string(FIND "${text}" "${needle}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "output lacks '${needle}':\n${text}")
  endif()
endfunction()

if(CASE STREQUAL "shift")
  collective_us(shipped ${h100} ${ring_ll})
  collective_us(raised ${dir}/h100-plus100us.yaml ${ring_ll})
  expect_difference(0 ${shipped} 15.0 0.001 "ring LL AllReduce, 8 B, shipped table (closed form 15.0 us)")
  expect_difference(${shipped} ${raised} 100 1e-6 "the scenario's table adds its 100 us of base latency")
  ccsim(text collective ${dir}/h100-plus100us.yaml ${ring_ll})
  expect_in("${text}" "; costs: test table, ring and tree base_latency + 100 us;")
  expect_in("${text}" " (table tests/data/calibration/nccl-ring-tree-plus100us.yaml, from the scenario's simulation.calibration)\n")
  expect_in("${text}" "    115.0  ")
elseif(CASE STREQUAL "override")
  collective_us(shipped ${h100} ${ring_ll})
  collective_us(overridden ${dir}/h100-plus100us.yaml ${ring_ll} --calibration scenarios/calibration/nccl.yaml)
  if(NOT overridden STREQUAL shipped)
    message(FATAL_ERROR "--calibration over the scenario's table: ${overridden} us, the shipped table gives ${shipped} us")
  endif()
  ccsim(text collective ${dir}/h100-plus100us.yaml ${ring_ll} --calibration scenarios/calibration/nccl.yaml)
  expect_in("${text}" " (table scenarios/calibration/nccl.yaml, from --calibration)\n")
elseif(CASE STREQUAL "include")
  collective_us(direct ${dir}/h100-plus100us.yaml ${ring_ll})
  collective_us(included ${dir}/nested/includes-plus100us.yaml ${ring_ll})
  if(NOT included STREQUAL direct)
    message(FATAL_ERROR "the included scenario's table: ${included} us, the scenario itself gives ${direct} us")
  endif()
  ccsim(text collective ${dir}/nested/includes-plus100us.yaml ${ring_ll})
  expect_in("${text}" " (table tests/data/calibration/nested/../nccl-ring-tree-plus100us.yaml, from the scenario's simulation.calibration)\n")
elseif(CASE STREQUAL "compare")
  # The log's first row (8 B AllReduce over 16 ranks), replayed as ring LL on both tables.
  set(log tests/data/nccl-tests/h100-2x8-ethernet-gpudirect-all_reduce.log)
  ccsim(a compare ${log} --scenario scenarios/h100-2x8-200g.yaml --algo ring --protocol LL --format json)
  ccsim(b compare ${log} --scenario ${dir}/h100-2x8-plus100us.yaml --algo ring --protocol LL --format json)
  string(JSON us_a GET "${a}" 0 rows 0 simulated_us)
  string(JSON us_b GET "${b}" 0 rows 0 simulated_us)
  expect_difference(${us_a} ${us_b} 100 1e-6 "ccsim compare with the scenario's table")
  ccsim(text compare ${log} --scenario ${dir}/h100-2x8-plus100us.yaml --algo ring --protocol LL)
  expect_in("${text}" "(analytic engine) (table tests/data/calibration/nccl-ring-tree-plus100us.yaml, from the scenario's simulation.calibration)\n")
elseif(CASE STREQUAL "compute")
  ccsim(text run ${dir}/decode-tp2-compute.yaml)
  expect_in("${text}" "# compute model: GEMM 70 % of peak per 128x128 tile (k-loop overhead 192), attention 50 / 40 % (fwd / bwd), HBM 80 %, 7.000 us per kernel\n")
  ccsim(text run ${dir}/decode-tp2-compute.yaml --compute-calibration scenarios/calibration/compute.yaml)
  expect_in("${text}" "# compute model: GEMM 80 % of peak per 128x256 tile (k-loop overhead 128), attention 66 / 58 % (fwd / bwd), HBM 80 %, 2.000 us per kernel\n")
else()
  message(FATAL_ERROR "calibration_table.cmake: unknown CASE '${CASE}'")
endif()
