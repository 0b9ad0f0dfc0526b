// The cuda backend's plan (validate/replay/plans/cuda_plan.hpp), checked without a GPU: on schedules
// of the real algorithms, every op runs once, every step waits for what its ops depend on,
// buffers do not overlap, staging is chosen exactly where peer access is off, and executing the
// plan's actions on host memory (in any order the streams and events allow) computes the
// collective.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "planner/algorithms/algorithms.hpp"
#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"
#include "validate/replay/plans/cuda_plan.hpp"
#include "validate/replay/data.hpp"

using namespace ccsim;
using models::Collective;
using models::OpKind;
using planner::Algorithm;
using namespace ccsim::validate::replay;

namespace {

models::Schedule make(Algorithm a, Collective c, int n, std::uint64_t bytes, int channels = 1, int chunks = 1) {
  planner::AlgorithmRequest req;
  req.collective = c;
  req.nranks = n;
  req.bytes = bytes;
  req.element_size = 4;
  req.channels = channels;
  req.pipeline_chunks = chunks;
  REQUIRE(planner::unsupported_reason(a, req).empty());
  auto s = planner::generate(a, req);
  REQUIRE(models::verify(s).ok);
  return s;
}

CudaPlanDevices gpus(int count, bool p2p) {
  CudaPlanDevices d;
  for (int i = 0; i < count; ++i) d.ordinals.push_back(i);
  d.peer_access.assign(static_cast<std::size_t>(count), std::vector<bool>(static_cast<std::size_t>(count), p2p));
  return d;
}

/// The structural properties every plan must have.
void check_structure(const models::Schedule& s, const CudaPlan& plan, const CudaPlanDevices& dev) {
  const auto ndev = dev.ordinals.size();
  // Every op of every rank is in exactly one step, and step_of says which.
  std::map<std::pair<int, std::uint32_t>, int> seen;
  for (std::uint32_t k = 0; k < plan.steps.size(); ++k) {
    for (const auto& o : plan.steps[k].ops) {
      ++seen[{o.rank, o.op}];
      REQUIRE(plan.step_of[static_cast<std::size_t>(o.rank)][o.op] == k);
    }
  }
  REQUIRE(seen.size() == s.op_count());
  for (const auto& [op, count] : seen) REQUIRE(count == 1);

  // Streams: on their rank's GPU (rank r on slot r mod ndev).
  for (const auto& st : plan.streams) REQUIRE(st.slot == static_cast<int>(static_cast<std::size_t>(st.rank) % ndev));

  // The k-th Send from a to b on channel c is in the step of the k-th receive on b from a on c
  // (FIFO matching, recomputed here from the op lists), on the receiver's stream of channel c.
  std::map<std::tuple<int, int, int>, std::vector<std::uint32_t>> sends, recvs;  // (src, dst, ch) → ops
  for (int r = 0; r < s.nranks; ++r) {
    const auto& ops = s.ranks[static_cast<std::size_t>(r)].ops;
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::Send) sends[{r, ops[i].peer, ops[i].channel}].push_back(i);
      if (ops[i].kind == OpKind::Recv || ops[i].kind == OpKind::RecvReduce) recvs[{ops[i].peer, r, ops[i].channel}].push_back(i);
    }
  }
  REQUIRE(sends.size() == recvs.size());
  for (const auto& [key, list] : sends) {
    const auto& [src, dst, ch] = key;
    const auto& rl = recvs.at(key);
    REQUIRE(rl.size() == list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
      const auto step_index = plan.step_of[static_cast<std::size_t>(src)][list[k]];
      REQUIRE(step_index == plan.step_of[static_cast<std::size_t>(dst)][rl[k]]);
      const auto& step = plan.steps[step_index];
      REQUIRE(step.ops.size() == 2);
      CHECK(step.ops[0] == CudaOpRef{src, list[k]});
      CHECK(plan.streams[step.stream].rank == dst);
      CHECK(plan.streams[step.stream].channel == ch);
    }
  }
  // Local ops on their own rank's stream of their channel.
  for (const auto& step : plan.steps) {
    if (step.ops.size() != 1) continue;
    const auto& o = step.ops[0];
    const auto& op = s.ranks[static_cast<std::size_t>(o.rank)].ops[o.op];
    if (op.kind == OpKind::Copy || op.kind == OpKind::Reduce || op.kind == OpKind::SwitchRecv) {
      CHECK(plan.streams[step.stream].rank == o.rank);
      CHECK(plan.streams[step.stream].channel == op.channel);
    }
  }

  // Waits: earlier steps of other streams, and together with stream order they cover every
  // dependency of every op of the step: a dependency on stream X is covered by a wait on a
  // step of X issued no earlier than it.
  for (std::uint32_t k = 0; k < plan.steps.size(); ++k) {
    const auto& step = plan.steps[k];
    std::map<std::uint32_t, std::uint32_t> waited;  // stream → latest step waited on
    for (auto w : step.waits) {
      REQUIRE(w < k);
      REQUIRE(plan.steps[w].stream != step.stream);
      waited[plan.steps[w].stream] = std::max(waited[plan.steps[w].stream], w);
    }
    for (const auto& o : step.ops) {
      std::vector<std::uint32_t> deps(s.ranks[static_cast<std::size_t>(o.rank)].deps(o.op).begin(),
                                      s.ranks[static_cast<std::size_t>(o.rank)].deps(o.op).end());
      std::vector<std::uint32_t> dep_steps;
      for (auto d : deps) dep_steps.push_back(plan.step_of[static_cast<std::size_t>(o.rank)][d]);
      const auto& op = s.ranks[static_cast<std::size_t>(o.rank)].ops[o.op];
      if (op.kind == OpKind::SwitchRecv) {  // every contribution to its group
        for (int r = 0; r < s.nranks; ++r) {
          const auto& ops = s.ranks[static_cast<std::size_t>(r)].ops;
          for (std::uint32_t i = 0; i < ops.size(); ++i) {
            if (ops[i].kind == OpKind::SwitchSend && ops[i].tag == op.tag) dep_steps.push_back(plan.step_of[static_cast<std::size_t>(r)][i]);
          }
        }
      }
      for (auto ds : dep_steps) {
        INFO(fmt::format("step {} ({}) depends on step {}", k, describe(o), ds));
        REQUIRE(ds < k);
        const auto st = plan.steps[ds].stream;
        REQUIRE((st == step.stream || (waited.count(st) == 1 && waited[st] >= ds)));
      }
    }
  }

  // Regions: inside their arena, 256-byte aligned, pairwise disjoint per GPU.
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> regions(ndev);
  for (const auto& L : plan.ranks) {
    for (auto [a, b] : {std::pair{L.input, L.input_bytes}, std::pair{L.output, L.output_bytes}, std::pair{L.scratch, L.scratch_bytes}}) {
      REQUIRE(a.slot == L.slot);
      REQUIRE(a.offset % kCudaRegionAlign == 0);
      if (b > 0) regions[static_cast<std::size_t>(a.slot)].push_back({a.offset, a.offset + b});
    }
  }
  std::uint64_t staged = 0;
  for (const auto& step : plan.steps) {
    // A staging copy is the first of two actions: copy into a region the plan made for it.
    if (step.access == CudaAccess::Staged) {
      REQUIRE(step.actions.size() == 2);
      const auto& c = step.actions[0];
      REQUIRE(c.dst.slot == plan.streams[step.stream].slot);
      REQUIRE(c.dst.offset % kCudaRegionAlign == 0);
      regions[static_cast<std::size_t>(c.dst.slot)].push_back({c.dst.offset, c.dst.offset + c.bytes});
      staged += c.bytes;
    }
  }
  CHECK(staged == plan.staging_bytes);
  for (std::size_t slot = 0; slot < ndev; ++slot) {
    auto& v = regions[slot];
    std::sort(v.begin(), v.end());
    for (std::size_t i = 0; i < v.size(); ++i) {
      REQUIRE(v[i].second <= plan.arena_bytes[slot]);
      if (i > 0) REQUIRE(v[i - 1].second <= v[i].first);
    }
  }
}

