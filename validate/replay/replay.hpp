#pragma once
// The replay microbackend (DESIGN.md "The calibration loop"): executes a Step-granularity
// Schedule — the very one `ccsim collective` lowers and simulates — on real hardware, with real
// buffers and real data, checks every rank's result as nccl-tests does (count of wrong
// elements), and times every iteration and every op.
//
// One interface, one backend per file (validate/replay/*_backend.*):
//   host   ranks are threads of this process; transfers are memcpy from the peer's buffer
//          (a rendezvous, as NCCL's P2P read), reductions real arithmetic on host memory.
//   mpi    ranks are MPI processes; transfers are MPI point-to-point on the Schedule's pairs.
//   cuda   ranks are GPUs of one node (or disjoint buffers of one GPU); copies and reduction
//          kernels on one stream per channel, CUDA events per op.
//   verbs  ranks are processes with RDMA verbs queue pairs; RDMA writes between ranks.
//
// Op semantics are models/collective/schedule.hpp's: the k-th Send from a to b on channel c pairs with the
// k-th Recv/RecvReduce on b from a on channel c; an op runs once its dependencies are done; a
// Send is done when its data has been delivered (its source may then be overwritten).

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/collective/schedule.hpp"

namespace ccsim::validate::replay {

/// Element types with real arithmetic (nccl-tests' names). half / bfloat16 have none on the
/// host and are refused (ReplayError) rather than silently converted.
enum class DataType : std::uint8_t { Int8, Uint8, Int32, Uint32, Int64, Uint64, Float, Double };

/// Parses an nccl-tests type name ("float", "int32", ...); nullopt-like: returns false when unknown.
bool parse_data_type(std::string_view name, DataType& out);
std::string_view to_string(DataType t);
std::uint32_t size_of(DataType t);

/// A problem that stops a replay (an unsupported schedule or type, a backend without a device,
/// a transport failure). The CLI prints it and exits 3 (2 when it is the user's input).
struct ReplayError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ReplayConfig {
  DataType type = DataType::Float;
  int warmup = 5;   ///< untimed iterations before the timed ones (nccl-tests -w)
  int iters = 20;   ///< timed iterations (nccl-tests -n)
  /// Record per-op start and end times of every timed iteration (MeasuredOp). Off: iteration
  /// times only (the ops still run identically).
  bool record_ops = true;
};

/// One op's measured times in one iteration, seconds from that iteration's common start (the
/// moment every rank left the start barrier). start: the op's dependencies were done and it was
/// issued; end: it completed (a Send: its data delivered; a Recv: its data landed and, for
/// RecvReduce, was reduced).
struct MeasuredOp {
  std::int32_t rank = 0;
  std::uint32_t op = 0;  ///< index in the rank's RankProgram::ops (the simulated trace's op id)
  double start = 0;
  double end = 0;
};

/// The replay of one Schedule (one size).
struct SizeResult {
  std::uint64_t bytes = 0;              ///< nccl-tests size S
  /// Seconds of each timed iteration: from the common start to the last rank's last op.
  std::vector<double> iteration_times;
  /// Per-op times, iteration by iteration (iters × ops of all ranks), when record_ops.
  std::vector<std::vector<MeasuredOp>> ops;
  /// Output elements that differ from the collective's defined result, summed over ranks and
  /// checked after the last iteration (nccl-tests' #wrong). Only ranks that report results
  /// (for mpi: gathered to rank 0).
  std::uint64_t wrong = 0;
  std::string first_wrong;              ///< "rank 2 element 17: expected 12, found 0" (empty when none)
  /// Mean of iteration_times, seconds (nccl-tests' time column).
  double mean_time() const;
  /// Median of iteration_times, seconds (robust to a descheduled iteration on a shared host).
  double median_time() const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Ranks this backend runs: 0 = any (host, cuda with several buffers per GPU); mpi and verbs:
  /// the launcher's world size, which must equal the schedule's rank count.
  virtual int world_ranks() const { return 0; }
  /// Whether this process prints and writes results (mpi / verbs: rank 0 only).
  virtual bool reporter() const { return true; }
  /// A line saying where the ranks run ("8 threads on 2 cores of host x", "4 MPI processes
  /// on 1 host"), for the log header.
  virtual std::string describe(int nranks) const = 0;
  /// Executes `schedule` config.warmup + config.iters times, checks the result after the last
  /// iteration, and returns the timings. Throws ReplayError when the schedule cannot be replayed
  /// (Phase granularity, an op the backend lacks, a type without arithmetic) or the hardware
  /// fails. Collective across ranks for mpi / verbs: every process calls it with the same schedule.
  virtual SizeResult run(const models::Schedule& schedule, const ReplayConfig& config) = 0;
};

/// What a backend may need from the scenario and the command line.
struct BackendOptions {
  /// NIC rail of each rank: the rail of the NIC the scenario pairs with the rank's GPU (verbs maps
  /// rail i to the i-th RDMA device). Empty: rail 0 for every rank.
  std::vector<int> rail_of_rank;
  /// RDMA device names by rail (--nics mlx5_0,mlx5_1). Empty: the host's devices in name order.
  std::vector<std::string> nics;
  /// CUDA devices to place ranks on (--devices 0,1); empty: all visible. Rank r runs on
  /// devices[r mod devices.size()]: with fewer GPUs than ranks, ranks share a GPU (disjoint buffers).
  std::vector<int> devices;
};

/// "host", "mpi", "cuda" or "verbs". Throws ReplayError naming what is missing when the backend
/// was not built (no MPI / nvcc / libibverbs at build time) or cannot start here (no GPU, no
/// RDMA device, mpi without a launcher). Backends are built in when their library is found.
std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options = {});
/// Names of the backends built into this binary.
std::vector<std::string> built_backends();

}  // namespace ccsim::validate::replay
