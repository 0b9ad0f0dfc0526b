# Sourced by the tests that start MPI ranks on this machine (mpirun -n N): skips the test (exit
# 77, ctest's SKIP_RETURN_CODE) where mpirun is missing, and sets OpenMPI up for local ranks
# only: shared memory and self transports (no network), root allowed (containers),
# oversubscription allowed (more ranks than cores), no remote agent. Under AddressSanitizer
# (CCSIM_SANITIZE builds) OpenMPI's own allocations still held at exit would be reported as
# leaks and fail the ranks; ccsim's code is leak-checked by every other test.
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_plm_rsh_agent=false
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