/// Staging exactly where a reduction reads another GPU without peer access.
void check_staging(const models::Schedule& s, const CudaPlan& plan, const CudaPlanDevices& dev) {
  for (const auto& step : plan.steps) {
    if (step.ops.size() != 2) continue;
    const auto& recv = s.ranks[static_cast<std::size_t>(step.ops[1].rank)].ops[step.ops[1].op];
    const int rs = plan.ranks[static_cast<std::size_t>(step.ops[1].rank)].slot;
    const int ss = plan.ranks[static_cast<std::size_t>(step.ops[0].rank)].slot;
    const bool p2p = !dev.peer_access.empty() && dev.peer_access[static_cast<std::size_t>(rs)][static_cast<std::size_t>(ss)];
    CudaAccess expected = CudaAccess::Local;
    if (rs != ss) expected = p2p ? CudaAccess::Peer : (recv.kind == OpKind::RecvReduce ? CudaAccess::Staged : CudaAccess::Copied);
    INFO(describe(step.ops[1]));
    CHECK(step.access == expected);
    const auto adds = std::count_if(step.actions.begin(), step.actions.end(), [](const CudaAction& a) { return a.kind == CudaAction::Kind::Add; });
    CHECK(adds == (recv.kind == OpKind::RecvReduce ? 1 : 0));
    CHECK(step.actions.size() == (expected == CudaAccess::Staged ? 2U : 1U));
    // A kernel reads only its own GPU's memory or a peer's it has access to.
    for (const auto& a : step.actions) {
      if (a.kind != CudaAction::Kind::Add) continue;
      for (const auto& x : {a.dst, a.a, a.b}) {
        CHECK((x.slot == rs || (!dev.peer_access.empty() && dev.peer_access[static_cast<std::size_t>(rs)][static_cast<std::size_t>(x.slot)])));
      }
    }
  }
}

