#pragma once
// `ccsim collective SCENARIO --op allreduce [--algo auto|ring|Ring,Tree|^NVLS|...] -b 8 -e 8G -f 2 ...`:
// nccl-tests' table for a simulated collective (nccl-tests' flags -o, -d, -g, -t, -n, -w, -c,
// -a, -z where they mean something; NCCL_ALGO / NCCL_PROTO spellings), with the chosen
// algorithm and protocol and the lower bound per size (collective_table.hpp).

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace ccsim::cli {

struct CollectiveCliOptions {
  std::string scenario;
  std::string op;  ///< the collective: allreduce, ..., or nccl-tests' binary name (all_reduce_perf)
  /// --algo: an algorithm name (ccsim's or NCCL's, case-insensitive), an NCCL_ALGO list
  /// ("Ring,Tree", "^NVLS"), synth:FILE or auto; not given: the environment's NCCL_ALGO, else auto.
  std::string algo = "auto";
  bool algo_given = false;
  /// --protocol: LL, LL128, Simple, an NCCL_PROTO list ("LL,LL128", "^LL") or auto; not given:
  /// the environment's NCCL_PROTO, else auto.
  std::string protocol = "auto";
  bool protocol_given = false;
  std::string min_bytes = "8";
  std::string max_bytes = "128M";
  int factor = 2;
  std::string engine = "analytic";
  int ranks = 0;
  std::string group;
  int root = 0;
  int channels = 0;
  std::optional<std::string> nccl_version;  ///< --nccl-version ("2.20"); nullopt: the scenario's simulation.nccl.version
  std::string granularity = "auto";
  std::string ecmp;  ///< empty: the scenario's fabric.ecmp; hash or balanced overrides it
  std::string datatype = "float";  ///< -d: an nccl-tests type name or "all"
  std::string redop = "sum";       ///< -o/--redop: sum, prod, max, min, avg, mulsum or all (nccl-tests' -o)
  int ngpus = 0;     ///< -g: GPUs per process (nccl-tests); 0: not given
  int nthreads = 0;  ///< -t: threads per process (nccl-tests); 0: not given
  int iters = 20;    ///< -n: accepted, printed; the simulation is deterministic
  int warmup_iters = 1;  ///< -w: likewise
  int check = 0;     ///< -c: 0 only (ccsim moves no data)
  int average = 1;   ///< -a: 0-3, accepted (every rank's time per iteration is the collective's)
  int blocking = 0;  ///< -z: 0 or 1, accepted (each simulated collective runs alone)
  std::optional<int> cudagraph;       ///< -G: CUDA graph launches (> 0: graph launch; 0: eager); unset: the scenario's simulation.launch
  std::optional<int> local_register;  ///< -R: 0 none, 1 local, 2 symmetric registration; unset: the scenario's simulation.symmetric_memory
  int agg_iters = 1;                  ///< -m: collectives aggregated in one group (one launch)
  /// nccl-tests flags that have no meaning in a simulation (-i, -m, -p, -G, -C, -T): the first
  /// given, refused with a message.
  std::string refused_flag;
  std::string format = "text";
  std::string calibration;
  std::string catalog;
  bool dump_channels = false;  ///< print the channel plan and exit, without simulating
  std::optional<std::string> skew;  ///< --skew: ready-time skew (parse_skew); nullopt: none
};

CLI::App* add_collective_command(CLI::App& app, CollectiveCliOptions& options);
/// Throws support::InputError on bad input. Reads the environment's NCCL_ALGO and NCCL_PROTO
/// when --algo / --protocol are not given.
int run_collective(const CollectiveCliOptions& options);

/// Per-rank ready times (seconds after the first arrival, the earliest 0) for `ranks` ranks from
/// --skew's text:
///   "R:TIME[,R:TIME...]"   rank R calls the collective TIME late (the others at 0): "3:50us";
///   "uniform:MAX[:SEED]"   every rank late by a time drawn uniformly from [0, MAX];
///   "exponential:MEAN[:SEED]"  every rank late by an exponential time of mean MEAN
/// (std::mt19937_64 with SEED, default 1, the same on every machine; drawn times are shifted
/// so that the earliest rank is at 0). TIME is a duration with its unit (50us, 1.5ms).
/// Throws support::InputError (key --skew) naming what is wrong: a rank out of range or named
/// twice, a time below 0 or without a unit, an unknown form.
std::vector<double> parse_skew(const std::string& text, int ranks);

/// nccl-tests' time column: 2 decimals below 100 us, 1 below 10,000 us, none above.
std::string format_time_us(double us);

}  // namespace ccsim::cli
