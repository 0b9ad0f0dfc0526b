// What the MPI launcher's environment says (support/mpi/launcher.hpp), with the variables set
// and unset by the test; the environment of the test process is restored afterwards.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "support/mpi/launcher.hpp"

using namespace ccsim;

namespace {

constexpr const char* kVariables[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"};

/// Sets exactly `set` of the launcher variables for its lifetime, then restores them.
class LauncherEnv {
 public:
  explicit LauncherEnv(std::initializer_list<std::pair<const char*, const char*>> set) {
    for (const char* name : kVariables) {
      const char* v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      ::unsetenv(name);
    }
    for (const auto& [name, value] : set) ::setenv(name, value, 1);
  }
  ~LauncherEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  LauncherEnv(const LauncherEnv&) = delete;
  LauncherEnv& operator=(const LauncherEnv&) = delete;

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace

TEST_CASE("no launcher: not launched, size 0, rank 0") {
  const LauncherEnv env({});
  CHECK_FALSE(support::mpi::launched());
  CHECK(support::mpi::launched_size() == 0);
  CHECK(support::mpi::launched_rank() == 0);
}

TEST_CASE("Open MPI's mpirun: OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK") {
  const LauncherEnv env({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}});
  CHECK(support::mpi::launched());
  CHECK(support::mpi::launched_size() == 4);
  CHECK(support::mpi::launched_rank() == 3);
}

TEST_CASE("PMI (MPICH, Hydra): PMI_SIZE and PMI_RANK; Open MPI's variables come first") {
  {
    const LauncherEnv env({{"PMI_SIZE", "6"}, {"PMI_RANK", "5"}});
    CHECK(support::mpi::launched());
    CHECK(support::mpi::launched_size() == 6);
    CHECK(support::mpi::launched_rank() == 5);
  }
  const LauncherEnv both({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"PMI_SIZE", "6"}, {"PMI_RANK", "5"}});
  CHECK(support::mpi::launched_size() == 2);
  CHECK(support::mpi::launched_rank() == 1);
}

TEST_CASE("PMIx alone announces the rank: launched, size 1 (MPI tells the rest)") {
  const LauncherEnv env({{"PMIX_RANK", "7"}});
  CHECK(support::mpi::launched());
  CHECK(support::mpi::launched_size() == 1);
  CHECK(support::mpi::launched_rank() == 7);
}

TEST_CASE("a size that is not a number above 0: launched, but no size from it") {
  // launched() asks only whether a variable is set; launched_size() reads the value.
  {
    const LauncherEnv env({{"OMPI_COMM_WORLD_SIZE", "0"}});
    CHECK(support::mpi::launched());
    CHECK(support::mpi::launched_size() == 0);
  }
  const LauncherEnv env({{"OMPI_COMM_WORLD_SIZE", "x"}, {"PMI_SIZE", "3"}});
  CHECK(support::mpi::launched_size() == 3);
}