/// Runs the plan's actions on host arenas, one step at a time in an order the streams and
/// events allow (a step may run once every earlier step of its stream and every step it waits
/// on has run; `seed` picks among the runnable ones; seed 0: issue order), then counts wrong
/// output elements with the data rules every backend uses.
std::uint64_t execute_on_host(const models::Schedule& s, const CudaPlan& plan, DataType t, unsigned seed, std::string& first) {
  std::vector<std::vector<std::byte>> arena(plan.arena_bytes.size());
  for (std::size_t i = 0; i < arena.size(); ++i) arena[i].assign(plan.arena_bytes[i], std::byte{0});
  const auto at = [&](const CudaAddress& a) { return arena[static_cast<std::size_t>(a.slot)].data() + a.offset; };
  const auto es = size_of(t);
  for (int r = 0; r < s.nranks; ++r) {
    const auto& L = plan.ranks[static_cast<std::size_t>(r)];
    fill_input(t, r, at(L.input), L.input_bytes / es);
    fill_poison(t, at(L.output), L.output_bytes / es);
  }
  std::vector<std::vector<std::uint32_t>> queue(plan.streams.size());  // steps per stream, FIFO
  for (std::uint32_t k = 0; k < plan.steps.size(); ++k) queue[plan.steps[k].stream].push_back(k);
  std::vector<std::size_t> head(plan.streams.size(), 0);
  std::vector<bool> done(plan.steps.size(), false);
  std::mt19937 rng(seed);
  for (std::size_t executed = 0; executed < plan.steps.size(); ++executed) {
    std::vector<std::uint32_t> runnable;
    for (std::size_t st = 0; st < queue.size(); ++st) {
      if (head[st] == queue[st].size()) continue;
      const auto k = queue[st][head[st]];
      const auto& w = plan.steps[k].waits;
      if (std::all_of(w.begin(), w.end(), [&](std::uint32_t x) { return done[x]; })) runnable.push_back(k);
    }
    REQUIRE_FALSE(runnable.empty());  // no deadlock
    const auto k = seed == 0 ? *std::min_element(runnable.begin(), runnable.end())
                             : runnable[std::uniform_int_distribution<std::size_t>(0, runnable.size() - 1)(rng)];
    for (const auto& a : plan.steps[k].actions) {
      if (a.kind == CudaAction::Kind::Copy) {
        std::memmove(at(a.dst), at(a.a), a.bytes);
      } else {
        add(t, at(a.dst), at(a.a), at(a.b), a.bytes / es);
      }
    }
    done[k] = true;
    ++head[plan.steps[k].stream];
  }
  std::uint64_t wrong = 0;
  for (int r = 0; r < s.nranks; ++r) {
    const auto& L = plan.ranks[static_cast<std::size_t>(r)];
    wrong += count_wrong(t, s.collective, s.root, r, s.nranks, at(L.output), L.output_bytes / es, first);
  }
  return wrong;
}

