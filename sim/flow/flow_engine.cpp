#include "sim/flow/flow_engine.hpp"

#include <sys/wait.h>
#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <stdexcept>
#include <string>
#include <vector>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/plugins/load.h>
#include <simgrid/s4u.hpp>

#include "sim/execution/execution_graph.hpp"

namespace ccsim::sim {

using detail::DagState;
using detail::ExecutionGraph;

FlowEngine::FlowEngine(const models::Cluster& cluster, Merging merging, Issuing issuing)
    : cluster_(cluster), router_(cluster), merging_(merging), issuing_(issuing) {}

std::vector<std::string> simgrid_configuration() {
  return {"--cfg=network/model:CM02",          "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0",
          "--cfg=network/latency-factor:1",    "--cfg=network/bandwidth-factor:1", "--cfg=network/weight-S:0",
          "--log=root.thres:critical",         "--log=no_loc"};
}

namespace {

// Results travel from the child as raw doubles and integers.
void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      _exit(4);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

template <typename T>
void put(int fd, const T& v) {
  write_all(fd, &v, sizeof v);
}

class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}
  template <typename T>
  T get() {
    if (pos_ + sizeof(T) > data_.size()) throw std::runtime_error("flow engine: truncated result from the simulation process");
    T v{};
    std::memcpy(&v, data_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string rest() const { return data_.substr(pos_); }

 private:
  const std::string& data_;
  std::size_t pos_ = 0;
};

/// What one simulation runs: the plan, its topology and execution graph, and the engine's options.
struct SimulationInput {
  const Plan& plan;
  const models::Topology& topo;
  ExecutionGraph& graph;
  bool merge = true;   ///< FlowEngine::Merging::Identical
  bool actors = true;  ///< FlowEngine::Issuing::Actors
};

/// The SimGrid platform and the run's state, in the child process. The constructor builds the
/// platform; run() simulates; write_results() sends the Timeline's numbers to the parent.
class FlowRun {
 public:
  FlowRun(const SimulationInput& in, simgrid::s4u::Engine& engine);
  void run();
  /// Writes [status=0, makespan, op times, link bytes, Comms started], or [status=1, message]
  /// when the schedule deadlocked.
  void write_results(int fd) const;

 private:
  void build_routes();
  void create_mailboxes();
  void find_network_model();
  void install_callbacks();
  void apply_penalties();
  void done(std::uint32_t t);
  void launch(std::uint32_t t);
  void flush();
  void start_actor_comm(std::uint32_t host, std::uint64_t bytes, double k, std::vector<std::uint32_t> members);
  void start_detached_comm(std::uint32_t host, std::uint64_t bytes, double k, std::vector<std::uint32_t> members);
  void handle();
  void latency_over(double at);

  const Plan& plan_;
  const models::Topology& topo_;
  ExecutionGraph& g_;
  const bool merge_;
  const bool actors_;
  const bool capped_;
  simgrid::s4u::Engine& engine_;
  simgrid::s4u::NetZone* zone_;
  std::vector<simgrid::s4u::Link*> links_;
  // One virtual host per distinct path (link sequence), whose route is that path: channels of
  // one device pair may hash onto different ECMP spines, so a host per (source, destination)
  // pair would send them all down the first channel's path. With a rate cap, one host per
  // (connection, path), whose route also holds a private link of the cap's capacity.
  std::map<std::vector<models::LinkId>, std::uint32_t> path_ids_;
  std::vector<std::uint32_t> transfer_path_;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint32_t> host_ids_;  // (connection or ~0, path) -> host
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<simgrid::s4u::Link*> host_cap_;  // each host's cap link (capped only; null for a connection without a cap)
  std::vector<double> cap_now_;                // its bandwidth now (bytes/s)
  std::vector<double> host_rate_;              // its connection's cap (Plan parts: each part's own)
  std::vector<std::uint32_t> transfer_host_;
  simgrid::s4u::Host* sink_ = nullptr;
  // Actors path: each host's Comms go through its own mailbox, whose permanent receiver lives
  // on the sink, so a put's route is the host's route to the sink (sender's host to receiver's
  // host). The receiver does nothing itself (its body returns at once): a permanent receiver
  // only names the destination of the Comms pushed into the mailbox.
  std::vector<simgrid::s4u::Mailbox*> mailboxes_;
  std::vector<std::uint32_t> host_comms_;  // Comms created and not finished

  DagState dag_;
  std::vector<double> op_start_, op_end_;
  std::vector<double> link_bytes_;
  // Busy time: a link is busy while at least one transfer's data flows over it (after the
  // transfer's latency, until it completes), as in the analytic engine.
  std::vector<std::uint32_t> link_flows_;
  std::vector<double> link_busy_, busy_since_;
  // Transfers launched at one simulated instant over the same route (same virtual host, so the
  // same link set) with the same whole-byte payload get equal max-min rates at every instant
  // (the fair allocation is unique and symmetric in them), so they finish together. They run as
  // one Comm of k × payload whose sharing penalty is 1/k: SimGrid's lmm then gives it k times
  // one flow's share on every link, exactly as k separate Comms.
  //
  // Who starts the Comms (Issuing). SimGrid 3.32 keeps every detached Comm in maestro's
  // activity std::list and removes a finished one by a linear scan: Comm::sendto_init() always
  // calls CommImpl::detach(), which appends to that list, and CommImpl::finish() runs
  // std::list::remove on it, O(Comms in flight) per completion (84 % of the 16,384-rank ring
  // AllReduce's run time). No public s4u call starts a host-to-host Comm without detaching it,
  // and the kernel's NetworkModel::communicate() is not in the installed headers. A mailbox
  // put is not detached: SimGrid lists it only in its issuing actor's activities and removes it
  // from there when that actor's wait ends. So (Issuing::Actors) each Comm gets an actor of its
  // own on the path's host, which puts it into the host's mailbox and waits; the mailbox's
  // permanent receiver is an actor on the sink, so the Comm's route is the path's host to the
  // sink, as for sendto. Completions are handled in maestro (Engine::on_time_advance, right
  // after the models advance the clock, from the network model's finished actions), so the
  // actors' stacks only hold SimGrid's put and wait. Detached: the reference path, sendto_init
  // Comms whose completions come through Activity::on_completion.
  std::map<const simgrid::s4u::Activity*, std::vector<std::uint32_t>> in_flight_;  // Detached path
  std::vector<simgrid::s4u::CommPtr> keep_;  // Detached path
  // Actors path. A Comm's network action and its kernel activity (CommImpl) are found through
  // the network model's action sets; both are keyed by the activity's address.
  std::unordered_map<const void*, std::vector<std::uint32_t>> actor_in_flight_;  // activity -> transfers
  std::unordered_map<const void*, double> pending_penalty_;  // activity -> k, put this round, penalty not set yet
  std::size_t puts_due_ = 0;  // actors created whose put has not been served yet
  std::string actor_failure_;
  std::vector<std::vector<std::uint32_t>> completed_;
  simgrid::kernel::resource::Model* network_model_ = nullptr;
  std::vector<std::uint32_t> batch_;  // transfers to launch at this instant
  std::size_t comms_started_ = 0;
  DagState::Events ev_;
  const double t0_;
  std::map<double, std::vector<std::uint32_t>> timers_;  // latency expiry time -> transfers
};

FlowRun::FlowRun(const SimulationInput& in, simgrid::s4u::Engine& engine)
    : plan_(in.plan),
      topo_(in.topo),
      g_(in.graph),
      merge_(in.merge),
      actors_(in.actors),
      capped_(std::any_of(g_.connection_rate.begin(), g_.connection_rate.end(),
                          [](double r) { return r < std::numeric_limits<double>::infinity(); })),
      engine_(engine),
      zone_(simgrid::s4u::create_star_zone("ccsim")),
      links_(in.topo.num_links(), nullptr),
      transfer_path_(in.graph.transfers.size(), 0),
      transfer_host_(in.graph.transfers.size(), ~0U),
      dag_(in.graph),
      op_start_(in.graph.op_count(), -1.0),
      op_end_(in.graph.op_count(), -1.0),
      link_bytes_(in.topo.num_links(), 0.0),
      link_flows_(in.topo.num_links(), 0),
      link_busy_(in.topo.num_links(), 0.0),
      busy_since_(in.topo.num_links(), 0.0),
      t0_(in.plan.cost.base_latency) {
  build_routes();
  // Every transfer goes to one sink host over the pair's links only. The sink's own route is
  // empty: a shared link there, even a FATPIPE one, would tie every flow into one constraint
  // and make SimGrid re-solve all of them at each completion.
  sink_ = zone_->create_host("sink", 1e9);
  zone_->add_route(nullptr, sink_->get_netpoint(), nullptr, nullptr, {}, false);
  zone_->seal();
  create_mailboxes();
  for (auto* l : links_)
    if (l != nullptr) sg_link_load_track(l);  // after sealing: the plugin attaches at seal time
  find_network_model();
  install_callbacks();
}

// One host per distinct (cap owner, path), with its route; every transfer's host.
void FlowRun::build_routes() {
  for (std::size_t t = 0; t < g_.transfers.size(); ++t) {
    const auto& tr = g_.transfers[t];
    if (tr.path_count == 0) continue;
    const auto first = g_.path_links.begin() + tr.path_begin;
    const auto [pit, fresh_path] =
        path_ids_.try_emplace(std::vector<models::LinkId>(first, first + tr.path_count), static_cast<std::uint32_t>(path_ids_.size()));
    transfer_path_[t] = pit->second;
    const std::uint64_t owner = capped_ ? std::uint64_t{tr.connection} : ~0ULL;
    auto [it, fresh] = host_ids_.try_emplace({owner, pit->second}, static_cast<std::uint32_t>(hosts_.size()));
    if (fresh) {
      std::vector<simgrid::s4u::LinkInRoute> route;
      if (capped_) {
        // A merged plan can mix capped and uncapped parts: an uncapped connection has no cap link.
        const double rate = g_.connection_rate[tr.connection];
        host_rate_.push_back(rate);
        cap_now_.push_back(rate);
        host_cap_.push_back(rate < std::numeric_limits<double>::infinity()
                                ? zone_->create_link("cap" + std::to_string(hosts_.size()), rate)->set_latency(0)->seal()
                                : nullptr);
        if (host_cap_.back() != nullptr) route.emplace_back(host_cap_.back());
      }
      for (std::uint32_t k = 0; k < tr.path_count; ++k) {
        const models::LinkId id = g_.path_links[tr.path_begin + k];
        if (links_[id] == nullptr) {
          links_[id] = zone_->create_link("l" + std::to_string(id), detail::link_capacity(topo_.link(id), plan_.cost))->set_latency(0)->seal();
        }
        route.emplace_back(links_[id]);
      }
      hosts_.push_back(zone_->create_host("p" + std::to_string(hosts_.size()), 1e9));
      zone_->add_route(hosts_.back()->get_netpoint(), nullptr, nullptr, nullptr, route, false);
    }
    transfer_host_[t] = it->second;
  }
  host_comms_.assign(hosts_.size(), 0);
}

void FlowRun::create_mailboxes() {
  if (!actors_) return;
  auto receiver = simgrid::s4u::Actor::create("receiver", sink_, []() {});
  for (std::size_t h = 0; h < hosts_.size(); ++h) {
    mailboxes_.push_back(simgrid::s4u::Mailbox::by_name("m" + std::to_string(h)));
    mailboxes_.back()->set_receiver(receiver);
  }
}

void FlowRun::find_network_model() {
  for (auto* m : engine_.get_all_models())
    if (m->get_name() == "Network_CM02") network_model_ = m;
  if (network_model_ == nullptr) throw std::runtime_error("flow engine: SimGrid has no Network_CM02 model");
}

void FlowRun::install_callbacks() {
  if (actors_) {
    // Completions, in maestro right after the models advanced the clock: the network model's
    // finished set holds the actions that finished in this step, in finishing order (SimGrid
    // empties it before the next step, when it wakes the waiting actors).
    simgrid::s4u::Engine::on_time_advance_cb([this](double) {
      for (const auto& action : *network_model_->get_finished_action_set()) {
        const auto it = actor_in_flight_.find(action.get_activity());
        if (it == actor_in_flight_.end()) continue;
        completed_.push_back(std::move(it->second));
        actor_in_flight_.erase(it);
      }
      for (const auto& members : completed_) {
        for (std::uint32_t t : members) done(t);
        flush();
      }
      completed_.clear();
    });
  }
  simgrid::s4u::Activity::on_completion_cb([this](const simgrid::s4u::Activity& a) {
    const auto it = in_flight_.find(&a);
    if (it == in_flight_.end()) return;
    const std::vector<std::uint32_t> members = std::move(it->second);
    in_flight_.erase(it);
    for (std::uint32_t t : members) done(t);
    flush();
  });
}

void FlowRun::run() {
  const std::vector<char> held = detail::held_ranks(plan_);
  dag_.start(ev_, held);
  // Late ranks (Plan::rank_ready): a kernel timer each, at the SimGrid clock of its arrival.
  for (std::size_t r = 0; r < held.size(); ++r) {
    if (!held[r]) continue;
    simgrid::kernel::timer::Timer::set(plan_.rank_ready[r], [this, r]() {
      dag_.arrive(r, ev_);
      handle();
      flush();
    });
  }
  handle();
  flush();
  engine_.run();
  if (!actor_failure_.empty()) throw std::runtime_error(actor_failure_);
}

// All the puts of one scheduling round are served before any of their actors resumes, and
// their actions are the newest in the started set: the last actor to resume sets every
// merged Comm's sharing penalty in one backward pass (before the solver runs again).
void FlowRun::apply_penalties() {
  auto* set = network_model_->get_started_action_set();
  for (auto it = set->rbegin(); it != set->rend() && !pending_penalty_.empty(); ++it) {
    const auto p = pending_penalty_.find(it->get_activity());
    if (p == pending_penalty_.end()) continue;
    it->set_sharing_penalty(1.0 / p->second);
    pending_penalty_.erase(p);
  }
  if (!pending_penalty_.empty()) {
    actor_failure_ = "flow engine: cannot find a Comm's network action";
    pending_penalty_.clear();
  }
}

void FlowRun::done(std::uint32_t t) {
  const auto& tr = g_.transfers[t];
  const bool flowed = transfer_host_[t] != ~0U && tr.bytes > 0.0;
  const double clock = simgrid::s4u::Engine::get_clock();
  for (std::uint32_t k = 0; k < tr.path_count; ++k) {
    const models::LinkId id = g_.path_links[tr.path_begin + k];
    link_bytes_[id] += tr.bytes;
    if (flowed && --link_flows_[id] == 0) link_busy_[id] += clock - busy_since_[id];
  }
  dag_.transfer_done(t, ev_);
  handle();
}

void FlowRun::launch(std::uint32_t t) {
  const auto& tr = g_.transfers[t];
  if (transfer_host_[t] == ~0U || tr.bytes <= 0.0) {
    done(t);
    return;
  }
  const double clock = simgrid::s4u::Engine::get_clock();
  for (std::uint32_t k = 0; k < tr.path_count; ++k) {
    const models::LinkId id = g_.path_links[tr.path_begin + k];
    if (link_flows_[id]++ == 0) busy_since_[id] = clock;
  }
  batch_.push_back(t);
}

// Starts the batch: one Comm per (path, payload) class.
void FlowRun::flush() {
  if (batch_.empty()) return;
  // Classes in order of first appearance, so that Comms start in a reproducible order.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> class_of;
  std::vector<std::vector<std::uint32_t>> classes;
  for (std::size_t i = 0; i < batch_.size(); ++i) {
    const std::uint32_t t = batch_[i];
    // Without merging, the batch index keeps every transfer in a class of its own.
    const std::uint64_t route = merge_ ? transfer_path_[t] : i;
    const auto [it, fresh] = class_of.try_emplace({route, static_cast<std::uint64_t>(g_.transfers[t].bytes)}, classes.size());
    if (fresh) classes.emplace_back();
    classes[it->second].push_back(t);
  }
  batch_.clear();
  for (auto& members : classes) {
    const std::uint32_t host = transfer_host_[members.front()];
    const double k = static_cast<double>(members.size());
    if (capped_ && host_cap_[host] != nullptr && cap_now_[host] != k * host_rate_[host]) {
      // k connections merged: the first one's cap link carries all k (a connection is a
      // FIFO, so nothing else of it is in flight), at k caps.
      cap_now_[host] = k * host_rate_[host];
      host_cap_[host]->set_bandwidth(cap_now_[host]);
    }
    const std::uint64_t bytes = static_cast<std::uint64_t>(g_.transfers[members.front()].bytes) * members.size();
    ++comms_started_;
    if (actors_) {
      start_actor_comm(host, bytes, k, std::move(members));
    } else {
      start_detached_comm(host, bytes, k, std::move(members));
    }
  }
}

// The actor puts the Comm when it first runs (at this same simulated instant, before the solver
// runs again) and waits for it; its completion is handled in maestro.
void FlowRun::start_actor_comm(std::uint32_t host, std::uint64_t bytes, double k, std::vector<std::uint32_t> members) {
  ++host_comms_[host];
  ++puts_due_;
  simgrid::s4u::Actor::create("c", hosts_[host], [this, host, bytes, k, members = std::move(members)]() mutable {
    static char payload;  // SimGrid refuses a null payload pointer; nobody reads it
    auto comm = mailboxes_[host]->put_async(&payload, bytes);
    const void* impl = comm->get_impl();
    if (k != 1.0) pending_penalty_.emplace(impl, k);
    actor_in_flight_.emplace(impl, std::move(members));
    if (--puts_due_ == 0) apply_penalties();
    comm->wait();
    // A permanent receiver's mailbox keeps every Comm put into it (with its sender, the
    // actor, and the actor's stack) until someone gets it; once none of the host's Comms
    // is in flight or about to start, all it holds are finished ones: drop them.
    comm = nullptr;
    if (--host_comms_[host] == 0) mailboxes_[host]->clear();
  });
}

void FlowRun::start_detached_comm(std::uint32_t host, std::uint64_t bytes, double k, std::vector<std::uint32_t> members) {
  auto comm = simgrid::s4u::Comm::sendto_init(hosts_[host], sink_);
  comm->set_payload_size(bytes);
  comm->start();
  if (k != 1.0) {
    auto& action = network_model_->get_started_action_set()->back();
    if (action.get_activity() != comm->get_impl()) throw std::runtime_error("flow engine: cannot find the Comm's network action");
    action.set_sharing_penalty(1.0 / k);
  }
  in_flight_[comm.get()] = std::move(members);
  keep_.push_back(comm);
}

void FlowRun::handle() {
  const double now = simgrid::s4u::Engine::get_clock() + t0_;
  for (std::uint32_t op : ev_.finished) {
    if (op_start_[op] < 0) op_start_[op] = now;
    op_end_[op] = now;
  }
  std::vector<std::uint32_t> start = std::move(ev_.startable);
  std::vector<std::uint32_t> flowable = std::move(ev_.flowable);
  ev_.startable.clear();
  ev_.flowable.clear();
  ev_.finished.clear();
  for (std::uint32_t t : flowable) launch(t);
  for (std::uint32_t t : start) {
    const auto& tr = g_.transfers[t];
    for (std::uint32_t op : {tr.send_op, tr.recv_op})
      if (op != detail::kNoOp) op_start_[op] = now;
    if (tr.latency > 0) {
      // One kernel timer per distinct expiry time: transfers whose latency ends together launch together.
      const double at = simgrid::s4u::Engine::get_clock() + tr.latency;
      auto [it, fresh] = timers_.try_emplace(at);
      it->second.push_back(t);
      if (fresh) simgrid::kernel::timer::Timer::set(at, [this, at]() { latency_over(at); });
    } else if (dag_.latency_elapsed(t)) {
      launch(t);
    }
  }
}

// The kernel timer of `at`: the transfers whose latency ends then launch (or wait for their
// connection).
void FlowRun::latency_over(double at) {
  const auto node = timers_.extract(at);
  for (std::uint32_t u : node.mapped())
    if (dag_.latency_elapsed(u)) launch(u);
  flush();
}

void FlowRun::write_results(int fd) const {
  if (dag_.ops_done() != g_.op_count()) {
    const std::string msg = "schedule deadlocks: " + std::to_string(g_.op_count() - dag_.ops_done()) + " ops never ran";
    put<std::uint8_t>(fd, 1);
    write_all(fd, msg.data(), msg.size());
    return;
  }
  double makespan = t0_;
  for (double e : op_end_) makespan = std::max(makespan, e);
  put<std::uint8_t>(fd, 0);
  put<double>(fd, makespan);
  put<std::uint64_t>(fd, g_.op_count());
  for (std::uint32_t op = 0; op < g_.op_count(); ++op) {
    put<double>(fd, op_start_[op]);
    put<double>(fd, op_end_[op]);
  }
  std::uint64_t used = 0;
  for (double b : link_bytes_) used += b > 0 ? 1 : 0;
  put<std::uint64_t>(fd, used);
  for (models::LinkId id = 0; id < link_bytes_.size(); ++id) {
    if (link_bytes_[id] > 0) {
      put<std::uint32_t>(fd, id);
      put<double>(fd, link_bytes_[id]);
      put<double>(fd, link_busy_[id]);
      const double peak =
          links_[id] != nullptr ? sg_link_get_max_instantaneous_load(links_[id]) / detail::link_capacity(topo_.link(id), plan_.cost) : 0.0;
      put<double>(fd, peak);
    }
  }
  put<std::uint64_t>(fd, comms_started_);
}

/// Runs in the child: simulate, write the results (FlowRun::write_results) and _exit(0) (or
/// throw before anything is written).
[[noreturn]] void simulate(const SimulationInput& in, int fd) {
  std::vector<std::string> args{"ccsim-flow"};
  for (const auto& c : simgrid_configuration()) args.push_back(c);
  if (in.actors) {
    // An issuing actor only puts, waits and clears its mailbox (ccsim's completion handling
    // runs in maestro): measured high-water mark under 2 KiB, so 16 KiB stacks, without guard
    // pages (an mprotect'ed page per actor would exhaust the kernel's map count, 65,530 by
    // default, with the 32,768 Comms in flight of the 16,384-rank ring).
    args.emplace_back("--cfg=contexts/stack-size:16");
    args.emplace_back("--cfg=contexts/guard-size:0");
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  simgrid::s4u::Engine engine(&argc, argv.data());
  sg_link_load_plugin_init();  // per-link peak load (bytes/s), for LinkRecord::peak
  FlowRun run(in, engine);
  run.run();
  run.write_results(fd);
  // The results are out: end the child here. Unwinding would destroy every Comm, host, link
  // and the SimGrid engine, seconds of teardown on large platforms that nobody waits for.
  ::close(fd);
  _exit(0);
}

}  // namespace

Timeline FlowEngine::run(const Plan& plan) {
  ExecutionGraph g(plan, router_);  // built in the parent: bad plans fail here, not in the child
  (void)detail::held_ranks(plan);   // the same for a bad Plan::rank_ready
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("flow engine: pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // the child must not replay the parent's buffered output
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("flow engine: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The simulation must not outlive ccsim: when the parent dies (SIGINT, SIGTERM, a crash),
    // the kernel kills this process too (Linux prctl); a parent already gone ends it now.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);
    ::close(fds[0]);
    try {
      simulate({plan, cluster_.topology, g, merging_ == Merging::Identical, issuing_ == Issuing::Actors}, fds[1]);
    } catch (const std::exception& e) {
      put<std::uint8_t>(fds[1], 1);
      write_all(fds[1], e.what(), std::strlen(e.what()));
    }
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  std::string data;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (data.empty()) {
    throw std::runtime_error("flow engine: the simulation process died (status " + std::to_string(status) + ")");
  }
  Reader in(data);
  if (in.get<std::uint8_t>() != 0) throw std::runtime_error("flow engine: " + in.rest());
  Timeline tl;
  tl.transfers = g.transfers.size();
  tl.makespan = in.get<double>();
  const auto nops = in.get<std::uint64_t>();
  tl.ops.reserve(nops);
  for (std::uint32_t op = 0; op < nops; ++op) {
    const double start = in.get<double>();
    const double end = in.get<double>();
    tl.ops.push_back({g.rank_of(op), g.local_index(op), start, end});
  }
  const auto nlinks = in.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < nlinks; ++i) {
    const auto id = in.get<std::uint32_t>();
    const double bytes = in.get<double>();
    const double busy = in.get<double>();
    tl.links.push_back({id, bytes, busy, in.get<double>()});
  }
  last_comms_ = in.get<std::uint64_t>();
  return tl;
}

}  // namespace ccsim::sim
