#pragma once
// Factories of the backends (one file each); make_backend() (validate/replay/replay.cpp) picks
// among those built into this binary.

#include <memory>

#include "validate/replay/replay.hpp"

namespace ccsim::validate::replay {

std::unique_ptr<Backend> make_host_backend(const BackendOptions& options);
#ifdef CCSIM_HAVE_MPI
/// Initialises MPI (MPI_Init_thread) on first use; throws ReplayError when no launcher started this process.
std::unique_ptr<Backend> make_mpi_backend(const BackendOptions& options);
#endif
#ifdef CCSIM_HAVE_CUDA
/// Throws ReplayError when no CUDA device is present.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);
#endif
#ifdef CCSIM_HAVE_VERBS
/// Throws ReplayError when no RDMA device is present.
std::unique_ptr<Backend> make_verbs_backend(const BackendOptions& options);
#endif

}  // namespace ccsim::validate::replay