struct Case {
  const char* name;
  Algorithm algorithm;
  Collective collective;
  int ranks;
  int channels;
  int chunks;
};

const std::vector<Case> kCases{
    {"ring allreduce", Algorithm::Ring, Collective::AllReduce, 4, 1, 1},
    {"ring allreduce 2 channels", Algorithm::Ring, Collective::AllReduce, 8, 2, 1},
    {"ring allgather", Algorithm::Ring, Collective::AllGather, 4, 1, 1},
    {"ring reducescatter", Algorithm::Ring, Collective::ReduceScatter, 8, 1, 1},
    {"ring broadcast", Algorithm::Ring, Collective::Broadcast, 5, 1, 3},
    {"tree allreduce", Algorithm::Tree, Collective::AllReduce, 8, 2, 3},
    {"halving-doubling allreduce", Algorithm::HalvingDoubling, Collective::AllReduce, 6, 1, 1},
    {"direct alltoall", Algorithm::Direct, Collective::AlltoAll, 4, 1, 1},
    {"nvls allreduce", Algorithm::Nvls, Collective::AllReduce, 8, 1, 2},
    {"nvls reducescatter", Algorithm::Nvls, Collective::ReduceScatter, 4, 1, 1},
};

}  // namespace

TEST_CASE("cuda plan: real algorithms on 1, 2 and 4 GPUs, with and without peer access", "[replay][cuda]") {
  for (const auto& c : kCases) {
    // 48 elements per rank (divisible by every rank count and channel split used here).
    const auto s = make(c.algorithm, c.collective, c.ranks, 4ULL * 48 * static_cast<std::uint64_t>(c.ranks), c.channels, c.chunks);
    for (int ngpu : {1, 2, 4}) {
      for (bool p2p : {true, false}) {
        INFO(fmt::format("{} on {} GPUs, peer access {}", c.name, ngpu, p2p));
        const auto dev = gpus(ngpu, p2p);
        const auto plan = plan_cuda_replay(s, dev);
        check_structure(s, plan, dev);
        check_staging(s, plan, dev);
        for (unsigned seed : {0U, 1U, 2U, 3U}) {
          std::string first;
          CHECK(execute_on_host(s, plan, DataType::Float, seed, first) == 0);
          CHECK(first.empty());
        }
      }
    }
  }
}

TEST_CASE("cuda plan: the schedules ccsim replay runs on a DGX H100 (8 ranks, 1 and 8 GPUs)", "[replay][cuda]") {
  // What scripts/device-check replays: CollectiveRunner::step_schedule on dgx-h100-1node (its
  // searched ring orders, channels, pipeline chunks), here at 1 MiB.
  const models::Cluster cluster = ccsim::test::shipped_cluster("dgx-h100-1node.yaml");
  const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  struct Run {
    Collective c;
    Algorithm a;
  };
  for (auto [c, a] : {Run{Collective::AllReduce, Algorithm::Ring}, Run{Collective::AllReduce, Algorithm::Tree},
                      Run{Collective::AllGather, Algorithm::Ring}, Run{Collective::ReduceScatter, Algorithm::Ring},
                      Run{Collective::AllReduce, Algorithm::Nvls}}) {
    planner::CollectiveOptions opts;
    opts.collective = c;
    opts.algorithm = a;
    opts.protocol = planner::Protocol::Simple;
    opts.element_size = 4;
    const auto& g = cluster.topology.gpus();
    opts.gpus.assign(g.begin(), g.end());
    planner::CollectiveRunner runner(cluster, costs, opts);
    const auto s = runner.step_schedule(a, planner::Protocol::Simple, 1ULL << 20);
    REQUIRE(s.nranks == 8);
    for (int ngpu : {1, 8}) {
      INFO(fmt::format("{} {} on {} GPUs", planner::to_string(a), models::to_string(c), ngpu));
      const auto dev = gpus(ngpu, true);
      const auto plan = plan_cuda_replay(s, dev);
      check_structure(s, plan, dev);
      check_staging(s, plan, dev);
      std::string first;
      CHECK(execute_on_host(s, plan, DataType::Float, 7, first) == 0);
      CHECK(first.empty());
    }
  }
}

