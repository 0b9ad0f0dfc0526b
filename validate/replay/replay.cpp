#include "validate/replay/replay.hpp"

#include <fmt/format.h>

#include "validate/replay/backends/backends.hpp"

namespace ccsim::validate::replay {

std::vector<std::string> built_backends() {
  std::vector<std::string> names{"host"};
#ifdef CCSIM_HAVE_MPI
  names.emplace_back("mpi");
#endif
#ifdef CCSIM_HAVE_CUDA
  names.emplace_back("cuda");
#endif
#ifdef CCSIM_HAVE_VERBS
  names.emplace_back("verbs");
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  if (name == "host") return make_host_backend(options);
  if (name == "mpi") {
#ifdef CCSIM_HAVE_MPI
    return make_mpi_backend(options);
#else
    throw ReplayError("the mpi backend is not built into this ccsim: CMake found no MPI (install libopenmpi-dev and rebuild)");
#endif
  }
  if (name == "cuda") {
#ifdef CCSIM_HAVE_CUDA
    return make_cuda_backend(options);
#else
    throw ReplayError("the cuda backend is not built into this ccsim: CMake found no nvcc (install the CUDA toolkit and rebuild)");
#endif
  }
  if (name == "verbs") {
#ifdef CCSIM_HAVE_VERBS
    return make_verbs_backend(options);
#else
    throw ReplayError("the verbs backend is not built into this ccsim: CMake found no libibverbs or no MPI (install libibverbs-dev "
                      "and libopenmpi-dev and rebuild)");
#endif
  }
  throw ReplayError(fmt::format("unknown backend '{}': expected host, mpi, cuda or verbs", name));
}

}  // namespace ccsim::validate::replay
