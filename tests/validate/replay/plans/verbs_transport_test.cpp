// The verbs backend's transport protocol (validate/replay/plans/verbs_transport.hpp) on an in-memory
// loopback fabric: every rank is a thread running the per-rank dataflow loop (RankLoop) with a
// VerbsTransport whose port, instead of a NIC, queues each posted request and delivers a random
// few of all ranks' requests at every poll (the write's copy happens at delivery, so a source
// overwritten before its write completed, or a target reused before its data landed, shows as
// wrong elements). Schedules from the planner's generators, planned by verbs_plan.hpp (queue
// pairs, region layouts, routes, queue depths), must produce the collective's exact result,
// checked with data.hpp's count_wrong as every backend is.

#include <catch2/catch.hpp>

#include <barrier>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "planner/algorithms/algorithms.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/rank_loop.hpp"
#include "validate/replay/plans/verbs_plan.hpp"
#include "validate/replay/plans/verbs_transport.hpp"

using namespace ccsim;
using namespace ccsim::validate::replay;
using planner::Algorithm;

namespace {

/// The loopback fabric: all ranks' plans and regions, the requests in flight and each rank's
/// completion queue. Requests are delivered in random order (stricter than RC, which keeps
/// each queue pair's order); the protocol must not depend on delivery order.
struct Fabric {
  struct Rank {
    std::vector<RdmaConnection> connections;
    std::vector<OpRoute> routes;
    RegionLayout layout;
    QueueDepths depths;
    std::vector<std::byte> region;
    std::deque<RdmaCompletion> completions;
    std::vector<std::uint32_t> outstanding;  ///< per connection: posted, completion not yet polled
  };
  struct Flight {
    int from = 0;
    std::uint32_t connection = 0, op = 0, sequence = 0;
    bool write = false;
    const std::byte* src = nullptr;
    std::uint64_t bytes = 0, offset = 0;
  };
  const models::Schedule& schedule;
  std::vector<Rank> ranks;
  std::mutex lock;
  std::vector<Flight> flights;
  std::mt19937_64 rng;

  /// Plans every rank as the backend does; `max_qp_wr` caps the queue depths (1 forces every
  /// further request of a queue pair to wait for a completion).
  Fabric(const models::Schedule& s, std::uint32_t max_qp_wr, std::uint64_t seed) : schedule(s), ranks(static_cast<std::size_t>(s.nranks)), rng(seed) {
    const auto partners = match_messages(s);
    std::vector<RegionLayout> layouts;
    for (int r = 0; r < s.nranks; ++r) layouts.push_back(region_layout(s, r, rank_buffer_bytes(s, r)));
    for (int r = 0; r < s.nranks; ++r) {
      Rank& k = ranks[static_cast<std::size_t>(r)];
      k.connections = rank_connections(s, r);
      k.routes = op_routes(s, r, k.connections, partners, layouts);
      k.layout = layouts[static_cast<std::size_t>(r)];
      k.depths = queue_depths(k.connections, max_qp_wr, 1u << 20);
      k.region.assign(k.layout.bytes, std::byte{0});
      k.outstanding.assign(k.connections.size(), 0);
    }
  }

  void post(Flight f) {
    const std::lock_guard<std::mutex> hold(lock);
    Rank& k = ranks[static_cast<std::size_t>(f.from)];
    if (++k.outstanding[f.connection] > k.depths.work_requests[f.connection]) {
      throw std::logic_error("rank " + std::to_string(f.from) + " posted beyond its queue depth");
    }
    flights.push_back(f);
  }