TEST_CASE("cuda plan: ranks sharing one GPU get disjoint buffers, all local", "[replay][cuda]") {
  // Ring AllReduce, 8 ranks, S = 8 · 4 · 100 bytes: every rank has input and output of S bytes
  // (3200, a multiple of 256 after rounding to 3328), no scratch. On one GPU the arena holds
  // 8 · 2 regions of 3328 bytes = 53248 and no staging; every transfer is Local.
  const auto s = make(Algorithm::Ring, Collective::AllReduce, 8, 8 * 4 * 100);
  const auto plan = plan_cuda_replay(s, gpus(1, false));
  REQUIRE(plan.arena_bytes.size() == 1);
  CHECK(plan.arena_bytes[0] == 8 * 2 * 3328);
  CHECK(plan.staging_bytes == 0);
  for (int r = 0; r < 8; ++r) {
    CHECK(plan.ranks[static_cast<std::size_t>(r)].input.offset == static_cast<std::uint64_t>(r) * 2 * 3328);
    CHECK(plan.ranks[static_cast<std::size_t>(r)].output.offset == static_cast<std::uint64_t>(r) * 2 * 3328 + 3328);
  }
  for (const auto& st : plan.steps) CHECK(st.access == CudaAccess::Local);
  // One stream per rank (one channel); 8 · 14 transfers (each rank receives 2(n−1) = 14 times).
  CHECK(plan.streams.size() == 8);
  CHECK(plan.steps.size() == 8 * 14);
}

TEST_CASE("cuda plan: staging follows the peer-access matrix direction by direction", "[replay][cuda]") {
  // Ring AllReduce on 2 GPUs, ranks 0, 2 on GPU 0 and 1, 3 on GPU 1; GPU 1 may read GPU 0 but
  // not the other way. Rank 0 receives (reduces) from rank 3 (GPU 1): staged; rank 1 from rank
  // 0 (GPU 0): peer. In the reduce-scatter half each rank reduces n − 1 = 3 chunks of S/4:
  // staged bytes are ranks 0 and 2's reductions, 2 · 3 · S/4 with S = 4 · 4 · 64.
  const std::uint64_t S = 4 * 4 * 64;
  const auto s = make(Algorithm::Ring, Collective::AllReduce, 4, S);
  auto dev = gpus(2, false);
  dev.peer_access[1][0] = true;
  const auto plan = plan_cuda_replay(s, dev);
  check_structure(s, plan, dev);
  check_staging(s, plan, dev);
  CHECK(plan.staging_bytes == 2 * 3 * S / 4);
  int staged = 0, peer = 0, copied = 0;
  for (const auto& st : plan.steps) {
    staged += st.access == CudaAccess::Staged;
    peer += st.access == CudaAccess::Peer;
    copied += st.access == CudaAccess::Copied;
  }
  CHECK(staged == 6);   // ranks 0 and 2: 3 reductions each
  CHECK(peer == 12);    // ranks 1 and 3: 3 reductions + 3 copies each
  CHECK(copied == 6);   // ranks 0 and 2: 3 copies (allgather half) each
}

