// Measured AllReduce bus bandwidths of systems whose GPUs stage through host memory,
// against ccsim's host-memory model. Each case states the measurement, its public
// source, the closed-form value of the model and the error budget (the error measured when
// the model was written, rounded up).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

constexpr double kGB = 1e9;
constexpr std::uint64_t kBytes = 1ULL << 30;  // 1 GiB, the smallest size of the reports (-b 1g)

const planner::CostModel& default_costs() {
  static const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  return costs;
}

models::Cluster real_case(const std::string& file) {
  return models::build_cluster(
      models::load_scenario(test::source_path("tests/data/real-cases/" + file), test::shipped_catalog()).cluster);
}

/// nccl-tests busbw of an AllReduce of kBytes on the given GPU ranks: S / t × 2(n − 1) / n, GB/s.
double allreduce_busbw(const models::Cluster& c, const std::vector<int>& ranks) {
  planner::CollectiveOptions o;
  o.collective = models::Collective::AllReduce;
  for (int r : ranks) o.gpus.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
  planner::CollectiveRunner runner(c, default_costs(), o);
  const planner::CollectiveResult res = runner.run(kBytes);
  const double n = static_cast<double>(ranks.size());
  return static_cast<double>(kBytes) / res.time * 2.0 * (n - 1.0) / n / kGB;
}

// The model's bottlenecks, from the catalog's public figures (independent of the simulator):
//  * host memory of a Xeon 8480+ socket: 8 channels × 38.4 GB/s × 0.75 = 230.4 GB/s sustained,
//    115.2 GB/s each way (write, read). A staged flow into socket s writes and reads its memory
//    once, so f flows received on one socket get 115.2 / f GB/s each.
//  * a GPU's PCIe Gen5 x16 link: 63 GB/s × NCCL's 0.7619 = 48.0 GB/s each way, one flow each way.
//  * the socket link (UPI, 128 GB/s each way) carries one flow each way: never the bottleneck.
// Ring AllReduce with the Simple protocol runs at the slowest flow's rate: busbw = that rate.
constexpr double kMemoryEachWay = 8 * 38.4 * 0.75 / 2;  // GB/s
constexpr double kPcieGen5 = 63.0 * 0.7619;             // GB/s

// Error budgets, percent: |simulated − measured| / measured as measured when the model was
// written, rounded up to the next whole percent (see the real cases table of docs/accuracy.md).
// Measured (1 GiB, analytic engine): 8 x RTX 5090 28.76 GB/s (+2.7 %), 4 x RTX 5090 28.78 GB/s
// (−17.8 %), one socket 28.78 GB/s (+19.9 %), two sockets 47.93 GB/s (+37.0 %).
constexpr double kBudgetEight = 3;
constexpr double kBudgetFour = 18;
constexpr double kBudgetOneSocket = 20;
constexpr double kBudgetTwoSockets = 37;
// nccl#412 (GPUDirect RDMA by PCIe distance), 12 x 8 A800, 1 GiB, analytic engine: CPU-attached
// NIC 23.73 GB/s against 15.3 (+55.1 %: the host bounce is modelled as a path through host
// memory and the verbs overhead, which cost no bandwidth here; the GPU's own loads from host
// memory are not a resource in the model, docs/limitations.md), NIC on a GPU's switch 23.77
// against the maintainer's 24 (-1.0 %).
constexpr double kBudgetCpuNic = 56;
constexpr double kBudgetSwitchNic = 1;

double error_pct(double simulated, double measured) { return (simulated - measured) / measured * 100.0; }

}  // namespace

