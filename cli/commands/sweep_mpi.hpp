#pragma once
// The ranks of a `ccsim sweep` started by mpirun (or srun): which points this process runs, and
// the two collectives the sweep needs (gather every rank's rows at rank 0, broadcast rank 0's
// exit code). MPI is initialised only when the environment says the process was launched by an
// MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK), so a plain `ccsim sweep` never
// touches MPI; a build without MPI (CMake found none) runs as one rank and refuses a launch
// of several.

#include <string>
#include <vector>

namespace ccsim::cli {

/// This process's rank as an MPI launcher announced it in the environment (OMPI_COMM_WORLD_RANK,
/// PMI_RANK, PMIX_RANK), 0 when none did. Lets errors found before MPI starts (a bad command
/// line) be printed by rank 0 only.
int launched_rank();

class SweepRanks {
 public:
  /// Initialises MPI when launched by an MPI launcher. Throws support::InputError when launched
  /// with more than one rank by a build without MPI support.
  SweepRanks();
  /// Finalises MPI when it was initialised.
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
  bool initialised_ = false;
};

}  // namespace ccsim::cli
