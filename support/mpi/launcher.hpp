#pragma once
// What an MPI launcher (mpirun, mpiexec, srun) announces in a process's environment, read
// without MPI: whether a launcher started the process, the world size and this process's rank.
// Available in every build, with or without MPI (a build without MPI uses it to refuse a launch
// of several ranks, and to let only rank 0 print errors found before MPI would start).
//
// The variables: Open MPI's OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK, the PMI ones of MPICH
// and Hydra (PMI_SIZE / PMI_RANK), and PMIx's PMIX_RANK (Slurm's srun --mpi=pmix, Open MPI 5).

namespace ccsim::support::mpi {

/// Whether any of OMPI_COMM_WORLD_SIZE, PMI_SIZE and PMIX_RANK is set (whatever its value).
bool launched();

/// The world size the launcher announced: OMPI_COMM_WORLD_SIZE, else PMI_SIZE, the first that
/// reads as a number above 0; else 1 when PMIX_RANK is set (PMIx announces the rank, not always
/// the size: MPI tells it); else 0 (no launcher).
int launched_size();

/// This process's rank as the launcher announced it: the first of OMPI_COMM_WORLD_RANK,
/// PMI_RANK and PMIX_RANK that is set, read as a number (atoi); 0 when none is.
int launched_rank();

}  // namespace ccsim::support::mpi
