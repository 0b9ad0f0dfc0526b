// Test driver of support/mpi/session.hpp, one process per scenario (MPI starts once per
// process), run by tests/support/mpi/session_test.sh. Prints "ok <scenario>" when every check
// held, "FAIL ..." and exits 1 otherwise. An atexit handler registered before the session is
// created runs after its destructor, and reports whether MPI was finalised then.
// Usage: session_driver funneled|single|finish|at-exit|abort|unfinalised

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// The C API only: OpenMPI's and MPICH's mpi.h pull in the deprecated C++ bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "support/mpi/session.hpp"

using ccsim::support::mpi::Session;
using ccsim::support::mpi::StartError;
using ccsim::support::mpi::ThreadLevel;

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (ok) return;
  ++failures;
  std::printf("FAIL %s\n", what);
}

bool finalized() {
  int f = 0;
  MPI_Finalized(&f);
  return f != 0;
}

int thread_level() {
  int provided = -1;
  MPI_Query_thread(&provided);
  return provided;
}

void report_at_exit() {
  std::printf("at exit: MPI %s\n", finalized() ? "finalised" : "not finalised");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: session_driver funneled|single|finish|at-exit|abort|unfinalised\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::atexit(report_at_exit);
  Session& session = Session::process();
  expect(!session.initialised(), "MPI initialised before start()");
  expect(!session.owner(), "owner before start()");
  session.start(mode == "single" ? ThreadLevel::Single : ThreadLevel::Funneled);
  expect(session.initialised(), "MPI not initialised by start()");
  expect(session.owner(), "start() did not make the session the owner");
  if (mode == "single") expect(thread_level() == MPI_THREAD_SINGLE, "ThreadLevel::Single did not give MPI_THREAD_SINGLE");
  if (mode != "single") expect(thread_level() == MPI_THREAD_FUNNELED, "ThreadLevel::Funneled did not give MPI_THREAD_FUNNELED");
  // A second start() changes nothing, whatever level it asks for.
  session.start(ThreadLevel::Single);
  expect(session.owner() && !finalized(), "a second start() changed the session");
  if (mode != "single") expect(thread_level() == MPI_THREAD_FUNNELED, "a second start() changed the thread level");

  if (mode == "finish" || mode == "single") {
    session.finish();
    expect(finalized(), "finish() did not finalise MPI");
    session.finish();  // once only
    try {
      session.start(ThreadLevel::Funneled);
      expect(false, "start() after MPI_Finalize did not throw");
    } catch (const StartError& e) {
      expect(e.reason() == StartError::Reason::Finalised, "start() after MPI_Finalize: not Reason::Finalised");
      expect(std::strcmp(e.what(), "MPI was already finalised in this process") == 0, "start() after MPI_Finalize: message");
    }
  }
  if (mode == "abort" || mode == "unfinalised") {
    expect(!session.failed(), "failed() before a failure");
    if (mode == "abort") session.abort_at_exit(5);
    if (mode == "unfinalised") session.leave_unfinalised();
    expect(session.failed(), "failed() after a failure");
    session.finish();
    expect(!finalized(), "finish() finalised MPI after a failure part-way");
  }
  std::printf("%s %s\n", failures == 0 ? "ok" : "FAILED", mode.c_str());
  std::fflush(stdout);
  // abort: the session's destructor calls MPI_Abort(5) at exit, before report_at_exit runs.
  return failures == 0 ? 0 : 1;
}
