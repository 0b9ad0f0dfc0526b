#include "sim/flow/flow_engine.hpp"

#include <sys/wait.h>
#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

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

/// Runs in the child: simulate, write [status=0, makespan, op times, link bytes] and _exit(0)
/// (or throw before anything is written).
[[noreturn]] void simulate(const Plan& plan, const models::Topology& topo, ExecutionGraph& g, bool merge, bool actors,
                          int fd) {
  std::vector<std::string> args{"ccsim-flow"};
  for (const auto& c : simgrid_configuration()) args.push_back(c);
  if (actors) {
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
  auto* zone = simgrid::s4u::create_star_zone("ccsim");

  const auto capacity = [&](models::LinkId id) {
    const models::Link& l = topo.link(id);
    const double eff = l.kind < plan.cost.link_efficiency.size() ? plan.cost.link_efficiency[l.kind] : 1.0;
    return l.bandwidth * eff;
  };
  std::vector<simgrid::s4u::Link*> links(topo.num_links(), nullptr);
  // One virtual host per distinct path (link sequence), whose route is that path: channels of
  // one device pair may hash onto different ECMP spines, so a host per (source, destination)
  // pair would send them all down the first channel's path. With a rate cap, one host per
  // (connection, path), whose route also holds a private link of the cap's capacity.
  const bool capped = plan.cost.max_rate < std::numeric_limits<double>::infinity();
  std::map<std::vector<models::LinkId>, std::uint32_t> path_ids;
  std::vector<std::uint32_t> transfer_path(g.transfers.size(), 0);
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint32_t> host_ids;  // (connection or ~0, path) -> host
  std::vector<simgrid::s4u::Host*> hosts;
  std::vector<simgrid::s4u::Link*> host_cap;  // each host's cap link (capped only)
  std::vector<double> cap_now;                // its bandwidth now (bytes/s)
  std::vector<std::uint32_t> transfer_host(g.transfers.size(), ~0U);
  for (std::size_t t = 0; t < g.transfers.size(); ++t) {
    const auto& tr = g.transfers[t];
    if (tr.path_count == 0) continue;
    const auto first = g.path_links.begin() + tr.path_begin;
    const auto [pit, fresh_path] =
        path_ids.try_emplace(std::vector<models::LinkId>(first, first + tr.path_count), static_cast<std::uint32_t>(path_ids.size()));
    transfer_path[t] = pit->second;
    const std::uint64_t owner = capped ? std::uint64_t{tr.connection} : ~0ULL;
    auto [it, fresh] = host_ids.try_emplace({owner, pit->second}, static_cast<std::uint32_t>(hosts.size()));
    if (fresh) {
      std::vector<simgrid::s4u::LinkInRoute> route;
      if (capped) {
        host_cap.push_back(zone->create_link("cap" + std::to_string(hosts.size()), plan.cost.max_rate)->set_latency(0)->seal());
        cap_now.push_back(plan.cost.max_rate);
        route.emplace_back(host_cap.back());
      }
      for (std::uint32_t k = 0; k < tr.path_count; ++k) {
        const models::LinkId id = g.path_links[tr.path_begin + k];
        if (links[id] == nullptr) {
          links[id] = zone->create_link("l" + std::to_string(id), capacity(id))->set_latency(0)->seal();
        }
        route.emplace_back(links[id]);
      }
      hosts.push_back(zone->create_host("p" + std::to_string(hosts.size()), 1e9));
      zone->add_route(hosts.back()->get_netpoint(), nullptr, nullptr, nullptr, route, false);
    }
    transfer_host[t] = it->second;
  }
  // Every transfer goes to one sink host over the pair's links only. The sink's own route is
  // empty: a shared link there, even a FATPIPE one, would tie every flow into one constraint
  // and make SimGrid re-solve all of them at each completion.
  auto* sink = zone->create_host("sink", 1e9);
  zone->add_route(nullptr, sink->get_netpoint(), nullptr, nullptr, {}, false);
  zone->seal();
  // Actors path: each host's Comms go through its own mailbox, whose permanent receiver lives
  // on the sink, so a put's route is the host's route to the sink (sender's host to receiver's
  // host). The receiver does nothing itself (its body returns at once): a permanent receiver
  // only names the destination of the Comms pushed into the mailbox.
  std::vector<simgrid::s4u::Mailbox*> mailboxes;
  std::vector<std::uint32_t> host_comms(hosts.size(), 0);  // Comms created and not finished
  if (actors) {
    auto receiver = simgrid::s4u::Actor::create("receiver", sink, []() {});
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      mailboxes.push_back(simgrid::s4u::Mailbox::by_name("m" + std::to_string(h)));
      mailboxes.back()->set_receiver(receiver);
    }
  }
  for (auto* l : links)
    if (l != nullptr) sg_link_load_track(l);  // after sealing: the plugin attaches at seal time

  DagState dag(g);
  std::vector<double> op_start(g.op_count(), -1.0), op_end(g.op_count(), -1.0);
  std::vector<double> link_bytes(topo.num_links(), 0.0);
  // Busy time: a link is busy while at least one transfer's data flows over it (after the
  // transfer's latency, until it completes), as in the analytic engine.
  std::vector<std::uint32_t> link_flows(topo.num_links(), 0);
  std::vector<double> link_busy(topo.num_links(), 0.0), busy_since(topo.num_links(), 0.0);
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
  std::map<const simgrid::s4u::Activity*, std::vector<std::uint32_t>> in_flight;  // Detached path
  std::vector<simgrid::s4u::CommPtr> keep;  // Detached path
  // Actors path. A Comm's network action and its kernel activity (CommImpl) are found through
  // the network model's action sets; both are keyed by the activity's address.
  std::unordered_map<const void*, std::vector<std::uint32_t>> actor_in_flight;  // activity -> transfers
  std::unordered_map<const void*, double> pending_penalty;  // activity -> k, put this round, penalty not set yet
  std::size_t puts_due = 0;  // actors created whose put has not been served yet
  std::string actor_failure;
  std::vector<std::vector<std::uint32_t>> completed;
  simgrid::kernel::resource::Model* network_model = nullptr;
  for (auto* m : engine.get_all_models())
    if (m->get_name() == "Network_CM02") network_model = m;
  if (network_model == nullptr) throw std::runtime_error("flow engine: SimGrid has no Network_CM02 model");
  std::vector<std::uint32_t> batch;  // transfers to launch at this instant
  std::size_t comms_started = 0;
  DagState::Events ev;
  const double t0 = plan.cost.base_latency;
  // All the puts of one scheduling round are served before any of their actors resumes, and
  // their actions are the newest in the started set: the last actor to resume sets every
  // merged Comm's sharing penalty in one backward pass (before the solver runs again).
  const auto apply_penalties = [&]() {
    auto* set = network_model->get_started_action_set();
    for (auto it = set->rbegin(); it != set->rend() && !pending_penalty.empty(); ++it) {
      const auto p = pending_penalty.find(it->get_activity());
      if (p == pending_penalty.end()) continue;
      it->set_sharing_penalty(1.0 / p->second);
      pending_penalty.erase(p);
    }
    if (!pending_penalty.empty()) {
      actor_failure = "flow engine: cannot find a Comm's network action";
      pending_penalty.clear();
    }
  };

  std::function<void()> handle;
  std::map<double, std::vector<std::uint32_t>> timers;  // latency expiry time -> transfers
  std::function<void(std::uint32_t)> done = [&](std::uint32_t t) {
    const auto& tr = g.transfers[t];
    const bool flowed = transfer_host[t] != ~0U && tr.bytes > 0.0;
    const double clock = simgrid::s4u::Engine::get_clock();
    for (std::uint32_t k = 0; k < tr.path_count; ++k) {
      const models::LinkId id = g.path_links[tr.path_begin + k];
      link_bytes[id] += tr.bytes;
      if (flowed && --link_flows[id] == 0) link_busy[id] += clock - busy_since[id];
    }
    dag.transfer_done(t, ev);
    handle();
  };
  const auto launch = [&](std::uint32_t t) {
    const auto& tr = g.transfers[t];
    if (transfer_host[t] == ~0U || tr.bytes <= 0.0) {
      done(t);
      return;
    }
    const double clock = simgrid::s4u::Engine::get_clock();
    for (std::uint32_t k = 0; k < tr.path_count; ++k) {
      const models::LinkId id = g.path_links[tr.path_begin + k];
      if (link_flows[id]++ == 0) busy_since[id] = clock;
    }
    batch.push_back(t);
  };
  // Starts the batch: one Comm per (path, payload) class.
  const auto flush = [&]() {
    if (batch.empty()) return;
    // Classes in order of first appearance, so that Comms start in a reproducible order.
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> class_of;
    std::vector<std::vector<std::uint32_t>> classes;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::uint32_t t = batch[i];
      // Without merging, the batch index keeps every transfer in a class of its own.
      const std::uint64_t route = merge ? transfer_path[t] : i;
      const auto [it, fresh] = class_of.try_emplace({route, static_cast<std::uint64_t>(g.transfers[t].bytes)}, classes.size());
      if (fresh) classes.emplace_back();
      classes[it->second].push_back(t);
    }
    batch.clear();
    for (auto& members : classes) {
      const std::uint32_t host = transfer_host[members.front()];
      const double k = static_cast<double>(members.size());
      if (capped && cap_now[host] != k * plan.cost.max_rate) {
        // k connections merged: the first one's cap link carries all k (a connection is a
        // FIFO, so nothing else of it is in flight), at k caps.
        cap_now[host] = k * plan.cost.max_rate;
        host_cap[host]->set_bandwidth(cap_now[host]);
      }
      const std::uint64_t bytes = static_cast<std::uint64_t>(g.transfers[members.front()].bytes) * members.size();
      ++comms_started;
      if (actors) {
        // The actor puts the Comm when it first runs (at this same simulated instant, before
        // the solver runs again) and waits for it; its completion is handled in maestro.
        ++host_comms[host];
        ++puts_due;
        simgrid::s4u::Actor::create("c", hosts[host], [&, host, bytes, k, members = std::move(members)]() mutable {
          static char payload;  // SimGrid refuses a null payload pointer; nobody reads it
          auto comm = mailboxes[host]->put_async(&payload, bytes);
          const void* impl = comm->get_impl();
          if (k != 1.0) pending_penalty.emplace(impl, k);
          actor_in_flight.emplace(impl, std::move(members));
          if (--puts_due == 0) apply_penalties();
          comm->wait();
          // A permanent receiver's mailbox keeps every Comm put into it (with its sender, the
          // actor, and the actor's stack) until someone gets it; once none of the host's Comms
          // is in flight or about to start, all it holds are finished ones: drop them.
          comm = nullptr;
          if (--host_comms[host] == 0) mailboxes[host]->clear();
        });
        continue;
      }
      auto comm = simgrid::s4u::Comm::sendto_init(hosts[host], sink);
      comm->set_payload_size(bytes);
      comm->start();
      if (k != 1.0) {
        auto& action = network_model->get_started_action_set()->back();
        if (action.get_activity() != comm->get_impl()) throw std::runtime_error("flow engine: cannot find the Comm's network action");
        action.set_sharing_penalty(1.0 / k);
      }
      in_flight[comm.get()] = std::move(members);
      keep.push_back(comm);
    }
  };
  handle = [&]() {
    const double now = simgrid::s4u::Engine::get_clock() + t0;
    for (std::uint32_t op : ev.finished) {
      if (op_start[op] < 0) op_start[op] = now;
      op_end[op] = now;
    }
    std::vector<std::uint32_t> start = std::move(ev.startable);
    std::vector<std::uint32_t> flowable = std::move(ev.flowable);
    ev.startable.clear();
    ev.flowable.clear();
    ev.finished.clear();
    for (std::uint32_t t : flowable) launch(t);
    for (std::uint32_t t : start) {
      const auto& tr = g.transfers[t];
      for (std::uint32_t op : {tr.send_op, tr.recv_op})
        if (op != detail::kNoOp) op_start[op] = now;
      if (tr.latency > 0) {
        // One kernel timer per distinct expiry time: transfers whose latency ends together launch together.
        const double at = simgrid::s4u::Engine::get_clock() + tr.latency;
        auto [it, fresh] = timers.try_emplace(at);
        it->second.push_back(t);
        if (fresh) {
          simgrid::kernel::timer::Timer::set(at, [&, at]() {
            const auto node = timers.extract(at);
            for (std::uint32_t u : node.mapped())
              if (dag.latency_elapsed(u)) launch(u);
            flush();
          });
        }
      } else if (dag.latency_elapsed(t)) {
        launch(t);
      }
    }
  };
  if (actors) {
    // Completions, in maestro right after the models advanced the clock: the network model's
    // finished set holds the actions that finished in this step, in finishing order (SimGrid
    // empties it before the next step, when it wakes the waiting actors).
    simgrid::s4u::Engine::on_time_advance_cb([&](double) {
      for (const auto& action : *network_model->get_finished_action_set()) {
        const auto it = actor_in_flight.find(action.get_activity());
        if (it == actor_in_flight.end()) continue;
        completed.push_back(std::move(it->second));
        actor_in_flight.erase(it);
      }
      for (const auto& members : completed) {
        for (std::uint32_t t : members) done(t);
        flush();
      }
      completed.clear();
    });
  }
  simgrid::s4u::Activity::on_completion_cb([&](const simgrid::s4u::Activity& a) {
    const auto it = in_flight.find(&a);
    if (it == in_flight.end()) return;
    const std::vector<std::uint32_t> members = std::move(it->second);
    in_flight.erase(it);
    for (std::uint32_t t : members) done(t);
    flush();
  });
  dag.start(ev);
  handle();
  flush();
  engine.run();
  if (!actor_failure.empty()) throw std::runtime_error(actor_failure);

  if (dag.ops_done() != g.op_count()) {
    const std::string msg = "schedule deadlocks: " + std::to_string(g.op_count() - dag.ops_done()) + " ops never ran";
    put<std::uint8_t>(fd, 1);
    write_all(fd, msg.data(), msg.size());
    ::close(fd);
    _exit(0);  // see below
  }
  double makespan = t0;
  for (double e : op_end) makespan = std::max(makespan, e);
  put<std::uint8_t>(fd, 0);
  put<double>(fd, makespan);
  put<std::uint64_t>(fd, g.op_count());
  for (std::uint32_t op = 0; op < g.op_count(); ++op) {
    put<double>(fd, op_start[op]);
    put<double>(fd, op_end[op]);
  }
  std::uint64_t used = 0;
  for (double b : link_bytes) used += b > 0 ? 1 : 0;
  put<std::uint64_t>(fd, used);
  for (models::LinkId id = 0; id < link_bytes.size(); ++id) {
    if (link_bytes[id] > 0) {
      put<std::uint32_t>(fd, id);
      put<double>(fd, link_bytes[id]);
      put<double>(fd, link_busy[id]);
      const double peak = links[id] != nullptr ? sg_link_get_max_instantaneous_load(links[id]) / capacity(id) : 0.0;
      put<double>(fd, peak);
    }
  }
  put<std::uint64_t>(fd, comms_started);
  // The results are out: end the child here. Unwinding would destroy every Comm, host, link
  // and the SimGrid engine, seconds of teardown on large platforms that nobody waits for.
  ::close(fd);
  _exit(0);
}

}  // namespace

Timeline FlowEngine::run(const Plan& plan) {
  ExecutionGraph g(plan, router_);  // built in the parent: bad plans fail here, not in the child
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
      simulate(plan, cluster_.topology, g, merging_ == Merging::Identical, issuing_ == Issuing::Actors, fds[1]);
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