TEST_CASE("cuda plan: in-switch groups accumulate on their contributors' GPUs, spread over all", "[replay][cuda]") {
  const auto s = make(Algorithm::Nvls, Collective::AllReduce, 4, 4 * 4 * 16);
  const auto plan = plan_cuda_replay(s, gpus(4, true));
  REQUIRE(!s.switch_groups.empty());
  // Per group: the first SwitchSend in issue order copies into the accumulator, the others add.
  std::map<std::uint32_t, int> copies, adds;
  for (const auto& st : plan.steps) {
    const auto& o = st.ops.back();
    const auto& op = s.ranks[static_cast<std::size_t>(o.rank)].ops[o.op];
    if (op.kind != OpKind::SwitchSend) continue;
    for (const auto& a : st.actions) (a.kind == CudaAction::Kind::Copy ? copies : adds)[op.tag]++;
  }
  for (std::uint32_t g = 0; g < s.switch_groups.size(); ++g) {
    if (copies.count(g) == 0) continue;  // a group only received from
    CHECK(copies[g] == 1);
    CHECK(adds[g] == s.switch_groups[g] - 1);
  }
  CHECK(plan.switch_bytes > 0);
  // Group t's accumulator is on the GPU of its (t mod count)-th contributor: the SwitchSends of
  // the group all run on one stream of that GPU, and with 4 ranks on 4 GPUs every GPU hosts some.
  std::set<int> home_slots;
  for (const auto& st : plan.steps) {
    const auto& o = st.ops.back();
    const auto& op = s.ranks[static_cast<std::size_t>(o.rank)].ops[o.op];
    if (op.kind != OpKind::SwitchSend) continue;
    std::vector<int> contributors;
    for (int r = 0; r < s.nranks; ++r) {
      for (const auto& x : s.ranks[static_cast<std::size_t>(r)].ops) {
        if (x.kind == OpKind::SwitchSend && x.tag == op.tag) contributors.push_back(r);
      }
    }
    const int home = contributors[op.tag % contributors.size()];
    CHECK(plan.streams[st.stream].rank == home);
    home_slots.insert(plan.streams[st.stream].slot);
  }
  CHECK(home_slots.size() == 4);
}

TEST_CASE("cuda plan: bad devices and broken schedules are refused with a reason", "[replay][cuda]") {
  const auto s = make(Algorithm::Ring, Collective::AllReduce, 2, 2 * 4 * 8);
  CHECK_THROWS_WITH(plan_cuda_replay(s, CudaPlanDevices{}), Catch::Contains("device list is empty"));
  CHECK_THROWS_WITH(plan_cuda_replay(s, CudaPlanDevices{{0, 1, 0}, {}}), Catch::Contains("device 0 is listed twice"));
  CHECK_THROWS_WITH(plan_cuda_replay(s, CudaPlanDevices{{0, 1}, {{true, true}}}), Catch::Contains("must be 2 x 2"));

  // Two ranks that each receive before they send, the send depending on the receive: a cycle.
  models::Schedule dl;
  dl.nranks = 2;
  dl.bytes = 16;
  dl.collective = Collective::AllReduce;
  dl.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    models::Op recv;
    recv.kind = OpKind::Recv;
    recv.peer = 1 - r;
    recv.dst = {models::BufferKind::Output, 0, 16};
    const auto ri = dl.ranks[static_cast<std::size_t>(r)].add(recv);
    models::Op send;
    send.kind = OpKind::Send;
    send.peer = 1 - r;
    send.src = {models::BufferKind::Input, 0, 16};
    const std::uint32_t deps[] = {ri};
    dl.ranks[static_cast<std::size_t>(r)].add(send, deps);
  }
  CHECK_THROWS_WITH(plan_cuda_replay(dl, gpus(2, true)), Catch::Contains("deadlocks") && Catch::Contains("never becomes ready"));

  // An in-switch group whose contributions differ in size.
  auto nv = make(Algorithm::Nvls, Collective::AllReduce, 2, 2 * 4 * 16);
  for (auto& op : nv.ranks[1].ops) {
    if (op.kind == OpKind::SwitchSend) {
      op.src.bytes -= 4;
      break;
    }
  }
  CHECK_THROWS_WITH(plan_cuda_replay(nv, gpus(2, true)), Catch::Contains("in-switch group") && Catch::Contains("expected"));
}