  void deliver(const Flight& f) {
    Rank& from = ranks[static_cast<std::size_t>(f.from)];
    const RdmaConnection& c = from.connections[f.connection];
    Rank& to = ranks[static_cast<std::size_t>(c.peer)];
    const int back = find_connection(to.connections, f.from, c.channel);
    if (back < 0) throw std::logic_error("the peer has no queue pair back");
    if (f.write) {
      if (f.offset + f.bytes > to.region.size()) throw std::logic_error("write beyond the receiver's region");
      std::memcpy(to.region.data() + f.offset, f.src, f.bytes);
      to.completions.push_back({RdmaCompletion::Kind::Data, static_cast<std::uint32_t>(back), f.sequence, 0});
      from.completions.push_back({RdmaCompletion::Kind::WriteDone, f.connection, 0, f.op});
    } else {
      to.completions.push_back({RdmaCompletion::Kind::Ready, static_cast<std::uint32_t>(back), f.sequence, 0});
      from.completions.push_back({RdmaCompletion::Kind::ReadyDone, f.connection, 0, f.op});
    }
  }

  std::size_t poll(int rank, std::span<RdmaCompletion> out) {
    const std::lock_guard<std::mutex> hold(lock);
    for (int n = std::uniform_int_distribution<int>(0, 3)(rng); n > 0 && !flights.empty(); --n) {
      const std::size_t i = std::uniform_int_distribution<std::size_t>(0, flights.size() - 1)(rng);
      const Flight f = flights[i];
      flights[i] = flights.back();
      flights.pop_back();
      deliver(f);
    }
    Rank& k = ranks[static_cast<std::size_t>(rank)];
    std::size_t n = 0;
    while (n < out.size() && !k.completions.empty()) {
      out[n] = k.completions.front();
      k.completions.pop_front();
      if (out[n].kind == RdmaCompletion::Kind::WriteDone || out[n].kind == RdmaCompletion::Kind::ReadyDone) --k.outstanding[out[n].connection];
      ++n;
    }
    return n;
  }
};

class LoopbackPort final : public RdmaPort {
 public:
  LoopbackPort(Fabric& f, int rank) : f_(f), rank_(rank) {}
  void write(std::uint32_t q, std::uint32_t op, const std::byte* src, std::uint64_t bytes, std::uint64_t offset, std::uint32_t sequence) override {
    f_.post({rank_, q, op, sequence, true, src, bytes, offset});
  }
  void ready(std::uint32_t q, std::uint32_t op, std::uint32_t sequence) override { f_.post({rank_, q, op, sequence, false, nullptr, 0, 0}); }
  std::size_t poll(std::span<RdmaCompletion> out) override { return f_.poll(rank_, out); }

 private:
  Fabric& f_;
  int rank_;
};

/// Replays `s` `iters` times on the loopback (one thread per rank, barriers between
/// iterations) and returns the wrong output elements summed over ranks after the last.
std::uint64_t replay_on_loopback(Fabric& fabric, DataType type, int iters, std::string& first) {
  const models::Schedule& s = fabric.schedule;
  const int n = s.nranks;
  std::barrier<> sync(n);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Fabric::Rank& k = fabric.ranks[static_cast<std::size_t>(r)];
        LoopbackPort port(fabric, r);
        VerbsTransport t({r, type, &s.ranks[static_cast<std::size_t>(r)], k.connections, k.routes, &k.layout, k.depths.work_requests, k.region.data()}, port);
        RankLoop loop(s.ranks[static_cast<std::size_t>(r)], r, type);
        const RankMemory m = t.memory();
        const std::uint32_t e = size_of(type);
        for (int it = 0; it < iters; ++it) {
          fill_input(type, r, m.input, k.layout.buffers.input / e);
          fill_poison(type, m.output, k.layout.buffers.output / e);
          fill_poison(type, m.scratch, k.layout.buffers.scratch / e);
          t.reset();
          sync.arrive_and_wait();
          loop.run(m, t, Clock::now(), nullptr, std::chrono::seconds(10));
          t.drain(std::chrono::seconds(10));
          sync.arrive_and_wait();
        }
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        sync.arrive_and_drop();  // the others stall and fail instead of waiting here forever
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::uint64_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    const Fabric::Rank& k = fabric.ranks[static_cast<std::size_t>(r)];
    wrong += count_wrong(type, s.collective, s.root, r, n, k.region.data() + k.layout.output, k.layout.buffers.output / size_of(type), first);
  }
  return wrong;
}

