#include "cli/commands/sweep_mpi.hpp"

#include <stdexcept>

#include "support/input_error.hpp"
#include "support/mpi/launcher.hpp"

#ifdef CCSIM_HAVE_MPI
// The C API only: OpenMPI's and MPICH's mpi.h pull in the deprecated C++ bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "support/mpi/session.hpp"
#endif

namespace ccsim::cli {

namespace {

#ifdef CCSIM_HAVE_MPI
void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}
#endif

}  // namespace

SweepRanks::SweepRanks() {
  const int launched = support::mpi::launched_size();
  if (launched == 0) return;
#ifdef CCSIM_HAVE_MPI
  try {
    support::mpi::Session::process().start(support::mpi::ThreadLevel::Single);
  } catch (const support::mpi::StartError&) {
    throw std::runtime_error("MPI: MPI_Init failed");
  }
  initialised_ = true;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
#else
  if (launched > 1) {
    throw support::InputError({"<command line>", 0, 0}, "mpirun", "a ccsim built with MPI (CMake found no MPI: install libopenmpi-dev and rebuild)",
                              std::to_string(launched) + " ranks");
  }
#endif
}

SweepRanks::~SweepRanks() {
#ifdef CCSIM_HAVE_MPI
  if (initialised_) support::mpi::Session::process().finish();
#endif
}

std::vector<std::string> SweepRanks::gather(const std::string& mine) const {
  if (size_ == 1) return {mine};
#ifdef CCSIM_HAVE_MPI
  int length = static_cast<int>(mine.size());
  if (mine.size() > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error("MPI: a rank's rows exceed 2 GiB");
  std::vector<int> lengths(rank_ == 0 ? size_ : 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  long long total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
    if (total > INT32_MAX) throw std::runtime_error("MPI: the gathered rows exceed 2 GiB");
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r) out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return out;
#else
  return {mine};
#endif
}

int SweepRanks::broadcast(int value) const {
#ifdef CCSIM_HAVE_MPI
  if (initialised_) check(MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
#endif
  return value;
}

}  // namespace ccsim::cli
