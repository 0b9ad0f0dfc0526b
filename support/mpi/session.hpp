#pragma once
// The process's one MPI lifetime, shared by every part of ccsim that runs MPI (`ccsim sweep`'s
// ranks, the mpi and verbs replay backends): MPI is initialised once, by the first user that
// needs it (unless code outside ccsim did), and ended once — MPI_Finalize by the session that
// initialised it, when its user says it is done (finish()) or at process exit. After a rank
// failed part-way, while its peers may wait for it in MPI, MPI is not finalised (MPI_Finalize
// would wait for them forever): the process ends with MPI_Abort, or exits without finalising,
// and the launcher then stops every rank.
//
// Built where CMake found MPI (the ccsim_support_mpi library, support/CMakeLists.txt); mpi.h
// stays out of this header. launcher.hpp reads the launcher's environment without MPI.

#include <optional>
#include <stdexcept>

namespace ccsim::support::mpi {

/// The thread support MPI is started with (MPI 4.1, section 11.6.1).
enum class ThreadLevel {
  /// MPI_Init: the standard's MPI_THREAD_SINGLE, one thread of the process calls MPI (Open MPI
  /// lets the environment variable OMPI_MPI_THREAD_LEVEL ask for another level).
  Single,
  /// MPI_Init_thread with MPI_THREAD_FUNNELED: only the thread that started MPI calls it; other
  /// threads may exist.
  Funneled,
};

/// MPI could not be started.
class StartError : public std::runtime_error {
 public:
  enum class Reason {
    Finalised,   ///< MPI was finalised in this process already (it cannot start twice)
    InitFailed,  ///< MPI_Init / MPI_Init_thread returned an error: code() is its error code
  };
  StartError(Reason reason, int code);
  Reason reason() const noexcept { return reason_; }
  /// The MPI error code the initialisation returned (Reason::InitFailed), else 0.
  int code() const noexcept { return code_; }

 private:
  Reason reason_;
  int code_;
};

class Session {
 public:
  /// The process's session, created on first use; its destructor runs at process exit (see
  /// ~Session).
  static Session& process();

  /// Whether MPI is initialised now (by start() or by code outside ccsim; still true after
  /// MPI_Finalize, as MPI_Initialized says).
  bool initialised() const;

  /// Initialises MPI at `level` unless it is initialised already (by an earlier start() or by
  /// code outside ccsim: then nothing changes, whatever level it runs at). Throws StartError
  /// (Finalised, or InitFailed with MPI's error code).
  void start(ThreadLevel level);

  /// Whether start() initialised MPI (this session finalises it).
  bool owner() const noexcept { return owner_; }

  /// Records that a rank failed part-way, while its peers may be blocked in MPI waiting for it:
  /// MPI is not finalised, and at process exit MPI_Abort(MPI_COMM_WORLD, `exit_code`) ends the
  /// process (the launcher stops every rank with it). `exit_code` becomes the process's exit
  /// status where the launcher passes it on (Open MPI's mpirun does).
  void abort_at_exit(int exit_code);
  /// Records that a rank failed part-way, as abort_at_exit, but the process exits without
  /// MPI_Finalize and without MPI_Abort (the launcher sees a process end without finalising and
  /// stops the job).
  void leave_unfinalised();
  /// Whether abort_at_exit() or leave_unfinalised() was called.
  bool failed() const noexcept { return failed_; }

  /// MPI_Finalize now, when start() initialised MPI, no failure was recorded and MPI is not
  /// finalised yet; otherwise nothing. Collective: every rank of the job calls it.
  void finish();

  /// At process exit: MPI_Abort after abort_at_exit(); else finish(). Nothing when MPI is
  /// finalised already.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  Session() = default;
  bool owner_ = false;
  bool failed_ = false;
  std::optional<int> abort_code_;
};

}  // namespace ccsim::support::mpi
