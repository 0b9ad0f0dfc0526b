#pragma once
// The flow engine: the same Plan executed by SimGrid's flow-level network model (CM02:
// max-min fair sharing of every link, Casanova & Legrand), the fidelity engine of DESIGN.md.
//
// SimGrid's Engine is a process-wide singleton, so each run() forks a child process that
// builds a platform, simulates and sends the Timeline back through a pipe.
//
// Platform. One SimGrid link per topology link a transfer uses (capacity = bandwidth ×
// efficiency, latency 0) in a star zone; one virtual host per distinct path (channels of one
// device pair may take different ECMP spines) whose "up" route is exactly that path (with a
// rate cap, one per (connection, path), whose route starts with a private link of the cap's
// capacity), and one sink host with an empty route. A
// transfer is a Comm from its pair's host to the sink, started from completion callbacks as
// its dependencies finish (SimGrid pitfall: activities created up front are scanned at every
// event). Its latency (steps × (path latency + step overhead)) is a kernel timer before the
// Comm starts, so every transfer pays exactly its own α whatever its step count.
//
// Configuration (set in one place, configure_simgrid(), tested): network/model:CM02,
// network/crosstraffic:0, network/TCP-gamma:0, latency and bandwidth factors 1, weight-S 0.
// Payloads are whole bytes (SimGrid truncates fractions); the analytic engine rounds the same.
// Transfers that start together on one path with one payload share one Comm (Merging).
// Each Comm is a mailbox put by a short-lived actor of its own (Issuing::Actors), not a
// host-to-host Comm, which SimGrid 3.32 detaches into a list it scans at every completion.
// The child writes its results and _exit()s without destroying the SimGrid engine.
// Link busy time and peak utilisation are not measured by this engine (reported as 0).

#include "models/hardware/router.hpp"
#include "sim/execution/engine.hpp"

namespace ccsim::sim {

class FlowEngine final : public Engine {
 public:
  /// How transfers become SimGrid Comms. Identical (the default): transfers launched at the
  /// same simulated instant over the same path (same link sequence) with the same whole-byte
  /// payload run as one Comm of k × payload bytes with sharing penalty 1/k, which SimGrid's
  /// max-min solver treats exactly as k Comms (each gets the same share on every link, so all
  /// finish together). With a rate cap they belong to k connections (channels); the Comm then
  /// runs through the first one's cap link, set to k × CostParams::max_rate for it, which bounds
  /// it exactly as k caps bound k equal flows. None: one Comm per transfer (the reference path).
  enum class Merging { Identical, None };
  /// Who starts the Comms. Actors (the default): each Comm is a mailbox put (s4u put_async)
  /// issued and waited for by a short-lived actor of its own on the path's host, received by a
  /// permanent receiver on the sink; the Comm is not detached, so SimGrid keeps it only in that
  /// actor's activity list (one entry). Detached (the reference path): host-to-host Comms
  /// (Comm::sendto_init), which SimGrid 3.32 always detaches into maestro's activity std::list
  /// and removes from it by a linear scan at every completion (O(Comms in flight) each).
  /// Both give the same times (same routes, same start instants, same max-min shares).
  enum class Issuing { Actors, Detached };
  explicit FlowEngine(const models::Cluster& cluster, Merging merging = Merging::Identical,
                      Issuing issuing = Issuing::Actors);
  std::string_view name() const override { return "flow"; }
  /// Throws std::runtime_error when the child simulation fails (with its message).
  Timeline run(const Plan& plan) override;
  /// SimGrid Comms started by the last run() (a work counter; with Merging::None, the number of
  /// transfers that carried bytes over at least one link).
  std::size_t last_comms() const { return last_comms_; }

 private:
  const models::Cluster& cluster_;
  models::Router router_;
  Merging merging_;
  Issuing issuing_;
  std::size_t last_comms_ = 0;
};

/// The SimGrid command-line configuration ccsim uses (the exact α + S/B network).
std::vector<std::string> simgrid_configuration();

}  // namespace ccsim::sim
