#include "support/mpi/session.hpp"

#include <string>

// The C API only: OpenMPI's and MPICH's mpi.h pull in the deprecated C++ bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace ccsim::support::mpi {

StartError::StartError(Reason reason, int code)
    : std::runtime_error(reason == Reason::Finalised ? std::string("MPI was already finalised in this process")
                                                     : "MPI initialisation failed (MPI error " + std::to_string(code) + ")"),
      reason_(reason),
      code_(code) {}

Session& Session::process() {
  static Session session;
  return session;
}

bool Session::initialised() const {
  int initialised = 0;
  MPI_Initialized(&initialised);
  return initialised != 0;
}

void Session::start(ThreadLevel level) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw StartError(StartError::Reason::Finalised, 0);
  if (initialised()) return;
  int rc = MPI_SUCCESS;
  if (level == ThreadLevel::Single) {
    rc = MPI_Init(nullptr, nullptr);
  } else {
    int provided = 0;
    rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  if (rc != MPI_SUCCESS) throw StartError(StartError::Reason::InitFailed, rc);
  owner_ = true;
}

void Session::abort_at_exit(int exit_code) {
  failed_ = true;
  abort_code_ = exit_code;
}

void Session::leave_unfinalised() { failed_ = true; }

void Session::finish() {
  if (!owner_ || failed_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Session::~Session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (abort_code_) {
    MPI_Abort(MPI_COMM_WORLD, *abort_code_);
    return;
  }
  finish();
}

}  // namespace ccsim::support::mpi