TEST_CASE("host memory: 8 x RTX 5090 without P2P, 8 GPUs and 4 GPUs (nccl#1639)", "[validate][real-cases][host-memory]") {
  // Source: NVIDIA/nccl issue #1639 ("The performance of NCCL All-Reduce across 8 NVIDIA 5090
  // GPUs is extremely poor"): 2 x Xeon 8480+, all_reduce_perf -b 1g -e 8g -g 8: busbw 28 GB/s;
  // with 4 GPUs: 35 GB/s.
  const models::Cluster c = real_case("rtx5090-8gpu-nop2p.yaml");
  // The memory link of each socket carries half the sustained copy bandwidth each way.
  const models::Topology& t = c.topology;
  const models::DeviceId mem0 = t.device(t.device(t.gpus()[0]).cpu).memory;
  REQUIRE(mem0 != models::kNoDevice);
  for (models::LinkId id : t.out_links(mem0)) CHECK(t.link(id).bandwidth == Approx(kMemoryEachWay * kGB));
  // 8 GPUs, ring 0..7: each socket receives 4 flows (0→1, 1→2, 2→3, 7→0 on socket 0):
  // 115.2 / 4 = 28.8 GB/s.
  const double eight = allreduce_busbw(c, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(eight == Approx(std::min(kPcieGen5, kMemoryEachWay / 4)).epsilon(0.03));
  // 4 GPUs (-g 4: devices 0-3, one socket): 4 flows on socket 0's memory, 28.8 GB/s.
  const double four = allreduce_busbw(c, {0, 1, 2, 3});
  CHECK(four == Approx(std::min(kPcieGen5, kMemoryEachWay / 4)).epsilon(0.03));
  // Direction: 8 GPUs must not be faster than 4. In the model both are bound by socket 0's
  // memory carrying 4 flows, so they differ only by the latency of 14 against 6 ring steps;
  // the only resource 8 GPUs add, the UPI (128 GB/s each way), carries one 28.8 GB/s flow each
  // way. The measured 28 against 35 GB/s is not explained by a public figure here (−17.8 % on
  // the 4-GPU case), see docs/limitations.md.
  CHECK(eight <= four);
  INFO(fmt::format("8 GPUs {:.2f} GB/s ({:+.1f} %), 4 GPUs {:.2f} GB/s ({:+.1f} %)", eight, error_pct(eight, 28.0), four,
                   error_pct(four, 35.0)));
  CHECK(std::fabs(error_pct(eight, 28.0)) <= kBudgetEight);
  CHECK(std::fabs(error_pct(four, 35.0)) <= kBudgetFour);
}

TEST_CASE("host memory: 8 PCIe GPUs, P2P disabled, one socket against two sockets", "[validate][real-cases][host-memory]") {
  // Source: a reported measurement (on a dual-socket PCIe Gen5 server with
  // NCCL_P2P_DISABLE): GPUs 0-3 (one socket) 24 GB/s, GPUs 0,1,6,7 (two sockets) 35 GB/s.
  const models::Cluster c = real_case("pcie-gen5-2socket-p2p-disabled.yaml");
  // GPUs 0-3: 4 flows into socket 0's memory: 115.2 / 4 = 28.8 GB/s.
  const double one_socket = allreduce_busbw(c, {0, 1, 2, 3});
  CHECK(one_socket == Approx(std::min(kPcieGen5, kMemoryEachWay / 4)).epsilon(0.03));
  // GPUs 0,1,6,7, ring 0→1→6→7→0: each socket receives 2 flows (7→0, 0→1 on socket 0):
  // min(48.0, 115.2 / 2) = 48.0 GB/s, the PCIe link.
  const double two_sockets = allreduce_busbw(c, {0, 1, 6, 7});
  CHECK(two_sockets == Approx(std::min(kPcieGen5, kMemoryEachWay / 2)).epsilon(0.03));
  CHECK(two_sockets > one_socket);  // splitting over sockets helps
  INFO(fmt::format("one socket {:.2f} GB/s ({:+.1f} %), two sockets {:.2f} GB/s ({:+.1f} %)", one_socket,
                   error_pct(one_socket, 24.0), two_sockets, error_pct(two_sockets, 35.0)));
  CHECK(std::fabs(error_pct(one_socket, 24.0)) <= kBudgetOneSocket);
  CHECK(std::fabs(error_pct(two_sockets, 35.0)) <= kBudgetTwoSockets);
}

TEST_CASE("host memory: a PIX pair without P2P still costs the switch uplink twice", "[validate][host-memory]") {
  // scenarios/pcie-2gpu-nop2p.yaml: 2 x RTX 2080 Ti under one PCIe Gen3 switch, no P2P. Both
  // flows of the 2-rank ring (0→1 and 1→0) go GPU → switch → CPU → memory → CPU → switch →
  // GPU: each direction of the switch's uplink carries both, 15.75 × 0.7619 / 2 = 6.0 GB/s each
  // (the memory, 2 × 21.33 × 0.75 / 2 = 16 GB/s each way, carries them at 8 GB/s each).
  const models::Cluster c = test::shipped_cluster("pcie-2gpu-nop2p.yaml");
  const models::Topology& t = c.topology;
  const models::DeviceId g0 = t.gpus()[0];
  const models::DeviceId g1 = t.gpus()[1];
  const models::DeviceId sw = t.device(g0).pcie_switch;
  const models::DeviceId cpu = t.device(g0).cpu;
  const models::DeviceId mem = t.device(cpu).memory;
  REQUIRE(mem != models::kNoDevice);
  for (const auto& [a, b] : {std::pair{g0, g1}, std::pair{g1, g0}}) {
    const models::Route r = t.route(a, b);
    std::vector<models::DeviceId> hops{a};
    for (models::LinkId id : r.path.links) hops.push_back(t.link_target(id));
    CHECK(hops == std::vector<models::DeviceId>{a, sw, cpu, mem, cpu, sw, b});
    CHECK(r.path.type == models::PathType::Phb);
  }
  const double busbw = allreduce_busbw(c, {0, 1});
  CHECK(busbw == Approx(15.75 * 0.7619 / 2).epsilon(0.03));
}

namespace {

/// A scenario of tests/data/real-cases/ with its simulation section (launch mode, symmetric memory).
models::Scenario real_scenario(const std::string& file) {
  return models::load_scenario(test::source_path("tests/data/real-cases/" + file), test::shipped_catalog());
}

/// Time of one AllReduce of `bytes` on the given ranks, microseconds, with the launch settings given.
planner::CollectiveResult allreduce(const models::Cluster& c, const std::vector<int>& ranks, std::uint64_t bytes, bool graph,
                                    bool symmetric, int agg_iters = 1, std::optional<planner::Algorithm> algorithm = std::nullopt) {
  planner::CollectiveOptions o;
  o.collective = models::Collective::AllReduce;
  for (int r : ranks) o.gpus.push_back(c.topology.gpus()[static_cast<std::size_t>(r)]);
  o.graph_launch = graph;
  o.symmetric = symmetric;
  o.agg_iters = agg_iters;
  o.algorithm = algorithm;
  planner::CollectiveRunner runner(c, default_costs(), o);
  return runner.run(bytes);
}

std::vector<int> first_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

}  // namespace

TEST_CASE("launch: 8-byte AllReduce with symmetric memory and CUDA graphs, Hopper and Blackwell (nccl#1940)",
          "[validate][real-cases][launch]") {
  // The model (scenarios/calibration/nccl.yaml `launch`): NCCL's one-shot symmetric LL kernel
  // is one NVLink round (GPU -> NVSwitch -> GPU, 2 x 0.3 us of wire, LL's step overhead 0 on
  // NVLink) after the graph-launched collective's fixed cost (hopper 1.7 us, blackwell 2.4 us);
  // 8 bytes from 7 peers add well under 1 ns.
  struct Case {
    const char* file;
    double fixed_us;     // launch.graph_latency of the family
    double measured_us;  // nccl#1940
    double budget_pct;
  };
  // Measured when the model was written: H200 2.30 us (+0.0 %: the Hopper figure was taken
  // from this report, so this row checks the arithmetic), B200 3.00 us (+0.0 % against
  // nccl#1940; the Blackwell figure is nccl-tests#333's, another system's measurement).
  for (const Case& k : {Case{"h200-8gpu-symmetric-graph.yaml", 1.7, 2.3, 1}, Case{"b200-8gpu-symmetric-graph.yaml", 2.4, 3.0, 1}}) {
    const models::Scenario sc = real_scenario(k.file);
    REQUIRE(sc.simulation.graph_launch);
    REQUIRE(sc.simulation.symmetric_memory);
    const models::Cluster c = models::build_cluster(sc.cluster);
    const planner::CollectiveResult r = allreduce(c, first_ranks(8), 8, true, true);
    INFO(k.file << ": " << r.time * 1e6 << " us, " << r.kernel);
    CHECK(r.kernel == "symmetric-ll");
    CHECK(r.time * 1e6 == Approx(k.fixed_us + 0.6).margin(0.01));
    CHECK(std::fabs(error_pct(r.time * 1e6, k.measured_us)) <= k.budget_pct);
    // Eager launch without symmetric memory is what the nccl-tests logs were taken with: NCCL's
    // own ring LL model, baseLat 6.6 + 2(n - 1) = 14 steps x hwLat 0.6 = 15.0 us.
    const planner::CollectiveResult eager = allreduce(c, first_ranks(8), 8, false, false);
    CHECK(eager.kernel.empty());
    CHECK(eager.time * 1e6 == Approx(15.0).margin(0.01));
    // Symmetric memory launched eagerly: the kernel's round after NCCL's eager fixed cost,
    // 6.6 + 0.6 = 7.2 us; graphs alone: ring LL after the graph's fixed cost, k + 14 x 0.6.
    CHECK(allreduce(c, first_ranks(8), 8, false, true).time * 1e6 == Approx(6.6 + 0.6).margin(0.01));
    CHECK(allreduce(c, first_ranks(8), 8, true, false).time * 1e6 == Approx(k.fixed_us + 14 * 0.6).margin(0.01));
  }
  // Hopper, not the H200: the H800 (8 NVLinks instead of 18) takes the same 2.3 us, as reported.
  const models::Cluster h800 = test::cluster_at("tests/data/real-cases/h800-4gpu-nvlink.yaml");
  CHECK(allreduce(h800, first_ranks(8), 8, true, true).time * 1e6 == Approx(2.3).margin(0.01));
}

TEST_CASE("launch: the symmetric kernel only where NCCL has it", "[validate][launch]") {
  // NCCL 2.27 brought the symmetric kernels: NCCL 2.26 on the H200 runs its ring LL (eager:
  // 6.6 + 14 x 0.6 = 15.0 us), not the 7.2 us of the symmetric round.
  const models::Cluster h200 = models::build_cluster(real_scenario("h200-8gpu-symmetric-graph.yaml").cluster);
  planner::CollectiveOptions o;
  o.collective = models::Collective::AllReduce;
  for (int r : first_ranks(8)) o.gpus.push_back(h200.topology.gpus()[static_cast<std::size_t>(r)]);
  o.symmetric = true;
  o.nccl.version = models::NcclVersion{2, 26};
  planner::CollectiveRunner old_release(h200, default_costs(), o);
  const planner::CollectiveResult r = old_release.run(8);
  CHECK(r.kernel.empty());
  CHECK(r.time * 1e6 == Approx(15.0).margin(0.01));
  o.nccl.version = models::NcclVersion{2, 27};
  CHECK(planner::CollectiveRunner(h200, default_costs(), o).run(8).kernel == "symmetric-ll");
  // An Ampere node (no public figure for the kernel there): NCCL's ring LL, 15.0 us.
  const models::Cluster a100 = test::shipped_cluster("dgx-a100-1node.yaml");
  const planner::CollectiveResult ampere = allreduce(a100, first_ranks(8), 8, false, true);
  CHECK(ampere.kernel.empty());
}

TEST_CASE("launch: 100 AllReduces per group, 4 x H800 Ring 1 KiB without graphs (nccl#1984)", "[validate][real-cases][launch]") {
  // nccl-tests -m 100: one launch for 100 collectives, so NCCL's fixed cost (ring LL baseLat
  // 6.6 us) is paid once per 100; each collective keeps its 2(n - 1) = 6 LL steps of 0.6 us:
  // 6.6 / 100 + 6 x 0.6 = 3.666 us (1 KiB adds under 0.01 us). Measured 3.5 us (-m 100, -G off).
  const models::Cluster c = test::cluster_at("tests/data/real-cases/h800-4gpu-nvlink.yaml");
  const planner::CollectiveResult r = allreduce(c, {4, 5, 6, 7}, 1024, false, false, 100, planner::Algorithm::Ring);
  CHECK(r.protocol == planner::Protocol::LL);
  CHECK(r.time * 1e6 == Approx(6.6 / 100 + 6 * 0.6).margin(0.02));
  // Measured (analytic engine): 3.685 us, +5.3 %.
  INFO(r.time * 1e6 << " us");
  CHECK(std::fabs(error_pct(r.time * 1e6, 3.5)) <= 6);
  // One collective per launch (no -m): 6.6 + 3.6 = 10.2 us, ccsim's figure before -m was modelled.
  CHECK(allreduce(c, {4, 5, 6, 7}, 1024, false, false, 1, planner::Algorithm::Ring).time * 1e6 == Approx(10.2).margin(0.02));
}

TEST_CASE("GPUDirect RDMA by PCIe distance: 12 x 8 A800, one HDR NIC on a CPU root port or on a GPU's switch (nccl#412)",
          "[validate][real-cases][gdr]") {
  // NCCL enables GPUDirect RDMA only up to NCCL_NET_GDR_LEVEL (default PXB; paths.cc
  // ncclTopoCheckGdr): a GPU -> switch -> CPU -> NIC path is PHB, so every GPU stages its
  // network data through the memory of its socket, and the NIC pays the catalog's verbs
  // overhead (3.5 us per message) instead of GPUDirect's 0.
  const models::Cluster cpu_nic = test::cluster_at("tests/data/real-cases/a800-12node-cpu-nic.yaml");
  const models::Topology& t = cpu_nic.topology;
  for (models::DeviceId g : t.gpus()) {
    CHECK_FALSE(t.device(g).gdr_recv);
    CHECK_FALSE(t.device(g).gdr_send);
  }
  // A route between nodes passes through host memory on both sides.
  const models::Route route = t.route(t.gpus()[0], t.gpus()[8]);
  int memories = 0;
  for (models::LinkId id : route.path.links) memories += t.device(t.link_target(id)).kind == models::DeviceKind::Memory ? 1 : 0;
  CHECK(memories == 2);
  const models::Cluster switch_nic = test::cluster_at("tests/data/real-cases/a800-12node-switch-nic.yaml");
  const models::Topology& s = switch_nic.topology;
  CHECK(s.device(s.gpus()[0]).gdr_recv);   // PIX: GPUs 0 and 1 share the NIC's switch
  CHECK(s.device(s.gpus()[1]).gdr_send);
  CHECK_FALSE(s.device(s.gpus()[2]).gdr_recv);  // PHB: another switch of the same CPU
  const std::vector<int> all = first_ranks(96);
  const double bounced = allreduce_busbw(cpu_nic, all);
  const double direct = allreduce_busbw(switch_nic, all);
  INFO(fmt::format("CPU-attached NIC {:.2f} GB/s ({:+.1f} % against 15.3), NIC on a GPU's switch {:.2f} GB/s ({:+.1f} % against 24)",
                   bounced, error_pct(bounced, 15.3), direct, error_pct(direct, 24.0)));
  CHECK(bounced < direct);
  // Error budgets (measured when the model was written, analytic engine): see docs/accuracy.md.
  CHECK(std::fabs(error_pct(bounced, 15.3)) <= kBudgetCpuNic);
  CHECK(std::fabs(error_pct(direct, 24.0)) <= kBudgetSwitchNic);
}
