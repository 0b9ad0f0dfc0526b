#pragma once
// The ranks of a `ccsim sweep` started by mpirun (or srun): which points this process runs, and
// the two collectives the sweep needs (gather every rank's rows at rank 0, broadcast rank 0's
// exit code). MPI is initialised only when the environment says the process was launched by an
// MPI launcher (support/mpi/launcher.hpp), so a plain `ccsim sweep` never touches MPI; a build
// without MPI (CMake found none) runs as one rank and refuses a launch of several. MPI's
// lifetime is the process's (support/mpi/session.hpp).

#include <string>
#include <vector>

namespace ccsim::cli {

class SweepRanks {
 public:
  /// Initialises MPI when launched by an MPI launcher. Throws support::InputError when launched
  /// with more than one rank by a build without MPI support, std::runtime_error ("MPI: MPI_Init
  /// failed") when MPI does not start.
  SweepRanks();
  /// Finalises MPI when this object's constructor initialised it.
  ~SweepRanks();
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// Collective: rank 0 gets every rank's `mine`, in rank order; the other ranks an empty list.
  std::vector<std::string> gather(const std::string& mine) const;
  /// Collective: rank 0's `value`, on every rank.
  int broadcast(int value) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialised_ = false;  ///< this process runs MPI (launched by a launcher)
};

}  // namespace ccsim::cli