struct Case {
  Algorithm algorithm;
  models::Collective collective;
  int nranks;
  int channels;
  int chunks;
  int root;
};

}  // namespace

TEST_CASE("verbs: the rendezvous computes every collective exactly on a reordering loopback", "[validate][replay][verbs]") {
  using C = models::Collective;
  const Case cases[] = {
      {Algorithm::Ring, C::AllReduce, 4, 2, 1, 0},          {Algorithm::Ring, C::AllReduce, 2, 1, 1, 0},
      {Algorithm::Ring, C::ReduceScatter, 5, 2, 1, 0},      {Algorithm::Ring, C::AllGather, 3, 3, 1, 0},
      {Algorithm::Ring, C::Broadcast, 4, 2, 1, 2},          {Algorithm::Ring, C::Reduce, 4, 1, 1, 1},
      {Algorithm::Tree, C::AllReduce, 8, 2, 4, 0},          {Algorithm::HalvingDoubling, C::AllReduce, 6, 1, 1, 0},
      {Algorithm::RecursiveDoubling, C::AllGather, 5, 1, 1, 0}, {Algorithm::Direct, C::AlltoAll, 4, 1, 1, 0},
      {Algorithm::Pairwise, C::AlltoAll, 3, 1, 1, 0},       {Algorithm::Bruck, C::AllGather, 6, 1, 1, 0},
  };
  const DataType types[] = {DataType::Float, DataType::Int8, DataType::Double};
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    for (std::uint32_t depth : {1u, 1024u}) {
      const DataType type = types[seed % 3];
      planner::AlgorithmRequest req;
      req.collective = c.collective;
      req.nranks = c.nranks;
      req.channels = c.channels;
      req.pipeline_chunks = c.chunks;
      req.root = c.root;
      req.element_size = size_of(type);
      // 1000 elements per rank-block: uneven splits over channels and chunks.
      req.bytes = std::uint64_t(1000) * size_of(type) * static_cast<std::uint64_t>(c.nranks);
      const models::Schedule s = planner::generate(c.algorithm, req);
      REQUIRE(models::verify(s).ok);
      Fabric fabric(s, depth, seed++);
      std::string first;
      INFO(planner::to_string(c.algorithm) << " " << models::to_string(c.collective) << " n=" << c.nranks << " depth " << depth << " type "
                                            << to_string(type));
      CHECK(replay_on_loopback(fabric, type, 3, first) == 0);
      CHECK(first.empty());
      CHECK(fabric.flights.empty());  // every posted request delivered
    }
  }
}

TEST_CASE("verbs: a write to the wrong place shows as wrong elements", "[validate][replay][verbs]") {
  // Ring AllGather, 4 ranks: rank 0's first Send lands 4 bytes (one float) past its target, so
  // the receiver's block starts with a poisoned element and the block is shifted by one.
  planner::AlgorithmRequest req;
  req.collective = models::Collective::AllGather;
  req.nranks = 4;
  req.bytes = 4 * 4 * 64;
  const models::Schedule s = planner::generate(Algorithm::Ring, req);
  Fabric fabric(s, 1024, 7);
  auto& routes = fabric.ranks[0].routes;
  const auto send = std::find_if(routes.begin(), routes.end(), [&](const OpRoute& r) { return r.connection >= 0 && s.ranks[0].ops[&r - routes.data()].kind == models::OpKind::Send; });
  REQUIRE(send != routes.end());
  send->remote_offset += 4;
  std::string first;
  CHECK(replay_on_loopback(fabric, DataType::Float, 1, first) > 0);
  CHECK_THAT(first, Catch::Contains("expected"));
}
